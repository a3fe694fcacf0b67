//! The simulated Ironic's node table: enroll, list, delete, the conductor lock, deploy and
//! destroy. Ironic deletes nodes for real; a deploy or destroy on a locked node fails. With a
//! real Ironic the same table is its listing's mirror (`db::ironic_mirror`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use uuid::Uuid;

use super::DbError;
use super::schema::ironic_nodes;
use crate::domain::node::{IronicNode, ProvisionState};

/// One row of `ironic_nodes`, as read.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = ironic_nodes, check_for_backend(diesel::pg::Pg))]
pub struct IronicNodeRow {
    pub uuid: Uuid,
    pub name: Option<String>,
    pub resource_class: String,
    pub provision_state: String,
    pub power_state: Option<String>,
    pub maintenance: bool,
    pub instance_uuid: Option<Uuid>,
    pub reservation: Option<String>,
    pub traits: Vec<Option<String>>,
    pub source: String,
}

impl From<IronicNodeRow> for IronicNode {
    fn from(row: IronicNodeRow) -> Self {
        let simulated = row.source == SIMULATED;
        IronicNode {
            uuid: row.uuid,
            name: row.name,
            resource_class: row.resource_class,
            provision_state: ProvisionState::parse(&row.provision_state),
            power_state: row.power_state,
            maintenance: row.maintenance,
            instance_uuid: row.instance_uuid,
            reservation: row.reservation,
            traits: (!simulated).then(|| row.traits.into_iter().flatten().collect()),
            simulated,
        }
    }
}

/// The `source` of a row the simulator wrote.
pub const SIMULATED: &str = "simulated";
/// The `source` of a row mirrored from a real Ironic.
pub const MIRRORED: &str = "ironic";

/// A node to enroll.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = ironic_nodes)]
pub struct NewIronicNode {
    pub uuid: Uuid,
    pub name: Option<String>,
    pub resource_class: String,
    pub provision_state: String,
    pub cpus: i32,
    pub memory_mb: i32,
    pub local_gb: i32,
}

impl NewIronicNode {
    /// Describes a node in the `enroll` state, waiting for its first compute host.
    pub fn enrolling(uuid: Uuid, name: Option<String>, resource_class: &str) -> NewIronicNode {
        NewIronicNode {
            uuid,
            name,
            resource_class: resource_class.to_owned(),
            provision_state: ProvisionState::Enroll.as_str().to_owned(),
            cpus: 32,
            memory_mb: 131_072,
            local_gb: 960,
        }
    }
}

/// Inserts `nodes` (in batches of a few thousand rows per statement).
pub fn enroll_nodes(conn: &mut PgConnection, nodes: &[NewIronicNode]) -> Result<usize, DbError> {
    let mut inserted = 0;
    for batch in nodes.chunks(4_000) {
        inserted += diesel::insert_into(ironic_nodes::table)
            .values(batch)
            .execute(conn)?;
    }
    Ok(inserted)
}

/// Lists every node, ordered by uuid.
pub fn list_nodes(conn: &mut PgConnection) -> Result<Vec<IronicNode>, DbError> {
    let rows = ironic_nodes::table
        .order(ironic_nodes::uuid.asc())
        .select(IronicNodeRow::as_select())
        .load(conn)?;
    Ok(rows.into_iter().map(IronicNode::from).collect())
}

/// Returns node `uuid`.
pub fn get_node(conn: &mut PgConnection, uuid: Uuid) -> Result<IronicNode, DbError> {
    ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(uuid))
        .select(IronicNodeRow::as_select())
        .first(conn)
        .optional()?
        .map(IronicNode::from)
        .ok_or_else(|| DbError::NotFound(format!("ironic node {uuid}")))
}

/// Returns node `uuid`'s disk size (its `local_gb` property), 0 when unknown.
pub fn local_gb(conn: &mut PgConnection, uuid: Uuid) -> Result<i32, DbError> {
    Ok(ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(uuid))
        .select(ironic_nodes::local_gb)
        .first(conn)
        .optional()?
        .unwrap_or(0))
}

