//! Servers: create (one, or `min_count`..`max_count`: the first `min_count` claimed together
//! or not at all, each one beyond while nodes are free; a server no node takes is kept
//! unplaced, in error), boot one for the admin API and message scripts, and delete (an
//! unplaced server at once, a placed one by its host, which frees its claim).

use uuid::Uuid;

use crate::actors::Actors;
use crate::actors::compute_host::{DestroyInstance, HostError};
use crate::actors::scheduler::{Boot, BootError, BootTogether};
use crate::db::{self, DbError, Pool};
use crate::domain::boot::{BootRequest, Destination};
use crate::domain::compute::server::names;
use crate::domain::identity::InstanceUuid;
use crate::domain::instance::Instance;

/// Why a use case on servers did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("no key pair {0} of the user")]
    NoKeyPair(String),
    #[error("compute host {0} could not be found")]
    NoDestination(String),
    #[error("the scheduler is unavailable")]
    SchedulerUnavailable,
    #[error("the server could not be scheduled now")]
    NotScheduled,
    #[error("host {host} of server {uuid} does not run in this process")]
    HostElsewhere { uuid: InstanceUuid, host: String },
    #[error("the compute host is unavailable")]
    HostUnavailable,
    /// The host did not do it (a racing delete that got there first is `NotFound`).
    #[error("server {uuid}: {error}")]
    Host {
        uuid: InstanceUuid,
        error: HostError,
    },
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Who asks for servers.
#[derive(Debug, Clone)]
pub struct Requester {
    pub project: String,
    pub user: String,
}

/// A create: `max_count` servers named from `name`, of which `min_count` must all be placed
/// (`request.destination`: the host and node an admin asked for, checked to exist).
#[derive(Debug, Clone)]
pub struct CreateServers {
    pub by: Requester,
    pub name: String,
    pub min_count: u32,
    pub max_count: u32,
    pub request: BootRequest,
    /// The user's key pair for the config drive.
    pub key_name: Option<String>,
}

/// Creates the servers of `create`; their uuids, the first first. Servers are kept even when
/// no node takes them (unplaced, in error).
pub async fn create(
    pool: &Pool,
    actors: &Actors,
    mut create: CreateServers,
) -> Result<Vec<InstanceUuid>, ServerError> {
    if let Some(name) = create.key_name.clone() {
        let key = public_key(pool, create.by.user.clone(), name.clone()).await?;
        if let Some(server) = &mut create.request.server {
            server.key_data = Some(key);
            server.key_name = Some(name);
        }
    }
    check_destination(pool, &create.request.destination).await?;
    let named: Vec<(InstanceUuid, String)> = names(&create.name, create.max_count)
        .into_iter()
        .map(|name| (InstanceUuid(Uuid::new_v4()), name))
        .collect();
    let uuids = named.iter().map(|(uuid, _)| *uuid).collect();
    let together = usize::try_from(create.min_count).unwrap_or(1);
    let (together, beyond) = named.split_at(together.min(named.len()));
    if !boot_together(actors, &create, together).await? {
        for (uuid, name) in &named {
            keep_unplaced(pool, actors, &create, *uuid, name.clone()).await?;
        }
    } else {
        for (uuid, name) in beyond {
            if !boot_one(actors, &create, *uuid, name.clone()).await? {
                break;
            }
        }
    }
    Ok(uuids)
}

async fn public_key(pool: &Pool, user: String, name: String) -> Result<String, ServerError> {
    let shown = name.clone();
    db::run(pool, move |conn| {
        db::keypairs::get_keypair(conn, &user, &name)
    })
    .await?
    .map(|pair| pair.public_key)
    .ok_or(ServerError::NoKeyPair(shown))
}

/// `NoDestination` naming the host or node asked for that is not there.
async fn check_destination(pool: &Pool, asked: &Destination) -> Result<(), ServerError> {
    if asked.host.is_none() && asked.node.is_none() {
        return Ok(());
    }
    let (host, node) = (asked.host.clone(), asked.node);
    let missing = db::run(pool, move |conn| {
        db::hosts::missing_destination(conn, host.as_deref(), node)
    })
    .await?;
    match missing {
        Some(missing) => Err(ServerError::NoDestination(missing)),
        None => Ok(()),
    }
}

