//! The resource tracker's reads and fenced writes: what a compute host owns, as one read with
//! everything a pass compares (Ironic's state, the provider's inventory, the node's devices, a
//! build Ironic finished), and batched writes for the nodes that changed — a handful of
//! statements whatever their number, none at all when nothing changed. Every write is
//! conditional on `host = me AND owner_epoch = e` (invariant 4): a node lost meanwhile is
//! left alone, never retried blindly.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use uuid::Uuid;

use super::DbError;
use crate::domain::instance::VmState;
use crate::domain::node::{ComputeNode, IronicNode, NodeInventory, OwnerEpoch, ProvisionState};

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
    instance_gone: Option<Uuid>,
}

/// A compute node a host owns, as a tracker pass sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedNode {
    pub compute_node: ComputeNode,
    /// Its Ironic node (`None` once Ironic has deleted it).
    pub ironic: Option<IronicNode>,
    pub has_provider: bool,
    /// Whether its provider holds an allocation.
    pub allocated: bool,
    /// The inventory its provider has now, per class: (class, total, reserved).
    pub inventory: Vec<NodeInventory>,
    /// Its provider's traits now, sorted (read only for a real Ironic's nodes).
    pub provider_traits: Vec<String>,
    /// Its live PCI device rows.
    pub devices: i64,
    /// Whether Ironic shows deployed an instance still `building` on it.
    pub build_deployed: bool,
    /// An instance `active` on the node that a real Ironic no longer shows there (torn down
    /// or re-associated behind ringmaster's back), not reported yet: it gets the fault
    /// `INSTANCE_GONE` and keeps its claim, so its node is not re-used.
    pub instance_gone: Option<Uuid>,
}