/// Deletes node `uuid` from Ironic; refused while an instance is on it.
pub fn delete_node(conn: &mut PgConnection, uuid: Uuid) -> Result<(), DbError> {
    refuse_mirrored(conn, uuid)?;
    let node = get_node(conn, uuid)?;
    if let Some(instance) = node.instance_uuid {
        return Err(DbError::Conflict(format!(
            "ironic node {uuid} carries instance {instance}: delete the instance first"
        )));
    }
    diesel::delete(ironic_nodes::table.filter(ironic_nodes::uuid.eq(uuid))).execute(conn)?;
    Ok(())
}

/// Says whether node `uuid` exists and carries instance `instance` (the simulator's view).
pub fn carries(conn: &mut PgConnection, uuid: Uuid, instance: Uuid) -> Result<bool, DbError> {
    let carried: Option<Option<Uuid>> = ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(uuid))
        .select(ironic_nodes::instance_uuid)
        .first(conn)
        .optional()?;
    Ok(carried.flatten() == Some(instance))
}

/// Refuses a simulator write to node `uuid` when the node comes from a real Ironic (a process
/// without `--ironic-url` on a deployment whose nodes are mirrored from one).
fn refuse_mirrored(conn: &mut PgConnection, uuid: Uuid) -> Result<(), DbError> {
    let source: Option<String> = ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(uuid))
        .select(ironic_nodes::source)
        .first(conn)
        .optional()?;
    match source.as_deref() {
        None => Err(DbError::NotFound(format!("ironic node {uuid}"))),
        Some(MIRRORED) => Err(DbError::Conflict(format!(
            "ironic node {uuid} comes from a real Ironic: the simulated Ironic of this process \
             does not change it (run every process of the deployment with --ironic-url)"
        ))),
        Some(_) => Ok(()),
    }
}

/// Says that node `uuid` was not found when an update of it changed no row.
fn node_found(uuid: Uuid, updated: usize) -> Result<(), DbError> {
    if updated == 0 {
        return Err(DbError::NotFound(format!("ironic node {uuid}")));
    }
    Ok(())
}

/// Sets or clears the conductor lock of node `uuid` (fault injection).
pub fn set_reservation(
    conn: &mut PgConnection,
    uuid: Uuid,
    reservation: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    refuse_mirrored(conn, uuid)?;
    let updated = diesel::update(ironic_nodes::table.filter(ironic_nodes::uuid.eq(uuid)))
        .set((
            ironic_nodes::reservation.eq(reservation),
            ironic_nodes::updated_at.eq(now),
        ))
        .execute(conn)?;
    node_found(uuid, updated)
}

/// Puts node `uuid` in maintenance (`on`) or takes it out; a node in maintenance takes no
/// instance (its owner reports its unit reserved).
pub fn set_maintenance(
    conn: &mut PgConnection,
    uuid: Uuid,
    on: bool,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    refuse_mirrored(conn, uuid)?;
    let updated = diesel::update(ironic_nodes::table.filter(ironic_nodes::uuid.eq(uuid)))
        .set((
            ironic_nodes::maintenance.eq(on),
            ironic_nodes::updated_at.eq(now),
        ))
        .execute(conn)?;
    node_found(uuid, updated)
}

