//! `ComputeHost`: one compute service. It heartbeats its service row, fences itself when its
//! lease lapses (it stops every write until a heartbeat succeeds again), runs the
//! resource-tracker pass over the nodes it owns, and spawns and destroys instances. Every
//! write it makes for a node is conditional on `host = me AND owner_epoch = e`; zero rows
//! means the node is no longer its own, and it drops the node instead of retrying.
//!
//! Database work runs on the blocking pool (`db::run`); handlers that touch the actor's state
//! are `AtomicResponse`s, so one host handles one message at a time.

pub use crate::config::HostSettings;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::ironic::{Deploy, Destroy, Ironic};
use super::registry::{CreateProvider, DeleteOrphan, Registry};
use crate::db::compute_nodes::{OrphanOutcome, ProviderOutcome};
use crate::db::instances::BuildOutcome;
use crate::db::presence::Presence;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::error::ErrorKind;
use crate::domain::identity::OwnerEpoch;
use crate::domain::instance::VmState;
use crate::domain::node::{ComputeNode, IronicNode, ProvisionState};
use crate::domain::ring::stable_hash;

/// Says why a host could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "host {0} is fenced: its lease lapsed, so it writes nothing until a heartbeat succeeds"
    )]
    Fenced(String),
    #[error("host {host} does not own node {node}")]
    NotOwner { host: String, node: String },
    #[error("the build of instance {0} was ended meanwhile (failed, timed out or deleted)")]
    BuildEnded(Uuid),
    #[error("ironic: {0}")]
    Ironic(String),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("actor unavailable: {0}")]
    Mailbox(#[from] MailboxError),
}

impl HostError {
    /// Classifies this error for the HTTP layer.
    pub fn kind(&self) -> ErrorKind {
        match self {
            HostError::Fenced(_) | HostError::Mailbox(_) => ErrorKind::Unavailable,
            HostError::NotOwner { .. } | HostError::Ironic(_) | HostError::BuildEnded(_) => {
                ErrorKind::Conflict
            }
            HostError::Db(error) => error.kind(),
        }
    }
}

/// One compute service.
pub struct ComputeHost {
    name: String,
    pool: Pool,
    clock: SharedClock,
    settings: HostSettings,
    registry: Addr<Registry>,
    ironic: Addr<Ironic>,
    presence: Arc<Presence>,
    /// When this actor started: builds on its nodes older than this have nobody working on
    /// them (their spawn died with the process or actor that ran it).
    started_at: DateTime<Utc>,
    last_heartbeat_ok: Option<DateTime<Utc>>,
    /// The tracker change counter at this host's last complete pass: while it stays there,
    /// a pass has nothing to compare.
    seen_changes: Option<i64>,
}

impl ComputeHost {
    /// Returns the actor of host `name`, registered to this process (`HostDirectory::start`);
    /// it heartbeats once started.
    pub fn new(
        name: String,
        pool: Pool,
        clock: SharedClock,
        settings: HostSettings,
        registry: Addr<Registry>,
        ironic: Addr<Ironic>,
        presence: Arc<Presence>,
    ) -> ComputeHost {
        let started_at = clock.now();
        ComputeHost {
            name,
            pool,
            clock,
            settings,
            registry,
            ironic,
            presence,
            started_at,
            last_heartbeat_ok: None,
            seen_changes: None,
        }
    }

    fn lease_holds(&self) -> bool {
        self.settings
            .liveness
            .lease_holds(self.last_heartbeat_ok, self.clock.now())
    }

    /// What a build on this host needs.
    fn build(&self) -> Build {
        Build {
            pool: self.pool.clone(),
            clock: self.clock.clone(),
            ironic: self.ironic.clone(),
            host: self.name.clone(),
        }
    }

    fn require_lease(&self) -> Result<(), HostError> {
        if self.lease_holds() {
            Ok(())
        } else {
            Err(HostError::Fenced(self.name.clone()))
        }
    }
}

