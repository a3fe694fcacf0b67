//! Servers as the Compute API reads them: one query per page — the instance row,
//! the flavor it was booted with and the latest fault of one in error — filtered as Nova's
//! `GET /servers` filters, newest first; and a server that could not be placed, kept in error
//! with Nova's "No valid host" fault and no claim.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};

use super::DbError;
use crate::domain::compute::flavor::BootedFlavor;
use crate::domain::compute::server::{ServerFilter, ServerRecord, ServerRequest};
use crate::domain::identity::{InstanceUuid, NodeUuid};

#[derive(QueryableByName)]
struct ServerRow {
    #[diesel(sql_type = SqlUuid)]
    uuid: InstanceUuid,
    #[diesel(sql_type = Nullable<Text>)]
    display_name: Option<String>,
    #[diesel(sql_type = Text)]
    project_id: String,
    #[diesel(sql_type = Text)]
    user_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    host: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    node: Option<NodeUuid>,
    #[diesel(sql_type = Text)]
    vm_state: String,
    #[diesel(sql_type = Nullable<Text>)]
    task_state: Option<String>,
    #[diesel(sql_type = Integer)]
    power_state: i32,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    updated_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    launched_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    terminated_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    image_ref: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    key_name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    key_data: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    user_data: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    config_drive: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    availability_zone: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    flavor: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    image: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    fault_message: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    fault_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    addresses: Option<String>,
}

impl From<ServerRow> for ServerRecord {
    fn from(row: ServerRow) -> Self {
        ServerRecord {
            uuid: row.uuid,
            name: row.display_name.unwrap_or_default(),
            project_id: row.project_id,
            user_id: row.user_id,
            host: row.host,
            node: row.node,
            vm_state: row.vm_state,
            task_state: row.task_state,
            power_state: row.power_state,
            created_at: row.created_at,
            updated_at: row.updated_at,
            launched_at: row.launched_at,
            terminated_at: row.terminated_at,
            image_ref: row.image_ref,
            key_name: row.key_name,
            key_data: row.key_data,
            user_data: row.user_data,
            config_drive: row.config_drive,
            availability_zone: row.availability_zone,
            flavor: row.flavor.map(BootedFlavor::from_stored),
            image: row.image,
            addresses: row.addresses,
            fault: row.fault_message.zip(row.fault_at),
        }
    }
}

const SERVER_COLUMNS: &str = "i.uuid, i.display_name::text, i.project_id::text, i.user_id::text,
        i.host::text, i.node::text, i.vm_state::text, i.task_state::text, i.power_state,
        i.created_at, i.updated_at, i.launched_at, i.terminated_at, i.image_ref::text,
        i.key_name::text, i.key_data, i.user_data, i.config_drive::text, i.availability_zone::text,
        e.flavor, e.image, f.message::text AS fault_message, f.created_at AS fault_at,
        a.addresses
   FROM instances i
   LEFT JOIN ironic_nodes n
          ON n.uuid = CASE WHEN i.node ~* '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$'
                           THEN i.node::uuid END
   LEFT JOIN LATERAL (SELECT COALESCE(n.addresses, CASE WHEN n.source = 'simulated' THEN
                             simulated_addresses(n.uuid) END) AS addresses) a ON true
   LEFT JOIN LATERAL (SELECT flavor, image FROM instance_extra
                       WHERE instance_uuid = i.uuid ORDER BY id LIMIT 1) e ON true
   LEFT JOIN LATERAL (SELECT message, created_at FROM instance_faults
                       WHERE instance_uuid = i.uuid AND i.vm_state = 'error'
                       ORDER BY id DESC LIMIT 1) f ON true";

/// Returns live server `uuid`, or `None`.
pub fn get_server(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
) -> Result<Option<ServerRecord>, DbError> {
    Ok(diesel::sql_query(format!(
        "SELECT {SERVER_COLUMNS} WHERE i.uuid = $1 AND i.deleted = 0"
    ))
    .bind::<SqlUuid, _>(uuid)
    .load::<ServerRow>(conn)?
    .into_iter()
    .next()
    .map(ServerRecord::from))
}

