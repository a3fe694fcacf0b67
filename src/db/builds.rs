//! Builds tried again on an alternate node, as Nova's `[scheduler] max_attempts`
//! does: the alternates picked at the first scheduling (`record_build`), the claim moved to the
//! first alternate still free when a deploy fails (`retry_or_settle`, one transaction), and
//! each node's failed builds (Nova's `failed_builds`): counted per failure, cleared by a
//! success, shown in the node listings, honoured by the scheduler's picks (`instances`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};

use super::DbError;
use super::free_nodes::{free_node_from, node_is_free};
use super::instances::{BuildOutcome, FreeNode};
use super::placement::allocations::{AllocationError, ConsumerAllocations};
use crate::domain::identity::{ConsumerUuid, HostName, InstanceUuid, NodeUuid};
use crate::domain::placement::GenerationCheck;

/// A build as first scheduled: its alternates, best first, and how many attempts it may make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildPlan {
    pub instance: InstanceUuid,
    pub alternates: Vec<NodeUuid>,
    pub max_attempts: i32,
    pub placement_class: String,
    pub pci_devices: i32,
}

/// Records `plan` with the first claim (in its transaction).
pub fn record_build(
    conn: &mut PgConnection,
    plan: &BuildPlan,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    super::cached::query(
        "INSERT INTO instance_builds (instance_uuid, alternates, max_attempts, placement_class,
                                      pci_devices, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind::<SqlUuid, _>(plan.instance)
    .bind::<Array<SqlUuid>, _>(&plan.alternates)
    .bind::<Integer, _>(plan.max_attempts.max(1))
    .bind::<Text, _>(&plan.placement_class)
    .bind::<Integer, _>(plan.pci_devices)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

/// What became of a build whose deploy failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retry {
    /// Claimed on an alternate and handed to its host.
    Rescheduled(FreeNode),
    /// Not tried again: settled (error naming every node tried, or active after all).
    Settled(BuildOutcome),
}

#[derive(QueryableByName)]
struct Building {
    #[diesel(sql_type = Text)]
    vm_state: String,
    #[diesel(sql_type = Nullable<Text>)]
    node: Option<NodeUuid>,
    #[diesel(sql_type = Text)]
    project_id: String,
    #[diesel(sql_type = Text)]
    user_id: String,
}

#[derive(QueryableByName)]
struct Attempts {
    #[diesel(sql_type = Array<SqlUuid>)]
    alternates: Vec<NodeUuid>,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Integer)]
    max_attempts: i32,
    #[diesel(sql_type = Array<Text>)]
    failures: Vec<String>,
    /// The nodes tried so far, in order.
    #[diesel(sql_type = Array<Text>)]
    tried: Vec<String>,
    #[diesel(sql_type = Text)]
    placement_class: String,
    #[diesel(sql_type = Integer)]
    pci_devices: i32,
}

