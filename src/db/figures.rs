//! The deployment's figures for the metrics, read in one go (a few aggregate queries) by the
//! figures task every few seconds once the metrics have been scraped, never per scrape.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use super::DbError;
use crate::domain::host::Host;

/// What the metrics show of the whole deployment.
#[derive(Debug, Clone, Default)]
pub struct DeploymentFigures {
    /// When they were read (by the process's clock).
    pub read_at: Option<DateTime<Utc>>,
    pub hosts: Vec<Host>,
    /// Live compute nodes per host.
    pub nodes_by_host: Vec<(String, i64)>,
    /// Ironic nodes per provision state.
    pub nodes_by_state: Vec<(String, i64)>,
    /// Live instances per vm state.
    pub instances_by_state: Vec<(String, i64)>,
    /// The conductor groups and shards no live host serves.
    pub unserved: Vec<super::node_groups::UnservedRow>,
    /// The last audit of the invariants (run less often than the rest is read).
    pub audit: Option<AuditFigure>,
}

/// How many invariant violations the last audit found, and when it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditFigure {
    pub violations: usize,
    pub read_at: DateTime<Utc>,
}

/// Audits every invariant (`db::audit`) for the metrics.
pub fn audit(conn: &mut PgConnection, now: DateTime<Utc>) -> Result<AuditFigure, DbError> {
    Ok(AuditFigure {
        violations: super::audit::check_invariants(conn)?.len(),
        read_at: now,
    })
}

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = BigInt)]
    count: i64,
}

fn counted(conn: &mut PgConnection, sql: &str) -> Result<Vec<(String, i64)>, DbError> {
    let rows: Vec<Counted> = diesel::sql_query(sql).load(conn)?;
    Ok(rows.into_iter().map(|row| (row.key, row.count)).collect())
}

/// Reads the deployment's figures (run it in one snapshot, `db::read_snapshot`, for figures
/// that agree); node counts per host come through `counts` (counted again only when ownership
/// changed).
pub fn read(
    conn: &mut PgConnection,
    counts: &super::hosts::NodeCountCache,
    now: DateTime<Utc>,
) -> Result<DeploymentFigures, DbError> {
    Ok(DeploymentFigures {
        read_at: Some(now),
        hosts: super::hosts::list_hosts(conn)?,
        nodes_by_host: counts.get(conn)?,
        nodes_by_state: counted(
            conn,
            "SELECT provision_state AS key, count(*) AS count FROM ironic_nodes
                  GROUP BY provision_state ORDER BY 1",
        )?,
        instances_by_state: counted(
            conn,
            "SELECT vm_state AS key, count(*) AS count FROM instances WHERE deleted = 0
                  GROUP BY vm_state ORDER BY 1",
        )?,
        unserved: super::node_groups::unserved(conn)?,
        audit: None,
    })
}