impl Actor for ComputeHost {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.notify(Heartbeat);
        if !self.settings.report_interval.is_zero() {
            ctx.run_interval(self.settings.report_interval, |_, ctx| {
                ctx.notify(Heartbeat)
            });
        }
        let interval = self.settings.update_resources_interval;
        if !interval.is_zero() {
            // Each host's passes start at its own offset within the interval (from its name's
            // stable hash), so the hosts of a process do not all pass at the same moment.
            let spread = u64::try_from(interval.as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            let offset = Duration::from_millis(stable_hash(self.name.as_bytes()) % spread);
            ctx.run_later(offset, move |_, ctx| {
                ctx.notify(UpdateAvailableResource);
                ctx.run_interval(interval, |_, ctx| ctx.notify(UpdateAvailableResource));
            });
        }
        log::info!("compute host {} started", self.name);
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        log::info!("compute host {} stopped", self.name);
    }
}

/// Bumps the service row; a success renews the lease from the time it was sent.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, HostError>")]
pub struct Heartbeat;

impl Handler<Heartbeat> for ComputeHost {
    type Result = AtomicResponse<Self, Result<bool, HostError>>;

    fn handle(&mut self, _: Heartbeat, _: &mut Self::Context) -> Self::Result {
        let sent_at = self.clock.now();
        let pool = self.pool.clone();
        let host = self.name.clone();
        let presence = self.presence.clone();
        AtomicResponse::new(Box::pin(
            async move {
                db::run(&pool.clone(), move |conn| {
                    presence.ensure(&pool)?;
                    db::hosts::heartbeat(conn, &host, presence.holder(), sent_at)
                })
                .await
            }
            .into_actor(self)
            .map(move |result, actor, ctx| {
                let recorded = result?;
                if recorded {
                    actor.last_heartbeat_ok = Some(sent_at);
                } else {
                    log::error!(
                        "host {} is now run by another process (or no longer registered): this \
                         process stops running it",
                        actor.name
                    );
                    ctx.stop();
                }
                Ok(recorded)
            }),
        ))
    }
}

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
    pub builds_finished: Vec<Uuid>,
    /// Builds nobody works on any more (timed out, left by a dead process or a moved node)
    /// that ended in error, their claims released.
    pub builds_failed: Vec<Uuid>,
    /// Nodes enrolled in Ironic again while their compute node lived, made available.
    pub nodes_made_available: Vec<String>,
    /// Nodes found as they were: nothing written for them.
    pub unchanged: usize,
    /// Whether the pass found nothing changed anywhere since its last one, and so read none of
    /// its nodes.
    pub skipped: bool,
    /// The tracker change counter the pass started from.
    pub changes_seen: i64,
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
#[rtype(result = "Result<Vec<db::node_reports::OwnedNode>, HostError>")]
pub struct ReadOwnedNodes;