/// Settles the failed deploy of `instance` on its node (`reason`), run by the node's owner
/// `host` in its fenced transaction: the node's failure is counted; while attempts are left,
/// the claim moves to the first alternate still free and out of its cooldown (nodes that
/// failed after `cooling_after` are not), in this transaction — allocation, PCI devices, the
/// instance's host and node, a fault for the attempt, a boot request for the alternate's host;
/// otherwise the build ends in error naming every node tried. A build Ironic deployed after
/// all is activated instead.
pub fn retry_or_settle(
    conn: &mut PgConnection,
    instance: InstanceUuid,
    reason: &str,
    host: &HostName,
    now: DateTime<Utc>,
    cooling_after: DateTime<Utc>,
) -> Result<Retry, DbError> {
    let found: Option<Building> = super::cached::query(
        "SELECT vm_state::text AS vm_state, node::text AS node, project_id::text AS project_id,
                user_id::text AS user_id
           FROM instances WHERE uuid = $1 AND deleted = 0 FOR UPDATE",
    )
    .bind::<SqlUuid, _>(instance)
    .get_result(conn)
    .optional()?;
    let building = found.filter(|found| found.vm_state == "building");
    let Some(Building {
        node: Some(node),
        project_id,
        user_id,
        ..
    }) = building
    else {
        return settle(conn, instance, reason, host, now);
    };
    if deployed(conn, node, instance)? {
        return settle(conn, instance, reason, host, now);
    }
    count_failure(conn, node, reason, now)?;
    let attempts: Option<Attempts> = super::cached::query(
        "SELECT alternates, attempts, max_attempts, failures, tried,
                placement_class::text AS placement_class, pci_devices
           FROM instance_builds WHERE instance_uuid = $1 FOR UPDATE",
    )
    .bind::<SqlUuid, _>(instance)
    .get_result(conn)
    .optional()?;
    let Some(attempts) = attempts else {
        return settle(conn, instance, reason, host, now);
    };
    let failure = format!("node {node}: {reason}");
    let mut failures = attempts.failures.clone();
    failures.push(failure.clone());
    let mut tried = attempts.tried.clone();
    tried.push(node.to_string());
    if attempts.attempts < attempts.max_attempts {
        let owner = (project_id.as_str(), user_id.as_str());
        for (at, alternate) in attempts.alternates.iter().enumerate() {
            let Some(next) =
                claim_alternate(conn, instance, *alternate, &attempts, owner, cooling_after)?
            else {
                continue;
            };
            move_build(conn, instance, &next, &failure, now)?;
            super::cached::query(
                "UPDATE instance_builds SET attempts = attempts + 1, alternates = $2,
                        failures = $3, tried = $4 WHERE instance_uuid = $1",
            )
            .bind::<SqlUuid, _>(instance)
            .bind::<Array<SqlUuid>, _>(&attempts.alternates[at + 1..])
            .bind::<Array<Text>, _>(&failures)
            .bind::<Array<Text>, _>(&tried)
            .execute(conn)?;
            return Ok(Retry::Rescheduled(next));
        }
    }
    let failed = Failed {
        reason,
        failures: &failures,
        tried: &tried,
        max_attempts: attempts.max_attempts,
    };
    settle_tried(conn, instance, &failed, host, now)
}

/// What the attempts of a build that ends in error said.
struct Failed<'a> {
    /// The last attempt's reason.
    reason: &'a str,
    /// `node …: reason` per attempt, in order.
    failures: &'a [String],
    /// The nodes tried, in order.
    tried: &'a [String],
    max_attempts: i32,
}

