//! A server's power action (stop, start, reboot): its task_state set where its state allows
//! the action (Nova's `check_instance_state`), then done by the node's host, through Ironic;
//! a host that cannot be told clears the task_state again.

use crate::actors::Actors;
use crate::actors::compute_host::PowerServer;
use crate::db::{self, DbError, Pool};
use crate::domain::compute::server::PowerAction;
use crate::domain::identity::InstanceUuid;

/// Why a power action was not begun.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    #[error("its host {0:?} does not run in this process")]
    HostElsewhere(String),
    /// The server's state does not allow the action (the reason, in Nova's words).
    #[error("{0}")]
    NotNow(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Begins `action` on server `uuid` of `host`; its host carries it out after this returns.
pub async fn begin(
    pool: &Pool,
    actors: &Actors,
    uuid: InstanceUuid,
    host: String,
    action: PowerAction,
) -> Result<(), PowerError> {
    let Some(address) = actors.hosts.get(&host) else {
        return Err(PowerError::HostElsewhere(host));
    };
    let now = actors.clock.now();
    db::transaction(pool, move |conn| {
        db::servers::begin_power(conn, uuid, action, now)
    })
    .await?
    .map_err(PowerError::NotNow)?;
    let pool = pool.clone();
    actix::spawn(async move {
        let done = address
            .send(PowerServer {
                instance: uuid,
                action,
            })
            .await;
        if let Err(lost) = done {
            log::warn!("{} of server {uuid} was not done: {lost}", action.name());
            let now = chrono::Utc::now();
            let cleared = db::transaction(&pool, move |conn| {
                db::servers::end_power(conn, uuid, None, now)
            })
            .await;
            if let Err(error) = cleared {
                log::warn!(
                    "server {uuid}: its task_state stays until its host's next pass: {error}"
                );
            }
        }
    });
    Ok(())
}
