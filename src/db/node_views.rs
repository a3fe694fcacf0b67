//! What the admin API and the dashboard list of nodes: each ironic node with its owner,
//! compute node and provider, filtered and paged; and the moves audit log.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use crate::domain::identity::NodeUuid;

/// An ironic node with its compute node, provider and owner, as the admin API lists it.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct NodeView {
    #[diesel(sql_type = SqlUuid)]
    pub uuid: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    #[diesel(sql_type = Text)]
    pub resource_class: String,
    #[diesel(sql_type = Text)]
    pub provision_state: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub reservation: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub maintenance: bool,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub instance_uuid: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    pub host: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub compute_node_uuid: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub resource_provider_uuid: Option<Uuid>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub owner_epoch: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub power_state: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
    /// `simulated` or `ironic` (a real Ironic's listing).
    #[diesel(sql_type = Text)]
    pub source: String,
    /// Builds that failed on the node since its last success (Nova's `failed_builds`).
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub failed_builds: i32,
    /// When the last of them failed.
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub build_failed_at: Option<DateTime<Utc>>,
}

/// Which nodes a listing shows (`state`: Ironic's provision state).
pub type NodeFilter = crate::domain::listing::ListFilter;

/// Lists every ironic node with its owner, compute node and provider, by uuid.
pub fn list_node_views(conn: &mut PgConnection) -> Result<Vec<NodeView>, DbError> {
    find_node_views(conn, &NodeFilter::default())
}

/// What `filter` selects of nodes: `$1` marker, `$2` host, `$3` state, `$4` class, `$5`
/// search as a LIKE prefix, `$6` search as is.
/// What a `NodeFilter` selects: `$1` marker, `$2` host, `$3` state, `$4` class, `$5` search
/// as a LIKE prefix, `$6` search as is.
const NODE_VIEW_SELECTION: &str = "
           FROM ironic_nodes n
           LEFT JOIN compute_nodes c ON c.hypervisor_hostname = n.uuid::text AND c.deleted = 0
           LEFT JOIN resource_providers rp ON rp.uuid = c.uuid
           LEFT JOIN node_build_failures f ON f.node = n.uuid
          WHERE ($1::uuid IS NULL OR n.uuid > $1)
            AND ($2::text IS NULL OR c.host = $2)
            AND ($3::text IS NULL OR n.provision_state = $3)
            AND ($4::text IS NULL OR n.resource_class = $4)
            AND ($6::text IS NULL OR n.uuid::text LIKE lower($5) OR n.name LIKE $5 OR c.host = $6
                 OR n.provision_state = $6 OR n.instance_uuid::text LIKE lower($5))";

/// `sql` (over `NODE_VIEW_SELECTION`) with `filter`'s values bound to `$1` … `$6`.
fn bind_node_selection(
    sql: String,
    filter: &NodeFilter,
) -> diesel::query_builder::BoxedSqlQuery<'static, diesel::pg::Pg, diesel::query_builder::SqlQuery>
{
    let search = filter.search.clone();
    diesel::sql_query(sql)
        .into_boxed()
        .bind::<Nullable<SqlUuid>, _>(filter.marker)
        .bind::<Nullable<Text>, _>(filter.host.clone())
        .bind::<Nullable<Text>, _>(filter.state.clone())
        .bind::<Nullable<Text>, _>(filter.resource_class.clone())
        .bind::<Nullable<Text>, _>(search.as_deref().map(super::like_prefix))
        .bind::<Nullable<Text>, _>(search)
}

/// Lists the ironic nodes `filter` selects, with their owners, compute nodes and providers,
/// by uuid.
pub fn find_node_views(
    conn: &mut PgConnection,
    filter: &NodeFilter,
) -> Result<Vec<NodeView>, DbError> {
    let sql = format!(
        "SELECT n.uuid, n.name::text AS name, n.resource_class::text AS resource_class,
                n.provision_state::text AS provision_state, n.reservation::text AS reservation,
                n.maintenance, n.instance_uuid, c.host::text AS host, c.uuid AS compute_node_uuid,
                rp.uuid AS resource_provider_uuid, c.owner_epoch,
                n.power_state::text AS power_state, n.last_error, n.source::text AS source,
                COALESCE(f.failed_builds, 0) AS failed_builds, f.last_failed_at AS build_failed_at
           {NODE_VIEW_SELECTION}
          ORDER BY n.uuid
          OFFSET $7 LIMIT $8"
    );
    Ok(bind_node_selection(sql, filter)
        .bind::<BigInt, _>(filter.offset)
        .bind::<Nullable<BigInt>, _>(filter.limit)
        .load(conn)?)
}

/// Counts the ironic nodes `filter` selects (its marker too; not its offset and limit).
pub fn count_node_views(conn: &mut PgConnection, filter: &NodeFilter) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let sql = format!("SELECT count(*) AS n {NODE_VIEW_SELECTION}");
    Ok(bind_node_selection(sql, filter)
        .get_result::<Count>(conn)?
        .n)
}

/// One row of the moves audit log.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName, serde::Serialize)]
pub struct MoveRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub node: NodeUuid,
    #[diesel(sql_type = SqlUuid)]
    pub compute_node_uuid: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    pub from_host: Option<String>,
    #[diesel(sql_type = Text)]
    pub to_host: String,
    #[diesel(sql_type = Text)]
    pub reason: String,
    #[diesel(sql_type = BigInt)]
    pub owner_epoch: i64,
    #[diesel(sql_type = BigInt)]
    pub ring_version: i64,
    #[diesel(sql_type = Timestamptz)]
    pub moved_at: DateTime<Utc>,
}

/// Lists the latest `limit` moves, newest first.
pub fn list_moves(conn: &mut PgConnection, limit: i64) -> Result<Vec<MoveRow>, DbError> {
    Ok(diesel::sql_query(
        "SELECT id, hypervisor_hostname::text AS node, compute_node_uuid, from_host::text AS from_host,
                to_host::text AS to_host, reason::text AS reason, owner_epoch, ring_version, moved_at
           FROM node_moves ORDER BY id DESC LIMIT $1",
    )
    .bind::<BigInt, _>(limit)
    .load(conn)?)
}
