//! The nodes a boot may take now (`FREE_NODES`): of the class, available, unlocked, not in
//! maintenance, owned by an up host, with the unit free and enough PCI devices, with the traits
//! asked for; offered by uuid (the free index), nodes with failed builds after the others and
//! not during their cooldown; only the node asked for, when a boot asks for one.
//! `pick_free_node` locks the one a claim takes.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};

use super::DbError;
use crate::domain::boot::BootRequest;
use crate::domain::identity::{HostName, NodeUuid, ProviderUuid};

/// A node that can take an instance now.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct FreeNode {
    #[diesel(sql_type = Text)]
    pub node: NodeUuid,
    #[diesel(sql_type = SqlUuid)]
    pub provider: ProviderUuid,
    #[diesel(sql_type = Text)]
    pub host: HostName,
    /// The node's Ironic resource class.
    #[diesel(sql_type = Text)]
    pub resource_class: String,
}

/// What a boot asks of a node, and where it may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRequest<'a> {
    /// The boot's class, traits, PCI devices and requested node.
    pub boot: &'a BootRequest,
    /// The hosts that may take it: up, not fenced, not disabled (`BootRequest::hosts`).
    pub hosts: &'a [String],
    /// Nodes whose last failed build is after this are cooling down: not offered. Nodes with
    /// failed builds come after every node without (Nova's BuildFailureWeigher).
    pub cooling_after: DateTime<Utc>,
}

/// The columns of a `FreeNode` and the joins from an Ironic node `n` to its compute node `c`
/// and provider `rp`.
macro_rules! free_node_from {
    () => {
        "SELECT c.hypervisor_hostname::text AS node, rp.uuid AS provider, c.host::text AS host,
                n.resource_class::text AS resource_class
           FROM ironic_nodes n
           JOIN compute_nodes c ON c.hypervisor_hostname = n.uuid::text AND c.deleted = 0
           JOIN resource_providers rp ON rp.uuid = c.uuid"
    };
}
pub(crate) use free_node_from;

/// The one text of what makes node `n` (compute node `c`) free for a boot now: available,
/// not deployed, unreserved, not in maintenance, `$pci` PCI devices available, not cooling
/// down from a build that failed after `$cooling`. The first pick and an alternate's claim
/// both use it; the first pick adds the class, hosts, traits and capacity.
macro_rules! node_is_free {
    ($pci:literal, $cooling:literal) => {
        concat!(
            "n.provision_state = 'available' AND n.instance_uuid IS NULL
             AND n.reservation IS NULL AND NOT n.maintenance
             AND (",
            $pci,
            " = 0 OR ",
            $pci,
            " <= (SELECT count(*) FROM pci_devices p
                                    WHERE p.compute_node_id = c.id AND p.status = 'available'
                                      AND p.deleted = 0))
             AND NOT EXISTS (SELECT 1 FROM node_build_failures f
                              WHERE f.node = n.uuid AND f.last_failed_at > ",
            $cooling,
            ")"
        )
    };
}
pub(crate) use node_is_free;

/// The nodes that can take an instance: free (`node_is_free`), of the class, owned by one of
/// the hosts, with the unit free on their provider, with the traits asked for.
const FREE_NODES: &str = concat!(
    free_node_from!(),
    "
           JOIN inventories inv ON inv.resource_provider_id = rp.id
           JOIN resource_classes rc ON rc.id = inv.resource_class_id AND rc.name = $2
          WHERE ($1::text IS NULL OR n.resource_class = $1) AND c.host = ANY($3) AND ",
    node_is_free!("$4", "$8"),
    "
            AND ", crate::db::placement::capacity!("inv"), "
                >= 1 + (SELECT COALESCE(sum(a.used), 0) FROM allocations a
                         WHERE a.resource_provider_id = rp.id AND a.resource_class_id = rc.id)
            AND (cardinality($6::text[]) = 0 OR cardinality($6::text[]) =
                 (SELECT count(*) FROM resource_provider_traits pt JOIN traits t ON t.id = pt.trait_id
                   WHERE pt.resource_provider_id = rp.id AND t.name = ANY($6)))
            AND (cardinality($7::text[]) = 0 OR NOT EXISTS
                 (SELECT 1 FROM resource_provider_traits pt JOIN traits t ON t.id = pt.trait_id
                   WHERE pt.resource_provider_id = rp.id AND t.name = ANY($7)))
            AND $9 = EXISTS (SELECT 1 FROM node_build_failures f WHERE f.node = n.uuid)
            AND ($10::text IS NULL OR c.hypervisor_hostname = $10)"
);

