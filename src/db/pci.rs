//! PCI devices of compute nodes, as the compute host's PCI tracker keeps them. A device is
//! updated by its key (compute node, address) only; when no row matches, that is an error,
//! never an insert (bug 1899541: Nova's upsert wrote a row with a NULL compute_node_id).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use crate::domain::identity::{ComputeNodeId, InstanceUuid};

/// Vendor and product of the simulated devices (an Intel 82599 virtual function).
const VENDOR: &str = "8086";
const PRODUCT: &str = "10ed";

/// Returns the PCI address of the `index`-th simulated device of a node.
pub fn simulated_address(index: u32) -> String {
    format!("0000:04:{:02x}.{}", index / 8, index % 8)
}

/// Makes sure each compute node of `compute_node_ids` has `count` simulated devices (creates
/// the missing ones by address, in one statement; never touches existing rows).
pub fn sync_devices(
    conn: &mut PgConnection,
    compute_node_ids: &[ComputeNodeId],
    count: u32,
    now: DateTime<Utc>,
) -> Result<usize, DbError> {
    if compute_node_ids.is_empty() || count == 0 {
        return Ok(0);
    }
    let addresses: Vec<String> = (0..count).map(simulated_address).collect();
    Ok(super::cached::query(
        "INSERT INTO pci_devices (compute_node_id, address, vendor_id, product_id, dev_type, label,
                                  status, uuid, created_at)
         SELECT n.id, a.address, $3, $4, 'type-VF', 'label_8086_10ed', 'available', gen_random_uuid(), $5
           FROM unnest($1::bigint[]) AS n(id) CROSS JOIN unnest($2::text[]) AS a(address)
          WHERE NOT EXISTS (SELECT 1 FROM pci_devices p
                             WHERE p.compute_node_id = n.id AND p.address = a.address AND p.deleted = 0)",
    )
    .bind::<Array<BigInt>, _>(compute_node_ids)
    .bind::<Array<Text>, _>(&addresses)
    .bind::<Text, _>(VENDOR)
    .bind::<Text, _>(PRODUCT)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?)
}

#[derive(QueryableByName)]
struct Address {
    #[diesel(sql_type = Text)]
    address: String,
}

/// Allocates `count` available devices of compute node `compute_node_id` to `instance`;
/// a conflict when fewer are available. Returns their addresses.
pub fn claim_devices(
    conn: &mut PgConnection,
    compute_node_id: ComputeNodeId,
    instance: InstanceUuid,
    count: i32,
    now: DateTime<Utc>,
) -> Result<Vec<String>, DbError> {
    let claimed: Vec<Address> = diesel::sql_query(
        "UPDATE pci_devices SET status = 'allocated', instance_uuid = $2, updated_at = $4
          WHERE id IN (SELECT id FROM pci_devices
                        WHERE compute_node_id = $1 AND status = 'available' AND deleted = 0
                        ORDER BY address LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING address::text AS address",
    )
    .bind::<BigInt, _>(compute_node_id)
    .bind::<SqlUuid, _>(instance)
    .bind::<Integer, _>(count)
    .bind::<Timestamptz, _>(now)
    .load(conn)?;
    if claimed.len() < usize::try_from(count).unwrap_or(0) {
        return Err(DbError::Conflict(format!(
            "compute node {compute_node_id} has fewer than {count} free pci devices"
        )));
    }
    Ok(claimed.into_iter().map(|row| row.address).collect())
}

/// Sets the status and instance of device `address` of compute node `compute_node_id`.
/// No matching live row is an error naming the device; nothing is inserted.
pub fn update_device(
    conn: &mut PgConnection,
    compute_node_id: ComputeNodeId,
    address: &str,
    status: &str,
    instance: Option<InstanceUuid>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let updated = diesel::sql_query(
        "UPDATE pci_devices SET status = $3, instance_uuid = $4, updated_at = $5
          WHERE compute_node_id = $1 AND address = $2 AND deleted = 0",
    )
    .bind::<BigInt, _>(compute_node_id)
    .bind::<Text, _>(address)
    .bind::<Text, _>(status)
    .bind::<Nullable<SqlUuid>, _>(instance)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    if updated == 0 {
        return Err(DbError::NotFound(format!(
            "pci device {address} of compute node {compute_node_id}"
        )));
    }
    Ok(())
}

/// A device allocated to an instance that is no longer live.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct StaleAllocation {
    #[diesel(sql_type = BigInt)]
    pub compute_node_id: ComputeNodeId,
    #[diesel(sql_type = Text)]
    pub address: String,
    #[diesel(sql_type = SqlUuid)]
    pub instance_uuid: Uuid,
}

/// Lists the devices of `compute_node_ids` still allocated to instances that are deleted or
/// gone (archived): the frees that lag behind instance deletes.
pub fn stale_allocations(
    conn: &mut PgConnection,
    compute_node_ids: &[ComputeNodeId],
) -> Result<Vec<StaleAllocation>, DbError> {
    Ok(diesel::sql_query(
        "SELECT p.compute_node_id, p.address::text AS address, p.instance_uuid
           FROM pci_devices p
          WHERE p.compute_node_id = ANY($1) AND p.deleted = 0 AND p.instance_uuid IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.uuid = p.instance_uuid AND i.deleted = 0)
          ORDER BY p.compute_node_id, p.address",
    )
    .bind::<Array<BigInt>, _>(compute_node_ids)
    .load(conn)?)
}

/// Frees every device allocated to `instance`, device by device by key. Returns how many.
pub fn free_instance_devices(
    conn: &mut PgConnection,
    instance: InstanceUuid,
    now: DateTime<Utc>,
) -> Result<usize, DbError> {
    #[derive(QueryableByName)]
    struct Key {
        #[diesel(sql_type = BigInt)]
        compute_node_id: ComputeNodeId,
        #[diesel(sql_type = Text)]
        address: String,
    }
    let keys: Vec<Key> = diesel::sql_query(
        "SELECT compute_node_id, address::text AS address FROM pci_devices
          WHERE instance_uuid = $1 AND deleted = 0 ORDER BY address",
    )
    .bind::<SqlUuid, _>(instance)
    .load(conn)?;
    for key in &keys {
        update_device(
            conn,
            key.compute_node_id,
            &key.address,
            "available",
            None,
            now,
        )?;
    }
    Ok(keys.len())
}

/// Frees, device by device by key, the PCI devices of `compute_node_ids` still allocated to
/// instances that are deleted or archived (a free may lag behind the delete); returns how many.
/// A device that no longer matches is logged and skipped: the next pass reloads.
pub fn free_lagging(
    conn: &mut PgConnection,
    compute_node_ids: &[ComputeNodeId],
    now: DateTime<Utc>,
) -> Result<usize, DbError> {
    let mut freed = 0;
    for device in stale_allocations(conn, compute_node_ids)? {
        match update_device(
            conn,
            device.compute_node_id,
            &device.address,
            "available",
            None,
            now,
        ) {
            Ok(()) => freed += 1,
            Err(DbError::NotFound(what)) => {
                log::warn!("{what} vanished before it was freed; reloading")
            }
            Err(other) => return Err(other),
        }
    }
    Ok(freed)
}
