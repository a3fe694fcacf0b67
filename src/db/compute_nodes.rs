//! Compute nodes — who owns which ironic node: claiming nodes, moving them between hosts,
//! creating providers by adoption, deleting orphans, and the ownership fence every owner's
//! write takes (`fence`, and `hold_owned`, `hold_one` over it). Each fn is meant to run inside one
//! transaction and keeps invariants 1–4, 6 and 7 of docs/design.md:
//!
//! * a node keeps one compute-node uuid forever: a claim reuses a live row, adopts the
//!   provider already named after the node, or undeletes the node's soft-deleted row, and
//!   only then creates a new one;
//! * a claim that undeletes or creates a node's compute node gives the node's live instances
//!   its host in the same statement;
//! * a move changes `host` of the compute node and of its instances, bumps `owner_epoch` and
//!   writes a `node_moves` row, all in one statement, conditional on the expected owner and
//!   epoch; providers, inventories and allocations are not touched;
//! * an orphan is deleted only by its current owner, only when Ironic no longer has the node,
//!   and never while its provider holds allocations.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use crate::domain::node::{
    ComputeNode, ComputeNodeId, HostName, NodeUuid, OwnerEpoch, ProviderUuid,
};
pub use crate::domain::rebalance::{NodeClaim, NodeMove, NodeOwnership};

#[derive(Debug, QueryableByName)]
struct ComputeNodeView {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    uuid: Uuid,
    #[diesel(sql_type = Text)]
    host: String,
    #[diesel(sql_type = SqlUuid)]
    hypervisor_hostname: Uuid,
    #[diesel(sql_type = BigInt)]
    owner_epoch: i64,
}

impl From<ComputeNodeView> for ComputeNode {
    fn from(view: ComputeNodeView) -> Self {
        ComputeNode {
            id: ComputeNodeId(view.id),
            uuid: view.uuid,
            host: HostName::from(view.host),
            node: NodeUuid(view.hypervisor_hostname),
            owner_epoch: OwnerEpoch(view.owner_epoch),
        }
    }
}

