//! The invariant audit: every invariant of docs/design.md that the database alone can show,
//! checked by SQL against a live database. Tests run it after every step; the admin API and
//! `ringmaster audit` expose it.

use diesel::prelude::*;
use diesel::sql_types::Text;

use super::DbError;
use crate::domain::archive::{TASK_LOG, lifecycle_parent};

/// The archivable tables: each row is in its table or its shadow twin, never both.
pub const ARCHIVABLE_TABLES: &[&str] = &[
    "block_device_mapping",
    "compute_nodes",
    "instance_actions",
    "instance_actions_events",
    "instance_extra",
    "instance_faults",
    "instance_system_metadata",
    "instances",
    "pci_devices",
    "services",
    "task_log",
];

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The invariant's number in docs/design.md.
    pub invariant: u8,
    /// What is wrong, naming the rows.
    pub message: String,
}

#[derive(QueryableByName)]
struct Finding {
    #[diesel(sql_type = Text)]
    message: String,
}

/// Each check: its invariant and a query returning one message per violation.
const CHECKS: &[(u8, &str)] = &[
    (
        1,
        "SELECT format('ironic node %s has %s live compute nodes', n.uuid, count(c.id)) AS message
           FROM ironic_nodes n
           LEFT JOIN compute_nodes c ON c.hypervisor_hostname = n.uuid::text AND c.deleted = 0
          GROUP BY n.uuid, n.source, n.provision_state, n.first_owned_at
         HAVING count(c.id) > 1
             OR (count(c.id) = 0
                 AND CASE WHEN n.source = 'ironic' THEN n.first_owned_at IS NOT NULL
                          ELSE n.provision_state <> 'enroll' END)",
    ),
    (
        1,
        "SELECT format('compute node %s of node %s has no resource provider with its uuid',
                       c.uuid, c.hypervisor_hostname) AS message
           FROM compute_nodes c
          WHERE c.deleted = 0
            AND NOT EXISTS (SELECT 1 FROM resource_providers rp WHERE rp.uuid = c.uuid)",
    ),
    (
        1,
        "SELECT format('resource provider %s of compute node %s is named %s, not the node uuid %s',
                       rp.uuid, c.uuid, rp.name, c.hypervisor_hostname) AS message
           FROM compute_nodes c JOIN resource_providers rp ON rp.uuid = c.uuid
          WHERE c.deleted = 0 AND rp.name <> c.hypervisor_hostname",
    ),
    (
        2,
        "SELECT format('node %s moved as compute node %s but its live compute node is %s',
                       m.hypervisor_hostname, m.compute_node_uuid, c.uuid) AS message
           FROM node_moves m
           JOIN compute_nodes c ON c.hypervisor_hostname = m.hypervisor_hostname AND c.deleted = 0
          WHERE c.uuid <> m.compute_node_uuid
          GROUP BY m.hypervisor_hostname, m.compute_node_uuid, c.uuid",
    ),
    (
        4,
        "SELECT format('instance %s is on host %s but its node %s is owned by %s',
                       i.uuid, i.host, i.node, c.host) AS message
           FROM instances i
           JOIN compute_nodes c ON c.hypervisor_hostname = i.node AND c.deleted = 0
          WHERE i.deleted = 0 AND i.host IS DISTINCT FROM c.host",
    ),
    (
        6,
        "SELECT format('deleted compute node %s still has a provider holding allocations', c.uuid) AS message
           FROM compute_nodes c
           JOIN resource_providers rp ON rp.uuid = c.uuid
          WHERE c.deleted <> 0
            AND NOT EXISTS (SELECT 1 FROM compute_nodes live
                             WHERE live.uuid = c.uuid AND live.deleted = 0)
            AND EXISTS (SELECT 1 FROM allocations a WHERE a.resource_provider_id = rp.id)",
    ),
    (
        6,
        "SELECT format('allocation of consumer %s has no consumer row', a.consumer_id) AS message
           FROM allocations a
          WHERE NOT EXISTS (SELECT 1 FROM consumers co WHERE co.uuid = a.consumer_id)",
    ),
    (
        11,
        concat!(
            "SELECT format('resource provider %s (%s) is over capacity for %s: %s used of %s',
                       rp.uuid, rp.name, rc.name, sum(a.used),
                       ", crate::db::placement::capacity!("inv"), ") AS message
           FROM inventories inv
           JOIN resource_providers rp ON rp.id = inv.resource_provider_id
           JOIN resource_classes rc ON rc.id = inv.resource_class_id
           JOIN allocations a ON a.resource_provider_id = inv.resource_provider_id
                             AND a.resource_class_id = inv.resource_class_id
          GROUP BY rp.uuid, rp.name, rc.name, inv.total, inv.reserved, inv.allocation_ratio
         HAVING sum(a.used) > ", crate::db::placement::capacity!("inv")
        ),
    ),
    (
        8,
        "SELECT format('pci device %s has no compute node', p.id) AS message
           FROM pci_devices p WHERE p.compute_node_id IS NULL",
    ),
    (
        8,
        "SELECT format('pci device %s (%s) is allocated to instance %s but is deleted',
                       p.id, p.address, p.instance_uuid) AS message
           FROM pci_devices p
          WHERE p.deleted <> 0 AND p.status IN ('allocated', 'claimed')",
    ),
    (
        8,
        "SELECT format('pci device %s (%s) is allocated to instance %s but was archived',
                       s.id, s.address, s.instance_uuid) AS message
           FROM shadow_pci_devices s
          WHERE s.status IN ('allocated', 'claimed')",
    ),
];

