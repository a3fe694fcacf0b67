//! Compute services and compute nodes as the Compute API's `os-services` and `os-hypervisors`
//! read and change them. A compute service is a compute host; disabling one stops
//! new builds there and moves nothing (a drain is ringmaster's own admin action); forcing one
//! down makes it down now, so the rebalancer moves its nodes, instances included.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use uuid::Uuid;

use super::DbError;
use super::schema::{compute_nodes, services};
use crate::domain::compute::server::{HypervisorRecord, ServiceChange, ServiceRecord};
use crate::domain::host::{COMPUTE_BINARY, Host};

type ServiceColumns = (
    services::id,
    services::uuid,
    services::host,
    services::disabled,
    services::disabled_reason,
    services::forced_down,
    services::last_seen_up,
    services::report_count,
    services::updated_at,
);

const SERVICE_COLUMNS: ServiceColumns = (
    services::id,
    services::uuid,
    services::host,
    services::disabled,
    services::disabled_reason,
    services::forced_down,
    services::last_seen_up,
    services::report_count,
    services::updated_at,
);

type ServiceTuple = (
    i64,
    Uuid,
    String,
    bool,
    Option<String>,
    bool,
    Option<DateTime<Utc>>,
    i64,
    Option<DateTime<Utc>>,
);

fn record(row: ServiceTuple) -> ServiceRecord {
    let (
        id,
        uuid,
        name,
        disabled,
        disabled_reason,
        forced_down,
        last_seen_up,
        report_count,
        updated_at,
    ) = row;
    ServiceRecord {
        id,
        uuid,
        host: Host {
            name,
            disabled,
            disabled_reason,
            forced_down,
            last_seen_up,
            report_count,
            // (The os-services API does not show what a host serves.)
            serves: Default::default(),
        },
        updated_at,
    }
}

/// The live compute services, by id; of `host` only when given.
pub fn list_services(
    conn: &mut PgConnection,
    host: Option<&str>,
) -> Result<Vec<ServiceRecord>, DbError> {
    let mut query = services::table
        .filter(services::binary.eq(COMPUTE_BINARY))
        .filter(services::deleted.eq(0))
        .into_boxed();
    if let Some(host) = host {
        query = query.filter(services::host.eq(host.to_owned()));
    }
    let rows: Vec<ServiceTuple> = query
        .order(services::id.asc())
        .select(SERVICE_COLUMNS)
        .load(conn)?;
    Ok(rows.into_iter().map(record).collect())
}

/// Changes compute service `uuid` as asked; `None` when there is no such live service.
pub fn update_service(
    conn: &mut PgConnection,
    uuid: Uuid,
    change: &ServiceChange,
    now: DateTime<Utc>,
) -> Result<Option<ServiceRecord>, DbError> {
    let target = services::table
        .filter(services::uuid.eq(uuid))
        .filter(services::binary.eq(COMPUTE_BINARY))
        .filter(services::deleted.eq(0));
    if let Some(disabled) = &change.disabled {
        diesel::update(target)
            .set((
                services::disabled.eq(disabled.is_some()),
                services::disabled_reason.eq(disabled.as_deref().filter(|r| !r.is_empty())),
                services::updated_at.eq(now),
            ))
            .execute(conn)?;
    }
    if let Some(forced_down) = change.forced_down {
        diesel::update(target)
            .set((
                services::forced_down.eq(forced_down),
                services::updated_at.eq(now),
            ))
            .execute(conn)?;
    }
    let service = target
        .select(SERVICE_COLUMNS)
        .first::<ServiceTuple>(conn)
        .optional()?
        .map(record);
    if let Some(service) = &service
        && change.disabled.is_some()
    {
        sync_status_traits(conn, std::slice::from_ref(&service.host.name), &[], now)?;
    }
    Ok(service)
}

/// Makes the providers of the live compute nodes on `hosts`, and of the compute nodes
/// `compute_nodes` (their uuids), carry `COMPUTE_STATUS_DISABLED` exactly when their host is disabled (as Nova's
/// compute service sets it on its nodes' providers), bumping the generation of each provider
/// that changed: the scope read here, the trait written by Placement's writer of provider
/// traits (`provider_links::set_status_trait`).
pub fn sync_status_traits(
    conn: &mut PgConnection,
    hosts: &[String],
    compute_nodes: &[Uuid],
    now: DateTime<Utc>,
) -> Result<usize, DbError> {
    use diesel::sql_types::{Array, BigInt, Bool, Text, Uuid as SqlUuid};
    #[derive(QueryableByName)]
    struct Scope {
        #[diesel(sql_type = BigInt)]
        provider_id: crate::domain::identity::ProviderId,
        #[diesel(sql_type = Bool)]
        disabled: bool,
    }
    let scope: Vec<Scope> = super::cached::query(
        "SELECT rp.id AS provider_id,
                EXISTS (SELECT 1 FROM services s
                         WHERE s.host = c.host AND s.\"binary\" = $3 AND s.deleted = 0
                           AND s.disabled) AS disabled
           FROM compute_nodes c JOIN resource_providers rp ON rp.uuid = c.uuid
          WHERE c.deleted = 0 AND (c.host = ANY($1) OR c.uuid = ANY($2))
          ORDER BY rp.id",
    )
    .bind::<Array<Text>, _>(hosts)
    .bind::<Array<SqlUuid>, _>(compute_nodes)
    .bind::<Text, _>(COMPUTE_BINARY)
    .load(conn)?;
    let scope: Vec<(crate::domain::identity::ProviderId, bool)> = scope
        .into_iter()
        .map(|row| (row.provider_id, row.disabled))
        .collect();
    super::placement::provider_links::set_status_trait(conn, &scope, now)
}

