//! Reads the move batches the timeline is made of (`move_batches`, migration 15).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Jsonb, Text, Timestamptz};

use super::DbError;
use crate::domain::timeline::{self, MoveBatch, TimelineEntry};

/// The most batches one timeline reads (entries merge several).
const BATCHES_READ: i64 = 2_000;

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = Timestamptz)]
    moved_at: DateTime<Utc>,
    #[diesel(sql_type = Text)]
    reason: String,
    #[diesel(sql_type = Text)]
    host: String,
    #[diesel(sql_type = BigInt)]
    nodes: i64,
    #[diesel(sql_type = Jsonb)]
    counterparts: serde_json::Value,
}

/// Returns the latest `limit` entries of the timeline, newest first.
pub fn recent_entries(
    conn: &mut PgConnection,
    limit: usize,
) -> Result<Vec<TimelineEntry>, DbError> {
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT moved_at, reason::text AS reason, host::text AS host, nodes, counterparts
           FROM move_batches ORDER BY id DESC LIMIT $1",
    )
    .bind::<BigInt, _>(BATCHES_READ)
    .load(conn)?;
    let batches = rows
        .into_iter()
        .map(|row| MoveBatch {
            moved_at: row.moved_at,
            reason: row.reason,
            host: row.host,
            nodes: row.nodes,
            counterparts: counts(&row.counterparts),
        })
        .collect();
    Ok(timeline::merge(batches, limit))
}

/// Reads `{"cmp-1": 262, …}`; anything else counts as nothing.
fn counts(value: &serde_json::Value) -> BTreeMap<String, i64> {
    value
        .as_object()
        .map(|object| {
            object
                .iter()
                .filter_map(|(host, n)| Some((host.clone(), n.as_i64()?)))
                .collect()
        })
        .unwrap_or_default()
}
