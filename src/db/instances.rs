//! Instances and their lifecycle rows: create, change state, record faults, soft-delete
//! (the instance and the rows that die with it, as Nova does), and find a free node.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use super::schema::instances;
use crate::domain::identity::{
    ComputeNodeId, ConsumerUuid, HostName, InstanceUuid, NodeUuid, OwnerEpoch,
};
use crate::domain::instance::{Instance, VmState};

pub use super::free_nodes::{FreeNode, NodeRequest, free_nodes, pick_free_node};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = instances, check_for_backend(diesel::pg::Pg))]
struct InstanceRow {
    uuid: Uuid,
    display_name: Option<String>,
    host: Option<String>,
    node: Option<NodeUuid>,
    resource_class: Option<String>,
    vm_state: String,
    task_state: Option<String>,
}

impl From<InstanceRow> for Instance {
    fn from(row: InstanceRow) -> Self {
        Instance {
            uuid: InstanceUuid(row.uuid),
            name: row.display_name,
            host: row.host,
            node: row.node,
            resource_class: row.resource_class,
            vm_state: VmState::parse(&row.vm_state),
            task_state: row.task_state,
            fault: None,
        }
    }
}

/// An instance to create.
#[derive(Debug, Clone)]
pub struct NewInstance {
    pub uuid: InstanceUuid,
    pub name: String,
    pub project_id: String,
    pub user_id: String,
    pub host: HostName,
    pub node: NodeUuid,
    pub resource_class: String,
    /// What a server booted through the Compute API records besides.
    pub server: Option<crate::domain::compute::server::ServerRequest>,
}

/// Creates an instance in `building`, with its instance_extra row, a system-metadata row and
/// its `create` action.
pub fn create_instance(
    conn: &mut PgConnection,
    new: &NewInstance,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let server = new.server.as_ref();
    diesel::sql_query(
        "WITH created AS (
             INSERT INTO instances (uuid, display_name, project_id, user_id, host, node,
                                    resource_class, vm_state, task_state, created_at,
                                    image_ref, key_name, user_data, config_drive,
                                    availability_zone, key_data)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $9, 'spawning', $8, $10, $11, $12, $13, $14, $16)
             RETURNING uuid
         ),
         extra AS (INSERT INTO instance_extra (instance_uuid, flavor, image, created_at)
                   SELECT uuid, COALESCE($15, $7), $17, $8 FROM created),
         meta AS (INSERT INTO instance_system_metadata (instance_uuid, key, value, created_at)
                  SELECT uuid, 'resource_class', $7, $8 FROM created)
         INSERT INTO instance_actions (action, instance_uuid, user_id, project_id, start_time, created_at)
         SELECT 'create', uuid, $4, $3, $8, $8 FROM created",
    )
    .bind::<SqlUuid, _>(new.uuid)
    .bind::<Text, _>(&new.name)
    .bind::<Text, _>(&new.project_id)
    .bind::<Text, _>(&new.user_id)
    .bind::<Text, _>(&new.host)
    .bind::<Text, _>(&new.node)
    .bind::<Text, _>(&new.resource_class)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(VmState::Building.as_str())
    .bind::<Nullable<Text>, _>(server.map(|s| s.image_ref.as_str()))
    .bind::<Nullable<Text>, _>(server.and_then(|s| s.key_name.as_deref()))
    .bind::<Nullable<Text>, _>(server.and_then(|s| s.user_data.as_deref()))
    .bind::<Nullable<Text>, _>(server.map(|s| if s.config_drive { "True" } else { "" }))
    .bind::<Nullable<Text>, _>(server.and_then(|s| s.availability_zone.as_deref()))
    .bind::<Nullable<Text>, _>(server.map(crate::domain::compute::server::ServerRequest::stored_flavor))
    .bind::<Nullable<Text>, _>(server.and_then(|s| s.key_data.as_deref()))
    .bind::<Nullable<Text>, _>(server.and_then(|s| s.image.as_deref()))
    .execute(conn)?;
    Ok(())
}

/// Sets the vm and task state of live instance `uuid`.
pub fn set_state(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    vm_state: VmState,
    task_state: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let updated = diesel::update(
        instances::table
            .filter(instances::uuid.eq(uuid.uuid()))
            .filter(instances::deleted.eq(0)),
    )
    .set((
        instances::vm_state.eq(vm_state.as_str()),
        instances::task_state.eq(task_state),
        instances::updated_at.eq(now),
    ))
    .execute(conn)?;
    if updated == 0 {
        return Err(DbError::NotFound(format!("instance {uuid}")));
    }
    Ok(())
}