impl Handler<ReadOwnedNodes> for ComputeHost {
    type Result = ResponseFuture<Result<Vec<db::node_reports::OwnedNode>, HostError>>;

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
    pub read: Vec<db::node_reports::OwnedNode>,
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
    pub nodes: Vec<String>,
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
        only: Option<Vec<String>>,
        read: Option<Vec<db::node_reports::OwnedNode>>,
    ) -> AtomicResponse<Self, Result<TrackerReport, HostError>> {
        if let Err(fenced) = self.require_lease() {
            return AtomicResponse::new(Box::pin(fut::ready(Err(fenced))));
        }
        let pass = TrackerPass {
            pool: self.pool.clone(),
            host: self.name.clone(),
            clock: self.clock.clone(),
            registry: self.registry.clone(),
            ironic: self.ironic.clone(),
            settings: self.settings,
            last_ok: self.last_heartbeat_ok,
            started_at: self.started_at,
            seen_changes: self.seen_changes,
            only,
            read,
        };
        let full = pass.only.is_none() && pass.read.is_none();
        AtomicResponse::new(Box::pin(tracker_pass(pass).into_actor(self).map(
            move |report, actor, ctx| {
                if let Ok(report) = &report {
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
    host: String,
    clock: SharedClock,
    registry: Addr<Registry>,
    ironic: Addr<Ironic>,
    settings: HostSettings,
    last_ok: Option<DateTime<Utc>>,
    started_at: DateTime<Utc>,
    seen_changes: Option<i64>,
    only: Option<Vec<String>>,
    /// A read taken earlier, used instead of reading now.
    read: Option<Vec<db::node_reports::OwnedNode>>,
}

async fn tracker_pass(pass: TrackerPass) -> Result<TrackerReport, HostError> {
    let TrackerPass {
        pool,
        host,
        clock,
        registry,
        ironic,
        settings,
        last_ok,
        started_at,
        seen_changes,
        only,
        read,
    } = pass;
    // Ironic's listing first: a pass that cannot list its nodes writes nothing, and takes no
    // node for gone.
    ironic
        .send(super::ironic::CheckListing)
        .await?
        .map_err(HostError::Ironic)?;
    let liveness = settings.liveness;
    // The counter first: a change after it is seen by the next pass.
    let skip_when = if only.is_none() && read.is_none() {
        seen_changes
    } else {
        None
    };
    let (changes_seen, pending_spawns, owned) = {
        let host = host.clone();
        db::run(&pool, move |conn| {
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
        .await?
    };
    let skipped = owned.is_none();
    let owned = owned.unwrap_or_default();
    let mut report = TrackerReport::default();
    let mut changes = PassChanges::default();
    let owned_ids: Vec<i64> = owned.iter().map(|node| node.compute_node.id).collect();
    for node in owned {
        let compute_node = &node.compute_node;
        let Some(ironic) = node.ironic.clone() else {
            let outcome = registry
                .send(DeleteOrphan {
                    node: compute_node.node,
                    host: compute_node.host.clone(),
                    epoch: compute_node.owner_epoch,
                })
                .await??;
            match outcome {
                OrphanOutcome::Deleted => {
                    report.orphans_deleted.push(compute_node.node.to_string())
                }
                OrphanOutcome::KeptWithAllocations => {
                    log::warn!(
                        "node {} is gone from ironic but its provider holds allocations or its PCI devices are in use: compute node {} kept",
                        compute_node.node,
                        compute_node.uuid
                    );
                    report.orphans_kept.push(compute_node.node.to_string());
                }
                OrphanOutcome::NotOwner => report.lost.push(compute_node.node.to_string()),
                OrphanOutcome::StillInIronic => {}
            }
            continue;
        };
        if !node.has_provider {
            let outcome = registry
                .send(CreateProvider {
                    uuid: compute_node.uuid,
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
                    continue;
                }
                Ok(_) => {}
                Err(DbError::Conflict(reason)) => {
                    log::error!("node {}: {reason}; not reporting it", compute_node.node);
                    continue;
                }
                Err(other) => return Err(other.into()),
            }
        }
        changes.add(node, ironic, settings.pci_devices_per_node);
    }
    report.unchanged = changes.unchanged;
    report.skipped = skipped;
    report.changes_seen = changes_seen;
    report.pending_spawns = pending_spawns;
    let pass_clock = clock.clone();
    let host_name = host.clone();
    let build_timeout = chrono::Duration::from_std(settings.instance_build_timeout)
        .unwrap_or(chrono::Duration::MAX);
    let written = db::run(&pool, move |conn| {
        let now = pass_clock.now();
        let cutoff = started_at.max(now - build_timeout);
        let stale = db::instances::stale_builds(conn, &host, cutoff)?;
        if changes.is_empty() && stale.is_empty() {
            // Nothing changed: the pass writes nothing.
            return Ok(PassWrites::default());
        }
        db::in_transaction(conn, |conn| {
            let written = changes.write(conn, &host, &stale, settings.pci_devices_per_node, now)?;
            // Commit only while the lease still holds: a host that lapsed mid-pass writes nothing.
            if !liveness.lease_holds(last_ok, pass_clock.now()) {
                return Err(DbError::LeaseLapsed);
            }
            Ok(written)
        })
    })
    .await?;
    report.reported = written.reported;
    report.lost.extend(written.lost);
    report.builds_finished = written.finished;
    report.builds_failed = written.failed;
    report.nodes_made_available = written.made_available;
    for instance in &report.builds_finished {
        log::info!(
            "host {host_name}: instance {instance} deployed while its node moved here: active"
        );
    }
    for instance in &report.builds_failed {
        log::warn!(
            "host {host_name}: build of instance {instance} made no progress: error, claim released"
        );
    }
    for node in &report.nodes_made_available {
        log::info!("host {host_name}: node {node} was enrolled again: available");
    }
    if !skipped {
        report.devices_freed = free_lagging_devices(&pool, &clock, owned_ids).await?;
    }
    Ok(report)
}

/// What the writing transaction of a tracker pass did.
#[derive(Debug, Default)]
struct PassWrites {
    reported: usize,
    lost: Vec<String>,
    finished: Vec<Uuid>,
    failed: Vec<Uuid>,
    made_available: Vec<String>,
}

/// What a tracker pass found changed on the nodes it owns: only these are written.
#[derive(Debug, Default)]
struct PassChanges {
    /// Every node with a change: (compute node, epoch read at).
    nodes: Vec<ComputeNode>,
    /// Inventories that differ from the provider's: (provider, inventory).
    inventories: Vec<(i64, Uuid, crate::domain::node::NodeInventory)>,
    /// Nodes short of their simulated PCI devices.
    devices: Vec<i64>,
    /// Nodes with a build Ironic finished.
    builds: Vec<(i64, String)>,
    /// Nodes Ironic has back in `enroll`.
    enrolled: Vec<(i64, Uuid)>,
    unchanged: usize,
}

impl PassChanges {
    /// Compares one owned node with what Ironic says and keeps what must be written.
    fn add(&mut self, node: db::node_reports::OwnedNode, mut ironic: IronicNode, devices: u32) {
        let id = node.compute_node.id;
        let mut changed = false;
        // A node enrolled in Ironic again while its compute node lived: this host manages
        // it, so it makes it available (as a first claim does), keeping its identity.
        if ironic.provision_state == ProvisionState::Enroll {
            self.enrolled.push((id, ironic.uuid));
            ironic.provision_state = ProvisionState::Available;
            changed = true;
        }
        let inventory = ironic.inventory(node.allocated);
        if !node.reports(&inventory) {
            self.inventories
                .push((id, node.compute_node.uuid, inventory));
            changed = true;
        }
        if node.devices < i64::from(devices) {
            self.devices.push(id);
            changed = true;
        }
        if node.build_deployed {
            self.builds.push((id, node.compute_node.node.to_string()));
            changed = true;
        }
        if changed {
            self.nodes.push(node.compute_node);
        } else {
            self.unchanged += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Writes the changes of the nodes `host` still owns, and settles the `stale` builds on
    /// them, in a handful of statements whatever their number.
    fn write(
        &self,
        conn: &mut db::Connection,
        host: &str,
        stale: &[db::instances::StaleBuild],
        devices: u32,
        now: DateTime<Utc>,
    ) -> Result<PassWrites, DbError> {
        let mut to_hold: Vec<(i64, OwnerEpoch)> = self
            .nodes
            .iter()
            .map(|node| (node.id, node.owner_epoch))
            .chain(
                stale
                    .iter()
                    .map(|build| (build.compute_node_id, OwnerEpoch(build.owner_epoch))),
            )
            .collect();
        to_hold.sort_unstable();
        to_hold.dedup();
        let held: std::collections::HashSet<i64> =
            db::compute_nodes::hold_owned(conn, host, &to_hold)?
                .into_iter()
                .collect();
        let mut written = PassWrites {
            lost: self
                .nodes
                .iter()
                .filter(|node| !held.contains(&node.id))
                .map(|node| node.node.to_string())
                .collect(),
            ..PassWrites::default()
        };
        let inventories: Vec<(Uuid, crate::domain::node::NodeInventory)> = self
            .inventories
            .iter()
            .filter(|(id, _, _)| held.contains(id))
            .map(|(_, provider, inventory)| (*provider, inventory.clone()))
            .collect();
        db::node_reports::write_inventories(conn, &inventories, now)?;
        written.reported = inventories.len();
        let short: Vec<i64> = self
            .devices
            .iter()
            .copied()
            .filter(|id| held.contains(id))
            .collect();
        db::pci::sync_devices(conn, &short, devices, now)?;
        let builds: Vec<String> = self
            .builds
            .iter()
            .filter(|(id, _)| held.contains(id))
            .map(|(_, node)| node.clone())
            .collect();
        written.finished = db::node_reports::finish_deployed_builds(conn, &builds, now)?;
        let available: Vec<Uuid> = self
            .enrolled
            .iter()
            .filter(|(id, _)| held.contains(id))
            .map(|(_, uuid)| *uuid)
            .collect();
        db::ironic::make_available(conn, &available, now)?;
        written.made_available = available.iter().map(Uuid::to_string).collect();
        // Builds nobody works on any more end in error and give their node back; they are
        // settled under the node's row lock like every other write of the pass.
        for build in stale
            .iter()
            .filter(|build| held.contains(&build.compute_node_id))
        {
            let reason = "build made no progress: timed out, or its spawn died with its process";
            if db::instances::settle_build(conn, build.instance, reason, host, now)?
                == BuildOutcome::Failed
            {
                written.failed.push(build.instance);
            }
        }
        Ok(written)
    }
}

/// Frees, device by device by key, the PCI devices still allocated to instances that are
/// deleted or archived (a free may lag behind the delete). A device that no longer matches
/// is reported and skipped: the next pass reloads.
async fn free_lagging_devices(
    pool: &Pool,
    clock: &SharedClock,
    compute_node_ids: Vec<i64>,
) -> Result<usize, HostError> {
    let clock = clock.clone();
    Ok(db::run(pool, move |conn| {
        let stale = db::pci::stale_allocations(conn, &compute_node_ids)?;
        let mut freed = 0;
        for device in stale {
            match db::pci::update_device(
                conn,
                device.compute_node_id,
                &device.address,
                "available",
                None,
                clock.now(),
            ) {
                Ok(()) => freed += 1,
                Err(DbError::NotFound(what)) => {
                    log::warn!("{what} vanished before it was freed; reloading")
                }
                Err(other) => return Err(other),
            }
        }
        Ok(freed)
    })
    .await?)
}

/// Tells a host it now owns these nodes: it runs a tracker pass over them.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct NodesAssigned {
    pub nodes: Vec<ComputeNode>,
}

impl Handler<NodesAssigned> for ComputeHost {
    type Result = ();

    fn handle(&mut self, message: NodesAssigned, ctx: &mut Self::Context) {
        log::info!(
            "host {} was assigned {} nodes",
            self.name,
            message.nodes.len()
        );
        // A pass over just those nodes: the host's other nodes did not change.
        ctx.notify(RefreshNodes {
            nodes: message
                .nodes
                .iter()
                .map(|node| node.node.to_string())
                .collect(),
        });
    }
}

/// Deploys instance `instance` on node `node` through Ironic.
#[derive(Debug, Message)]
#[rtype(result = "Result<VmState, HostError>")]
pub struct Spawn {
    pub instance: Uuid,
    pub node: String,
    /// PCI devices the instance asks for, claimed on the node before the deploy.
    pub pci_devices: u32,
}

impl Handler<Spawn> for ComputeHost {
    type Result = AtomicResponse<Self, Result<VmState, HostError>>;

    fn handle(&mut self, message: Spawn, _: &mut Self::Context) -> Self::Result {
        if let Err(fenced) = self.require_lease() {
            return AtomicResponse::new(Box::pin(fut::ready(Err(fenced))));
        }
        let build = self.build();
        AtomicResponse::new(Box::pin(
            async move { build.deploy(message).await }.into_actor(self),
        ))
    }
}

/// Takes the boots other processes placed on this host (`db::spawns`) and carries them out
/// one by one; a build that fails before it could settle itself ends in error, its claim
/// released. A fenced host takes nothing (the requests wait).
#[derive(Debug, Message)]
#[rtype(result = "Result<usize, HostError>")]
pub struct TakeSpawns;

impl Handler<TakeSpawns> for ComputeHost {
    type Result = AtomicResponse<Self, Result<usize, HostError>>;

    fn handle(&mut self, _: TakeSpawns, _: &mut Self::Context) -> Self::Result {
        if let Err(fenced) = self.require_lease() {
            log::debug!(
                "host {}: fenced, leaves its boot requests waiting",
                self.name
            );
            return AtomicResponse::new(Box::pin(fut::ready(Err(fenced))));
        }
        let build = self.build();
        AtomicResponse::new(Box::pin(
            async move {
                let host = build.host.clone();
                let taken = db::run(&build.pool, move |conn| {
                    db::spawns::take_spawns(conn, &host)
                })
                .await?;
                for request in &taken {
                    log::info!(
                        "host {}: takes the boot of instance {} on node {} placed by another process",
                        build.host,
                        request.instance_uuid,
                        request.node
                    );
                    let spawn = Spawn {
                        instance: request.instance_uuid,
                        node: request.node.clone(),
                        pci_devices: u32::try_from(request.pci_devices).unwrap_or(0),
                    };
                    if let Err(failure) = build.deploy(spawn).await {
                        log::warn!(
                            "host {}: boot of instance {} failed: {failure}",
                            build.host,
                            request.instance_uuid
                        );
                        build.settle_failed(request.instance_uuid, &failure).await;
                    }
                }
                Ok(taken.len())
            }
            .into_actor(self),
        ))
    }
}

/// What a build needs of its host.
#[derive(Clone)]
struct Build {
    pool: Pool,
    clock: SharedClock,
    ironic: Addr<Ironic>,
    host: String,
}

impl Build {
    /// Deploys `spawn` on its node: fenced by the node's owner and epoch, and only while the
    /// build is still on. A deploy Ironic refuses settles the build (error, claim released).
    async fn deploy(&self, spawn: Spawn) -> Result<VmState, HostError> {
        let Build {
            pool,
            clock,
            ironic,
            host,
        } = self.clone();
        let owned = require_owned(&pool, &host, &spawn.node).await?;
        let instance = spawn.instance;
        // Fenced, and only while the build is still on: a build settled meanwhile (its claim
        // released) is not deployed.
        let now = clock.now();
        let count = i32::try_from(spawn.pci_devices).unwrap_or(i32::MAX);
        let node_id = owned.compute_node_id;
        let claimed = owned
            .write(&pool, move |conn| {
                if !db::instances::lock_building(conn, instance)? {
                    return Ok(false);
                }
                if count > 0 {
                    db::pci::claim_devices(conn, node_id, instance, count, now)?;
                }
                Ok(true)
            })
            .await;
        let deployed = match claimed {
            Ok(true) => ironic
                .send(Deploy {
                    node: owned.ironic,
                    instance,
                })
                .await?
                .map_err(HostError::from),
            Ok(false) => return Err(HostError::BuildEnded(instance)),
            Err(failure) => Err(failure),
        };
        match deployed {
            Ok(()) => {
                let now = clock.now();
                let activated = owned
                    .write(&pool, move |conn| {
                        db::instances::activate_build(conn, instance, now)
                    })
                    .await?;
                if activated {
                    return Ok(VmState::Active);
                }
                // Settled while Ironic deployed it: undo the deploy, nothing holds it.
                if let Err(error) = ironic.send(Destroy { node: owned.ironic }).await? {
                    log::warn!(
                        "host {host}: instance {instance} was deployed after its build ended; \
                         tearing it down failed: {error}"
                    );
                }
                Err(HostError::BuildEnded(instance))
            }
            // Ownership lost on the way: the new owner acts for the node now.
            Err(lost @ HostError::NotOwner { .. }) => Err(lost),
            Err(failure) => {
                let text = failure.to_string();
                let now = clock.now();
                owned
                    .write(&pool, move |conn| {
                        db::instances::settle_build(conn, instance, &text, &host, now)
                    })
                    .await?;
                Ok(VmState::Error)
            }
        }
    }

    /// Settles a build whose deploy failed before it could settle itself (the node moved, the
    /// host fenced): error, claim released — unless Ironic deployed it after all.
    async fn settle_failed(&self, instance: Uuid, failure: &HostError) {
        if matches!(failure, HostError::BuildEnded(_)) {
            return;
        }
        let (reason, host, now) = (failure.to_string(), self.host.clone(), self.clock.now());
        let settled = db::transaction(&self.pool, move |conn| {
            db::instances::settle_build(conn, instance, &reason, &host, now)
        })
        .await;
        if let Err(error) = settled {
            log::warn!("build of instance {instance} could not be settled yet: {error}");
        }
    }
}

/// Destroys instance `instance` through Ironic, then frees its allocation and soft-deletes
/// it. A destroy that Ironic refuses (a locked node) leaves the instance in error, allocated.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), HostError>")]
pub struct DestroyInstance {
    pub instance: Uuid,
    /// Leave the PCI devices for the next tracker pass, as a busy host does (fault injection).
    pub defer_pci_free: bool,
}

impl Handler<DestroyInstance> for ComputeHost {
    type Result = AtomicResponse<Self, Result<(), HostError>>;

    fn handle(&mut self, message: DestroyInstance, _: &mut Self::Context) -> Self::Result {
        if let Err(fenced) = self.require_lease() {
            return AtomicResponse::new(Box::pin(fut::ready(Err(fenced))));
        }
        let (pool, clock, ironic, host) = (
            self.pool.clone(),
            self.clock.clone(),
            self.ironic.clone(),
            self.name.clone(),
        );
        AtomicResponse::new(Box::pin(
            async move {
                let instance = message.instance;
                let found = db::run(&pool, move |conn| {
                    db::instances::get_instance(conn, instance)
                })
                .await?;
                let owned = match found.node.as_deref() {
                    Some(node) => Some(require_owned(&pool, &host, node).await?),
                    None => None,
                };
                if let Some(owned) = &owned
                    && let Err(failure) = ironic.send(Destroy { node: owned.ironic }).await?
                {
                    let text = failure.to_string();
                    let now = clock.now();
                    let fault_text = text.clone();
                    owned
                        .write(&pool, move |conn| {
                            db::instances::add_fault(conn, instance, &fault_text, &host, now)?;
                            db::instances::set_state(conn, instance, VmState::Error, None, now)
                        })
                        .await?;
                    return Err(HostError::Ironic(text));
                }
                let now = clock.now();
                write_for(owned.as_ref(), &pool, move |conn| {
                    db::placement::allocations::delete_consumer(conn, instance)?;
                    db::instances::soft_delete_instance(conn, instance, now)
                })
                .await?;
                // Freeing the devices is its own step, as in Nova: it may lag behind the delete
                // (this host busy or down), and the tracker pass finishes it then.
                if message.defer_pci_free {
                    return Ok(());
                }
                let now = clock.now();
                let freed = write_for(owned.as_ref(), &pool, move |conn| {
                    db::pci::free_instance_devices(conn, instance, now)
                })
                .await;
                if let Err(error) = freed {
                    log::warn!("pci devices of instance {instance} not freed yet: {error}");
                }
                Ok(())
            }
            .into_actor(self),
        ))
    }
}

/// A node this host owned when it was looked up: its writes go through `write`, which
/// re-checks the ownership in the writing transaction (invariant 4).
struct Owned {
    host: String,
    node: String,
    ironic: Uuid,
    compute_node_id: i64,
    epoch: OwnerEpoch,
}

impl Owned {
    /// Runs `work` in one transaction that holds the node at the epoch it was found at;
    /// `NotOwner` with nothing written when the node has moved since.
    async fn write<T, F>(&self, pool: &Pool, work: F) -> Result<T, HostError>
    where
        F: FnOnce(&mut db::Connection) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let (id, host, epoch) = (self.compute_node_id, self.host.clone(), self.epoch);
        let written = db::transaction(pool, move |conn| {
            if !db::compute_nodes::hold_one(conn, &host, id, epoch)? {
                return Ok(None);
            }
            work(conn).map(Some)
        })
        .await?;
        written.ok_or_else(|| HostError::NotOwner {
            host: self.host.clone(),
            node: self.node.clone(),
        })
    }
}

/// Runs `work` fenced by `owned` when the instance has a node, in a plain transaction when not.
async fn write_for<T, F>(owned: Option<&Owned>, pool: &Pool, work: F) -> Result<T, HostError>
where
    F: FnOnce(&mut db::Connection) -> Result<T, DbError> + Send + 'static,
    T: Send + 'static,
{
    match owned {
        Some(owned) => owned.write(pool, work).await,
        None => Ok(db::transaction(pool, work).await?),
    }
}

/// Returns `node` if `host` owns it now.
async fn require_owned(pool: &Pool, host: &str, node: &str) -> Result<Owned, HostError> {
    let lookup = node.to_owned();
    let compute_node = db::run(pool, move |conn| {
        db::compute_nodes::find_compute_node(conn, &lookup)
    })
    .await?;
    let not_owner = || HostError::NotOwner {
        host: host.to_owned(),
        node: node.to_owned(),
    };
    match compute_node {
        Some(compute_node) if compute_node.host == host => Ok(Owned {
            host: host.to_owned(),
            node: node.to_owned(),
            ironic: compute_node.node.uuid(),
            compute_node_id: compute_node.id,
            epoch: compute_node.owner_epoch,
        }),
        _ => Err(not_owner()),
    }
}

/// Stops the host at once: no more heartbeats, no clean-up (a crash).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Crash;

impl Handler<Crash> for ComputeHost {
    type Result = ();

    fn handle(&mut self, _: Crash, ctx: &mut Self::Context) {
        log::warn!("compute host {} crashed", self.name);
        ctx.stop();
    }
}

/// Asks whether the host's lease holds.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct IsFenced;

impl Handler<IsFenced> for ComputeHost {
    type Result = bool;

    fn handle(&mut self, _: IsFenced, _: &mut Self::Context) -> bool {
        !self.lease_holds()
    }
}