/// The order of free nodes: by uuid (the free index), those with failed builds by how many.
fn free_order(failed: bool) -> &'static str {
    if failed {
        "ORDER BY (SELECT f.failed_builds FROM node_build_failures f WHERE f.node = n.uuid), n.uuid"
    } else {
        "ORDER BY n.uuid"
    }
}

/// Lists up to `limit` nodes that can take an instance now, in the order they are offered:
/// by node uuid, then those with failed builds (out of their cooldown) by how many.
pub fn free_nodes(
    conn: &mut PgConnection,
    request: &NodeRequest<'_>,
    limit: i32,
) -> Result<Vec<FreeNode>, DbError> {
    let boot = request.boot;
    let mut found: Vec<FreeNode> = Vec::new();
    for failed in [false, true] {
        let left = limit.saturating_sub(i32::try_from(found.len()).unwrap_or(i32::MAX));
        if left <= 0 {
            break;
        }
        found.extend(
            diesel::sql_query(format!("{FREE_NODES} {} LIMIT $5", free_order(failed)))
                .bind::<Nullable<Text>, _>(boot.ironic_class.as_deref())
                .bind::<Text, _>(&boot.placement_class)
                .bind::<Array<Text>, _>(request.hosts)
                .bind::<Integer, _>(pci_devices(boot))
                .bind::<Integer, _>(left)
                .bind::<Array<Text>, _>(&boot.required_traits)
                .bind::<Array<Text>, _>(&boot.forbidden_traits)
                .bind::<Timestamptz, _>(request.cooling_after)
                .bind::<diesel::sql_types::Bool, _>(failed)
                .bind::<Nullable<Text>, _>(boot.destination.node)
                .load::<FreeNode>(conn)?,
        );
    }
    Ok(found)
}

/// Picks the first node that can take an instance and that no other claim is working on,
/// skipping `tried` providers, and locks its provider for the rest of the transaction (a
/// concurrent boot skips it and picks the next) and its compute node against moves (a node
/// being moved is skipped; a move waits for the claim, so the instance moves with its node).
/// The caller still claims through the one allocation writer, which re-checks capacity under
/// the lock.
pub fn pick_free_node(
    conn: &mut PgConnection,
    request: &NodeRequest<'_>,
    tried: &[ProviderUuid],
) -> Result<Option<FreeNode>, DbError> {
    // Planned for these parameters every time: the generic plan PostgreSQL falls back to for
    // a statement prepared and run five times sorts every free node (9.4 s with 5,000 of
    // 10,300 free, against 0.4 ms planned for the values), and boots at that pace starved
    // the heartbeats. Inside the caller's transaction only.
    diesel::sql_query("SET LOCAL plan_cache_mode = force_custom_plan").execute(conn)?;
    let boot = request.boot;
    for failed in [false, true] {
        let picked = diesel::sql_query(format!(
            "{FREE_NODES} AND rp.uuid <> ALL($5) {} LIMIT 1
                FOR UPDATE OF rp SKIP LOCKED FOR SHARE OF c SKIP LOCKED",
            free_order(failed)
        ))
        .bind::<Nullable<Text>, _>(boot.ironic_class.as_deref())
        .bind::<Text, _>(&boot.placement_class)
        .bind::<Array<Text>, _>(request.hosts)
        .bind::<Integer, _>(pci_devices(boot))
        .bind::<Array<SqlUuid>, _>(tried)
        .bind::<Array<Text>, _>(&boot.required_traits)
        .bind::<Array<Text>, _>(&boot.forbidden_traits)
        .bind::<Timestamptz, _>(request.cooling_after)
        .bind::<diesel::sql_types::Bool, _>(failed)
        .bind::<Nullable<Text>, _>(boot.destination.node)
        .load::<FreeNode>(conn)?
        .into_iter()
        .next();
        if picked.is_some() {
            return Ok(picked);
        }
    }
    Ok(None)
}

/// The PCI devices `boot` asks for, as the queries bind them.
pub(crate) fn pci_devices(boot: &BootRequest) -> i32 {
    i32::try_from(boot.pci_devices).unwrap_or(i32::MAX)
}