impl OwnedNode {
    /// Says whether the provider already has `wanted` as its inventory of that class.
    pub fn reports(&self, wanted: &NodeInventory) -> bool {
        self.inventory.iter().any(|current| current == wanted)
    }
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
    host: &str,
    only: Option<&[String]>,
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
        let simulated = row.source.as_deref() != Some(super::ironic::MIRRORED);
        let node_traits = row.node_traits;
        OwnedNode {
            ironic: row.ironic_uuid.map(|uuid| IronicNode {
                uuid,
                name: row.name,
                resource_class: row.resource_class.unwrap_or_default(),
                provision_state: ProvisionState::parse(
                    row.provision_state.as_deref().unwrap_or(""),
                ),
                maintenance: row.maintenance.unwrap_or(false),
                instance_uuid: row.instance_uuid,
                reservation: row.reservation,
                power_state: row.power_state,
                traits: (!simulated).then_some(node_traits),
                simulated,
            }),
            compute_node: ComputeNode {
                id: row.id,
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

/// Writes each (provider, inventory) of `reports`: creates the resource classes it needs,
/// upserts the inventories that differ and bumps those providers' generations, in three
/// statements. Call only while holding the nodes (`compute_nodes::hold_owned`).
pub fn write_inventories(
    conn: &mut PgConnection,
    reports: &[(Uuid, NodeInventory)],
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    if reports.is_empty() {
        return Ok(());
    }
    let providers: Vec<Uuid> = reports.iter().map(|(uuid, _)| *uuid).collect();
    let classes: Vec<&str> = reports
        .iter()
        .map(|(_, inventory)| inventory.resource_class.as_str())
        .collect();
    let totals: Vec<i32> = reports
        .iter()
        .map(|(_, inventory)| inventory.total)
        .collect();
    let reserved: Vec<i32> = reports
        .iter()
        .map(|(_, inventory)| inventory.reserved)
        .collect();
    super::cached::query(
        "INSERT INTO resource_classes (name)
         SELECT DISTINCT name FROM unnest($1::text[]) AS t(name)
          WHERE NOT EXISTS (SELECT 1 FROM resource_classes rc WHERE rc.name = t.name)
         ON CONFLICT (name) DO NOTHING",
    )
    .bind::<Array<Text>, _>(&classes)
    .execute(conn)?;
    super::cached::query(
        "WITH wanted AS (
             SELECT rp.id AS provider_id, rc.id AS class_id, t.total, t.reserved
               FROM unnest($1::uuid[], $2::text[], $3::int[], $4::int[])
                    AS t(provider, class, total, reserved)
               JOIN resource_providers rp ON rp.uuid = t.provider
               JOIN resource_classes rc ON rc.name = t.class
         ),
         written AS (
             INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,
                                      min_unit, max_unit, step_size, allocation_ratio, created_at)
             SELECT provider_id, class_id, total, reserved, 1, total, 1, 1.0, $5 FROM wanted
             ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE
                SET total = EXCLUDED.total, reserved = EXCLUDED.reserved,
                    max_unit = EXCLUDED.max_unit, updated_at = EXCLUDED.created_at
              WHERE inventories.total <> EXCLUDED.total
                 OR inventories.reserved <> EXCLUDED.reserved
             RETURNING resource_provider_id
         )
         UPDATE resource_providers SET generation = generation + 1, updated_at = $5
          WHERE id IN (SELECT resource_provider_id FROM written)",
    )
    .bind::<Array<SqlUuid>, _>(&providers)
    .bind::<Array<Text>, _>(&classes)
    .bind::<Array<Integer>, _>(&totals)
    .bind::<Array<Integer>, _>(&reserved)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

/// Makes each provider of `reports` carry exactly its node's traits (as Nova's ironic driver
/// sets a provider's traits from its node's), creating the custom traits it needs and bumping
/// those providers' generations: four statements whatever the number. The status trait
/// `COMPUTE_STATUS_DISABLED` is the host's, not the node's: it is kept. Call only while
/// holding the nodes.
pub fn write_traits(
    conn: &mut PgConnection,
    reports: &[(Uuid, Vec<String>)],
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    if reports.is_empty() {
        return Ok(());
    }
    let providers: Vec<Uuid> = reports.iter().map(|(uuid, _)| *uuid).collect();
    let (pair_providers, pair_traits): (Vec<Uuid>, Vec<&str>) = reports
        .iter()
        .flat_map(|(uuid, traits)| traits.iter().map(move |name| (*uuid, name.as_str())))
        .unzip();
    super::cached::query(
        "INSERT INTO traits (name, created_at)
         SELECT DISTINCT name, $2 FROM unnest($1::text[]) AS t(name)
          WHERE NOT EXISTS (SELECT 1 FROM traits x WHERE x.name = t.name)
         ON CONFLICT (name) DO NOTHING",
    )
    .bind::<Array<Text>, _>(&pair_traits)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    super::cached::query(
        "WITH wanted AS (
             SELECT rp.id AS provider_id, t.id AS trait_id
               FROM unnest($2::uuid[], $3::text[]) AS w(provider, name)
               JOIN resource_providers rp ON rp.uuid = w.provider
               JOIN traits t ON t.name = w.name
         ),
         targets AS (SELECT id FROM resource_providers WHERE uuid = ANY($1)),
         removed AS (
             DELETE FROM resource_provider_traits rpt USING targets
              WHERE rpt.resource_provider_id = targets.id
                AND rpt.trait_id NOT IN (SELECT id FROM traits WHERE name = 'COMPUTE_STATUS_DISABLED')
                AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.provider_id = rpt.resource_provider_id
                                                        AND w.trait_id = rpt.trait_id)
         ),
         added AS (
             INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
             SELECT provider_id, trait_id FROM wanted ON CONFLICT DO NOTHING
         )
         UPDATE resource_providers SET generation = generation + 1, updated_at = $4
          WHERE id IN (SELECT id FROM targets)",
    )
    .bind::<Array<SqlUuid>, _>(&providers)
    .bind::<Array<SqlUuid>, _>(&pair_providers)
    .bind::<Array<Text>, _>(&pair_traits)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

/// Reports `inventory` on the provider of compute node `uuid`, as `host` at `epoch`; returns
/// `false` (writing nothing) when ownership is lost. One node's `hold_owned` and
/// `write_inventories`.
pub fn report_inventory(
    conn: &mut PgConnection,
    uuid: Uuid,
    host: &str,
    epoch: OwnerEpoch,
    inventory: &NodeInventory,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = BigInt)]
        id: i64,
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
    write_inventories(conn, &[(uuid, inventory.clone())], now)?;
    Ok(true)
}

/// Marks active the instances still `building` on `nodes` that Ironic shows deployed with
/// them: builds whose node moved while Ironic deployed them (their old host's closing write
/// was refused). Call only while holding the nodes. Returns the instances finished.
pub fn finish_deployed_builds(
    conn: &mut PgConnection,
    nodes: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, DbError> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    #[derive(QueryableByName)]
    struct Finished {
        #[diesel(sql_type = SqlUuid)]
        uuid: Uuid,
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
