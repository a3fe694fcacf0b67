//! The simulated Ironic's node table: enroll, list, delete, the conductor lock, deploy and
//! destroy. Ironic deletes nodes for real; a deploy or destroy on a locked node fails. With a
//! real Ironic the same table is its listing's mirror (`db::ironic_mirror`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use uuid::Uuid;

use super::DbError;
use super::schema::ironic_nodes;
use crate::domain::identity::InstanceUuid;
use crate::domain::node::{IronicNode, ProvisionState};

/// The columns a node is read with, in the order of `NodeColumns`.
macro_rules! node_columns {
    () => {
        (
            ironic_nodes::uuid,
            ironic_nodes::name,
            ironic_nodes::resource_class,
            ironic_nodes::provision_state,
            ironic_nodes::power_state,
            ironic_nodes::maintenance,
            ironic_nodes::instance_uuid,
            ironic_nodes::reservation,
            ironic_nodes::traits,
            ironic_nodes::source,
        )
    };
}

/// A node's row as read (`node_columns!`): uuid, name, resource class, provision state, power
/// state, maintenance, instance, reservation, traits, source.
pub(super) type NodeColumns = (
    Uuid,
    Option<String>,
    String,
    String,
    Option<String>,
    bool,
    Option<Uuid>,
    Option<String>,
    Vec<Option<String>>,
    String,
);

/// The node of a row: the one conversion from `ironic_nodes` to the domain's node (the
/// simulator's reads and the tracker's pass, `node_reports::owned_nodes`, both go through it).
pub(super) fn node_of(row: NodeColumns) -> IronicNode {
    let (uuid, name, resource_class, provision_state, power_state, maintenance) =
        (row.0, row.1, row.2, row.3, row.4, row.5);
    let (instance_uuid, reservation, traits, source) = (row.6, row.7, row.8, row.9);
    let simulated = source == SIMULATED;
    IronicNode {
        uuid,
        name,
        resource_class,
        provision_state: ProvisionState::parse(&provision_state),
        power_state,
        maintenance,
        instance_uuid,
        reservation,
        traits: (!simulated).then(|| traits.into_iter().flatten().collect()),
        simulated,
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
        .select(node_columns!())
        .load::<NodeColumns>(conn)?;
    Ok(rows.into_iter().map(node_of).collect())
}

/// Returns node `uuid`.
pub fn get_node(conn: &mut PgConnection, uuid: Uuid) -> Result<IronicNode, DbError> {
    ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(uuid))
        .select(node_columns!())
        .first(conn)
        .optional()?
        .map(node_of)
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
pub fn carries(
    conn: &mut PgConnection,
    uuid: Uuid,
    instance: InstanceUuid,
) -> Result<bool, DbError> {
    let carried: Option<Option<Uuid>> = ironic_nodes::table
        .filter(ironic_nodes::uuid.eq(uuid))
        .select(ironic_nodes::instance_uuid)
        .first(conn)
        .optional()?;
    Ok(carried.flatten() == Some(instance.uuid()))
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

/// What an operator or a script sets on a simulated node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSetting<'a> {
    /// The conductor lock (fault injection): set, or cleared with `None`.
    Reservation(Option<&'a str>),
    /// Maintenance on or off: a node in maintenance takes no instance (its owner reports its
    /// unit reserved).
    Maintenance(bool),
}

/// Sets `setting` on simulated node `uuid`.
pub fn set_node(
    conn: &mut PgConnection,
    uuid: Uuid,
    setting: NodeSetting<'_>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    refuse_mirrored(conn, uuid)?;
    let node = ironic_nodes::table.filter(ironic_nodes::uuid.eq(uuid));
    let at = ironic_nodes::updated_at.eq(now);
    let updated = match setting {
        NodeSetting::Reservation(holder) => diesel::update(node)
            .set((ironic_nodes::reservation.eq(holder), at))
            .execute(conn)?,
        NodeSetting::Maintenance(on) => diesel::update(node)
            .set((ironic_nodes::maintenance.eq(on), at))
            .execute(conn)?,
    };
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
    instance: InstanceUuid,
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
            ironic_nodes::instance_uuid.eq(Some(instance.uuid())),
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
    instance: InstanceUuid,
    on: bool,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let node = lock_free_node(conn, uuid)?;
    if node.instance_uuid != Some(instance.uuid()) {
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
        .select(node_columns!())
        .for_update()
        .first(conn)
        .optional()?
        .map(node_of)
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