/// Ends a build whose attempts are spent: error, its fault naming every node tried (the
/// reasons in its details), nothing claimed.
fn settle_tried(
    conn: &mut PgConnection,
    instance: InstanceUuid,
    failed: &Failed<'_>,
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<Retry, DbError> {
    if failed.failures.len() <= 1 {
        return settle(conn, instance, failed.reason, host, now);
    }
    let message = format!(
        "the build failed on {} nodes ({} attempts allowed): {}",
        failed.failures.len(),
        failed.max_attempts,
        failed.tried.join(", ")
    );
    let details = failed.failures.join("\n");
    Ok(Retry::Settled(super::instances::settle_build_detailed(
        conn,
        instance,
        (&message, Some(&details)),
        host,
        now,
    )?))
}

fn settle(
    conn: &mut PgConnection,
    instance: InstanceUuid,
    reason: &str,
    host: &HostName,
    now: DateTime<Utc>,
) -> Result<Retry, DbError> {
    Ok(Retry::Settled(super::instances::settle_build(
        conn, instance, reason, host, now,
    )?))
}

/// Says whether Ironic shows `instance` deployed on `node`.
fn deployed(
    conn: &mut PgConnection,
    node: NodeUuid,
    instance: InstanceUuid,
) -> Result<bool, DbError> {
    Ok(super::cached::query(
        "SELECT uuid FROM ironic_nodes
          WHERE uuid = $1 AND provision_state = 'active' AND instance_uuid = $2",
    )
    .bind::<SqlUuid, _>(node)
    .bind::<SqlUuid, _>(instance)
    .execute(conn)?
        == 1)
}

/// Claims `alternate` for `instance` if it is still free and out of its cooldown: its
/// provider locked (skipped when another claim holds it), the instance's allocation moved
/// there by the one allocation writer, in a savepoint (a refused claim writes nothing).
fn claim_alternate(
    conn: &mut PgConnection,
    instance: InstanceUuid,
    alternate: NodeUuid,
    attempts: &Attempts,
    (project, user): (&str, &str),
    cooling_after: DateTime<Utc>,
) -> Result<Option<FreeNode>, DbError> {
    let claimed = super::savepoint::<_, DbError>(conn, |conn| {
        let free: Option<FreeNode> = super::cached::query(concat!(
            free_node_from!(),
            "
              WHERE n.uuid = $1 AND ",
            node_is_free!("$3", "$2"),
            "
                FOR UPDATE OF rp SKIP LOCKED FOR SHARE OF c SKIP LOCKED"
        ))
        .bind::<SqlUuid, _>(alternate)
        .bind::<Timestamptz, _>(cooling_after)
        .bind::<Integer, _>(attempts.pci_devices)
        .get_result(conn)
        .optional()?;
        let Some(free) = free else {
            return Ok(None);
        };
        let write = ConsumerAllocations {
            consumer: ConsumerUuid::from(instance),
            project: project.to_owned(),
            user: user.to_owned(),
            expected_generation: GenerationCheck::Skip,
            consumer_type: Some(super::placement::allocations::INSTANCE_CONSUMER_TYPE.to_owned()),
            allocations: BTreeMap::from([(
                free.provider,
                BTreeMap::from([(attempts.placement_class.clone(), 1)]),
            )]),
        };
        match super::placement::allocations::replace_allocations(conn, &[write]) {
            Ok(()) => Ok(Some(free)),
            Err(AllocationError::Db(error)) => Err(error),
            // Taken meanwhile, or its inventory changed: roll this one back, try the next.
            Err(refused) => Err(DbError::Conflict(refused.to_string())),
        }
    });
    match claimed {
        Err(DbError::Conflict(refused)) => {
            log::debug!("alternate {alternate} for instance {instance} refused: {refused}");
            Ok(None)
        }
        other => other,
    }
}

/// Moves build `instance` to `next`: its PCI devices freed (the new host claims its own), its
/// host and node, a fault for the failed attempt, a boot request for the new host.
fn move_build(
    conn: &mut PgConnection,
    instance: InstanceUuid,
    next: &FreeNode,
    failure: &str,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    super::pci::free_instance_devices(conn, instance, now)?;
    let (old_host, pci_devices): (HostName, i32) = {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = Text)]
            host: HostName,
            #[diesel(sql_type = Integer)]
            pci_devices: i32,
        }
        let row: Row = super::cached::query(
            "SELECT i.host::text AS host, b.pci_devices FROM instances i
               JOIN instance_builds b ON b.instance_uuid = i.uuid
              WHERE i.uuid = $1 AND i.deleted = 0",
        )
        .bind::<SqlUuid, _>(instance)
        .get_result(conn)?;
        (row.host, row.pci_devices)
    };
    super::instances::add_fault(
        conn,
        instance,
        &format!(
            "build attempt failed on {failure}; trying node {} (host {})",
            next.node, next.host
        ),
        &old_host,
        now,
    )?;
    super::cached::query(
        "UPDATE instances SET host = $2, node = $3, updated_at = $4
          WHERE uuid = $1 AND deleted = 0",
    )
    .bind::<SqlUuid, _>(instance)
    .bind::<Text, _>(&next.host)
    .bind::<Text, _>(&next.node)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    super::spawns::forget_spawn(conn, instance)?;
    super::spawns::request_spawn(
        conn,
        &super::spawns::SpawnRequest {
            instance_uuid: instance,
            host: next.host.clone(),
            node: next.node,
            pci_devices,
        },
    )
}

/// Counts a failed build on `node`.
fn count_failure(
    conn: &mut PgConnection,
    node: NodeUuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    super::cached::query(
        "INSERT INTO node_build_failures (node, failed_builds, last_failed_at, last_error)
         VALUES ($1, 1, $2, $3)
         ON CONFLICT (node) DO UPDATE
            SET failed_builds = node_build_failures.failed_builds + 1,
                last_failed_at = EXCLUDED.last_failed_at, last_error = EXCLUDED.last_error",
    )
    .bind::<SqlUuid, _>(node)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(reason)
    .execute(conn)?;
    Ok(())
}

/// A node's failed builds since its last success.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName, serde::Serialize)]
pub struct NodeFailures {
    #[diesel(sql_type = SqlUuid)]
    pub node: NodeUuid,
    #[diesel(sql_type = Integer)]
    pub failed_builds: i32,
    #[diesel(sql_type = Timestamptz)]
    pub last_failed_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
}

/// Every node with failed builds.
pub fn node_failures(conn: &mut PgConnection) -> Result<Vec<NodeFailures>, DbError> {
    Ok(super::cached::query(
        "SELECT node, failed_builds, last_failed_at, last_error FROM node_build_failures
          ORDER BY node",
    )
    .load(conn)?)
}