/// The boot of one server of a create, answered once its node is claimed.
fn boot_of(create: &CreateServers, uuid: InstanceUuid, name: String) -> Boot {
    Boot {
        uuid: Some(uuid),
        name,
        project: create.by.project.clone(),
        user: create.by.user.clone(),
        request: create.request.clone(),
        answer_when_claimed: true,
    }
}

/// Boots one server of a create; `false` when no node could take it.
async fn boot_one(
    actors: &Actors,
    create: &CreateServers,
    uuid: InstanceUuid,
    name: String,
) -> Result<bool, ServerError> {
    let booted = boot(actors, boot_of(create, uuid, name)).await;
    placed(uuid, booted.map(|_| ()))
}

/// Boots every one of `servers` or none (one when there is one); `false` when the free nodes
/// do not take them all (no claim kept).
async fn boot_together(
    actors: &Actors,
    create: &CreateServers,
    servers: &[(InstanceUuid, String)],
) -> Result<bool, ServerError> {
    if let [(uuid, name)] = servers {
        return boot_one(actors, create, *uuid, name.clone()).await;
    }
    let boots = servers
        .iter()
        .map(|(uuid, name)| boot_of(create, *uuid, name.clone()))
        .collect();
    let booted = actors
        .scheduler
        .send(BootTogether { boots })
        .await
        .map_err(|_| ServerError::SchedulerUnavailable)?;
    let first = servers
        .first()
        .map_or(InstanceUuid(Uuid::nil()), |(uuid, _)| *uuid);
    placed(first, booted.map(|_| ()))
}

/// What a boot's answer says of its placement: `true` placed, `false` no valid host.
fn placed(uuid: InstanceUuid, booted: Result<(), BootError>) -> Result<bool, ServerError> {
    match booted {
        Ok(()) => Ok(true),
        Err(BootError::NoValidHost { .. }) => Ok(false),
        Err(BootError::Db(error)) => Err(error.into()),
        Err(BootError::Mailbox(_)) => Err(ServerError::SchedulerUnavailable),
        Err(other) => {
            log::warn!("boot of server {uuid} failed: {other}");
            Err(ServerError::NotScheduled)
        }
    }
}

/// Records a server no node took: in error with Nova's "No valid host", claiming nothing.
async fn keep_unplaced(
    pool: &Pool,
    actors: &Actors,
    create: &CreateServers,
    uuid: InstanceUuid,
    name: String,
) -> Result<(), ServerError> {
    let (project, user) = (create.by.project.clone(), create.by.user.clone());
    let asked = create.request.server.clone().unwrap_or_default();
    let now = actors.clock.now();
    Ok(db::transaction(pool, move |conn| {
        db::servers::create_unplaced(conn, uuid, &name, &project, &user, &asked, now)
    })
    .await?)
}

/// Boots one instance as `boot` asks, through the scheduler: the instance as placed.
pub async fn boot(actors: &Actors, boot: Boot) -> Result<Instance, BootError> {
    actors.scheduler.send(boot).await?
}

/// Deletes server `uuid` on `host` (`None`: never placed): an unplaced one at once, a placed
/// one by its host, which destroys it on its node and frees its claim.
pub async fn delete(
    pool: &Pool,
    actors: &Actors,
    uuid: InstanceUuid,
    host: Option<String>,
) -> Result<(), ServerError> {
    let now = actors.clock.now();
    let unplaced = db::transaction(pool, move |conn| {
        db::servers::delete_unplaced(conn, uuid, now)
    })
    .await?;
    if unplaced {
        return Ok(());
    }
    destroy(actors, uuid, host.unwrap_or_default()).await
}

/// Has `host` destroy instance `uuid` (its node cleaned, its claim freed, the row deleted).
pub async fn destroy(actors: &Actors, uuid: InstanceUuid, host: String) -> Result<(), ServerError> {
    let Some(address) = actors.hosts.get(&host) else {
        return Err(ServerError::HostElsewhere { uuid, host });
    };
    let destroy = DestroyInstance {
        instance: uuid,
        defer_pci_free: false,
    };
    address
        .send(destroy)
        .await
        .map_err(|_| ServerError::HostUnavailable)?
        .map_err(|error| ServerError::Host { uuid, error })
}
