//! `ironic_nodes` as the mirror of a real Ironic's listing: read it in the
//! listing's terms, and apply what a listing changed — the new and changed nodes in one
//! upsert, the gone ones in one delete, nothing at all when nothing changed (every write of
//! this table wakes the tracker passes and the rebalancer).

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use super::ironic::MIRRORED;
use super::schema::ironic_nodes;
use crate::domain::mirror::{ListedNode, MirrorChanges};
use crate::domain::selection::NodeSelection;

#[derive(Queryable, Selectable)]
#[diesel(table_name = ironic_nodes, check_for_backend(diesel::pg::Pg))]
struct MirrorRow {
    uuid: Uuid,
    name: Option<String>,
    resource_class: String,
    provision_state: String,
    power_state: Option<String>,
    maintenance: bool,
    last_error: Option<String>,
    instance_uuid: Option<Uuid>,
    reservation: Option<String>,
    traits: Vec<Option<String>>,
    cpus: i32,
    memory_mb: i32,
    local_gb: i32,
    addresses: Option<String>,
    conductor_group: String,
    shard: Option<String>,
}

impl From<MirrorRow> for ListedNode {
    fn from(row: MirrorRow) -> Self {
        ListedNode {
            uuid: row.uuid,
            name: row.name,
            resource_class: row.resource_class,
            provision_state: row.provision_state,
            power_state: row.power_state,
            maintenance: row.maintenance,
            last_error: row.last_error,
            instance_uuid: row.instance_uuid,
            reservation: row.reservation,
            traits: row.traits.into_iter().flatten().collect(),
            cpus: row.cpus,
            memory_mb: row.memory_mb,
            local_gb: row.local_gb,
            addresses: row.addresses,
            conductor_group: row.conductor_group,
            shard: row.shard,
        }
    }
}

/// Reads every row of the mirror as a listing shows nodes (simulated rows included: a
/// process with a real Ironic replaces them).
pub fn mirrored_nodes(conn: &mut PgConnection) -> Result<Vec<ListedNode>, DbError> {
    selected_nodes(conn, &NodeSelection::default())
}

/// Reads the rows of the nodes `selection` selects (a listing of one conductor group or shard
/// leaves the others' rows alone).
pub fn selected_nodes(
    conn: &mut PgConnection,
    selection: &NodeSelection,
) -> Result<Vec<ListedNode>, DbError> {
    let rows = selected(selection)
        .order(ironic_nodes::uuid.asc())
        .select(MirrorRow::as_select())
        .load(conn)?;
    Ok(rows.into_iter().map(ListedNode::from).collect())
}

/// Reads the rows of `selection`'s nodes others wrote after `since` (deploys and tear-downs,
/// not listings): what the listing holder must remember besides its own listings. A small
/// partial index.
pub fn written_since(
    conn: &mut PgConnection,
    since: chrono::DateTime<chrono::Utc>,
    selection: &NodeSelection,
) -> Result<Vec<ListedNode>, DbError> {
    let rows = selected(selection)
        .filter(ironic_nodes::listed.eq(false))
        .filter(ironic_nodes::updated_at.gt(since))
        .select(MirrorRow::as_select())
        .load(conn)?;
    Ok(rows.into_iter().map(ListedNode::from).collect())
}

/// The mirror's rows of the nodes `selection` selects.
fn selected(selection: &NodeSelection) -> ironic_nodes::BoxedQuery<'static, diesel::pg::Pg> {
    let mut query = ironic_nodes::table.into_boxed();
    if let Some(group) = &selection.conductor_group {
        query = query.filter(ironic_nodes::conductor_group.eq(group.clone()));
    }
    if let Some(shard) = &selection.shard {
        query = query.filter(ironic_nodes::shard.eq(shard.clone()));
    }
    query
}

/// The JSON document one upsert reads its rows from.
fn as_document(nodes: &[ListedNode]) -> serde_json::Value {
    nodes
        .iter()
        .map(|node| {
            serde_json::json!({
                "uuid": node.uuid,
                "name": node.name,
                "resource_class": node.resource_class,
                "provision_state": node.provision_state,
                "power_state": node.power_state,
                "maintenance": node.maintenance,
                "last_error": node.last_error,
                "instance_uuid": node.instance_uuid,
                "reservation": node.reservation,
                "traits": node.traits,
                "cpus": node.cpus,
                "memory_mb": node.memory_mb,
                "local_gb": node.local_gb,
                "addresses": node.addresses,
                "conductor_group": node.conductor_group,
                "shard": node.shard,
            })
        })
        .collect()
}