/// Marks enrolled simulated nodes available once a compute host has claimed them (a real
/// Ironic's nodes are its operator's to manage).
pub fn make_available(
    conn: &mut PgConnection,
    uuids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<usize, DbError> {
    Ok(diesel::update(
        ironic_nodes::table
            .filter(ironic_nodes::uuid.eq_any(uuids))
            .filter(ironic_nodes::source.eq(SIMULATED))
            .filter(ironic_nodes::provision_state.eq(ProvisionState::Enroll.as_str())),
    )
    .set((
        ironic_nodes::provision_state.eq(ProvisionState::Available.as_str()),
        ironic_nodes::updated_at.eq(now),
    ))
    .execute(conn)?)
}

/// Deploys `instance` onto node `uuid`: fails on a locked node or one that is not available.
pub fn deploy(
    conn: &mut PgConnection,
    uuid: Uuid,
    instance: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let node = lock_free_node(conn, uuid)?;
    if node.provision_state != ProvisionState::Available
        || node.instance_uuid.is_some()
        || node.maintenance
    {
        return Err(DbError::Conflict(format!(
            "ironic node {uuid} cannot be deployed in state {}{}",
            node.provision_state.as_str(),
            if node.maintenance {
                " (maintenance)"
            } else {
                ""
            }
        )));
    }
    diesel::update(ironic_nodes::table.filter(ironic_nodes::uuid.eq(uuid)))
        .set((
            ironic_nodes::provision_state.eq(ProvisionState::Active.as_str()),
            ironic_nodes::power_state.eq("power on"),
            ironic_nodes::instance_uuid.eq(Some(instance)),
            ironic_nodes::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

/// Sets the power of node `uuid`, which must carry `instance` (`on`: powered on, after a
/// reboot too); fails on a locked node.
pub fn set_power(
    conn: &mut PgConnection,
    uuid: Uuid,
    instance: Uuid,
    on: bool,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let node = lock_free_node(conn, uuid)?;
    if node.instance_uuid != Some(instance) {
        return Err(DbError::Conflict(format!(
            "ironic node {uuid} does not carry instance {instance}"
        )));
    }
    diesel::update(ironic_nodes::table.filter(ironic_nodes::uuid.eq(uuid)))
        .set((
            ironic_nodes::power_state.eq(if on { "power on" } else { "power off" }),
            ironic_nodes::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

/// Tears down the instance on node `uuid`: fails on a locked node.
pub fn destroy(conn: &mut PgConnection, uuid: Uuid, now: DateTime<Utc>) -> Result<(), DbError> {
    lock_free_node(conn, uuid)?;
    diesel::update(ironic_nodes::table.filter(ironic_nodes::uuid.eq(uuid)))
        .set((
            ironic_nodes::provision_state.eq(ProvisionState::Available.as_str()),
            ironic_nodes::power_state.eq("power off"),
            ironic_nodes::instance_uuid.eq(None::<Uuid>),
            ironic_nodes::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

fn lock_free_node(conn: &mut PgConnection, uuid: Uuid) -> Result<IronicNode, DbError> {
    refuse_mirrored(conn, uuid)?;
    let node: IronicNode = ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(uuid))
        .select(IronicNodeRow::as_select())
        .for_update()
        .first(conn)
        .optional()?
        .map(IronicNode::from)
        .ok_or_else(|| DbError::NotFound(format!("ironic node {uuid}")))?;
    match &node.reservation {
        Some(conductor) => Err(DbError::Conflict(format!(
            "ironic node {uuid} is locked by {conductor}"
        ))),
        None => Ok(node),
    }
}

/// What a database holds of each node source: nodes the simulator wrote, nodes mirrored from a
/// real Ironic, and live instances.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeSources {
    pub simulated: i64,
    pub mirrored: i64,
    pub instances: i64,
}

/// Counts the nodes of each source and the live instances.
pub fn node_sources(conn: &mut PgConnection) -> Result<NodeSources, DbError> {
    #[derive(QueryableByName)]
    struct Counts {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        simulated: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        mirrored: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        instances: i64,
    }
    let counts: Counts = diesel::sql_query(
        "SELECT count(*) FILTER (WHERE source = $1) AS simulated,
                count(*) FILTER (WHERE source = $2) AS mirrored,
                (SELECT count(*) FROM instances WHERE deleted = 0) AS instances
           FROM ironic_nodes",
    )
    .bind::<diesel::sql_types::Text, _>(SIMULATED)
    .bind::<diesel::sql_types::Text, _>(MIRRORED)
    .get_result(conn)?;
    Ok(NodeSources {
        simulated: counts.simulated,
        mirrored: counts.mirrored,
        instances: counts.instances,
    })
}
