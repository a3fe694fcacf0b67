//! `Scheduler`: picks a free node of the requested class among the nodes of up hosts that run
//! in this process, claims its allocation and creates the instance in one transaction (the
//! capacity check inside it), then hands the instance to the owning `ComputeHost`.

use actix::prelude::*;
use uuid::Uuid;

use super::HostDirectory;
use super::compute_host::{HostError, Spawn};
use crate::db::instances::NewInstance;
use crate::db::placement::Consumer;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::error::ErrorKind;
use crate::domain::host::Liveness;
use crate::domain::instance::Instance;
use crate::domain::node::custom_resource_class;

/// How many candidate nodes one boot tries before it gives up.
const CANDIDATES: i32 = 8;

/// Says why a boot failed.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("no free node of resource class {0} on an up host")]
    NoValidHost(String),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("compute host unavailable: {0}")]
    Mailbox(#[from] MailboxError),
}

impl BootError {
    /// Classifies this error for the HTTP layer.
    pub fn kind(&self) -> ErrorKind {
        match self {
            BootError::NoValidHost(_) => ErrorKind::Conflict,
            BootError::Host(error) => error.kind(),
            BootError::Db(error) => error.kind(),
            BootError::Mailbox(_) => ErrorKind::Unavailable,
        }
    }
}

/// The scheduler actor.
pub struct Scheduler {
    pool: Pool,
    clock: SharedClock,
    liveness: Liveness,
    hosts: HostDirectory,
}

impl Scheduler {
    /// Returns a scheduler placing onto the hosts of `hosts`.
    pub fn new(
        pool: Pool,
        clock: SharedClock,
        liveness: Liveness,
        hosts: HostDirectory,
    ) -> Scheduler {
        Scheduler {
            pool,
            clock,
            liveness,
            hosts,
        }
    }
}

impl Actor for Scheduler {
    type Context = Context<Self>;
}

/// Boots an instance of `resource_class` (an Ironic resource class such as `baremetal`).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Instance, BootError>")]
pub struct Boot {
    pub name: String,
    pub resource_class: String,
    pub project: String,
    pub user: String,
    /// PCI devices the instance asks for.
    pub pci_devices: u32,
}

impl Handler<Boot> for Scheduler {
    type Result = ResponseFuture<Result<Instance, BootError>>;

    fn handle(&mut self, message: Boot, _: &mut Self::Context) -> Self::Result {
        let (pool, clock, liveness, hosts) = (
            self.pool.clone(),
            self.clock.clone(),
            self.liveness,
            self.hosts.clone(),
        );
        Box::pin(async move {
            let local_hosts = hosts.names();
            let now = clock.now();
            let instance = Uuid::new_v4();
            let request = message.clone();
            let placed = db::run(&pool, move |conn| {
                let up: Vec<String> = db::hosts::list_hosts(conn)?
                    .into_iter()
                    .filter(|host| {
                        !host.disabled
                            && host.is_up(&liveness, now)
                            && local_hosts.contains(&host.name)
                    })
                    .map(|host| host.name)
                    .collect();
                let placement_class = custom_resource_class(&request.resource_class);
                let candidates = db::instances::free_nodes(
                    conn,
                    &request.resource_class,
                    &placement_class,
                    &up,
                    CANDIDATES,
                )?;
                for candidate in candidates {
                    let new = NewInstance {
                        uuid: instance,
                        name: request.name.clone(),
                        project_id: request.project.clone(),
                        user_id: request.user.clone(),
                        host: candidate.host.clone(),
                        node: candidate.node.clone(),
                        resource_class: request.resource_class.clone(),
                    };
                    let consumer = Consumer {
                        uuid: instance,
                        project: request.project.clone(),
                        user: request.user.clone(),
                    };
                    let claimed = diesel::Connection::transaction(conn, |conn| {
                        db::placement::claim_allocation(
                            conn,
                            &consumer,
                            candidate.provider,
                            &placement_class,
                            1,
                            now,
                        )?;
                        db::instances::create_instance(conn, &new, now)
                    });
                    match claimed {
                        Ok(()) => return Ok(Some(candidate)),
                        Err(DbError::Conflict(reason)) => {
                            log::info!("node {} taken meanwhile: {reason}", candidate.node)
                        }
                        Err(other) => return Err(other),
                    }
                }
                Ok(None)
            })
            .await?;
            let Some(placed) = placed else {
                return Err(BootError::NoValidHost(message.resource_class));
            };
            let Some(host) = hosts.get(&placed.host) else {
                return Err(BootError::Host(HostError::Fenced(placed.host)));
            };
            host.send(Spawn {
                instance,
                node: placed.node,
                pci_devices: message.pci_devices,
            })
            .await??;
            Ok(db::run(&pool, move |conn| {
                db::instances::get_instance(conn, instance)
            })
            .await?)
        })
    }
}