/// Refuses `pattern` (the filter `field`) unless PostgreSQL's `~`, which runs it, takes it: its
/// regular expressions are not Rust's (`\p{L}`, `(?P<x>…)` are Rust's only; back references
/// PostgreSQL's only).
fn check_pattern(conn: &mut PgConnection, field: &str, pattern: &str) -> Result<(), DbError> {
    match diesel::sql_query("SELECT '' ~ $1")
        .bind::<Text, _>(pattern)
        .execute(conn)
    {
        Ok(_) => Ok(()),
        Err(diesel::result::Error::DatabaseError(_, info))
            if info.message().starts_with("invalid regular expression") =>
        {
            Err(DbError::InvalidInput(format!(
                "Invalid regular expression for {field}: {pattern}"
            )))
        }
        Err(other) => Err(other.into()),
    }
}

/// Lists the servers `filter` selects, newest first (or oldest first), at most `filter.limit`; a marker that
/// names no server (of those the filter could show) is `NotFound`, a pattern PostgreSQL cannot
/// run `InvalidInput`.
pub fn list_servers(
    conn: &mut PgConnection,
    filter: &ServerFilter,
) -> Result<Vec<ServerRecord>, DbError> {
    if let Some(name) = &filter.name {
        check_pattern(conn, "name", name)?;
    }
    if let Some((ip, version)) = &filter.ip {
        check_pattern(conn, if *version == 6 { "ip6" } else { "ip" }, ip)?;
    }
    let marker = match filter.marker {
        None => None,
        Some(marker) => {
            #[derive(QueryableByName)]
            struct Position {
                #[diesel(sql_type = Timestamptz)]
                created_at: DateTime<Utc>,
                #[diesel(sql_type = BigInt)]
                id: i64,
            }
            let found = diesel::sql_query("SELECT created_at, id FROM instances WHERE uuid = $1")
                .bind::<SqlUuid, _>(marker)
                .load::<Position>(conn)?
                .into_iter()
                .next()
                .ok_or_else(|| DbError::NotFound(format!("marker [{marker}] not found")))?;
            Some((found.created_at, found.id))
        }
    };
    let (marker_at, marker_id) = marker.unzip();
    let states: Option<Vec<String>> = filter.vm_states.clone();
    let (after, order) = if filter.oldest_first {
        (">", "ASC")
    } else {
        ("<", "DESC")
    };
    Ok(diesel::sql_query(format!(
        "SELECT {SERVER_COLUMNS}
          WHERE ($1::text IS NULL OR i.project_id = $1)
            AND ($2::text IS NULL OR i.display_name ~ $2)
            AND ($3::text[] IS NULL OR i.vm_state = ANY($3))
            AND ($4::text IS NULL OR i.host = $4)
            AND ($5::timestamptz IS NULL OR COALESCE(i.updated_at, i.created_at) >= $5)
            AND (CASE WHEN $7 THEN i.deleted <> 0 WHEN $6 THEN true ELSE i.deleted = 0 END)
            AND ($8::timestamptz IS NULL OR (i.created_at, i.id) {after} ($8, $9))
            AND ($11::text IS NULL OR EXISTS (
                  SELECT 1 FROM json_each(a.addresses::json) AS nets(name, list),
                                json_array_elements(nets.list) AS x(address)
                   WHERE x.address->>'addr' ~ $11 AND x.address->>'version' = $12::text))
          ORDER BY i.created_at {order}, i.id {order}
          LIMIT $10"
    ))
    .bind::<Nullable<Text>, _>(filter.project.as_deref())
    .bind::<Nullable<Text>, _>(filter.name.as_deref())
    .bind::<Nullable<Array<Text>>, _>(states)
    .bind::<Nullable<Text>, _>(filter.host.as_deref())
    .bind::<Nullable<Timestamptz>, _>(filter.changes_since)
    .bind::<Bool, _>(filter.include_deleted)
    .bind::<Bool, _>(filter.only_deleted)
    .bind::<Nullable<Timestamptz>, _>(marker_at)
    .bind::<Nullable<BigInt>, _>(marker_id)
    .bind::<BigInt, _>(filter.limit)
    .bind::<Nullable<Text>, _>(filter.ip.as_ref().map(|(pattern, _)| pattern.as_str()))
    .bind::<Integer, _>(filter.ip.as_ref().map_or(4, |(_, version)| *version))
    .load::<ServerRow>(conn)?
    .into_iter()
    .map(ServerRecord::from)
    .collect())
}

