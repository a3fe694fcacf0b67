//! The resource tracker's reads and fenced writes: what a compute host owns, as one read with
//! everything a pass compares (Ironic's state, the provider's inventory, the node's devices, a
//! build Ironic finished), and the pass's one fenced write (`write_pass`) for the nodes that
//! changed — a handful of statements whatever their number, none at all when nothing changed,
//! Placement's rows written through `db::placement`'s batch writers. Every write is
//! conditional on `host = me AND owner_epoch = e` (invariant 4): a node lost meanwhile is
//! dropped from the pass and left alone, never retried blindly.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use std::collections::HashSet;

use uuid::Uuid;

use super::DbError;
use super::instances::BuildOutcome;
use crate::domain::identity::{HostName, InstanceUuid, NodeUuid, ProviderUuid};
use crate::domain::instance::VmState;
use crate::domain::node::{ComputeNode, ComputeNodeId, NodeInventory, OwnerEpoch};
use crate::domain::tracker::{OwnedNode, PassChanges, PassWrites, held_only};

/// The fault an active instance gets, once, when a real Ironic no longer shows it on its node.
pub const INSTANCE_GONE: &str = "ironic no longer shows this instance on its node (torn down or re-associated outside \
     ringmaster); its node is kept for it until it is deleted";

#[derive(Debug, QueryableByName)]
struct OwnedRow {
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
    #[diesel(sql_type = Nullable<SqlUuid>)]
    ironic_uuid: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    resource_class: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    provision_state: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    maintenance: Option<bool>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    instance_uuid: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    reservation: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    power_state: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    source: Option<String>,
    #[diesel(sql_type = Array<Text>)]
    node_traits: Vec<String>,
    #[diesel(sql_type = Array<Text>)]
    provider_traits: Vec<String>,
    #[diesel(sql_type = Bool)]
    has_provider: bool,
    #[diesel(sql_type = Bool)]
    allocated: bool,
    #[diesel(sql_type = Array<Text>)]
    inventory_classes: Vec<String>,
    #[diesel(sql_type = Array<Integer>)]
    inventory_totals: Vec<i32>,
    #[diesel(sql_type = Array<Integer>)]
    inventory_reserved: Vec<i32>,
    #[diesel(sql_type = BigInt)]
    devices: i64,
    #[diesel(sql_type = Bool)]
    build_deployed: bool,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    instance_gone: Option<InstanceUuid>,
}

/// Returns the tracker change counter: it grows whenever anything a pass compares changes
/// (Ironic's nodes, providers, inventories, allocations, PCI devices, instances, ownership).
pub fn change_counter(conn: &mut PgConnection) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Sum {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let sum: Sum =
        super::cached::query("SELECT COALESCE(sum(n), 0)::bigint AS n FROM tracker_epochs")
            .get_result(conn)?;
    Ok(sum.n)
}