/// What `delete_service` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceDeletion {
    Deleted,
    NotFound,
    /// Live instances are on the host: nothing was deleted.
    HostingInstances,
}

/// Deletes live compute service `id` (its uuid, or before 2.53 its integer id) unless
/// instances are on its host. Its compute nodes stay, with their uuids, providers and
/// allocations: a node whose owner is gone is moved to a live host by the rebalancer.
pub fn delete_service(
    conn: &mut PgConnection,
    id: ServiceId,
    now: DateTime<Utc>,
) -> Result<ServiceDeletion, DbError> {
    use super::schema::instances;
    let live = services::table
        .filter(services::binary.eq(COMPUTE_BINARY))
        .filter(services::deleted.eq(0));
    let found = match id {
        ServiceId::Uuid(uuid) => live
            .filter(services::uuid.eq(uuid))
            .select((services::id, services::host))
            .for_update()
            .first::<(i64, String)>(conn),
        ServiceId::Id(id) => live
            .filter(services::id.eq(id))
            .select((services::id, services::host))
            .for_update()
            .first::<(i64, String)>(conn),
    };
    let Some((row, host)) = found.optional()? else {
        return Ok(ServiceDeletion::NotFound);
    };
    let hosting: i64 = instances::table
        .filter(instances::host.eq(&host))
        .filter(instances::deleted.eq(0))
        .count()
        .get_result(conn)?;
    if hosting > 0 {
        return Ok(ServiceDeletion::HostingInstances);
    }
    diesel::update(services::table.filter(services::id.eq(row)))
        .set((
            services::deleted.eq(row),
            services::deleted_at.eq(now),
            services::updated_at.eq(now),
            services::holder.eq(None::<Uuid>),
        ))
        .execute(conn)?;
    Ok(ServiceDeletion::Deleted)
}

/// How `DELETE /os-services/{id}` names a service: by uuid (2.53 and later) or integer id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceId {
    Uuid(Uuid),
    Id(i64),
}

/// Which compute nodes `list_hypervisors` reads.
#[derive(Debug, Clone, Default)]
pub struct HypervisorQuery {
    /// A SQL LIKE pattern the node's uuid matches.
    pub pattern: Option<String>,
    /// This compute node only.
    pub only: Option<Uuid>,
    /// With the servers on each.
    pub with_servers: bool,
}

/// The live compute nodes `query` selects, by id, with their services.
pub fn list_hypervisors(
    conn: &mut PgConnection,
    wanted: &HypervisorQuery,
) -> Result<Vec<HypervisorRecord>, DbError> {
    let mut query = compute_nodes::table
        .inner_join(
            services::table.on(services::host
                .eq(compute_nodes::host)
                .and(services::binary.eq(COMPUTE_BINARY))
                .and(services::deleted.eq(0))),
        )
        .filter(compute_nodes::deleted.eq(0))
        .into_boxed();
    if let Some(pattern) = &wanted.pattern {
        query = query.filter(compute_nodes::hypervisor_hostname.like(pattern.clone()));
    }
    if let Some(only) = wanted.only {
        query = query.filter(compute_nodes::uuid.eq(only));
    }
    type NodeTuple = (i64, Uuid, String, i32, i32, i32, i32, i32, i32, i32);
    let rows: Vec<(NodeTuple, ServiceTuple)> = query
        .order(compute_nodes::id.asc())
        .select((
            (
                compute_nodes::id,
                compute_nodes::uuid,
                compute_nodes::hypervisor_hostname,
                compute_nodes::vcpus,
                compute_nodes::memory_mb,
                compute_nodes::local_gb,
                compute_nodes::vcpus_used,
                compute_nodes::memory_mb_used,
                compute_nodes::local_gb_used,
                compute_nodes::running_vms,
            ),
            SERVICE_COLUMNS,
        ))
        .load(conn)?;
    let mut servers = if wanted.with_servers {
        let nodes: Vec<&str> = rows.iter().map(|(node, _)| node.2.as_str()).collect();
        servers_on(conn, &nodes)?
    } else {
        Default::default()
    };
    Ok(rows
        .into_iter()
        .map(
            |(
                (
                    id,
                    uuid,
                    hostname,
                    vcpus,
                    memory_mb,
                    local_gb,
                    vcpus_used,
                    memory_mb_used,
                    local_gb_used,
                    running_vms,
                ),
                service,
            )| {
                HypervisorRecord {
                    id,
                    uuid,
                    servers: servers.remove(&hostname).unwrap_or_default(),
                    hypervisor_hostname: hostname,
                    service: record(service),
                    vcpus,
                    memory_mb,
                    local_gb,
                    vcpus_used,
                    memory_mb_used,
                    local_gb_used,
                    running_vms,
                }
            },
        )
        .collect())
}

/// The live servers on each of `nodes` (uuid, name), by node.
fn servers_on(
    conn: &mut PgConnection,
    nodes: &[&str],
) -> Result<std::collections::HashMap<String, Vec<(Uuid, String)>>, DbError> {
    use super::schema::instances;
    let placed: Vec<(Option<String>, Uuid, Option<String>)> = instances::table
        .filter(instances::deleted.eq(0))
        .filter(instances::node.eq_any(nodes))
        .select((instances::node, instances::uuid, instances::display_name))
        .load(conn)?;
    let mut servers: std::collections::HashMap<String, Vec<(Uuid, String)>> = Default::default();
    for (node, uuid, name) in placed {
        servers
            .entry(node.unwrap_or_default())
            .or_default()
            .push((uuid, name.unwrap_or_default()));
    }
    Ok(servers)
}
