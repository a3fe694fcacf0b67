//! Compute services (`services` rows of the compute binary): registration, heartbeats,
//! drain, and the host list with node counts.

use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use super::models::ServiceRow;
use super::schema::{compute_nodes, services};
use crate::domain::host::{COMPUTE_BINARY, DRAINING_REASON, Host, HostState};
use crate::domain::identity::{HostName, NodeUuid};
use crate::domain::rebalance::HostJudge;
use crate::domain::selection::NodeSelection;

/// Lists the live compute hosts, in natural order of their names (cmp-2 before cmp-10).
pub fn list_hosts(conn: &mut PgConnection) -> Result<Vec<Host>, DbError> {
    let rows = services::table
        .filter(services::binary.eq(COMPUTE_BINARY))
        .filter(services::deleted.eq(0))
        .select(ServiceRow::as_select())
        .load(conn)?;
    let mut hosts: Vec<Host> = rows.into_iter().map(Host::from).collect();
    hosts.sort_by(|a, b| crate::domain::host::natural_cmp(&a.name, &b.name));
    Ok(hosts)
}

/// What of a destination a create asks for (Nova's `host` and `hypervisor_hostname`) is not
/// there: `host` without a live compute service, or `node` without a live compute node (on
/// `host`, when both are asked; then it is `host` that is named, as Nova names it). `None`
/// when everything asked is there.
pub fn missing_destination(
    conn: &mut PgConnection,
    host: Option<&str>,
    node: Option<NodeUuid>,
) -> Result<Option<String>, DbError> {
    if let Some(host) = host {
        let served = services::table
            .filter(services::binary.eq(COMPUTE_BINARY))
            .filter(services::deleted.eq(0))
            .filter(services::host.eq(host));
        if !diesel::select(diesel::dsl::exists(served)).get_result::<bool>(conn)? {
            return Ok(Some(host.to_owned()));
        }
    }
    let Some(node) = node.map(|node| node.to_string()) else {
        return Ok(None);
    };
    let mut nodes = compute_nodes::table
        .filter(compute_nodes::deleted.eq(0))
        .filter(compute_nodes::hypervisor_hostname.eq(&node))
        .into_boxed();
    if let Some(host) = host {
        nodes = nodes.filter(compute_nodes::host.eq(host));
    }
    if diesel::select(diesel::dsl::exists(nodes)).get_result::<bool>(conn)? {
        Ok(None)
    } else {
        Ok(Some(host.map_or(node, str::to_owned)))
    }
}

/// The deployment's nodes, and whether a host a boot may land on (up, not fenced, not disabled,
/// as `judge` says at `now`) owns one whose inventory is reported: whether a boot can be placed
/// (`/readyz`).
pub fn placeable_nodes(
    conn: &mut PgConnection,
    judge: &HostJudge,
    now: DateTime<Utc>,
) -> Result<Placeable, DbError> {
    let hosts: Vec<String> = list_hosts(conn)?
        .into_iter()
        .filter(|host| judge.state(host, now) == HostState::Up)
        .map(|host| host.name)
        .collect();
    Ok(diesel::sql_query(PLACEABLE)
        .bind::<diesel::sql_types::Array<Text>, _>(&hosts)
        .get_result::<Placeable>(conn)?)
}

/// The nodes, and whether one of the hosts `$1` owns a node with inventory.
const PLACEABLE: &str = "SELECT (SELECT count(*) FROM ironic_nodes) AS nodes,
        EXISTS (SELECT 1 FROM compute_nodes c
                 WHERE c.deleted = 0 AND c.host = ANY($1)
                   AND EXISTS (SELECT 1 FROM resource_providers rp
                                 JOIN inventories inv ON inv.resource_provider_id = rp.id
                                WHERE rp.uuid = c.uuid)) AS owned";

/// What `placeable_nodes` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName)]
pub struct Placeable {
    /// The deployment's nodes.
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub nodes: i64,
    /// Whether a host that may take a boot owns one of them, its inventory reported.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub owned: bool,
}

/// Returns how many live compute nodes each host owns.
pub fn node_counts(conn: &mut PgConnection) -> Result<Vec<(String, i64)>, DbError> {
    Ok(compute_nodes::table
        .filter(compute_nodes::deleted.eq(0))
        .group_by(compute_nodes::host)
        .select((compute_nodes::host, diesel::dsl::count_star()))
        .load(conn)?)
}

/// The node counts per host as last counted, kept until the ownership change counter moves:
/// a host list then costs one tiny query instead of counting every node (100,000 of them).
#[derive(Debug, Default)]
pub struct NodeCountCache {
    counted: std::sync::Mutex<Option<CountedNodes>>,
}

/// Node counts per host, and the ownership counter they were counted at.
type CountedNodes = (i64, Vec<(String, i64)>);

impl NodeCountCache {
    /// Returns the node counts per host, counting again only when ownership changed.
    pub fn get(&self, conn: &mut PgConnection) -> Result<Vec<(String, i64)>, DbError> {
        let ownership = super::compute_nodes::ownership_counter(conn)?;
        {
            let counted = self
                .counted
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((at, counts)) = counted.as_ref()
                && *at == ownership
            {
                return Ok(counts.clone());
            }
        }
        // Counted in one snapshot with the counter read above or later: a change after the
        // counter is seen at the next call.
        let counts = node_counts(conn)?;
        *self
            .counted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((ownership, counts.clone()));
        Ok(counts)
    }
}

