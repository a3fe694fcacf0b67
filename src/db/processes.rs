//! The processes of the deployment (`ringmaster_processes`): each records the ringmaster version
//! it runs when it starts; it is live while its presence connection is open (`db::presence`).
//! Also the question destructive commands ask first: is a host heartbeating?

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use super::presence::{self, APPLICATION_PREFIX};

/// This binary's version, as processes record it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Records that process `holder` started at `now` with this binary's
/// version, and forgets processes that are gone and started over a week ago.
pub fn record_start(
    conn: &mut PgConnection,
    holder: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .unwrap_or_default();
    diesel::sql_query(
        "INSERT INTO ringmaster_processes (holder, version, hostname, pid, started_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (holder) DO UPDATE SET version = excluded.version",
    )
    .bind::<SqlUuid, _>(holder)
    .bind::<Text, _>(VERSION)
    .bind::<Text, _>(hostname)
    .bind::<Integer, _>(i32::try_from(std::process::id()).unwrap_or(i32::MAX))
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    diesel::sql_query(format!(
        "DELETE FROM ringmaster_processes p
          WHERE started_at < $1 - interval '7 days' AND NOT {}",
        presence::open_sql("p", 2, 3)
    ))
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(APPLICATION_PREFIX)
    .bind::<Double, _>(presence::REJOIN_GRACE.as_secs_f64())
    .execute(conn)?;
    Ok(())
}

/// One process of the deployment.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct ProcessRecord {
    #[diesel(sql_type = SqlUuid)]
    pub holder: Uuid,
    #[diesel(sql_type = Text)]
    pub version: String,
    #[diesel(sql_type = Text)]
    pub hostname: String,
    #[diesel(sql_type = Integer)]
    pub pid: i32,
    #[diesel(sql_type = Timestamptz)]
    pub started_at: DateTime<Utc>,
    /// The compute hosts it runs, comma-separated.
    #[diesel(sql_type = Text)]
    pub hosts: String,
}

/// The live processes of the deployment (presence connection open), oldest first.
pub fn live_processes(conn: &mut PgConnection) -> Result<Vec<ProcessRecord>, DbError> {
    Ok(diesel::sql_query(format!(
        "SELECT p.holder, p.version, p.hostname, p.pid, p.started_at,
                COALESCE((SELECT string_agg(s.host, ',' ORDER BY s.host) FROM services s
                           WHERE s.holder = p.holder AND s.deleted = 0), '') AS hosts
           FROM ringmaster_processes p
          WHERE {}
          ORDER BY p.started_at, p.holder",
        presence::open_sql("p", 1, 2)
    ))
    .bind::<Text, _>(APPLICATION_PREFIX)
    .bind::<Double, _>(presence::REJOIN_GRACE.as_secs_f64())
    .load(conn)?)
}

/// The version each host's process records, by host name (hosts whose process recorded none
/// are left out).
pub fn host_versions(conn: &mut PgConnection) -> Result<Vec<(String, String)>, DbError> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        host: String,
        #[diesel(sql_type = Text)]
        version: String,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT s.host, p.version FROM services s JOIN ringmaster_processes p ON p.holder = s.holder
          WHERE s.deleted = 0",
    )
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| (row.host, row.version))
        .collect())
}

/// A compute host whose process is alive (its presence connection is open).
#[derive(Debug, Clone, QueryableByName)]
pub struct LiveHost {
    #[diesel(sql_type = Text)]
    pub host: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub seconds_since_heartbeat: Option<i64>,
}

/// The compute hosts run by a live process (a frozen one included): a deployment is live while
/// there is one. None on a database not migrated yet.
pub fn live_hosts(conn: &mut PgConnection) -> Result<Vec<LiveHost>, DbError> {
    #[derive(QueryableByName)]
    struct Exists {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        exists: bool,
    }
    let migrated = diesel::sql_query(
        "SELECT to_regclass('services') IS NOT NULL AND to_regclass('ringmaster_processes') IS NOT NULL AS exists",
    )
    .get_result::<Exists>(conn)?
    .exists;
    if !migrated {
        return Ok(Vec::new());
    }
    Ok(diesel::sql_query(format!(
        "SELECT s.host,
                floor(extract(epoch FROM now() - s.last_seen_up))::bigint AS seconds_since_heartbeat
           FROM services s
          WHERE s.deleted = 0 AND NOT s.forced_down AND {}
          ORDER BY s.host",
        presence::open_sql("s", 1, 2)
    ))
    .bind::<Text, _>(APPLICATION_PREFIX)
    .bind::<Double, _>(presence::REJOIN_GRACE.as_secs_f64())
    .load(conn)?)
}