/// Nova's fault of a server no host could take.
pub const NO_VALID_HOST: &str = "No valid host was found. There are not enough hosts available.";

/// Keeps a server that could not be placed: in error, on no node, with no claim, its fault
/// written in the same statement.
pub fn create_unplaced(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    name: &str,
    project: &str,
    user: &str,
    server: &ServerRequest,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "WITH created AS (
             INSERT INTO instances (uuid, display_name, project_id, user_id, vm_state, created_at,
                                    updated_at, image_ref, key_name, user_data, config_drive,
                                    availability_zone, key_data)
             VALUES ($1, $2, $3, $4, 'error', $5, $5, $6, $7, $8, $9, $10, $13)
             RETURNING uuid
         ),
         extra AS (INSERT INTO instance_extra (instance_uuid, flavor, image, created_at)
                   SELECT uuid, $11, $14, $5 FROM created),
         fault AS (INSERT INTO instance_faults (instance_uuid, code, message, created_at)
                   SELECT uuid, 500, $12, $5 FROM created)
         INSERT INTO instance_actions (action, instance_uuid, user_id, project_id, start_time,
                                       finish_time, message, created_at)
         SELECT 'create', uuid, $4, $3, $5, $5, 'Error', $5 FROM created",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(name)
    .bind::<Text, _>(project)
    .bind::<Text, _>(user)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(&server.image_ref)
    .bind::<Nullable<Text>, _>(server.key_name.as_deref())
    .bind::<Nullable<Text>, _>(server.user_data.as_deref())
    .bind::<Text, _>(if server.config_drive { "True" } else { "" })
    .bind::<Nullable<Text>, _>(server.availability_zone.as_deref())
    .bind::<Text, _>(server.stored_flavor())
    .bind::<Text, _>(NO_VALID_HOST)
    .bind::<Nullable<Text>, _>(server.key_data.as_deref())
    .bind::<Nullable<Text>, _>(server.image.as_deref())
    .execute(conn)?;
    Ok(())
}

/// Soft-deletes a server that holds no node and no claim (one that could not be placed).
pub fn delete_unplaced(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    let held = diesel::sql_query(
        "SELECT 1 FROM instances WHERE uuid = $1 AND deleted = 0 AND node IS NULL FOR UPDATE",
    )
    .bind::<SqlUuid, _>(uuid)
    .execute(conn)?;
    if held == 0 {
        return Ok(false);
    }
    super::instances::soft_delete_instance(conn, uuid, now)?;
    Ok(true)
}

/// The live servers of `project` and the vCPUs and RAM of the flavors they were booted with.
pub fn project_usage(conn: &mut PgConnection, project: &str) -> Result<(i64, i64, i64), DbError> {
    #[derive(QueryableByName)]
    struct Usage {
        #[diesel(sql_type = BigInt)]
        servers: i64,
        #[diesel(sql_type = BigInt)]
        cores: i64,
        #[diesel(sql_type = BigInt)]
        ram: i64,
    }
    let usage = diesel::sql_query(
        "SELECT count(*) AS servers,
                COALESCE(sum(CASE WHEN left(e.flavor, 1) = chr(123) THEN (e.flavor::jsonb->>'vcpus')::bigint END), 0)::bigint AS cores,
                COALESCE(sum(CASE WHEN left(e.flavor, 1) = chr(123) THEN (e.flavor::jsonb->>'ram')::bigint END), 0)::bigint AS ram
           FROM instances i
           LEFT JOIN instance_extra e ON e.instance_uuid = i.uuid AND e.deleted = 0
          WHERE i.project_id = $1 AND i.deleted = 0",
    )
    .bind::<Text, _>(project)
    .get_result::<Usage>(conn)?;
    Ok((usage.servers, usage.cores, usage.ram))
}

