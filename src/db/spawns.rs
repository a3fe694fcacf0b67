//! Boots handed from the process that placed them to the process that runs the node's host:
//! a `spawn_requests` row written with the claim, taken (deleted) by the owner. The insert
//! notifies `SPAWN_CHANNEL` with the host's name (migration 14).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text, Uuid as SqlUuid};

use super::DbError;
use crate::domain::identity::{HostName, InstanceUuid, NodeUuid};

/// The channel a new request is announced on; the payload is the host that must take it.
pub const SPAWN_CHANNEL: &str = "ringmaster_spawns";

/// A boot for host `host` to carry out.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct SpawnRequest {
    #[diesel(sql_type = SqlUuid)]
    pub instance_uuid: InstanceUuid,
    #[diesel(sql_type = Text)]
    pub host: HostName,
    #[diesel(sql_type = Text)]
    pub node: NodeUuid,
    #[diesel(sql_type = Integer)]
    pub pci_devices: i32,
}

/// Records `request` (run it in the claim's transaction, so a claim never goes without it).
pub fn request_spawn(conn: &mut PgConnection, request: &SpawnRequest) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO spawn_requests (instance_uuid, host, node, pci_devices)
         VALUES ($1, $2, $3, $4)",
    )
    .bind::<SqlUuid, _>(request.instance_uuid)
    .bind::<Text, _>(&request.host)
    .bind::<Text, _>(&request.node)
    .bind::<Integer, _>(request.pci_devices)
    .execute(conn)?;
    Ok(())
}

/// Takes every request waiting for `host`: they are deleted and returned, oldest first.
pub fn take_spawns(conn: &mut PgConnection, host: &HostName) -> Result<Vec<SpawnRequest>, DbError> {
    let mut taken: Vec<SpawnRequest> = diesel::sql_query(
        "DELETE FROM spawn_requests WHERE host = $1
         RETURNING instance_uuid, host::text AS host, node::text AS node, pci_devices",
    )
    .bind::<Text, _>(host)
    .load(conn)?;
    taken.sort_by_key(|request| request.instance_uuid);
    Ok(taken)
}

/// Drops the request of instance `instance`, if one waits (its build was settled).
pub fn forget_spawn(conn: &mut PgConnection, instance: InstanceUuid) -> Result<(), DbError> {
    diesel::sql_query("DELETE FROM spawn_requests WHERE instance_uuid = $1")
        .bind::<SqlUuid, _>(instance)
        .execute(conn)?;
    Ok(())
}

/// Counts the requests waiting for `host`.
pub fn pending_spawns(conn: &mut PgConnection, host: &HostName) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    Ok(
        super::cached::query("SELECT count(*) AS n FROM spawn_requests WHERE host = $1")
            .bind::<Text, _>(host)
            .get_result::<Count>(conn)?
            .n,
    )
}
