//! Builds on a `ComputeHost`: `Spawn` (a boot this process placed), `TakeSpawns` (boots other
//! processes placed here), `SettleBuilds` (those a database outage cut); every write for a
//! node fenced by its owner and epoch (`owned::Owned`).

use actix::prelude::*;

use super::owned::{Owned, require_owned};
use super::{ComputeHost, HostError};
use crate::actors::node_source::{Current, DeployRequest, NodeSource};
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::identity::{HostName, InstanceUuid, NodeUuid};
use crate::domain::instance::VmState;
use crate::domain::mirror::ListedNode;

/// Deploys instance `instance` on node `node` through Ironic.
#[derive(Debug, Message)]
#[rtype(result = "Result<VmState, HostError>")]
pub struct Spawn {
    pub instance: InstanceUuid,
    pub node: NodeUuid,
    /// PCI devices the instance asks for, claimed on the node before the deploy.
    pub pci_devices: u32,
}

impl Handler<Spawn> for ComputeHost {
    type Result = AtomicResponse<Self, Result<VmState, HostError>>;

    fn handle(&mut self, message: Spawn, _: &mut Self::Context) -> Self::Result {
        if let Err(fenced) = self.require_lease() {
            // The scheduler settles it; should the database be away, this host does later.
            self.note_unsettled(message.instance, &fenced);
            return AtomicResponse::new(Box::pin(fut::ready(Err(fenced))));
        }
        let build = self.build();
        let instance = message.instance;
        AtomicResponse::new(Box::pin(
            async move { build.deploy(message).await }
                .into_actor(self)
                .map(move |result, actor, _| {
                    if let Err(failure) = &result {
                        actor.note_unsettled(instance, failure);
                    }
                    result
                }),
        ))
    }
}

impl ComputeHost {
    /// Notes a build that failed before it could be settled (a build settled meanwhile
    /// needs nothing): `SettleBuilds` settles it once the database answers.
    fn note_unsettled(&mut self, instance: InstanceUuid, failure: &HostError) {
        if !matches!(failure, HostError::BuildEnded(_)) {
            self.unsettled
                .insert(instance, format!("the build did not finish: {failure}"));
        }
    }
}

/// Settles the builds this host could not settle when they failed (the database went away
/// mid-build): each as Ironic shows its node — active when Ironic deployed it, else error
/// with its claim released — fenced by the node's owner and epoch. A build whose node moved
/// is its new owner's; one whose node Ironic is still working on waits for the next round.
/// Sent after each heartbeat that succeeds while some are left.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(super) struct SettleBuilds;

impl Handler<SettleBuilds> for ComputeHost {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: SettleBuilds, _: &mut Self::Context) -> Self::Result {
        if self.unsettled.is_empty() || self.require_lease().is_err() {
            return AtomicResponse::new(Box::pin(fut::ready(())));
        }
        let pending: Vec<(InstanceUuid, String)> = self.unsettled.clone().into_iter().collect();
        let build = self.build();
        AtomicResponse::new(Box::pin(
            async move {
                let mut done = Vec::new();
                for (instance, reason) in pending {
                    match build.settle_left(instance, &reason).await {
                        Ok(true) => done.push(instance),
                        Ok(false) => {}
                        Err(error) => {
                            log::debug!(
                                "host {}: build of instance {instance} not settled yet: {error}",
                                build.host
                            );
                            break;
                        }
                    }
                }
                done
            }
            .into_actor(self)
            .map(|done, actor, _| {
                for instance in done {
                    actor.unsettled.remove(&instance);
                }
            }),
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
                let mut left = Vec::new();
                for request in &taken {
                    log::info!(
                        "host {}: takes the boot of instance {} on node {} placed by another process",
                        build.host,
                        request.instance_uuid,
                        request.node
                    );
                    let spawn = Spawn {
                        instance: request.instance_uuid,
                        node: request.node,
                        pci_devices: u32::try_from(request.pci_devices).unwrap_or(0),
                    };
                    if let Err(failure) = build.deploy(spawn).await {
                        log::warn!(
                            "host {}: boot of instance {} failed: {failure}",
                            build.host,
                            request.instance_uuid
                        );
                        if !build.settle_failed(request.instance_uuid, &failure).await {
                            left.push((request.instance_uuid, failure));
                        }
                    }
                }
                Ok((taken.len(), left))
            }
            .into_actor(self)
            .map(|taken: Result<_, HostError>, actor, _| {
                let (count, left) = taken?;
                for (instance, failure) in left {
                    actor.note_unsettled(instance, &failure);
                }
                Ok(count)
            }),
        ))
    }
}