/// What the time-bound checks judge by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditClock {
    /// The deployment's time now (its clock, or a script's manual clock).
    pub now: chrono::DateTime<chrono::Utc>,
    /// A build with no progress for longer than this is a leaked claim (invariant 12).
    pub build_timeout: chrono::Duration,
}

/// The default build timeout, as `--instance-build-timeout` has it.
pub const DEFAULT_BUILD_TIMEOUT_SECONDS: i64 = 600;

/// Invariant 12: allocations held by an instance that is neither building nor active (nor on
/// an Ironic node), or by an archived one. The states are bound as `VmState` spells them.
fn leaked_claims(conn: &mut PgConnection) -> Result<Vec<Violation>, DbError> {
    use crate::domain::instance::VmState;
    let findings: Vec<Finding> = diesel::sql_query(
        "SELECT format('instance %s is %s but holds allocations (a leaked claim)',
                       i.uuid, CASE WHEN i.deleted <> 0 THEN $1 ELSE i.vm_state END) AS message
           FROM instances i
          WHERE (i.deleted <> 0 OR i.vm_state NOT IN ($2, $3, $4))
            AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = i.uuid)
            AND NOT EXISTS (SELECT 1 FROM ironic_nodes n WHERE n.instance_uuid = i.uuid)
         UNION ALL
         SELECT format('archived instance %s holds allocations (a leaked claim)', s.uuid) AS message
           FROM shadow_instances s
          WHERE EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = s.uuid)",
    )
    .bind::<diesel::sql_types::Text, _>(VmState::Deleted.as_str())
    .bind::<diesel::sql_types::Text, _>(VmState::Building.as_str())
    .bind::<diesel::sql_types::Text, _>(VmState::Active.as_str())
    // A stopped server keeps its node and its claim.
    .bind::<diesel::sql_types::Text, _>(VmState::Stopped.as_str())
    .load(conn)?;
    Ok(findings
        .into_iter()
        .map(|finding| Violation {
            invariant: 12,
            message: finding.message,
        })
        .collect())
}

/// Runs every check, judging time by the database's clock and the default build timeout, and
/// returns the violations found (empty when all invariants hold).
pub fn check_invariants(conn: &mut PgConnection) -> Result<Vec<Violation>, DbError> {
    let now = super::hosts::database_now(conn)?;
    check_invariants_at(
        conn,
        AuditClock {
            now,
            build_timeout: chrono::Duration::seconds(DEFAULT_BUILD_TIMEOUT_SECONDS),
        },
    )
}

/// Runs every check, judging time by `clock`, and returns the violations found.
pub fn check_invariants_at(
    conn: &mut PgConnection,
    clock: AuditClock,
) -> Result<Vec<Violation>, DbError> {
    let mut violations = Vec::new();
    #[derive(QueryableByName)]
    struct Stale {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        uuid: uuid::Uuid,
        #[diesel(sql_type = diesel::sql_types::Timestamptz)]
        since: chrono::DateTime<chrono::Utc>,
    }
    let stale: Vec<Stale> = diesel::sql_query(
        "SELECT uuid, COALESCE(updated_at, created_at) AS since FROM instances
          WHERE deleted = 0 AND vm_state = $2 AND COALESCE(updated_at, created_at) < $1
          ORDER BY uuid",
    )
    .bind::<diesel::sql_types::Timestamptz, _>(clock.now - clock.build_timeout)
    .bind::<diesel::sql_types::Text, _>(crate::domain::instance::VmState::Building.as_str())
    .load(conn)?;
    violations.extend(stale.into_iter().map(|build| Violation {
        invariant: 12,
        message: format!(
            "instance {} has been building since {} (past the build timeout of {}s)",
            build.uuid,
            build.since.to_rfc3339(),
            clock.build_timeout.num_seconds()
        ),
    }));
    for (invariant, query) in CHECKS {
        let findings: Vec<Finding> = diesel::sql_query(*query).load(conn)?;
        violations.extend(findings.into_iter().map(|finding| Violation {
            invariant: *invariant,
            message: finding.message,
        }));
    }
    violations.extend(leaked_claims(conn)?);
    for table in ARCHIVABLE_TABLES {
        // Invariant 9: in its table or its shadow, never both; a live row is never archived
        // unless it rode along with its archived lifecycle parent (task_log is archived by
        // age, not by its deleted marker).
        let live_clause = match lifecycle_parent(table) {
            _ if *table == TASK_LOG => "FALSE".to_owned(),
            Some((column, parent, parent_column)) => format!(
                "s.deleted = 0 AND NOT EXISTS (SELECT 1 FROM shadow_{parent} p WHERE p.{parent_column} = s.{column})"
            ),
            None => "s.deleted = 0".to_owned(),
        };
        let findings: Vec<Finding> = diesel::sql_query(format!(
            "SELECT format('{table} row %s is in {table} and shadow_{table}', t.id) AS message
               FROM {table} t JOIN shadow_{table} s ON s.id = t.id
             UNION ALL
             SELECT format('shadow_{table} row %s was archived while live', s.id) AS message
               FROM shadow_{table} s WHERE {live_clause}"
        ))
        .load(conn)?;
        violations.extend(findings.into_iter().map(|finding| Violation {
            invariant: 9,
            message: finding.message,
        }));
    }
    Ok(violations)
}