/// Records a fault on instance `uuid`.
pub fn add_fault(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    message: &str,
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    add_fault_detailed(conn, uuid, (message, None), host, now)
}

/// `add_fault` with the fault's `details` (the whole story, where `message` keeps at most 255
/// characters), as Nova keeps a fault.
pub fn add_fault_detailed(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    (message, details): (&str, Option<&str>),
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO instance_faults (instance_uuid, code, message, details, host, created_at)
         VALUES ($1, 500, left($2, 255), $5, $3, $4)",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(message)
    .bind::<Text, _>(host)
    .bind::<Timestamptz, _>(now)
    .bind::<Nullable<Text>, _>(details)
    .execute(conn)?;
    Ok(())
}

/// Soft-deletes instance `uuid` and the rows that die with it (extra, system metadata,
/// faults, block device mappings); its actions stay until it is archived.
pub fn soft_delete_instance(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    // A boot still waiting to be taken by another process has nothing left to build.
    super::spawns::forget_spawn(conn, uuid)?;
    forget_build(conn, uuid)?;
    for table in [
        "instance_extra",
        "instance_system_metadata",
        "instance_faults",
        "block_device_mapping",
    ] {
        diesel::sql_query(format!(
            "UPDATE {table} SET deleted = id, deleted_at = $2 WHERE instance_uuid = $1 AND deleted = 0"
        ))
        .bind::<SqlUuid, _>(uuid)
        .bind::<Timestamptz, _>(now)
        .execute(conn)?;
    }
    let updated = diesel::sql_query(
        "UPDATE instances SET deleted = id, deleted_at = $2, vm_state = $3, task_state = NULL,
                terminated_at = $2
          WHERE uuid = $1 AND deleted = 0",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(VmState::Deleted.as_str())
    .execute(conn)?;
    if updated == 0 {
        return Err(DbError::NotFound(format!("instance {uuid}")));
    }
    Ok(())
}

/// Which instances a listing shows (`state`: the vm_state).
pub type InstanceFilter = crate::domain::listing::ListFilter;

/// Lists the live instances, ordered by uuid.
pub fn list_instances(conn: &mut PgConnection) -> Result<Vec<Instance>, DbError> {
    find_instances(conn, &InstanceFilter::default())
}

/// The live instances `filter` selects (its marker too), unordered, unpaged.
fn selected(filter: &InstanceFilter) -> instances::BoxedQuery<'_, diesel::pg::Pg> {
    let mut query = instances::table
        .filter(instances::deleted.eq(0))
        .into_boxed();
    if let Some(marker) = filter.marker {
        query = query.filter(instances::uuid.gt(marker));
    }
    if let Some(host) = &filter.host {
        query = query.filter(instances::host.eq(host));
    }
    if let Some(state) = &filter.state {
        query = query.filter(instances::vm_state.eq(state));
    }
    if let Some(class) = &filter.resource_class {
        query = query.filter(instances::resource_class.eq(class));
    }
    if let Some(search) = &filter.search {
        let prefix = super::like_prefix(search);
        query = query.filter(
            diesel::dsl::sql::<diesel::sql_types::Bool>("(uuid::text LIKE lower(")
                .bind::<Text, _>(prefix.clone())
                .sql(") OR node LIKE lower(")
                .bind::<Text, _>(prefix.clone())
                .sql(") OR display_name LIKE ")
                .bind::<Text, _>(prefix)
                .sql(" OR host = ")
                .bind::<Text, _>(search.clone())
                .sql(" OR vm_state = ")
                .bind::<Text, _>(search.clone())
                .sql(")"),
        );
    }
    query
}

/// Lists the live instances `filter` selects, ordered by uuid.
pub fn find_instances(
    conn: &mut PgConnection,
    filter: &InstanceFilter,
) -> Result<Vec<Instance>, DbError> {
    let mut query = selected(filter)
        .order(instances::uuid.asc())
        .select(InstanceRow::as_select())
        .offset(filter.offset);
    if let Some(limit) = filter.limit {
        query = query.limit(limit);
    }
    Ok(query.load(conn)?.into_iter().map(Instance::from).collect())
}

/// Counts the live instances `filter` selects (its marker too; not its offset and limit).
pub fn count_instances(conn: &mut PgConnection, filter: &InstanceFilter) -> Result<i64, DbError> {
    Ok(selected(filter).count().get_result(conn)?)
}

