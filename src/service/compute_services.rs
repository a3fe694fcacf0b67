//! Compute services (os-services): disabled or enabled, forced down or up, deleted. A change
//! that takes nodes from a host has them move at once, not at the rebalancer's next tick.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::actors::Actors;
use crate::actors::rebalancer::RebalanceNow;
use crate::db::services::{ServiceDeletion, ServiceId};
use crate::db::{self, DbError, Pool};
use crate::domain::compute::server::{ServiceChange, ServiceRecord};

/// Which service a change is for.
#[derive(Debug, Clone)]
pub enum Named {
    Uuid(Uuid),
    /// The compute service of this host (the pre-2.53 actions).
    Host(String),
}

/// Applies `change` to the service `named`; `None` when there is none.
pub async fn update(
    pool: &Pool,
    actors: &Actors,
    named: Named,
    change: ServiceChange,
    now: DateTime<Utc>,
) -> Result<Option<ServiceRecord>, DbError> {
    let updated = db::transaction(pool, move |conn| {
        let uuid = match named {
            Named::Uuid(uuid) => uuid,
            Named::Host(host) => match db::services::list_services(conn, Some(&host))?.first() {
                Some(found) => found.uuid,
                None => return Ok(None),
            },
        };
        db::services::update_service(conn, uuid, &change, now)
    })
    .await?;
    if updated.is_some() {
        // Forced down or disabled: its nodes move now.
        actors.rebalancer.do_send(RebalanceNow);
    }
    Ok(updated)
}

/// Deletes `service` unless it hosts instances; its nodes, ownerless then, move at once.
pub async fn delete(
    pool: &Pool,
    actors: &Actors,
    service: ServiceId,
    now: DateTime<Utc>,
) -> Result<ServiceDeletion, DbError> {
    let outcome = db::transaction(pool, move |conn| {
        db::services::delete_service(conn, service, now)
    })
    .await?;
    if outcome == ServiceDeletion::Deleted {
        actors.rebalancer.do_send(RebalanceNow);
    }
    Ok(outcome)
}