/// What a build needs of its host.
#[derive(Clone)]
pub(super) struct Build {
    pub(super) pool: Pool,
    pub(super) clock: SharedClock,
    pub(super) node_source: NodeSource,
    pub(super) host: HostName,
    pub(super) settings: crate::config::HostSettings,
    pub(super) neighbours: super::Neighbours,
}

impl Build {
    /// Deploys `spawn` on its node: fenced by the node's owner and epoch, and only while the
    /// build is still on. A deploy Ironic refuses settles the build (error, claim released).
    async fn deploy(&self, spawn: Spawn) -> Result<VmState, HostError> {
        let Build {
            pool,
            clock,
            node_source,
            host,
            ..
        } = self.clone();
        let owned = require_owned(&pool, &host, spawn.node).await?;
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
            Ok(true) => {
                let request = deploy_request(&pool, &owned, instance).await?;
                node_source
                    .deploy(&request, &owned.fence(&pool))
                    .await
                    .map_err(|error| owned.source_error(error))
            }
            Ok(false) => return Err(HostError::BuildEnded(instance)),
            Err(failure) => Err(failure),
        };
        match deployed {
            Ok(shown) => {
                let now = clock.now();
                let activated = owned
                    .write(&pool, move |conn| {
                        mirror(conn, shown.as_ref(), now)?;
                        db::instances::activate_build(conn, instance, now)
                    })
                    .await?;
                if activated {
                    return Ok(VmState::Active);
                }
                // Settled while Ironic deployed it: undo the deploy, nothing holds it.
                if let Err(error) = node_source
                    .destroy(owned.node, instance, &owned.fence(&pool))
                    .await
                {
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
                log::warn!(
                    "host {host}: deploy of instance {instance} on node {} failed: {failure}",
                    owned.node
                );
                self.retry(&owned, instance, &failure).await
            }
        }
    }

    /// After a deploy of `instance` failed on `owned`'s node: tried again on an alternate when
    /// one is left and free (the build goes on: `Building`), else settled (error).
    async fn retry(
        &self,
        owned: &Owned,
        instance: InstanceUuid,
        failure: &HostError,
    ) -> Result<VmState, HostError> {
        let (text, host, now) = (failure.to_string(), self.host.clone(), self.clock.now());
        let cooling_after = self.settings.cooling_after(now);
        let retry = owned
            .write(&self.pool, move |conn| {
                db::builds::retry_or_settle(conn, instance, &text, &host, now, cooling_after)
            })
            .await?;
        match retry {
            db::builds::Retry::Rescheduled(next) => {
                log::info!(
                    "instance {instance}: build tried again on node {} (host {})",
                    next.node,
                    next.host
                );
                self.hand_over(&next.host);
                Ok(VmState::Building)
            }
            db::builds::Retry::Settled(db::instances::BuildOutcome::Activated) => {
                Ok(VmState::Active)
            }
            db::builds::Retry::Settled(_) => Ok(VmState::Error),
        }
    }

    /// Wakes `host` to take the boot request the retry wrote, directly when it runs in this
    /// process (a host elsewhere is woken through the relay; this one is too, and finds the
    /// request taken then). The request itself was written with the claim's move: a crash
    /// before the host takes it loses nothing.
    fn hand_over(&self, host: &HostName) {
        let local = self.neighbours.upgrade().and_then(|hosts| {
            let hosts = hosts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            hosts.get(host.as_str()).cloned()
        });
        if let Some(address) = local {
            address.do_send(TakeSpawns);
        }
    }