/// The claim of `claim_nodes`, one statement: $1 the nodes, $2 their hosts, $3 now, $4 the
/// building vm_state. Identity first: the provider already named after the node (adoption),
/// else the node's latest soft-deleted compute node (undelete), else its archived one, else
/// the Ironic node's own uuid (as Nova does since 2018): a returning node always gets its
/// identity back. A uuid that another provider (of another name) or another live compute node
/// holds is never taken: that node is not claimed, and the audit reports it.
const CLAIM_NODES: &str = "WITH input AS (
         SELECT DISTINCT ON (node) node, host
           FROM unnest($1::text[], $2::text[]) AS t(node, host)
          WHERE NOT EXISTS (SELECT 1 FROM compute_nodes c
                             WHERE c.hypervisor_hostname = t.node AND c.deleted = 0)
     ),
     chosen AS (
         SELECT i.node, i.host,
                COALESCE(rp.uuid, gone.uuid, archived.uuid, i.node::uuid) AS uuid
           FROM input i
           LEFT JOIN resource_providers rp ON rp.name = i.node
           LEFT JOIN LATERAL (SELECT c.uuid FROM compute_nodes c
                               WHERE c.hypervisor_hostname = i.node AND c.deleted <> 0
                               ORDER BY c.id DESC LIMIT 1) gone ON TRUE
           LEFT JOIN LATERAL (SELECT s.uuid FROM shadow_compute_nodes s
                               WHERE s.hypervisor_hostname = i.node
                               ORDER BY s.id DESC LIMIT 1) archived ON TRUE
     ),
     usable AS (
         SELECT * FROM chosen ch
          WHERE NOT EXISTS (SELECT 1 FROM resource_providers rp
                             WHERE rp.uuid = ch.uuid AND rp.name <> ch.node)
            AND NOT EXISTS (SELECT 1 FROM compute_nodes c
                             WHERE c.uuid = ch.uuid AND c.deleted = 0)
     ),
     undeleted AS (
         UPDATE compute_nodes c
            SET deleted = 0, deleted_at = NULL, host = usable.host,
                hypervisor_hostname = usable.node,
                owner_epoch = c.owner_epoch + 1, updated_at = $3
           FROM usable
          WHERE c.uuid = usable.uuid AND c.deleted <> 0
         RETURNING c.id, c.uuid, c.host, c.hypervisor_hostname, c.owner_epoch
     ),
     inserted AS (
         INSERT INTO compute_nodes (uuid, host, hypervisor_hostname, vcpus, memory_mb,
                                    local_gb, created_at)
         SELECT usable.uuid, usable.host, usable.node, n.cpus, n.memory_mb, n.local_gb, $3
           FROM usable
           JOIN ironic_nodes n ON n.uuid::text = usable.node
          WHERE NOT EXISTS (SELECT 1 FROM compute_nodes c WHERE c.uuid = usable.uuid)
         RETURNING id, uuid, host, hypervisor_hostname, owner_epoch
     ),
     claimed AS (
         SELECT * FROM undeleted UNION ALL SELECT * FROM inserted
     ),
     instances_followed AS (
         -- A live instance that still names the node (an ERROR server keeps its node after
         -- the node's orphan delete) follows the node's new owner in this statement
         -- (invariant 4); a build keeps its updated_at, as in a move.
         UPDATE instances i SET host = claimed.host,
                updated_at = CASE WHEN i.vm_state = $4 THEN i.updated_at ELSE $3 END
           FROM claimed
          WHERE i.node = claimed.hypervisor_hostname AND i.deleted = 0
            AND i.host IS DISTINCT FROM claimed.host
     )
     SELECT id, uuid, host, hypervisor_hostname::uuid AS hypervisor_hostname, owner_epoch
       FROM claimed";

/// Gives each node of `claims` a live compute node owned by its host, with its provider, and
/// makes enrolled nodes available. Nodes that already have a live compute node are left as
/// they are. Returns the compute nodes this call created or undeleted. A handful of
/// statements whatever the number of nodes.
pub fn claim_nodes(
    conn: &mut PgConnection,
    claims: &[NodeClaim],
    now: DateTime<Utc>,
) -> Result<Vec<ComputeNode>, DbError> {
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    let nodes: Vec<NodeUuid> = claims.iter().map(|claim| NodeUuid(claim.node)).collect();
    let hosts: Vec<String> = claims.iter().map(|claim| claim.host.clone()).collect();
    let claimed: Vec<ComputeNodeView> = diesel::sql_query(CLAIM_NODES)
        .bind::<Array<Text>, _>(&nodes)
        .bind::<Array<Text>, _>(&hosts)
        .bind::<Timestamptz, _>(now)
        .bind::<Text, _>(crate::domain::instance::VmState::Building.as_str())
        .load(conn)?;
    let claimed: Vec<ComputeNode> = claimed.into_iter().map(ComputeNode::from).collect();
    finish_claims(conn, claims, &claimed, now)?;
    Ok(claimed)
}

/// What follows the claim of `claims` that gave `claimed` their compute nodes: each gets its
/// provider, the simulator's enrolled nodes become available, a real Ironic's are marked
/// owned; the nodes left unclaimed are reported.
fn finish_claims(
    conn: &mut PgConnection,
    claims: &[NodeClaim],
    claimed: &[ComputeNode],
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    if claimed.len() < claims.len() {
        report_unclaimable(conn, claims, claimed)?;
    }
    let uuids: Vec<ProviderUuid> = claimed.iter().map(ComputeNode::provider).collect();
    let names: Vec<String> = claimed.iter().map(|node| node.node.to_string()).collect();
    super::placement::providers::create_roots(conn, &uuids, &names, now)?;
    let node_uuids: Vec<Uuid> = claims.iter().map(|claim| claim.node).collect();
    super::ironic::make_available(conn, &node_uuids, now)?;
    let owned: Vec<Uuid> = claimed.iter().map(|node| node.node.uuid()).collect();
    super::ironic_mirror::mark_owned(conn, &owned, now)
}

/// Logs each claimed-for node that got no compute node because the uuid it would keep is held
/// by another provider or another node's compute node.
fn report_unclaimable(
    conn: &mut PgConnection,
    claims: &[NodeClaim],
    claimed: &[ComputeNode],
) -> Result<(), DbError> {
    let missing: Vec<NodeUuid> = claims
        .iter()
        .filter(|claim| !claimed.iter().any(|done| done.node.uuid() == claim.node))
        .map(|claim| NodeUuid(claim.node))
        .collect();
    for node in find_unowned(conn, &missing)? {
        log::error!(
            "node {node} cannot be claimed: the uuid it keeps is held by a resource provider of \
             another name or by another node's compute node"
        );
    }
    Ok(())
}

/// Returns those of `nodes` that have no live compute node.
fn find_unowned(conn: &mut PgConnection, nodes: &[NodeUuid]) -> Result<Vec<NodeUuid>, DbError> {
    #[derive(QueryableByName)]
    struct Node {
        #[diesel(sql_type = Text)]
        node: NodeUuid,
    }
    let rows: Vec<Node> = diesel::sql_query(
        "SELECT t.node FROM unnest($1::text[]) AS t(node)
          WHERE NOT EXISTS (SELECT 1 FROM compute_nodes c
                             WHERE c.hypervisor_hostname = t.node AND c.deleted = 0)",
    )
    .bind::<Array<Text>, _>(nodes)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| row.node).collect())
}

