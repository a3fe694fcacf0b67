//! Builds and destroys on a `ComputeHost`: `Spawn` (a boot this process placed), `TakeSpawns`
//! (boots other processes placed here), `DestroyInstance`; every write for a node fenced by
//! its owner and epoch (`Owned`).

use actix::prelude::*;
use uuid::Uuid;

use super::{ComputeHost, HostError};
use crate::actors::node_source::{DeployRequest, Fence, NodeSource, SourceError};
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::identity::OwnerEpoch;
use crate::domain::instance::VmState;
use crate::domain::mirror::ListedNode;

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
pub(super) struct Build {
    pub(super) pool: Pool,
    pub(super) clock: SharedClock,
    pub(super) node_source: NodeSource,
    pub(super) host: String,
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
                    .destroy(owned.ironic, instance, &owned.fence(&pool))
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
            log::warn!(
                "host {}: build of instance {instance} could not be settled yet: {error}",
                self.host
            );
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
        let (pool, clock, node_source, host) = (
            self.pool.clone(),
            self.clock.clone(),
            self.node_source.clone(),
            self.name.clone(),
        );
        let this_host = self.name.clone();
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
                let torn_down = match &owned {
                    Some(owned) => node_source
                        .destroy(owned.ironic, instance, &owned.fence(&pool))
                        .await
                        .map_err(|error| owned.source_error(error)),
                    None => Ok(None),
                };
                let shown = match torn_down {
                    Ok(shown) => shown,
                    Err(lost @ HostError::NotOwner { .. }) => return Err(lost),
                    Err(failure) => {
                        let Some(owned) = &owned else {
                            return Err(failure);
                        };
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
                };
                let now = clock.now();
                write_for(owned.as_ref(), &pool, move |conn| {
                    mirror(conn, shown.as_ref(), now)?;
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
                    log::warn!(
                        "host {this_host}: pci devices of instance {instance} not freed yet: {error}"
                    );
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

impl Owned {
    /// The fence a node source checks before each write it sends for this node: the node still
    /// this host's at the epoch it was found at.
    fn fence(&self, pool: &Pool) -> Fence {
        let (pool, host, id, epoch) = (
            pool.clone(),
            self.host.clone(),
            self.compute_node_id,
            self.epoch,
        );
        std::sync::Arc::new(move || {
            let (pool, host) = (pool.clone(), host.clone());
            Box::pin(async move {
                db::transaction(&pool, move |conn| {
                    db::compute_nodes::hold_one(conn, &host, id, epoch)
                })
                .await
                .unwrap_or(false)
            })
        })
    }

    /// A node source's refusal as the host says it.
    fn source_error(&self, error: SourceError) -> HostError {
        match error {
            SourceError::Fenced(_) => HostError::NotOwner {
                host: self.host.clone(),
                node: self.node.clone(),
            },
            SourceError::Mailbox(mailbox) => HostError::Mailbox(mailbox),
            SourceError::Failed(reason) => HostError::Ironic(reason),
        }
    }
}

/// What a deploy of `instance` on `owned`'s node asks Ironic for: its display name, and the
/// node's disk as the root size.
async fn deploy_request(
    pool: &Pool,
    owned: &Owned,
    instance: Uuid,
) -> Result<DeployRequest, HostError> {
    let node = owned.ironic;
    let (display_name, root_gb) = db::run(pool, move |conn| {
        let found = db::instances::get_instance(conn, instance)?;
        let root_gb = db::ironic::local_gb(conn, node)?;
        Ok((found.name.unwrap_or_else(|| instance.to_string()), root_gb))
    })
    .await?;
    Ok(DeployRequest {
        node: owned.ironic,
        instance,
        display_name,
        root_gb,
    })
}

/// Writes the node as its source showed it after a deploy or a tear-down into the mirror.
fn mirror(
    conn: &mut db::Connection,
    shown: Option<&ListedNode>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    match shown {
        Some(node) => db::ironic_mirror::refresh_node(conn, node, now),
        None => Ok(()),
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
