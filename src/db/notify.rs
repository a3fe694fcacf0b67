//! Events between the processes of a deployment, over PostgreSQL's LISTEN/NOTIFY: writers
//! send a JSON event on `ringmaster_events` inside their transaction (delivered only if it
//! commits; the triggers of migration 13 send most of them), and each process keeps one
//! connection listening for them (`Listener`).

use diesel::RunQueryDsl;
use diesel::pg::PgConnection;
use diesel::sql_types::Text;

use super::{DbError, Pool, PooledConnection};
use crate::domain::identity::NodeUuid;

/// The channel every event travels on.
pub const CHANNEL: &str = "ringmaster_events";

/// The channel on which the Ironic listing holder asks the owners of changed nodes in other
/// processes to report them: `{"host": …, "nodes": [uuid, …]}`.
pub const REFRESH_CHANNEL: &str = "ringmaster_refresh";

/// Uuids per refresh notification: a payload stays well under PostgreSQL's 8,000 bytes.
const REFRESH_CHUNK: usize = 150;

/// Asks each host of `by_host` (wherever it runs) to report its nodes listed there, when the
/// caller's transaction commits.
pub fn refresh_nodes(
    conn: &mut PgConnection,
    by_host: &[(String, Vec<NodeUuid>)],
) -> Result<(), DbError> {
    for (host, nodes) in by_host {
        for chunk in nodes.chunks(REFRESH_CHUNK) {
            diesel::sql_query("SELECT pg_notify($1, $2)")
                .bind::<Text, _>(REFRESH_CHANNEL)
                .bind::<Text, _>(serde_json::json!({"host": host, "nodes": chunk}).to_string())
                .execute(conn)?;
        }
    }
    Ok(())
}

/// Sends `event` to every listening process when the caller's transaction commits.
pub fn notify(conn: &mut PgConnection, event: &serde_json::Value) -> Result<(), DbError> {
    diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<Text, _>(CHANNEL)
        .bind::<Text, _>(event.to_string())
        .execute(conn)?;
    Ok(())
}

/// A connection listening on one channel or more.
pub struct Listener {
    conn: PooledConnection,
    channels: &'static [&'static str],
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Listener")
    }
}

impl Listener {
    /// Takes a connection of `pool` for good and listens on `channels` (ours).
    pub fn open(pool: &Pool, channels: &'static [&'static str]) -> Result<Listener, DbError> {
        let mut conn = pool.get()?;
        for channel in channels {
            diesel::sql_query(format!("LISTEN {channel}")).execute(&mut *conn)?;
        }
        Ok(Listener { conn, channels })
    }

    /// Returns the payloads received since the last call, with their channels. A trivial
    /// query first makes libpq read what the server has sent. Blocking; an error means the
    /// connection is gone (reopen it).
    pub fn poll_channels(&mut self) -> Result<Vec<(String, String)>, DbError> {
        diesel::sql_query("SELECT 1").execute(&mut *self.conn)?;
        let mut events = Vec::new();
        for notification in self.conn.notifications_iter() {
            let notification = notification?;
            if self.channels.contains(&notification.channel.as_str()) {
                events.push((notification.channel, notification.payload));
            }
        }
        Ok(events)
    }

    /// Returns the payloads received since the last call.
    pub fn poll(&mut self) -> Result<Vec<String>, DbError> {
        Ok(self
            .poll_channels()?
            .into_iter()
            .map(|(_, payload)| payload)
            .collect())
    }
}