/// Returns live instance `uuid`.
pub fn get_instance(conn: &mut PgConnection, uuid: InstanceUuid) -> Result<Instance, DbError> {
    instances::table
        .filter(instances::uuid.eq(uuid.uuid()))
        .filter(instances::deleted.eq(0))
        .select(InstanceRow::as_select())
        .first(conn)
        .optional()?
        .map(Instance::from)
        .ok_or_else(|| DbError::NotFound(format!("instance {uuid}")))
}

/// Returns instance `uuid`, deleted or not (until it is archived), with its latest fault when
/// it is in error; `None` when there is none.
pub fn find_any_instance(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
) -> Result<Option<Instance>, DbError> {
    let found = instances::table
        .filter(instances::uuid.eq(uuid.uuid()))
        .select(InstanceRow::as_select())
        .first(conn)
        .optional()?
        .map(Instance::from);
    let Some(mut found) = found else {
        return Ok(None);
    };
    if found.vm_state == VmState::Error {
        found.fault = latest_fault(conn, uuid)?;
    }
    Ok(Some(found))
}

/// Holds, until the end of the transaction, the boot of instance `uuid` (a lock on the uuid's
/// number, so that boots retried with one uuid are made one after the other); says whether an
/// instance of that uuid exists (deleted or not), as of after the lock.
pub fn hold_boot(conn: &mut PgConnection, uuid: InstanceUuid) -> Result<bool, DbError> {
    let key = i64::from_be_bytes(uuid.uuid().as_bytes()[..8].try_into().unwrap_or([0; 8]));
    diesel::sql_query("SELECT pg_advisory_xact_lock($1)")
        .bind::<diesel::sql_types::BigInt, _>(key)
        .execute(conn)?;
    let found = diesel::sql_query("SELECT 1 FROM instances WHERE uuid = $1")
        .bind::<SqlUuid, _>(uuid)
        .execute(conn)?;
    Ok(found > 0)
}

