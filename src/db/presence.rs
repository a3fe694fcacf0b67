//! A process's presence in the deployment: one connection it keeps open whose
//! `application_name` is `ringmaster <holder>`. PostgreSQL drops it the moment the process
//! dies (SIGKILL included), so another process can tell "the holder of this host is gone" from
//! "the holder is alive" without waiting for a down time (`hosts::register_host`). A frozen
//! process keeps its connection, and so its hosts, until they are down.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use diesel::sql_types::Text;
use uuid::Uuid;

use super::{DbError, Pool, PooledConnection, ping};

/// What a presence connection's `application_name` starts with; the holder follows.
pub const APPLICATION_PREFIX: &str = "ringmaster ";

/// SQL saying that the process holding row `alias` (its `holder`) counts as present on this
/// database: its presence connection is open on this server, or this server became the
/// deployment's primary less than `$grace_param` seconds (a double) ago — after a failover or
/// a restart the processes are still reconnecting, and a presence missing then says nothing.
/// Parameter `$param` is the presence prefix.
pub fn open_sql(alias: &str, param: u8, grace_param: u8) -> String {
    format!(
        "({} OR {})",
        connected_sql(alias, param),
        new_server_sql(grace_param)
    )
}

/// SQL saying that the presence connection of the process holding row `alias` is open on this
/// server (no grace); parameter `$param` is the presence prefix.
pub fn connected_sql(alias: &str, param: u8) -> String {
    format!(
        "EXISTS (SELECT 1 FROM pg_stat_activity a
                  WHERE a.datname = current_database()
                    AND a.application_name = ${param} || {alias}.holder::text)"
    )
}

/// SQL saying that the first process reached this server as the deployment's primary less than
/// `$grace_param` seconds ago (`ringmaster_servers`).
pub fn new_server_sql(grace_param: u8) -> String {
    format!(
        "COALESCE((SELECT r.first_seen FROM ringmaster_servers r
                    WHERE r.started_at = pg_postmaster_start_time()), '-infinity')
           > now() - make_interval(secs => ${grace_param})"
    )
}

/// How long after a change of server a missing presence says nothing, where no host down time
/// applies (who is live, for the CLI's checks and the process list).
pub const REJOIN_GRACE: Duration = Duration::from_secs(60);

/// Records the server `conn` is on as reached by the deployment: at `now()`, or at
/// '-infinity' when it is the first server the deployment ever reached. Idempotent.
fn record_server(conn: &mut PooledConnection) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO ringmaster_servers (started_at, first_seen)
         SELECT pg_postmaster_start_time(),
                CASE WHEN EXISTS (SELECT 1 FROM ringmaster_servers) THEN now()
                     ELSE '-infinity' END
         ON CONFLICT (started_at) DO NOTHING",
    )
    .execute(&mut **conn)?;
    Ok(())
}

/// Records the server `conn` is on as one no other process of the deployment reached before
/// it: the embedded server this process has just started on its own data directory. Only its
/// own socket reaches that server, and whoever used it before went down with the server that
/// ran there before (a clean stop or a crash), so a holder without a presence is gone at once;
/// the rejoin grace of a failover (`new_server_sql`) does not apply. Idempotent.
pub fn record_private_server(conn: &mut diesel::PgConnection) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO ringmaster_servers (started_at, first_seen)
         VALUES (pg_postmaster_start_time(), '-infinity')
         ON CONFLICT (started_at) DO UPDATE SET first_seen = EXCLUDED.first_seen",
    )
    .execute(conn)?;
    Ok(())
}

/// How often the presence connection is checked, at most.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The presence of one process: its holder token and the connection that shows it.
#[derive(Debug)]
pub struct Presence {
    holder: Uuid,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    conn: Option<PooledConnection>,
    checked_at: Option<Instant>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Held")
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl Presence {
    /// Returns the presence of process `holder`; it connects on first `ensure`.
    pub fn new(holder: Uuid) -> Presence {
        Presence {
            holder,
            held: Mutex::new(Held::default()),
        }
    }

    /// The process's holder token.
    pub fn holder(&self) -> Uuid {
        self.holder
    }

    /// Closes the presence: the process's hosts are free for another process at once. Its
    /// connection goes back to the pool without the holder's name. Blocking.
    pub fn release(&self) {
        let conn = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .conn
            .take();
        if let Some(mut conn) = conn {
            let reset = diesel::sql_query("SELECT set_config('application_name', '', false)")
                .execute(&mut *conn);
            if let Err(error) = reset {
                log::debug!("presence of process {} not reset: {error}", self.holder);
            }
        }
    }

    /// Makes sure the presence connection is open (reconnecting when the server went away),
    /// checking it at most once a second. Blocking.
    pub fn ensure(&self, pool: &Pool) -> Result<(), DbError> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let recent = held
            .checked_at
            .is_some_and(|at| at.elapsed() < CHECK_INTERVAL);
        if let Some(conn) = held.conn.as_mut() {
            if recent || ping(conn).is_ok() {
                if !recent {
                    held.checked_at = Some(Instant::now());
                }
                return Ok(());
            }
            log::warn!(
                "presence connection of process {} lost; reconnecting",
                self.holder
            );
            held.conn = None;
        }
        let mut conn = pool.get()?;
        diesel::sql_query("SELECT set_config('application_name', $1, false)")
            .bind::<Text, _>(format!("{APPLICATION_PREFIX}{}", self.holder))
            .execute(&mut *conn)?;
        record_server(&mut conn)?;
        held.conn = Some(conn);
        held.checked_at = Some(Instant::now());
        Ok(())
    }
}
