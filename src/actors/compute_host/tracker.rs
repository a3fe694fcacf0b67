//! The resource-tracker pass of a `ComputeHost` (Nova's `update_available_resource`): the
//! messages that run it, the pass itself (read, settle orphans and providers, write what
//! changed, fenced), and its report.

use actix::prelude::*;
use chrono::{DateTime, Utc};

use super::{ComputeHost, HostError, HostSettings, TakeSpawns};
use crate::actors::node_source::NodeSource;
use crate::actors::registry::{CreateProvider, DeleteOrphan, Registry};
use crate::db::compute_nodes::{OrphanOutcome, ProviderOutcome};
use crate::db::node_reports::PassTimes;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::identity::{InstanceUuid, NodeUuid};
use crate::domain::node::{ComputeNode, ComputeNodeId, HostName};
use crate::domain::tracker::{OwnedNode, PassChanges, PassWrites};

/// What a resource-tracker pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TrackerReport {
    /// Nodes whose inventory was written (changed since the last pass).
    pub reported: usize,
    /// Nodes found to belong to another host now, dropped.
    pub lost: Vec<String>,
    /// Orphans (gone from Ironic) whose compute node was deleted.
    pub orphans_deleted: Vec<String>,
    /// Orphans kept because their provider holds allocations.
    pub orphans_kept: Vec<String>,
    /// PCI devices freed after their instance was deleted.
    pub devices_freed: usize,
    /// Builds Ironic finished on nodes that moved here meanwhile, now marked active.
    pub builds_finished: Vec<InstanceUuid>,
    /// Builds nobody works on any more (timed out, left by a dead process or a moved node)
    /// that ended in error, their claims released.
    pub builds_failed: Vec<InstanceUuid>,
    /// Nodes enrolled in Ironic again while their compute node lived, made available.
    pub nodes_made_available: Vec<String>,
    /// Active instances a real Ironic no longer shows on their node: reported with a fault,
    /// once (their claim kept, so the node is not re-used until the instance is deleted).
    pub instances_gone: Vec<InstanceUuid>,
    /// Nodes found as they were: nothing written for them.
    pub unchanged: usize,
    /// Whether the pass found nothing changed anywhere since its last one, and so read none of
    /// its nodes.
    pub skipped: bool,
    /// The tracker change counter the pass started from.
    pub changes_seen: i64,
    /// Whether this periodic pass did not run: as many passes as the process allows were
    /// running (the next interval's pass tries again).
    pub deferred: bool,
    /// Boots other processes placed on this host that wait to be taken.
    pub pending_spawns: i64,
}

/// Runs the resource-tracker pass (Nova's `update_available_resource`).
#[derive(Debug, Message)]
#[rtype(result = "Result<TrackerReport, HostError>")]
pub struct UpdateAvailableResource;

impl Handler<UpdateAvailableResource> for ComputeHost {
    type Result = AtomicResponse<Self, Result<TrackerReport, HostError>>;

    fn handle(&mut self, _: UpdateAvailableResource, _: &mut Self::Context) -> Self::Result {
        self.pass(None, None)
    }
}

/// Reads what this host owns as a tracker pass reads it, and writes nothing: a read that
/// `UpdateAvailableResourceFrom` can use later, stale by then (fault injection: the stale node
/// list of bug 1853009, or a move between a pass's read and its writes).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<OwnedNode>, HostError>")]
pub struct ReadOwnedNodes;

impl Handler<ReadOwnedNodes> for ComputeHost {
    type Result = ResponseFuture<Result<Vec<OwnedNode>, HostError>>;

    fn handle(&mut self, _: ReadOwnedNodes, _: &mut Self::Context) -> Self::Result {
        let (pool, host) = (self.pool.clone(), self.name.clone());
        Box::pin(async move {
            Ok(db::run(&pool, move |conn| {
                db::node_reports::owned_nodes(conn, &host, None)
            })
            .await?)
        })
    }
}

/// Runs the tracker pass on a read taken earlier (`ReadOwnedNodes`) instead of reading now:
/// its writes are fenced by the owner and epoch that read saw, so nodes that moved since are
/// reported lost and nothing of theirs is written.
#[derive(Debug, Message)]
#[rtype(result = "Result<TrackerReport, HostError>")]
pub struct UpdateAvailableResourceFrom {
    pub read: Vec<OwnedNode>,
}

impl Handler<UpdateAvailableResourceFrom> for ComputeHost {
    type Result = AtomicResponse<Self, Result<TrackerReport, HostError>>;

    fn handle(
        &mut self,
        message: UpdateAvailableResourceFrom,
        _: &mut Self::Context,
    ) -> Self::Result {
        self.pass(None, Some(message.read))
    }
}

/// Runs the tracker pass for these nodes only, if this host owns them (a node whose Ironic
/// state just changed, such as an unlock, is reported at once).
#[derive(Debug, Message)]
#[rtype(result = "Result<TrackerReport, HostError>")]
pub struct RefreshNodes {
    pub nodes: Vec<NodeUuid>,
}

