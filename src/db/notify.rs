//! Events between the processes of a deployment, over PostgreSQL's LISTEN/NOTIFY: writers
//! send a JSON event on `ringmaster_events` inside their transaction (delivered only if it
//! commits; the triggers of migration 13 send most of them), and each process keeps one
//! connection listening for them (`Listener`).

use diesel::RunQueryDsl;
use diesel::pg::PgConnection;
use diesel::sql_types::Text;

use super::{DbError, Pool, PooledConnection};

/// The channel every event travels on.
pub const CHANNEL: &str = "ringmaster_events";

/// Sends `event` to every listening process when the caller's transaction commits.
pub fn notify(conn: &mut PgConnection, event: &serde_json::Value) -> Result<(), DbError> {
    diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<Text, _>(CHANNEL)
        .bind::<Text, _>(event.to_string())
        .execute(conn)?;
    Ok(())
}

/// A connection listening on one channel.
pub struct Listener {
    conn: PooledConnection,
    channel: &'static str,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Listener")
    }
}

impl Listener {
    /// Takes a connection of `pool` for good and listens on `channel` (one of ours).
    pub fn open(pool: &Pool, channel: &'static str) -> Result<Listener, DbError> {
        let mut conn = pool.get()?;
        diesel::sql_query(format!("LISTEN {channel}")).execute(&mut *conn)?;
        Ok(Listener { conn, channel })
    }

    /// Returns the payloads received since the last call. A trivial query
    /// first makes libpq read what the server has sent. Blocking; an error means the
    /// connection is gone (reopen it).
    pub fn poll(&mut self) -> Result<Vec<String>, DbError> {
        diesel::sql_query("SELECT 1").execute(&mut *self.conn)?;
        let mut events = Vec::new();
        for notification in self.conn.notifications_iter() {
            let notification = notification?;
            if notification.channel == self.channel {
                events.push(notification.payload);
            }
        }
        Ok(events)
    }
}