/// Marks build `uuid` active, if it is still building; `false` when it was settled meanwhile
/// (failed, timed out or deleted), and the caller must undo its deploy.
pub fn activate_build(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    let updated = diesel::sql_query(
        "UPDATE instances SET vm_state = $3, task_state = NULL, launched_at = $2, updated_at = $2,
                power_state = 1
          WHERE uuid = $1 AND deleted = 0 AND vm_state = $4",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(VmState::Active.as_str())
    .bind::<Text, _>(VmState::Building.as_str())
    .execute(conn)?;
    if updated == 1 {
        // A success clears the node's failed builds (Nova resets failed_builds).
        clear_failures_of(conn, uuid)?;
        forget_build(conn, uuid)?;
    }
    Ok(updated == 1)
}

/// Locks instance `uuid` for the rest of the transaction if it is still building; `false`
/// when it is not (its build was settled), and the caller must not go on with it.
pub fn lock_building(conn: &mut PgConnection, uuid: InstanceUuid) -> Result<bool, DbError> {
    let locked = diesel::sql_query(
        "SELECT id FROM instances WHERE uuid = $1 AND deleted = 0 AND vm_state = $2 FOR UPDATE",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(VmState::Building.as_str())
    .execute(conn)?;
    Ok(locked == 1)
}

/// How a build was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildOutcome {
    /// The instance is gone (deleted).
    Gone,
    /// It was not building any more: its state is given.
    AlreadySettled(VmState),
    /// Ironic had deployed it: now active.
    Activated,
    /// It ended in error; its allocations and PCI devices are released.
    Failed,
}

/// Settles the build of instance `uuid` if it is still building: active when Ironic shows
/// the instance deployed on its node, otherwise `error` with a fault saying `reason`, its
/// allocations removed and its PCI devices freed (invariant 12, as Nova's build path does).
/// A compare-and-swap on `building` under the instance's row lock, then its Ironic node's, so a
/// deploy and a settle are ordered. Run it in a transaction.
pub fn settle_build(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    reason: &str,
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<BuildOutcome, DbError> {
    settle_build_detailed(conn, uuid, (reason, None), host, now)
}

/// `settle_build` with the fault's details (every attempt of a build tried on several nodes).
pub fn settle_build_detailed(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    (reason, details): (&str, Option<&str>),
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<BuildOutcome, DbError> {
    #[derive(QueryableByName)]
    struct Found {
        #[diesel(sql_type = Text)]
        vm_state: String,
        #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
        node: Option<NodeUuid>,
    }
    let found: Option<Found> = diesel::sql_query(
        "SELECT vm_state::text AS vm_state, node::text AS node FROM instances
          WHERE uuid = $1 AND deleted = 0 FOR UPDATE",
    )
    .bind::<SqlUuid, _>(uuid)
    .get_result(conn)
    .optional()?;
    // A settled build needs no hand-off any more, nor another attempt.
    super::spawns::forget_spawn(conn, uuid)?;
    forget_build(conn, uuid)?;
    let Some(found) = found else {
        return Ok(BuildOutcome::Gone);
    };
    let state = VmState::parse(&found.vm_state);
    if state != VmState::Building {
        return Ok(BuildOutcome::AlreadySettled(state));
    }
    let deployed = diesel::sql_query(
        "SELECT uuid FROM ironic_nodes
          WHERE uuid = $1 AND provision_state = 'active' AND instance_uuid = $2 FOR UPDATE",
    )
    .bind::<Nullable<SqlUuid>, _>(found.node)
    .bind::<SqlUuid, _>(uuid)
    .execute(conn)?;
    if deployed == 1 {
        activate_build(conn, uuid, now)?;
        return Ok(BuildOutcome::Activated);
    }
    add_fault_detailed(conn, uuid, (reason, details), host, now)?;
    super::placement::allocations::delete_consumer(conn, ConsumerUuid::from(uuid))?;
    super::pci::free_instance_devices(conn, uuid, now)?;
    set_state(conn, uuid, VmState::Error, None, now)?;
    Ok(BuildOutcome::Failed)
}

/// A build nobody works on any more, with the node it is on.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct StaleBuild {
    #[diesel(sql_type = SqlUuid)]
    pub instance: InstanceUuid,
    /// Its node's compute node.
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub compute_node_id: ComputeNodeId,
    /// The epoch the node was read at (writes for it are fenced by it).
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub owner_epoch: OwnerEpoch,
}

/// Lists the builds on nodes `host` owns that nobody is working on any more: building since
/// before `cutoff` (the host's start, or the build timeout), or since before their node moved
/// here (the old owner's spawn can no longer write).
pub fn stale_builds(
    conn: &mut PgConnection,
    host: &HostName,
    cutoff: DateTime<Utc>,
) -> Result<Vec<StaleBuild>, DbError> {
    Ok(super::cached::query(
        "SELECT i.uuid AS instance, c.id AS compute_node_id, c.owner_epoch FROM instances i
           JOIN compute_nodes c ON c.hypervisor_hostname = i.node AND c.deleted = 0
          WHERE c.host = $1 AND i.host = $1 AND i.deleted = 0 AND i.vm_state = $3
            AND (COALESCE(i.updated_at, i.created_at) < $2
                 OR COALESCE(i.updated_at, i.created_at) < c.updated_at)
          ORDER BY i.uuid",
    )
    .bind::<Text, _>(host)
    .bind::<Timestamptz, _>(cutoff)
    .bind::<Text, _>(VmState::Building.as_str())
    .load(conn)?)
}

/// Returns the latest fault message of instance `uuid`, if any, with its details on the lines
/// after it when it has some (a build tried on several nodes: each attempt's reason).
pub fn latest_fault(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
) -> Result<Option<String>, DbError> {
    #[derive(QueryableByName)]
    struct Fault {
        #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
        message: Option<String>,
    }
    Ok(diesel::sql_query(
        "SELECT NULLIF(concat_ws(E'\\n', message, details), '') AS message FROM instance_faults
          WHERE instance_uuid = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind::<SqlUuid, _>(uuid)
    .load::<Fault>(conn)?
    .into_iter()
    .next()
    .and_then(|fault| fault.message))
}

/// Returns the live instance on node `node`, if any.
pub fn instance_on_node(conn: &mut PgConnection, node: NodeUuid) -> Result<Option<Uuid>, DbError> {
    Ok(instances::table
        .filter(instances::node.eq(Some(node.to_string())))
        .filter(instances::deleted.eq(0))
        .select(instances::uuid)
        .first::<Uuid>(conn)
        .optional()?)
}

/// Forgets the build of `instance` (it ended: active, error or deleted).
pub fn forget_build(conn: &mut PgConnection, instance: InstanceUuid) -> Result<(), DbError> {
    super::cached::query("DELETE FROM instance_builds WHERE instance_uuid = $1")
        .bind::<SqlUuid, _>(instance)
        .execute(conn)?;
    Ok(())
}

/// Clears the failed builds of the node instance `instance` is on (its build succeeded).
pub fn clear_failures_of(conn: &mut PgConnection, instance: InstanceUuid) -> Result<(), DbError> {
    super::cached::query(
        "DELETE FROM node_build_failures
          WHERE node::text = (SELECT node FROM instances WHERE uuid = $1 AND deleted = 0)",
    )
    .bind::<SqlUuid, _>(instance)
    .execute(conn)?;
    Ok(())
}