impl Handler<RefreshNodes> for ComputeHost {
    type Result = AtomicResponse<Self, Result<TrackerReport, HostError>>;

    fn handle(&mut self, message: RefreshNodes, _: &mut Self::Context) -> Self::Result {
        self.pass(Some(message.nodes), None)
    }
}

impl ComputeHost {
    /// Runs a tracker pass over every owned node, or over `only` those, as read now or as
    /// `read` earlier.
    fn pass(
        &mut self,
        only: Option<Vec<NodeUuid>>,
        read: Option<Vec<OwnedNode>>,
    ) -> AtomicResponse<Self, Result<TrackerReport, HostError>> {
        self.pass_with(only, read, None)
    }

    /// `pass`, holding `permit` (one of the process's passes) when given, else waiting for one.
    pub(super) fn pass_with(
        &mut self,
        only: Option<Vec<NodeUuid>>,
        read: Option<Vec<OwnedNode>>,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> AtomicResponse<Self, Result<TrackerReport, HostError>> {
        if let Err(fenced) = self.require_lease() {
            return AtomicResponse::new(Box::pin(fut::ready(Err(fenced))));
        }
        let pass = TrackerPass {
            pool: self.pool.clone(),
            host: self.name.clone(),
            clock: self.clock.clone(),
            registry: self.registry.clone(),
            node_source: self.node_source.clone(),
            settings: self.settings,
            lease: self.lease.clone(),
            passes: (self.passes.clone(), permit),
            started_at: self.started_at,
            seen_changes: self.seen_changes,
            only,
            read,
        };
        let full = pass.only.is_none() && pass.read.is_none();
        AtomicResponse::new(Box::pin(pass.run().into_actor(self).map(
            move |report, actor, ctx| {
                if let Ok(report) = &report
                    && !report.deferred
                {
                    // Boots another process placed here whose notification was missed.
                    if report.pending_spawns > 0 {
                        ctx.notify(TakeSpawns);
                    }
                    for node in &report.lost {
                        log::warn!(
                            "host {} lost node {node} to another host; dropped it",
                            actor.name
                        );
                    }
                    if full {
                        actor.seen_changes = Some(report.changes_seen);
                    }
                }
                report
            },
        )))
    }
}

/// What a tracker pass works with.
struct TrackerPass {
    pool: Pool,
    host: HostName,
    clock: SharedClock,
    registry: Addr<Registry>,
    node_source: NodeSource,
    settings: HostSettings,
    lease: std::sync::Arc<super::heartbeat::HostLease>,
    /// The process's passes, and the one this pass holds if it took it already.
    passes: (
        std::sync::Arc<tokio::sync::Semaphore>,
        Option<tokio::sync::OwnedSemaphorePermit>,
    ),
    started_at: DateTime<Utc>,
    seen_changes: Option<i64>,
    only: Option<Vec<NodeUuid>>,
    /// A read taken earlier, used instead of reading now.
    read: Option<Vec<OwnedNode>>,
}

impl TrackerPass {
    /// Runs the pass: reads what the host owns (unless nothing changed since the last full
    /// pass), settles orphans and missing providers, writes what changed in one fenced
    /// transaction, then frees the PCI devices deleted instances left allocated.
    async fn run(mut self) -> Result<TrackerReport, HostError> {
        let _permit = match self.passes.1.take() {
            Some(permit) => permit,
            None => self
                .passes
                .0
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| HostError::Db(DbError::Canceled))?,
        };
        // Ironic's listing first: a pass that cannot list its nodes writes nothing, and takes
        // no node for gone.
        self.node_source
            .check_listing()
            .await
            .map_err(HostError::Ironic)?;
        let (changes_seen, pending_spawns, owned) = self.read().await?;
        let skipped = owned.is_none();
        let owned = owned.unwrap_or_default();
        let owned_ids: Vec<ComputeNodeId> = owned.iter().map(|node| node.compute_node.id).collect();
        let mut report = TrackerReport {
            skipped,
            changes_seen,
            pending_spawns,
            ..TrackerReport::default()
        };
        let mut changes = PassChanges::default();
        for node in owned {
            let Some(ironic) = node.ironic.clone() else {
                self.settle_orphan(&node.compute_node, &mut report).await?;
                continue;
            };
            if !node.has_provider && !self.ensure_provider(&node.compute_node).await? {
                continue;
            }
            changes.add(node, ironic, self.settings.pci_devices_per_node);
        }
        report.unchanged = changes.unchanged;
        let written = self.write(changes).await?;
        report.reported = written.reported;
        report.lost.extend(written.lost);
        report.builds_finished = written.finished;
        report.builds_failed = written.failed;
        report.nodes_made_available = written.made_available;
        report.instances_gone = written.gone;
        log_settled(&self.host, &report);
        if !skipped {
            report.devices_freed = free_lagging_devices(&self.pool, &self.clock, owned_ids).await?;
        }
        Ok(report)
    }