/// How a provider was made sure of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderOutcome {
    /// It existed as asked.
    Existing,
    /// It was created.
    Created,
    /// A provider already held the name: it is the node's (its uuid is returned).
    Adopted(ProviderUuid),
}

/// Creates provider (`uuid`, `name`), resolving a collision by adoption: when another
/// provider holds `name`, that provider is returned, never deleted and re-created. A provider
/// that holds `uuid` under another name is never renamed: a conflict, nothing written
/// (invariants 1 and 7).
pub fn create_provider(
    conn: &mut PgConnection,
    uuid: ProviderUuid,
    name: &str,
    now: DateTime<Utc>,
) -> Result<ProviderOutcome, DbError> {
    use super::schema::resource_providers as rp;
    let by_name: Option<ProviderUuid> = rp::table
        .filter(rp::name.eq(name))
        .select(rp::uuid)
        .first::<Uuid>(conn)
        .optional()?
        .map(ProviderUuid);
    match by_name {
        Some(existing) if existing == uuid => Ok(ProviderOutcome::Existing),
        Some(existing) => Ok(ProviderOutcome::Adopted(existing)),
        None => {
            let by_uuid: Option<String> = rp::table
                .filter(rp::uuid.eq(uuid.uuid()))
                .select(rp::name)
                .first(conn)
                .optional()?;
            if let Some(other) = by_uuid {
                return Err(DbError::Conflict(format!(
                    "resource provider {uuid} is named {other}, not {name}: refusing to rename it"
                )));
            }
            super::placement::providers::create_roots(conn, &[uuid], &[name.to_owned()], now)?;
            Ok(ProviderOutcome::Created)
        }
    }
}