/// Lists the live compute nodes `host` owns (or `only` those of them) with everything a pass
/// compares, in one statement,
/// in id order: the order in which the pass then locks them, as moves do, so the two never
/// deadlock.
pub fn owned_nodes(
    conn: &mut PgConnection,
    host: &HostName,
    only: Option<&[NodeUuid]>,
) -> Result<Vec<OwnedNode>, DbError> {
    let rows: Vec<OwnedRow> = super::cached::query(
        "SELECT c.id, c.uuid, c.host, c.hypervisor_hostname::uuid AS hypervisor_hostname, c.owner_epoch,
                n.uuid AS ironic_uuid, n.name::text AS name, n.resource_class::text AS resource_class,
                n.provision_state::text AS provision_state, n.maintenance, n.instance_uuid,
                n.reservation::text AS reservation, n.power_state::text AS power_state,
                n.source::text AS source,
                COALESCE(n.traits, '{}') AS node_traits,
                CASE WHEN n.source = 'ironic' THEN COALESCE(
                    (SELECT array_agg(t.name::text ORDER BY t.name COLLATE \"C\")
                       FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
                      WHERE rpt.resource_provider_id = rp.id
                        AND t.name <> 'COMPUTE_STATUS_DISABLED'), '{}')
                ELSE '{}' END AS provider_traits,
                rp.id IS NOT NULL AS has_provider,
                EXISTS (SELECT 1 FROM allocations a WHERE a.resource_provider_id = rp.id) AS allocated,
                COALESCE(inv.classes, '{}') AS inventory_classes,
                COALESCE(inv.totals, '{}') AS inventory_totals,
                COALESCE(inv.reserved, '{}') AS inventory_reserved,
                (SELECT count(*) FROM pci_devices p
                  WHERE p.compute_node_id = c.id AND p.deleted = 0) AS devices,
                (n.provision_state = 'active' AND n.instance_uuid IS NOT NULL
                 AND EXISTS (SELECT 1 FROM instances i
                              WHERE i.uuid = n.instance_uuid AND i.deleted = 0
                                AND i.vm_state = $3)) IS TRUE AS build_deployed,
                CASE WHEN n.source = 'ironic' THEN
                    (SELECT i.uuid FROM instances i
                      WHERE i.node = c.hypervisor_hostname AND i.deleted = 0 AND i.vm_state = $4
                        AND n.instance_uuid IS DISTINCT FROM i.uuid
                        AND NOT EXISTS (SELECT 1 FROM instance_faults f
                                         WHERE f.instance_uuid = i.uuid AND f.message = $5)
                      ORDER BY i.id LIMIT 1)
                END AS instance_gone
           FROM compute_nodes c
           LEFT JOIN ironic_nodes n ON n.uuid = c.hypervisor_hostname::uuid
           LEFT JOIN LATERAL (SELECT id FROM resource_providers WHERE uuid = c.uuid) rp ON TRUE
           LEFT JOIN LATERAL (
               SELECT array_agg(rc.name::text) AS classes, array_agg(i.total) AS totals,
                      array_agg(i.reserved) AS reserved
                 FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
                WHERE i.resource_provider_id = rp.id) inv ON TRUE
          WHERE c.host = $1 AND c.deleted = 0
            AND ($2::text[] IS NULL OR c.hypervisor_hostname = ANY($2))
          ORDER BY c.id",
    )
    .bind::<Text, _>(host)
    .bind::<Nullable<Array<Text>>, _>(only)
    .bind::<Text, _>(VmState::Building.as_str())
    .bind::<Text, _>(VmState::Active.as_str())
    .bind::<Text, _>(INSTANCE_GONE)
    .load(conn)?;
    Ok(rows.into_iter().map(OwnedNode::from).collect())
}

impl From<OwnedRow> for OwnedNode {
    fn from(row: OwnedRow) -> Self {
        let inventory = row
            .inventory_classes
            .into_iter()
            .zip(row.inventory_totals)
            .zip(row.inventory_reserved)
            .map(|((resource_class, total), reserved)| NodeInventory {
                resource_class,
                total,
                reserved,
            })
            .collect();
        let node_traits = row.node_traits;
        OwnedNode {
            // The node's columns (NULL when Ironic deleted it), through the one conversion.
            ironic: row.ironic_uuid.map(|uuid| {
                super::ironic::node_of((
                    uuid,
                    row.name,
                    row.resource_class.unwrap_or_default(),
                    row.provision_state.unwrap_or_default(),
                    row.power_state,
                    row.maintenance.unwrap_or(false),
                    row.instance_uuid,
                    row.reservation,
                    node_traits.into_iter().map(Some).collect(),
                    row.source.unwrap_or_default(),
                ))
            }),
            compute_node: ComputeNode {
                id: ComputeNodeId(row.id),
                uuid: row.uuid,
                host: row.host.into(),
                node: row.hypervisor_hostname.into(),
                owner_epoch: OwnerEpoch(row.owner_epoch),
            },
            has_provider: row.has_provider,
            allocated: row.allocated,
            inventory,
            provider_traits: row.provider_traits,
            devices: row.devices,
            build_deployed: row.build_deployed,
            instance_gone: row.instance_gone,
        }
    }
}

/// Reports `inventory` on the provider of compute node `uuid`, as `host` at `epoch`; returns
/// `false` (writing nothing) when ownership is lost. One node's `hold_owned` and
/// `report_node_inventories`.
pub fn report_inventory(
    conn: &mut PgConnection,
    uuid: ProviderUuid,
    host: &HostName,
    epoch: OwnerEpoch,
    inventory: &NodeInventory,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = BigInt)]
        id: ComputeNodeId,
    }
    let found: Option<Id> = diesel::sql_query("SELECT id FROM compute_nodes WHERE uuid = $1")
        .bind::<SqlUuid, _>(uuid)
        .get_result(conn)
        .optional()?;
    let Some(found) = found else {
        return Ok(false);
    };
    if !super::compute_nodes::hold_one(conn, host, found.id, epoch)? {
        return Ok(false);
    }
    super::placement::inventories::report_node_inventories(
        conn,
        &[(uuid, inventory.clone())],
        now,
    )?;
    Ok(true)
}