    /// Reads the change counter, the boots waiting for this host and — unless a full pass
    /// finds the counter where the last one left it — the nodes (or the read given).
    async fn read(&self) -> Result<(i64, i64, Option<Vec<OwnedNode>>), HostError> {
        // The counter first: a change after it is seen by the next pass.
        let skip_when = if self.only.is_none() && self.read.is_none() {
            self.seen_changes
        } else {
            None
        };
        let (host, only, read) = (self.host.clone(), self.only.clone(), self.read.clone());
        Ok(db::run(&self.pool, move |conn| {
            let counter = db::node_reports::change_counter(conn)?;
            let pending = db::spawns::pending_spawns(conn, &host)?;
            if skip_when == Some(counter) {
                return Ok((counter, pending, None));
            }
            let owned = match read {
                Some(earlier) => earlier,
                None => db::node_reports::owned_nodes(conn, &host, only.as_deref())?,
            };
            Ok((counter, pending, Some(owned)))
        })
        .await?)
    }

    /// A node gone from Ironic: its compute node is deleted by the registry (as this owner, at
    /// the epoch read), or kept while its provider or devices are in use.
    async fn settle_orphan(
        &self,
        compute_node: &ComputeNode,
        report: &mut TrackerReport,
    ) -> Result<(), HostError> {
        let outcome = self
            .registry
            .send(DeleteOrphan {
                node: compute_node.node,
                host: compute_node.host.clone(),
                epoch: compute_node.owner_epoch,
            })
            .await??;
        let node = compute_node.node.to_string();
        match outcome {
            OrphanOutcome::Deleted => report.orphans_deleted.push(node),
            OrphanOutcome::KeptWithAllocations => {
                log::warn!(
                    "node {node} is gone from ironic but its provider holds allocations or its PCI devices are in use: compute node {} kept",
                    compute_node.uuid
                );
                report.orphans_kept.push(node);
            }
            OrphanOutcome::NotOwner => report.lost.push(node),
            OrphanOutcome::StillInIronic => {}
        }
        Ok(())
    }

    /// Gives a node without a provider its provider (by adoption when one has its name);
    /// `false` when it cannot be reported (another provider holds its name or uuid).
    async fn ensure_provider(&self, compute_node: &ComputeNode) -> Result<bool, HostError> {
        let outcome = self
            .registry
            .send(CreateProvider {
                uuid: compute_node.provider(),
                name: compute_node.node.to_string(),
            })
            .await?;
        match outcome {
            Ok(ProviderOutcome::Adopted(other)) => {
                log::error!(
                    "provider {other} holds the name of node {} whose compute node is {}: not reporting it",
                    compute_node.node,
                    compute_node.uuid
                );
                Ok(false)
            }
            Ok(_) => Ok(true),
            Err(DbError::Conflict(reason)) => {
                log::error!("node {}: {reason}; not reporting it", compute_node.node);
                Ok(false)
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Writes `changes` and settles the stale builds: `db::node_reports::write_pass`, one
    /// fenced transaction, committed only while the host's lease holds; none at all when
    /// nothing changed and no build is stale.
    async fn write(&self, changes: PassChanges) -> Result<PassWrites, HostError> {
        let (clock, host, settings) = (self.clock.clone(), self.host.clone(), self.settings);
        let (started_at, lease) = (self.started_at, self.lease.clone());
        let build_timeout = chrono::Duration::from_std(settings.instance_build_timeout)
            .unwrap_or(chrono::Duration::MAX);
        Ok(db::run(&self.pool, move |conn| {
            let now = clock.now();
            let times = PassTimes {
                now,
                build_cutoff: started_at.max(now - build_timeout),
            };
            let devices = settings.pci_devices_per_node;
            let stale = db::instances::stale_builds(conn, &host, times.build_cutoff)?;
            if changes.is_empty() && stale.is_empty() {
                return Ok(PassWrites::default());
            }
            db::in_transaction(conn, |conn| {
                db::node_reports::write_pass(
                    conn,
                    &host,
                    (&changes, &stale),
                    devices,
                    times,
                    || lease.holds(clock.now()),
                )
            })
        })
        .await?)
    }
}

/// Logs the builds and nodes a pass settled.
fn log_settled(host: &HostName, report: &TrackerReport) {
    for instance in &report.builds_finished {
        log::info!("host {host}: instance {instance} deployed while its node moved here: active");
    }
    for instance in &report.builds_failed {
        log::warn!(
            "host {host}: build of instance {instance} made no progress: error, claim released"
        );
    }
    for node in &report.nodes_made_available {
        log::info!("host {host}: node {node} was enrolled again: available");
    }
    for instance in &report.instances_gone {
        log::warn!(
            "host {host}: ironic no longer shows instance {instance} on its node: reported, its claim and node kept"
        );
    }
}

/// Frees the PCI devices deleted instances left allocated (`db::pci::free_lagging`).
async fn free_lagging_devices(
    pool: &Pool,
    clock: &SharedClock,
    compute_node_ids: Vec<ComputeNodeId>,
) -> Result<usize, HostError> {
    let clock = clock.clone();
    Ok(db::run(pool, move |conn| {
        db::pci::free_lagging(conn, &compute_node_ids, clock.now())
    })
    .await?)
}
