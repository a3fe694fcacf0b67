//! Compute services (`services` rows of the compute binary): registration, heartbeats,
//! drain, and the host list with node counts.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use super::DbError;
use super::models::ServiceRow;
use super::schema::{compute_nodes, services};
use crate::domain::host::{COMPUTE_BINARY, DRAINING_REASON, Host};

/// Lists the live compute hosts, ordered by name.
pub fn list_hosts(conn: &mut PgConnection) -> Result<Vec<Host>, DbError> {
    let rows = services::table
        .filter(services::binary.eq(COMPUTE_BINARY))
        .filter(services::deleted.eq(0))
        .order(services::host.asc())
        .select(ServiceRow::as_select())
        .load(conn)?;
    Ok(rows.into_iter().map(Host::from).collect())
}

/// Returns how many live compute nodes each host owns.
pub fn node_counts(conn: &mut PgConnection) -> Result<Vec<(String, i64)>, DbError> {
    Ok(compute_nodes::table
        .filter(compute_nodes::deleted.eq(0))
        .group_by(compute_nodes::host)
        .select((compute_nodes::host, diesel::dsl::count_star()))
        .load(conn)?)
}

/// Registers compute host `host` unless it exists; a registered host is enabled again and
/// no longer forced down.
pub fn register_host(
    conn: &mut PgConnection,
    host: &str,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO services (uuid, host, \"binary\", topic, created_at)
         VALUES (gen_random_uuid(), $1, $2, 'compute', $3)
         ON CONFLICT (host, \"binary\", deleted) DO UPDATE
            SET disabled = FALSE, disabled_reason = NULL, forced_down = FALSE, updated_at = $3",
    )
    .bind::<diesel::sql_types::Text, _>(host)
    .bind::<diesel::sql_types::Text, _>(COMPUTE_BINARY)
    .bind::<diesel::sql_types::Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

/// Records a heartbeat of `host` at `now`; `false` when the host is not registered.
pub fn heartbeat(conn: &mut PgConnection, host: &str, now: DateTime<Utc>) -> Result<bool, DbError> {
    let updated = diesel::update(
        services::table
            .filter(services::host.eq(host))
            .filter(services::binary.eq(COMPUTE_BINARY))
            .filter(services::deleted.eq(0)),
    )
    .set((
        services::last_seen_up.eq(now),
        services::report_count.eq(services::report_count + 1),
        services::updated_at.eq(now),
    ))
    .execute(conn)?;
    Ok(updated == 1)
}

/// Marks `host` as draining: disabled, so that it receives no nodes and its nodes leave.
pub fn drain_host(conn: &mut PgConnection, host: &str, now: DateTime<Utc>) -> Result<(), DbError> {
    let updated = diesel::update(
        services::table
            .filter(services::host.eq(host))
            .filter(services::binary.eq(COMPUTE_BINARY))
            .filter(services::deleted.eq(0)),
    )
    .set((
        services::disabled.eq(true),
        services::disabled_reason.eq(DRAINING_REASON),
        services::updated_at.eq(now),
    ))
    .execute(conn)?;
    if updated == 0 {
        return Err(DbError::NotFound(format!("host {host}")));
    }
    Ok(())
}

/// Returns the database server's clock.
pub fn database_now(conn: &mut PgConnection) -> Result<DateTime<Utc>, DbError> {
    Ok(
        diesel::select(diesel::dsl::now.into_sql::<diesel::sql_types::Timestamptz>())
            .get_result(conn)?,
    )
}