/// Marks server `uuid` as under power action: its task_state set, if its vm_state is one of
/// `from` and no other action runs. `Err` carries Nova's reason to refuse (409).
pub fn begin_power(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    action: crate::domain::compute::server::PowerAction,
    now: DateTime<Utc>,
) -> Result<Result<(), String>, DbError> {
    #[derive(QueryableByName)]
    struct State {
        #[diesel(sql_type = Text)]
        vm_state: String,
        #[diesel(sql_type = Nullable<Text>)]
        task_state: Option<String>,
    }
    let current = diesel::sql_query(
        "SELECT vm_state::text, task_state::text FROM instances
          WHERE uuid = $1 AND deleted = 0 FOR UPDATE",
    )
    .bind::<SqlUuid, _>(uuid)
    .load::<State>(conn)?
    .into_iter()
    .next()
    .ok_or_else(|| DbError::NotFound(format!("Instance {uuid} could not be found.")))?;
    let name = action.name();
    if let Some(task) = current.task_state {
        return Ok(Err(format!(
            "Cannot '{name}' instance {uuid} while it is in task_state {task}"
        )));
    }
    if !action.allowed_from().contains(&current.vm_state.as_str()) {
        return Ok(Err(format!(
            "Cannot '{name}' instance {uuid} while it is in vm_state {}",
            current.vm_state
        )));
    }
    diesel::sql_query(
        "UPDATE instances SET task_state = $2, updated_at = $3 WHERE uuid = $1 AND deleted = 0",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(action.task_state())
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(Ok(()))
}

/// Ends a power action on server `uuid`: its new vm_state and power state when it succeeded
/// (`outcome`), its task_state cleared either way.
pub fn end_power(
    conn: &mut PgConnection,
    uuid: InstanceUuid,
    outcome: Option<(&'static str, i32)>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let (vm_state, power_state) = outcome.unzip();
    diesel::sql_query(
        "UPDATE instances SET task_state = NULL, updated_at = $2,
                vm_state = COALESCE($3, vm_state), power_state = COALESCE($4, power_state)
          WHERE uuid = $1 AND deleted = 0",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Timestamptz, _>(now)
    .bind::<Nullable<Text>, _>(vm_state)
    .bind::<Nullable<Integer>, _>(power_state)
    .execute(conn)?;
    Ok(())
}

/// Each instance's project, image and flavor name.
pub type Origins =
    std::collections::HashMap<InstanceUuid, (String, Option<String>, Option<String>)>;

/// The project, image and flavor name of each of `instances` (the admin API's listing shows
/// them): the flavor is the one a Compute API server was booted with; an admin-API instance
/// has its resource class for one and no image.
pub fn origins(conn: &mut PgConnection, instances: &[InstanceUuid]) -> Result<Origins, DbError> {
    #[derive(QueryableByName)]
    struct Origin {
        #[diesel(sql_type = SqlUuid)]
        uuid: InstanceUuid,
        #[diesel(sql_type = Text)]
        project_id: String,
        #[diesel(sql_type = Nullable<Text>)]
        image_ref: Option<String>,
        #[diesel(sql_type = Nullable<Text>)]
        flavor: Option<String>,
    }
    let rows: Vec<Origin> = diesel::sql_query(
        "SELECT i.uuid, i.project_id::text, i.image_ref::text,
                (SELECT CASE WHEN left(e.flavor, 1) = chr(123)
                             THEN e.flavor::jsonb->>'original_name' ELSE e.flavor END
                   FROM instance_extra e WHERE e.instance_uuid = i.uuid ORDER BY e.id LIMIT 1) AS flavor
           FROM instances i WHERE i.uuid = ANY($1)",
    )
    .bind::<Array<SqlUuid>, _>(instances)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| (row.uuid, (row.project_id, row.image_ref, row.flavor)))
        .collect())
}