/// Writes `changes` (call inside a transaction): one upsert of the new and changed nodes and
/// one delete of the gone ones; nothing when there is nothing to write. Rows are marked as
/// written by a listing when `listed_at` is given (else by a deploy or a tear-down). A rename or an
/// instance that moved between two nodes in one listing is checked at commit. With
/// `listed_at`, rows written after it (a deploy or a tear-down read the node since the listing
/// started) are left as they are: a listing never undoes a newer read. Only rows of nodes
/// `selection` selects are removed (a node that moved to another group meanwhile is that
/// group's listing's).
pub fn apply(
    conn: &mut PgConnection,
    changes: &MirrorChanges,
    selection: &NodeSelection,
    now: chrono::DateTime<chrono::Utc>,
    listed_at: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<(), DbError> {
    if !changes.upserts.is_empty() {
        super::cached::query(
            "INSERT INTO ironic_nodes (uuid, name, resource_class, provision_state, power_state,
                                       maintenance, last_error, instance_uuid, reservation,
                                       traits, cpus, memory_mb, local_gb, source, created_at,
                                       updated_at, addresses, conductor_group, shard, listed)
             SELECT r.uuid, r.name, r.resource_class, r.provision_state, r.power_state,
                    r.maintenance, r.last_error, r.instance_uuid, r.reservation,
                    COALESCE(r.traits, '{}'), r.cpus, r.memory_mb, r.local_gb, $2, $3, $3,
                    r.addresses, COALESCE(r.conductor_group, ''), r.shard,
                    $4::timestamptz IS NOT NULL
               FROM jsonb_to_recordset($1) AS r(uuid uuid, name text, resource_class text,
                    provision_state text, power_state text, maintenance boolean,
                    last_error text, instance_uuid uuid, reservation text, traits text[],
                    cpus integer, memory_mb integer, local_gb integer, addresses text,
                    conductor_group text, shard text)
             ON CONFLICT (uuid) DO UPDATE
                SET name = EXCLUDED.name, resource_class = EXCLUDED.resource_class,
                    provision_state = EXCLUDED.provision_state,
                    power_state = EXCLUDED.power_state, maintenance = EXCLUDED.maintenance,
                    last_error = EXCLUDED.last_error, instance_uuid = EXCLUDED.instance_uuid,
                    reservation = EXCLUDED.reservation, traits = EXCLUDED.traits,
                    cpus = EXCLUDED.cpus, memory_mb = EXCLUDED.memory_mb,
                    local_gb = EXCLUDED.local_gb, source = EXCLUDED.source,
                    addresses = EXCLUDED.addresses,
                    conductor_group = EXCLUDED.conductor_group, shard = EXCLUDED.shard,
                    listed = EXCLUDED.listed, updated_at = EXCLUDED.updated_at
              WHERE $4::timestamptz IS NULL OR ironic_nodes.updated_at IS NULL
                 OR ironic_nodes.updated_at <= $4",
        )
        .bind::<Jsonb, _>(as_document(&changes.upserts))
        .bind::<Text, _>(MIRRORED)
        .bind::<Timestamptz, _>(now)
        .bind::<Nullable<Timestamptz>, _>(listed_at)
        .execute(conn)?;
    }
    if !changes.removals.is_empty() {
        super::cached::query(
            "DELETE FROM ironic_nodes
              WHERE uuid = ANY($1)
                AND ($2::timestamptz IS NULL OR updated_at IS NULL OR updated_at <= $2)
                AND ($3::text IS NULL OR conductor_group = $3)
                AND ($4::text IS NULL OR shard = $4)",
        )
        .bind::<Array<SqlUuid>, _>(&changes.removals)
        .bind::<Nullable<Timestamptz>, _>(listed_at)
        .bind::<Nullable<Text>, _>(selection.conductor_group.as_deref())
        .bind::<Nullable<Text>, _>(selection.shard.as_deref())
        .execute(conn)?;
    }
    Ok(())
}

