//! The resource tracker's reads and fenced writes: what a compute host owns, and the
//! inventory it reports for each node. Every write is conditional on `host = me AND
//! owner_epoch = e` (invariant 4): zero rows means "ownership lost", never a retry.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use crate::domain::node::{ComputeNode, IronicNode, NodeInventory, ProvisionState};

#[derive(Debug, QueryableByName)]
struct OwnedRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    uuid: Uuid,
    #[diesel(sql_type = Text)]
    host: String,
    #[diesel(sql_type = Text)]
    hypervisor_hostname: String,
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
    #[diesel(sql_type = Bool)]
    has_provider: bool,
    #[diesel(sql_type = Bool)]
    allocated: bool,
}

/// A compute node a host owns, with its Ironic node (`None` once Ironic has deleted it).
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedNode {
    pub compute_node: ComputeNode,
    pub ironic: Option<IronicNode>,
    pub has_provider: bool,
    /// Whether its provider holds an allocation.
    pub allocated: bool,
}

/// Lists the live compute nodes `host` owns, with their Ironic nodes, in id order: the order
/// in which the pass then locks them, as moves do, so the two never deadlock.
pub fn owned_nodes(conn: &mut PgConnection, host: &str) -> Result<Vec<OwnedNode>, DbError> {
    let rows: Vec<OwnedRow> = diesel::sql_query(
        "SELECT c.id, c.uuid, c.host, c.hypervisor_hostname, c.owner_epoch,
                n.uuid AS ironic_uuid, n.name::text AS name, n.resource_class::text AS resource_class,
                n.provision_state::text AS provision_state, n.maintenance, n.instance_uuid,
                n.reservation::text AS reservation,
                EXISTS (SELECT 1 FROM resource_providers rp WHERE rp.uuid = c.uuid) AS has_provider,
                EXISTS (SELECT 1 FROM resource_providers rp JOIN allocations a
                                   ON a.resource_provider_id = rp.id
                         WHERE rp.uuid = c.uuid) AS allocated
           FROM compute_nodes c
           LEFT JOIN ironic_nodes n ON n.uuid::text = c.hypervisor_hostname
          WHERE c.host = $1 AND c.deleted = 0
          ORDER BY c.id",
    )
    .bind::<Text, _>(host)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| OwnedNode {
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
            }),
            compute_node: ComputeNode {
                id: row.id,
                uuid: row.uuid,
                host: row.host,
                node: row.hypervisor_hostname,
                owner_epoch: row.owner_epoch,
            },
            has_provider: row.has_provider,
            allocated: row.allocated,
        })
        .collect())
}

/// Locks compute node `uuid` if `host` still owns it at `epoch`; `false` means ownership
/// lost. Holding the row lock (shared: boots claiming the node do not wait for the pass) until
/// commit orders this write before or after any move.
pub fn lock_if_owner(
    conn: &mut PgConnection,
    uuid: Uuid,
    host: &str,
    epoch: i64,
) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Locked {
        #[diesel(sql_type = BigInt)]
        #[expect(dead_code, reason = "only the row's presence matters")]
        id: i64,
    }
    let locked: Vec<Locked> = diesel::sql_query(
        "SELECT id FROM compute_nodes
          WHERE uuid = $1 AND host = $2 AND owner_epoch = $3 AND deleted = 0 FOR SHARE",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(host)
    .bind::<BigInt, _>(epoch)
    .load(conn)?;
    Ok(!locked.is_empty())
}

/// Reports `inventory` on the provider of compute node `uuid`, as `host` at `epoch`: creates
/// the resource class if needed, writes the inventory when it differs and then bumps the
/// provider's generation. Returns `false` (writing nothing) when ownership is lost.
pub fn report_inventory(
    conn: &mut PgConnection,
    uuid: Uuid,
    host: &str,
    epoch: i64,
    inventory: &NodeInventory,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    if !lock_if_owner(conn, uuid, host, epoch)? {
        return Ok(false);
    }
    super::placement::ensure_resource_class(conn, &inventory.resource_class)?;
    diesel::sql_query(
        "WITH rp AS (SELECT id FROM resource_providers WHERE uuid = $1),
              rc AS (SELECT id FROM resource_classes WHERE name = $2),
              written AS (
                  INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,
                                           min_unit, max_unit, step_size, allocation_ratio, created_at)
                  SELECT rp.id, rc.id, $3, $4, 1, $3, 1, 1.0, $5 FROM rp, rc
                  ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE
                     SET total = EXCLUDED.total, reserved = EXCLUDED.reserved,
                         max_unit = EXCLUDED.max_unit, updated_at = EXCLUDED.created_at
                   WHERE inventories.total <> EXCLUDED.total OR inventories.reserved <> EXCLUDED.reserved
                  RETURNING resource_provider_id
              )
         UPDATE resource_providers SET generation = generation + 1, updated_at = $5
          WHERE id IN (SELECT resource_provider_id FROM written)",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(&inventory.resource_class)
    .bind::<Integer, _>(inventory.total)
    .bind::<Integer, _>(inventory.reserved)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(true)
}

/// Marks active the instances still `building` on `node` that Ironic shows deployed with
/// them: a build whose node moved while Ironic deployed it (its old host's closing write was
/// refused). Call only while holding the node (`report_inventory` returned `true` in this
/// transaction). Returns the instances finished.
pub fn finish_deployed_builds(
    conn: &mut PgConnection,
    node: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, DbError> {
    #[derive(QueryableByName)]
    struct Finished {
        #[diesel(sql_type = SqlUuid)]
        uuid: Uuid,
    }
    let finished: Vec<Finished> = diesel::sql_query(
        "UPDATE instances i SET vm_state = 'active', task_state = NULL, updated_at = $2
           FROM ironic_nodes n
          WHERE i.node = $1 AND i.deleted = 0 AND i.vm_state = 'building'
            AND n.uuid::text = $1 AND n.provision_state = 'active' AND n.instance_uuid = i.uuid
          RETURNING i.uuid",
    )
    .bind::<Text, _>(node)
    .bind::<Timestamptz, _>(now)
    .load(conn)?;
    Ok(finished.into_iter().map(|row| row.uuid).collect())
}