/// Moves nodes between hosts in one statement: for each node still at its expected owner and
/// epoch, sets the new host on the compute node and on its live instances, bumps the epoch
/// and writes a `node_moves` row. Moves whose node changed meanwhile are skipped. Returns the
/// moved compute nodes with their new epochs.
pub fn move_nodes(
    conn: &mut PgConnection,
    moves: &[NodeMove],
    ring_version: i64,
    now: DateTime<Utc>,
) -> Result<Vec<ComputeNode>, DbError> {
    if moves.is_empty() {
        return Ok(Vec::new());
    }
    let nodes: Vec<NodeUuid> = moves.iter().map(|m| m.node).collect();
    let from: Vec<&str> = moves.iter().map(|m| m.from.as_str()).collect();
    let epochs: Vec<i64> = moves.iter().map(|m| m.epoch.get()).collect();
    let to: Vec<&str> = moves.iter().map(|m| m.to.as_str()).collect();
    let reasons: Vec<&str> = moves.iter().map(|m| m.reason.name()).collect();
    // Lock the nodes first, in id order (the order every writer of compute nodes takes), so
    // that the move waits for a claim or a tracker write in flight, and the statement below
    // takes its snapshot after them: an instance a boot created on a node in the meantime
    // moves with its node.
    diesel::sql_query(
        "SELECT id FROM compute_nodes
          WHERE hypervisor_hostname = ANY($1) AND deleted = 0
          ORDER BY id FOR UPDATE",
    )
    .bind::<Array<Text>, _>(&nodes)
    .execute(conn)?;
    let moved: Vec<ComputeNodeView> = diesel::sql_query(
        "WITH input AS (
             SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[])
                        AS t(node, from_host, epoch, to_host, reason)
         ),
         moved AS (
             UPDATE compute_nodes c
                SET host = input.to_host, owner_epoch = c.owner_epoch + 1, updated_at = $7
               FROM input
              WHERE c.hypervisor_hostname = input.node AND c.deleted = 0
                AND c.host = input.from_host AND c.owner_epoch = input.epoch
                AND input.to_host <> input.from_host
             RETURNING c.id, c.uuid, c.host, c.hypervisor_hostname, c.owner_epoch,
                       input.from_host, input.reason
         ),
         instances_moved AS (
             -- A build keeps its updated_at: a move is no progress of it, and its new owner
             -- settles a build older than the move (db::instances::stale_builds).
             UPDATE instances i SET host = moved.host,
                    updated_at = CASE WHEN i.vm_state = $8 THEN i.updated_at ELSE $7 END
               FROM moved
              WHERE i.node = moved.hypervisor_hostname AND i.deleted = 0
         ),
         logged AS (
             INSERT INTO node_moves (compute_node_uuid, hypervisor_hostname, from_host, to_host,
                                     reason, owner_epoch, ring_version, moved_at)
             SELECT uuid, hypervisor_hostname, from_host, host, reason, owner_epoch, $6, $7
               FROM moved
         )
         SELECT id, uuid, host, hypervisor_hostname::uuid AS hypervisor_hostname, owner_epoch FROM moved",
    )
    .bind::<Array<Text>, _>(&nodes)
    .bind::<Array<Text>, _>(&from)
    .bind::<Array<BigInt>, _>(&epochs)
    .bind::<Array<Text>, _>(&to)
    .bind::<Array<Text>, _>(&reasons)
    .bind::<BigInt, _>(ring_version)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(crate::domain::instance::VmState::Building.as_str())
    .load(conn)?;
    Ok(moved.into_iter().map(ComputeNode::from).collect())
}

/// What became of an orphan deletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanOutcome {
    /// The compute node is soft-deleted and its provider deleted.
    Deleted,
    /// Its provider holds allocations, or its PCI devices are allocated or claimed: the compute
    /// node and provider are kept (and reported) until they are freed.
    KeptWithAllocations,
    /// The caller is not the node's current owner at that epoch: refused.
    NotOwner,
    /// Ironic still has the node: it is no orphan.
    StillInIronic,
}

