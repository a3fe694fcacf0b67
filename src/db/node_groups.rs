//! The conductor groups and shards no live host serves, as the rebalancer's leader last found
//! them (`unserved_node_groups`): written by the leader under its lease when they change, read
//! by any process (`GET /api/v1/ring`, the dashboard).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz};
use serde::Serialize;

use super::DbError;
use super::leases::{self, LeaseToken};
use crate::domain::selection::UnservedGroup;

/// One group no live host serves, and since when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, QueryableByName)]
pub struct UnservedRow {
    /// `""`: Ironic's default group.
    #[diesel(sql_type = Text)]
    pub conductor_group: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub shard: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub nodes: i64,
    #[diesel(sql_type = Timestamptz)]
    pub since: DateTime<Utc>,
}

/// The groups no live host serves, by group and shard.
pub fn unserved(conn: &mut PgConnection) -> Result<Vec<UnservedRow>, DbError> {
    Ok(super::cached::query(
        "SELECT conductor_group::text AS conductor_group, shard::text AS shard, nodes, since
           FROM unserved_node_groups ORDER BY conductor_group, shard NULLS FIRST",
    )
    .load(conn)?)
}

/// Replaces the unserved groups with `groups` under the rebalancer lease `token` (a group
/// still unserved keeps its `since`; run it in a transaction, which holds the lease); returns the groups as they were, or `None` when they
/// were the same (nothing written).
pub fn replace_unserved(
    conn: &mut PgConnection,
    token: LeaseToken,
    groups: &[UnservedGroup],
    now: DateTime<Utc>,
) -> Result<Option<Vec<UnservedRow>>, DbError> {
    leases::hold(conn, leases::REBALANCER, token, now)?;
    let before = unserved(conn)?;
    let same = before.len() == groups.len()
        && before.iter().zip(groups).all(|(row, group)| {
            row.conductor_group == group.conductor_group
                && row.shard == group.shard
                && usize::try_from(row.nodes).is_ok_and(|nodes| nodes == group.nodes)
        });
    if same {
        return Ok(None);
    }
    let document: Vec<serde_json::Value> = groups
        .iter()
        .map(|group| {
            serde_json::json!({
                "conductor_group": group.conductor_group,
                "shard": group.shard,
                "nodes": group.nodes,
            })
        })
        .collect();
    super::cached::query(
        "WITH gone AS (DELETE FROM unserved_node_groups RETURNING conductor_group, shard, since)
         INSERT INTO unserved_node_groups (conductor_group, shard, nodes, since)
         SELECT r.conductor_group, r.shard, r.nodes,
                COALESCE((SELECT min(g.since) FROM gone g
                           WHERE g.conductor_group = r.conductor_group
                             AND g.shard IS NOT DISTINCT FROM r.shard), $2)
           FROM jsonb_to_recordset($1) AS r(conductor_group text, shard text, nodes bigint)",
    )
    .bind::<Jsonb, _>(serde_json::Value::Array(document))
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(Some(before))
}