/// Registers compute host `host` as run by process `holder`, serving the nodes `serves`
/// selects (its process's conductor group and shard), unless another live process runs
/// it: a host is held while its holder's presence connection is open (`db::presence`) and its
/// last heartbeat is within `down_time` of `now`, and for one `down_time` after the deployment
/// first reached this server (a failover's new primary, a restarted server: heartbeats were
/// missed and presence connections are still coming back, so neither says the holder is gone;
/// invariant 15). A registered host keeps its `disabled` state
/// (a drain outlives restarts until the host is enabled) and is no longer forced down. Run it
/// in a transaction.
pub fn register_host(
    conn: &mut PgConnection,
    host: &HostName,
    (holder, serves): (Uuid, &NodeSelection),
    down_time: Duration,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO services (uuid, host, \"binary\", topic, created_at, updated_at, holder)
         VALUES (gen_random_uuid(), $1, $2, 'compute', $3, $3, $4)
         ON CONFLICT (host, \"binary\", deleted) DO NOTHING",
    )
    .bind::<Text, _>(host)
    .bind::<Text, _>(COMPUTE_BINARY)
    .bind::<Timestamptz, _>(now)
    .bind::<SqlUuid, _>(holder)
    .execute(conn)?;
    let taken = diesel::sql_query(format!(
        "UPDATE services SET holder = $3, forced_down = FALSE, updated_at = $4,
                serves_group = $8, serves_shard = $9
          WHERE host = $1 AND \"binary\" = $2 AND deleted = 0
            AND (holder IS NULL OR holder = $3
                 OR (NOT {} AND (COALESCE(last_seen_up, updated_at) < $5 OR NOT {})))",
        super::presence::new_server_sql(7),
        super::presence::connected_sql("services", 6)
    ))
    .bind::<Text, _>(host)
    .bind::<Text, _>(COMPUTE_BINARY)
    .bind::<SqlUuid, _>(holder)
    .bind::<Timestamptz, _>(now)
    .bind::<Timestamptz, _>(now - down_time)
    .bind::<Text, _>(super::presence::APPLICATION_PREFIX)
    .bind::<diesel::sql_types::Double, _>(down_time.to_std().unwrap_or_default().as_secs_f64())
    .bind::<Nullable<Text>, _>(serves.conductor_group.as_deref())
    .bind::<Nullable<Text>, _>(serves.shard.as_deref())
    .execute(conn)?;
    if taken == 1 {
        return Ok(());
    }
    let seen: Option<Option<DateTime<Utc>>> = services::table
        .filter(services::host.eq(host.as_str()))
        .filter(services::binary.eq(COMPUTE_BINARY))
        .filter(services::deleted.eq(0))
        .select(services::last_seen_up)
        .first(conn)
        .optional()?;
    let age = seen
        .flatten()
        .map(|seen| {
            // To the millisecond below a second, to the second above: no nanoseconds.
            let age = (now - seen).to_std().unwrap_or_default();
            let age = if age.as_secs() == 0 {
                std::time::Duration::from_millis(age.as_millis().try_into().unwrap_or(0))
            } else {
                std::time::Duration::from_secs(age.as_secs())
            };
            humantime::format_duration(age).to_string()
        })
        .unwrap_or_else(|| "no heartbeat yet".to_owned());
    Err(DbError::Conflict(format!(
        "host {host} is run by another ringmaster process (last heartbeat: {age} ago); stop it \
         there, or wait until it is down ({} without a heartbeat)",
        humantime::format_duration(down_time.to_std().unwrap_or_default())
    )))
}

/// Records a heartbeat of `host` at `now` by process `holder`; `false` when the host is not
/// registered or another process has taken it over (this process must stop running it).
pub fn heartbeat(
    conn: &mut PgConnection,
    host: &HostName,
    holder: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    let updated = diesel::update(
        services::table
            .filter(services::host.eq(host.as_str()))
            .filter(services::binary.eq(COMPUTE_BINARY))
            .filter(services::deleted.eq(0))
            .filter(services::holder.eq(holder)),
    )
    .set((
        services::last_seen_up.eq(now),
        services::report_count.eq(services::report_count + 1),
        services::updated_at.eq(now),
    ))
    .execute(conn)?;
    Ok(updated == 1)
}

/// Enables `host` again: it clears a drain or any other disable, so it receives nodes.
pub fn enable_host(
    conn: &mut PgConnection,
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    set_disabled(conn, host, None, now)
}

/// Marks `host` as draining: disabled, so that it receives no nodes and its nodes leave. It
/// stays so across restarts until it is enabled.
pub fn drain_host(
    conn: &mut PgConnection,
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    set_disabled(conn, host, Some(DRAINING_REASON), now)
}

/// Disables `host` for `reason`, or enables it (`None`).
fn set_disabled(
    conn: &mut PgConnection,
    host: &HostName,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let updated = diesel::update(
        services::table
            .filter(services::host.eq(host.as_str()))
            .filter(services::binary.eq(COMPUTE_BINARY))
            .filter(services::deleted.eq(0)),
    )
    .set((
        services::disabled.eq(reason.is_some()),
        services::disabled_reason.eq(reason),
        services::updated_at.eq(now),
    ))
    .execute(conn)?;
    if updated == 0 {
        return Err(DbError::NotFound(format!("host {host}")));
    }
    // Its nodes' providers follow: COMPUTE_STATUS_DISABLED while it is disabled.
    super::services::sync_status_traits(conn, &[host.to_string()], &[], now)?;
    Ok(())
}

/// Returns the database server's clock.
pub fn database_now(conn: &mut PgConnection) -> Result<DateTime<Utc>, DbError> {
    Ok(
        diesel::select(diesel::dsl::now.into_sql::<diesel::sql_types::Timestamptz>())
            .get_result(conn)?,
    )
}