    /// Settles a build whose deploy failed before it could settle itself (the node moved, the
    /// host fenced): error, claim released — unless Ironic deployed it after all. `false` when
    /// the settle could not be written.
    async fn settle_failed(&self, instance: InstanceUuid, failure: &HostError) -> bool {
        if matches!(failure, HostError::BuildEnded(_)) {
            return true;
        }
        let (reason, host, now) = (failure.to_string(), self.host.clone(), self.clock.now());
        let settled = db::transaction(&self.pool, move |conn| {
            db::instances::settle_build(conn, instance, &reason, &host, now)
        })
        .await;
        if let Err(error) = settled {
            log::warn!(
                "host {}: build of instance {instance} could not be settled yet: {error}",
                self.host
            );
            return false;
        }
        true
    }

    /// Settles build `instance`, left unsettled for `reason`, if it is still building on a
    /// node this host owns: `Ok(true)` when nothing is left to do, `Ok(false)` when Ironic is
    /// still working on its node (or cannot say), an error when the database does not answer.
    async fn settle_left(&self, instance: InstanceUuid, reason: &str) -> Result<bool, HostError> {
        let found = db::run(&self.pool, move |conn| {
            db::instances::find_any_instance(conn, instance)
        })
        .await?;
        let Some(node) = found
            .filter(|found| found.vm_state == VmState::Building)
            .and_then(|found| found.node)
        else {
            return Ok(true);
        };
        let owned = match require_owned(&self.pool, &self.host, node).await {
            Ok(owned) => owned,
            // Its node moved: the new owner settles it (a build older than the move).
            Err(HostError::NotOwner { .. }) => return Ok(true),
            Err(other) => return Err(other),
        };
        let shown = match self.node_source.current(owned.node).await {
            Ok(Current::AtRest(shown)) => shown,
            Ok(Current::Busy(state)) => {
                log::info!(
                    "host {}: build of instance {instance} waits for ironic node {} ({state})",
                    self.host,
                    owned.node
                );
                return Ok(false);
            }
            Err(error) => {
                log::debug!(
                    "host {}: ironic cannot show node {node}: {error}",
                    self.host
                );
                return Ok(false);
            }
        };
        let (reason, host, now) = (reason.to_owned(), self.host.clone(), self.clock.now());
        let settled = owned
            .write(&self.pool, move |conn| {
                mirror(conn, shown.as_deref(), now)?;
                db::instances::settle_build(conn, instance, &reason, &host, now)
            })
            .await;
        match settled {
            Ok(outcome) => {
                log::warn!(
                    "host {}: build of instance {instance} left by a database outage settled: \
                     {outcome:?}",
                    self.host
                );
                Ok(true)
            }
            Err(HostError::NotOwner { .. }) => Ok(true),
            Err(other) => Err(other),
        }
    }
}

/// What a deploy of `instance` on `owned`'s node asks Ironic for: its display name, and the
/// node's disk as the root size; for a server of the Compute API, its flavor's disks,
/// capabilities and traits, its project and user, and its config drive.
pub(super) async fn deploy_request(
    pool: &Pool,
    owned: &Owned,
    instance: InstanceUuid,
) -> Result<DeployRequest, HostError> {
    let node = owned.node;
    let (display_name, root_gb, server) = db::run(pool, move |conn| {
        let found = db::instances::get_instance(conn, instance)?;
        let root_gb = db::ironic::local_gb(conn, node.uuid())?;
        let server = db::servers::get_server(conn, instance)?;
        Ok((
            found.name.unwrap_or_else(|| instance.to_string()),
            root_gb,
            server,
        ))
    })
    .await?;
    let booted = server
        .as_ref()
        .and_then(|server| Some((server, server.flavor.as_ref()?.snapshot()?)));
    let (root_gb, server) = match booted {
        Some((server, flavor)) => (
            flavor.disk,
            Some(crate::domain::compute::deploy::server_deploy(
                server, flavor,
            )),
        ),
        None => (root_gb, None),
    };
    Ok(DeployRequest {
        node: owned.node,
        instance,
        display_name,
        root_gb,
        server,
    })
}

/// Writes the node as its source showed it after a deploy or a tear-down into the mirror.
pub(super) fn mirror(
    conn: &mut db::Connection,
    shown: Option<&ListedNode>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    match shown {
        Some(node) => db::ironic_mirror::refresh_node(conn, node, now),
        None => Ok(()),
    }
}