/// Marks active the instances still `building` on `nodes` that Ironic shows deployed with
/// them: builds whose node moved while Ironic deployed them (their old host's closing write
/// was refused). Call only while holding the nodes. Returns the instances finished.
pub fn finish_deployed_builds(
    conn: &mut PgConnection,
    nodes: &[NodeUuid],
    now: DateTime<Utc>,
) -> Result<Vec<InstanceUuid>, DbError> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    #[derive(QueryableByName)]
    struct Finished {
        #[diesel(sql_type = SqlUuid)]
        uuid: InstanceUuid,
    }
    let finished: Vec<Finished> = diesel::sql_query(
        "UPDATE instances i SET vm_state = $3, task_state = NULL, launched_at = $2,
                updated_at = $2, power_state = 1
           FROM ironic_nodes n
          WHERE i.node = ANY($1) AND i.deleted = 0 AND i.vm_state = $4
            AND n.uuid::text = i.node AND n.provision_state = 'active' AND n.instance_uuid = i.uuid
          RETURNING i.uuid",
    )
    .bind::<Array<Text>, _>(nodes)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(VmState::Active.as_str())
    .bind::<Text, _>(VmState::Building.as_str())
    .load(conn)?;
    Ok(finished.into_iter().map(|row| row.uuid).collect())
}

/// The times a tracker pass writes by.
#[derive(Debug, Clone, Copy)]
pub struct PassTimes {
    /// The time written on every row.
    pub now: DateTime<Utc>,
    /// Builds with no progress since this are stale: they end in error.
    pub build_cutoff: DateTime<Utc>,
}

/// The fenced write of a tracker pass (run it in one transaction; the caller skips it when
/// nothing changed and `stale`, the host's stale builds, is empty): holds (fences) the changed
/// nodes and those of the stale builds at the epochs read, drops those `host` lost since, and
/// for the rest writes the inventories and traits (through Placement's batch writers), the
/// simulated PCI devices (`devices` a node), the builds Ironic finished, the nodes enrolled
/// again, the instances gone, and ends the stale builds in error. Fails at the end unless
/// `lease_holds()` still says so (a host that lapsed mid-pass writes nothing:
/// `DbError::LeaseLapsed`, which rolls the transaction back).
pub fn write_pass(
    conn: &mut PgConnection,
    host: &HostName,
    (changes, stale): (&PassChanges, &[super::instances::StaleBuild]),
    devices: u32,
    times: PassTimes,
    lease_holds: impl Fn() -> bool,
) -> Result<PassWrites, DbError> {
    let stale_nodes: Vec<(ComputeNodeId, OwnerEpoch)> = stale
        .iter()
        .map(|build| (build.compute_node_id, build.owner_epoch))
        .collect();
    let held: HashSet<ComputeNodeId> =
        super::compute_nodes::hold_owned(conn, host, &changes.to_hold(&stale_nodes))?
            .into_iter()
            .collect();
    let mut written = write_held(conn, host, changes, &held, devices, times.now)?;
    // Builds nobody works on any more end in error and give their node back; they are
    // settled under the node's row lock like every other write of the pass.
    for build in stale
        .iter()
        .filter(|build| held.contains(&build.compute_node_id))
    {
        let reason = "build made no progress: timed out, or its spawn died with its process";
        if super::instances::settle_build(conn, build.instance, reason, host, times.now)?
            == BuildOutcome::Failed
        {
            written.failed.push(build.instance);
        }
    }
    if !lease_holds() {
        return Err(DbError::LeaseLapsed);
    }
    Ok(written)
}

/// Writes the changes of the nodes in `held`; names the changed nodes not held as lost.
fn write_held(
    conn: &mut PgConnection,
    host: &HostName,
    changes: &PassChanges,
    held: &HashSet<ComputeNodeId>,
    devices: u32,
    now: DateTime<Utc>,
) -> Result<PassWrites, DbError> {
    use super::placement::{inventories, provider_links};
    let mut written = PassWrites {
        lost: changes.lost(held),
        ..PassWrites::default()
    };
    let inventories = held_only(&changes.inventories, held);
    inventories::report_node_inventories(conn, &inventories, now)?;
    written.reported = inventories.len();
    provider_links::report_node_traits(conn, &held_only(&changes.traits, held), now)?;
    super::pci::sync_devices(conn, &held_only(&changes.devices, held), devices, now)?;
    written.finished = finish_deployed_builds(conn, &held_only(&changes.builds, held), now)?;
    let available = held_only(&changes.enrolled, held);
    super::ironic::make_available(conn, &available, now)?;
    written.made_available = available.iter().map(Uuid::to_string).collect();
    // Reported once (a fault), the instance kept as it is with its claim: its node is not
    // re-used behind the back of whoever owns the instance.
    for instance in held_only(&changes.gone, held) {
        super::instances::add_fault(conn, instance, INSTANCE_GONE, host, now)?;
        written.gone.push(instance);
    }
    Ok(written)
}