/// Writes one node as Ironic showed it just now (after a deploy or a tear-down), unless the
/// mirror already shows it so.
pub fn refresh_node(
    conn: &mut PgConnection,
    node: &ListedNode,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    let current: Option<ListedNode> = ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(node.uuid))
        .select(MirrorRow::as_select())
        .first(conn)
        .optional()?
        .map(ListedNode::from);
    if current.as_ref() == Some(node) {
        return Ok(());
    }
    let changes = MirrorChanges {
        upserts: vec![node.clone()],
        removals: Vec::new(),
    };
    apply(conn, &changes, &NodeSelection::default(), now, None)
}

/// What the listing holder's last listing did, as every process of the deployment reads it.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct ListingRecord {
    #[diesel(sql_type = SqlUuid)]
    pub holder: Uuid,
    #[diesel(sql_type = Timestamptz)]
    pub at: chrono::DateTime<chrono::Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_success: Option<chrono::DateTime<chrono::Utc>>,
    #[diesel(sql_type = BigInt)]
    pub nodes: i64,
    #[diesel(sql_type = BigInt)]
    pub pages: i64,
    #[diesel(sql_type = BigInt)]
    pub changed: i64,
    #[diesel(sql_type = BigInt)]
    pub took_ms: i64,
    #[diesel(sql_type = BigInt)]
    pub held: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub error: Option<String>,
    /// Listings recorded under this name so far (ignored when recording).
    #[diesel(sql_type = BigInt)]
    pub listings: i64,
}

/// Records the outcome of a listing of lease `name` (run it in the transaction that holds
/// the lease): one row per lease, its listing count bumped.
pub fn record_listing(
    conn: &mut PgConnection,
    name: &str,
    record: &ListingRecord,
) -> Result<(), DbError> {
    super::cached::query(
        "INSERT INTO ironic_listings (name, holder, at, last_success, nodes, pages, changed,
                                      took_ms, held, error, listings)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1)
         ON CONFLICT (name) DO UPDATE
            SET holder = EXCLUDED.holder, at = EXCLUDED.at,
                last_success = COALESCE(EXCLUDED.last_success, ironic_listings.last_success),
                nodes = CASE WHEN EXCLUDED.error IS NULL THEN EXCLUDED.nodes
                             ELSE ironic_listings.nodes END,
                pages = EXCLUDED.pages, changed = EXCLUDED.changed,
                took_ms = EXCLUDED.took_ms, held = EXCLUDED.held, error = EXCLUDED.error,
                listings = ironic_listings.listings + 1",
    )
    .bind::<Text, _>(name)
    .bind::<SqlUuid, _>(record.holder)
    .bind::<Timestamptz, _>(record.at)
    .bind::<Nullable<Timestamptz>, _>(record.last_success)
    .bind::<BigInt, _>(record.nodes)
    .bind::<BigInt, _>(record.pages)
    .bind::<BigInt, _>(record.changed)
    .bind::<BigInt, _>(record.took_ms)
    .bind::<BigInt, _>(record.held)
    .bind::<Nullable<Text>, _>(&record.error)
    .execute(conn)?;
    Ok(())
}

/// The last listing of lease `name`, if one was recorded.
pub fn listing_record(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<ListingRecord>, DbError> {
    Ok(super::cached::query(
        "SELECT holder, at, last_success, nodes, pages, changed, took_ms, held, error, listings
           FROM ironic_listings WHERE name = $1",
    )
    .bind::<Text, _>(name)
    .get_result(conn)
    .optional()?)
}

/// Records that mirrored nodes `uuids` have an owner now: from then on the audit expects
/// exactly one live compute node for each (before, a new node waits for its first claim).
pub fn mark_owned(
    conn: &mut PgConnection,
    uuids: &[Uuid],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    if uuids.is_empty() {
        return Ok(());
    }
    super::cached::query(
        "UPDATE ironic_nodes SET first_owned_at = $2
          WHERE uuid = ANY($1) AND first_owned_at IS NULL AND source = $3",
    )
    .bind::<Array<SqlUuid>, _>(uuids)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(MIRRORED)
    .execute(conn)?;
    Ok(())
}