/// Deletes the compute node of `node` and its provider, when `host` at `epoch` owns it,
/// Ironic no longer has the node, and the provider holds no allocations (invariant 6).
pub fn delete_orphan(
    conn: &mut PgConnection,
    node: NodeUuid,
    host: &HostName,
    epoch: OwnerEpoch,
    now: DateTime<Utc>,
) -> Result<OrphanOutcome, DbError> {
    let Some(compute_node) = find_compute_node(conn, node)? else {
        return Ok(OrphanOutcome::NotOwner);
    };
    // Through the fence, for update: the compute node's own row is deleted below.
    if fence(conn, host, &[(compute_node.id, epoch)], RowLock::Update)?.is_empty() {
        return Ok(OrphanOutcome::NotOwner);
    }
    let node = node.to_string();
    #[derive(QueryableByName)]
    struct Facts {
        #[diesel(sql_type = BigInt)]
        in_ironic: i64,
        #[diesel(sql_type = BigInt)]
        allocations: i64,
        #[diesel(sql_type = BigInt)]
        devices_in_use: i64,
    }
    // Its devices allocated or claimed are locked: a late free waits for this transaction and
    // then finds the device as it was (invariant 8).
    let facts: Facts = diesel::sql_query(
        "SELECT (SELECT count(*) FROM ironic_nodes WHERE uuid::text = $1) AS in_ironic,
                (SELECT count(*) FROM allocations a JOIN resource_providers rp
                    ON rp.id = a.resource_provider_id WHERE rp.uuid = $2) AS allocations,
                (SELECT count(*) FROM (SELECT id FROM pci_devices
                    WHERE compute_node_id = $3 AND deleted = 0
                      AND status IN ('allocated', 'claimed') FOR UPDATE) d) AS devices_in_use",
    )
    .bind::<Text, _>(&node)
    .bind::<SqlUuid, _>(compute_node.uuid)
    .bind::<BigInt, _>(compute_node.id)
    .get_result(conn)?;
    if facts.in_ironic > 0 {
        return Ok(OrphanOutcome::StillInIronic);
    }
    if facts.allocations > 0 || facts.devices_in_use > 0 {
        return Ok(OrphanOutcome::KeptWithAllocations);
    }
    // Through Placement's one provider deleter (its inventories, traits and links with it).
    use super::placement::providers::{ProviderError, delete_provider};
    match delete_provider(conn, compute_node.provider()) {
        Ok(()) | Err(ProviderError::NotFound(_)) => {}
        Err(ProviderError::Db(error)) => return Err(error),
        Err(refused) => return Err(DbError::Conflict(refused.to_string())),
    }
    diesel::sql_query(
        "UPDATE pci_devices SET deleted = id, deleted_at = $2 WHERE compute_node_id = $1 AND deleted = 0",
    )
    .bind::<BigInt, _>(compute_node.id)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    diesel::sql_query("UPDATE compute_nodes SET deleted = id, deleted_at = $2 WHERE id = $1")
        .bind::<BigInt, _>(compute_node.id)
        .bind::<Timestamptz, _>(now)
        .execute(conn)?;
    Ok(OrphanOutcome::Deleted)
}

/// Lists the live compute nodes, optionally only those of `host`.
pub fn list_compute_nodes(
    conn: &mut PgConnection,
    host: Option<&str>,
) -> Result<Vec<ComputeNode>, DbError> {
    let rows: Vec<ComputeNodeView> = diesel::sql_query(
        "SELECT id, uuid, host, hypervisor_hostname::uuid AS hypervisor_hostname, owner_epoch FROM compute_nodes
          WHERE deleted = 0 AND ($1::text IS NULL OR host = $1) ORDER BY hypervisor_hostname",
    )
    .bind::<Nullable<Text>, _>(host)
    .load(conn)?;
    Ok(rows.into_iter().map(ComputeNode::from).collect())
}

/// Returns the live compute node of ironic node `node`, if any.
pub fn find_compute_node(
    conn: &mut PgConnection,
    node: NodeUuid,
) -> Result<Option<ComputeNode>, DbError> {
    let rows: Vec<ComputeNodeView> = diesel::sql_query(
        "SELECT id, uuid, host, hypervisor_hostname::uuid AS hypervisor_hostname, owner_epoch FROM compute_nodes
          WHERE deleted = 0 AND hypervisor_hostname = $1",
    )
    .bind::<Text, _>(node)
    .load(conn)?;
    Ok(rows.into_iter().next().map(ComputeNode::from))
}

/// How `fence` holds the nodes it finds owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowLock {
    /// `FOR SHARE`: writes about the node (boots claiming it do not wait).
    Share,
    /// `FOR UPDATE`: the node's own row is about to change (an orphan's delete).
    Update,
}

/// The ownership fence (invariant 4), the one check every owner's write goes through: holds,
/// for the rest of the transaction, those of `nodes` (compute node, epoch it was read at) that
/// `host` still owns at that epoch, in id order (as moves lock); returns the ids held. A node
/// missing from the answer moved (or was deleted), and the caller writes nothing for it.
pub fn fence(
    conn: &mut PgConnection,
    host: &HostName,
    nodes: &[(ComputeNodeId, OwnerEpoch)],
    lock: RowLock,
) -> Result<Vec<ComputeNodeId>, DbError> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    #[derive(QueryableByName)]
    struct Held {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }
    let ids: Vec<i64> = nodes.iter().map(|(id, _)| id.get()).collect();
    let epochs: Vec<i64> = nodes.iter().map(|(_, epoch)| epoch.get()).collect();
    let sql = match lock {
        RowLock::Share => FENCE_SQL_SHARE,
        RowLock::Update => FENCE_SQL_UPDATE,
    };
    let held: Vec<Held> = super::cached::query(sql)
        .bind::<Array<BigInt>, _>(&ids)
        .bind::<Array<BigInt>, _>(&epochs)
        .bind::<Text, _>(host.as_str())
        .load(conn)?;
    Ok(held.into_iter().map(|row| ComputeNodeId(row.id)).collect())
}

