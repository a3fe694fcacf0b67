//! Instances and their lifecycle rows: create, change state, record faults, soft-delete
//! (the instance and the rows that die with it, as Nova does), and find a free node.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Integer, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use super::schema::instances;
use crate::domain::instance::Instance;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = instances, check_for_backend(diesel::pg::Pg))]
struct InstanceRow {
    uuid: Uuid,
    display_name: Option<String>,
    host: Option<String>,
    node: Option<String>,
    resource_class: Option<String>,
    vm_state: String,
    task_state: Option<String>,
}

impl From<InstanceRow> for Instance {
    fn from(row: InstanceRow) -> Self {
        Instance {
            uuid: row.uuid,
            name: row.display_name,
            host: row.host,
            node: row.node,
            resource_class: row.resource_class,
            vm_state: row.vm_state,
            task_state: row.task_state,
        }
    }
}

/// An instance to create.
#[derive(Debug, Clone)]
pub struct NewInstance {
    pub uuid: Uuid,
    pub name: String,
    pub project_id: String,
    pub user_id: String,
    pub host: String,
    pub node: String,
    pub resource_class: String,
}

/// Creates an instance in `building`, with its instance_extra row, a system-metadata row and
/// its `create` action.
pub fn create_instance(
    conn: &mut PgConnection,
    new: &NewInstance,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "WITH created AS (
             INSERT INTO instances (uuid, display_name, project_id, user_id, host, node,
                                    resource_class, vm_state, task_state, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'building', 'spawning', $8)
             RETURNING uuid
         ),
         extra AS (INSERT INTO instance_extra (instance_uuid, flavor, created_at)
                   SELECT uuid, $7, $8 FROM created),
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
    .execute(conn)?;
    Ok(())
}

/// Sets the vm and task state of live instance `uuid`.
pub fn set_state(
    conn: &mut PgConnection,
    uuid: Uuid,
    vm_state: &str,
    task_state: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let updated = diesel::update(
        instances::table
            .filter(instances::uuid.eq(uuid))
            .filter(instances::deleted.eq(0)),
    )
    .set((
        instances::vm_state.eq(vm_state),
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
    uuid: Uuid,
    message: &str,
    host: &str,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO instance_faults (instance_uuid, code, message, host, created_at)
         VALUES ($1, 500, left($2, 255), $3, $4)",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(message)
    .bind::<Text, _>(host)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

/// Soft-deletes instance `uuid` and the rows that die with it (extra, system metadata,
/// faults, block device mappings); its actions stay until it is archived.
pub fn soft_delete_instance(
    conn: &mut PgConnection,
    uuid: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
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
        "UPDATE instances SET deleted = id, deleted_at = $2, vm_state = 'deleted', task_state = NULL,
                terminated_at = $2
          WHERE uuid = $1 AND deleted = 0",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    if updated == 0 {
        return Err(DbError::NotFound(format!("instance {uuid}")));
    }
    Ok(())
}

/// Lists the live instances, ordered by uuid.
pub fn list_instances(conn: &mut PgConnection) -> Result<Vec<Instance>, DbError> {
    let rows = instances::table
        .filter(instances::deleted.eq(0))
        .order(instances::uuid.asc())
        .select(InstanceRow::as_select())
        .load(conn)?;
    Ok(rows.into_iter().map(Instance::from).collect())
}

/// Returns live instance `uuid`.
pub fn get_instance(conn: &mut PgConnection, uuid: Uuid) -> Result<Instance, DbError> {
    instances::table
        .filter(instances::uuid.eq(uuid))
        .filter(instances::deleted.eq(0))
        .select(InstanceRow::as_select())
        .first(conn)
        .optional()?
        .map(Instance::from)
        .ok_or_else(|| DbError::NotFound(format!("instance {uuid}")))
}

/// A node that can take an instance now.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct FreeNode {
    #[diesel(sql_type = Text)]
    pub node: String,
    #[diesel(sql_type = SqlUuid)]
    pub provider: Uuid,
    #[diesel(sql_type = Text)]
    pub host: String,
}

/// Lists up to `limit` nodes of Ironic class `resource_class` that are available, unlocked,
/// owned by one of `hosts` and whose provider has the unit free.
pub fn free_nodes(
    conn: &mut PgConnection,
    resource_class: &str,
    placement_class: &str,
    hosts: &[String],
    limit: i32,
) -> Result<Vec<FreeNode>, DbError> {
    Ok(diesel::sql_query(
        "SELECT c.hypervisor_hostname::text AS node, rp.uuid AS provider, c.host::text AS host
           FROM ironic_nodes n
           JOIN compute_nodes c ON c.hypervisor_hostname = n.uuid::text AND c.deleted = 0
           JOIN resource_providers rp ON rp.uuid = c.uuid
           JOIN inventories inv ON inv.resource_provider_id = rp.id
           JOIN resource_classes rc ON rc.id = inv.resource_class_id AND rc.name = $2
          WHERE n.resource_class = $1 AND n.provision_state = 'available' AND n.instance_uuid IS NULL
            AND n.reservation IS NULL AND NOT n.maintenance AND c.host = ANY($3)
            AND inv.total - inv.reserved > (SELECT COALESCE(sum(a.used), 0) FROM allocations a
                                             WHERE a.resource_provider_id = rp.id
                                               AND a.resource_class_id = rc.id)
          ORDER BY n.uuid LIMIT $4",
    )
    .bind::<Text, _>(resource_class)
    .bind::<Text, _>(placement_class)
    .bind::<diesel::sql_types::Array<Text>, _>(hosts)
    .bind::<Integer, _>(limit)
    .load(conn)?)
}

/// Returns the live instance on node `node`, if any.
pub fn instance_on_node(conn: &mut PgConnection, node: &str) -> Result<Option<Uuid>, DbError> {
    Ok(instances::table
        .filter(instances::node.eq(Some(node)))
        .filter(instances::deleted.eq(0))
        .select(instances::uuid)
        .first::<Uuid>(conn)
        .optional()?)
}