const FENCE_SQL_SHARE: &str = "SELECT c.id FROM compute_nodes c
           JOIN unnest($1::bigint[], $2::bigint[]) AS t(id, epoch) ON t.id = c.id
          WHERE c.host = $3 AND c.owner_epoch = t.epoch AND c.deleted = 0
          ORDER BY c.id FOR SHARE OF c";

const FENCE_SQL_UPDATE: &str = "SELECT c.id FROM compute_nodes c
           JOIN unnest($1::bigint[], $2::bigint[]) AS t(id, epoch) ON t.id = c.id
          WHERE c.host = $3 AND c.owner_epoch = t.epoch AND c.deleted = 0
          ORDER BY c.id FOR UPDATE OF c";

/// `fence` for writes about the nodes (shared).
pub fn hold_owned(
    conn: &mut PgConnection,
    host: &HostName,
    nodes: &[(ComputeNodeId, OwnerEpoch)],
) -> Result<Vec<ComputeNodeId>, DbError> {
    fence(conn, host, nodes, RowLock::Share)
}

/// `hold_owned` for one node: whether `host` still owns compute node `id` at `epoch`, held for
/// the rest of the transaction when it does (invariant 4).
pub fn hold_one(
    conn: &mut PgConnection,
    host: &HostName,
    id: ComputeNodeId,
    epoch: OwnerEpoch,
) -> Result<bool, DbError> {
    Ok(!fence(conn, host, &[(id, epoch)], RowLock::Share)?.is_empty())
}

/// Returns the ownership change counter: it grows whenever a node is enrolled or deleted, or a
/// compute node is created, deleted or changes host (one tiny query).
pub fn ownership_counter(conn: &mut PgConnection) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Sum {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let sum: Sum =
        super::cached::query("SELECT COALESCE(sum(n), 0)::bigint AS n FROM ownership_epochs")
            .get_result(conn)?;
    Ok(sum.n)
}

/// Lists every ironic node with its current owner and epoch (one query, any number of nodes).
pub fn node_owners(conn: &mut PgConnection) -> Result<Vec<NodeOwnership>, DbError> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        node: NodeUuid,
        #[diesel(sql_type = Nullable<Text>)]
        host: Option<String>,
        #[diesel(sql_type = Nullable<BigInt>)]
        owner_epoch: Option<i64>,
        #[diesel(sql_type = Text)]
        conductor_group: String,
        #[diesel(sql_type = Nullable<Text>)]
        shard: Option<String>,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT n.uuid AS node, c.host::text AS host, c.owner_epoch,
                n.conductor_group::text AS conductor_group, n.shard::text AS shard
           FROM ironic_nodes n
           LEFT JOIN compute_nodes c ON c.hypervisor_hostname = n.uuid::text AND c.deleted = 0
          ORDER BY n.uuid",
    )
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| NodeOwnership {
            node: row.node.uuid(),
            owner: row.host,
            epoch: row.owner_epoch,
            conductor_group: row.conductor_group,
            shard: row.shard,
        })
        .collect())
}

/// Returns (host, node) for each of `nodes` that has a live compute node.
pub fn owners_of(
    conn: &mut PgConnection,
    nodes: &[NodeUuid],
) -> Result<Vec<(String, NodeUuid)>, DbError> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        host: String,
        #[diesel(sql_type = Text)]
        node: NodeUuid,
    }
    let rows: Vec<Row> = super::cached::query(
        "SELECT host::text AS host, hypervisor_hostname::text AS node FROM compute_nodes
          WHERE hypervisor_hostname = ANY($1) AND deleted = 0",
    )
    .bind::<Array<Text>, _>(nodes)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| (row.host, row.node)).collect())
}
