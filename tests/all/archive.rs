//! archive_deleted_rows and purge, rewritten from Nova's regression tests, plus bug 1899541:
//! a live row is never archived, and every row is in its table or its shadow, never both.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::{PgConnection, RunQueryDsl};
use ringmaster::db::archive::{ArchiveOptions, archive_deleted_rows, purge};
use ringmaster::db::audit::check_invariants;
use ringmaster::domain::identity::{ComputeNodeId, ConsumerUuid, InstanceUuid};
use uuid::Uuid;

use crate::helpers::{TestDb, count_in};

fn exec(conn: &mut PgConnection, sql: &str) {
    diesel::sql_query(sql)
        .execute(conn)
        .unwrap_or_else(|error| panic!("{sql}: {error}"));
}

fn options(max_rows: i64) -> ArchiveOptions {
    ArchiveOptions {
        max_rows,
        before: None,
        task_log: false,
        until_complete: false,
        sleep: Duration::ZERO,
    }
}

fn archive(db: &TestDb, options: &ArchiveOptions) -> std::collections::BTreeMap<String, i64> {
    let never = AtomicBool::new(false);
    archive_deleted_rows(&db.pool(), options, &never, |_| {})
        .unwrap()
        .tables
}

fn audit_clean(conn: &mut PgConnection) {
    let violations = check_invariants(conn).unwrap();
    assert!(violations.is_empty(), "invariants broken: {violations:#?}");
}

/// Inserts `count` services and soft-deletes those whose index is in `deleted`.
fn services(conn: &mut PgConnection, count: usize, deleted: &[usize]) {
    for index in 0..count {
        exec(
            conn,
            &format!(
                "INSERT INTO services (uuid, host, \"binary\") VALUES (gen_random_uuid(), 'host-{index}', 'nova-compute')"
            ),
        );
    }
    for index in deleted {
        exec(
            conn,
            &format!(
                "UPDATE services SET deleted = id, deleted_at = now() WHERE host = 'host-{index}'"
            ),
        );
    }
}

/// Inserts an instance with one row in every lifecycle table; returns its uuid.
fn instance_family(conn: &mut PgConnection) -> InstanceUuid {
    let uuid = InstanceUuid(Uuid::new_v4());
    exec(
        conn,
        &format!("INSERT INTO instances (uuid, project_id, user_id) VALUES ('{uuid}', 'p', 'u')"),
    );
    for table in [
        "instance_extra",
        "instance_faults",
        "instance_system_metadata",
        "block_device_mapping",
    ] {
        let sql = match table {
            "instance_faults" => {
                format!("INSERT INTO {table} (instance_uuid, code) VALUES ('{uuid}', 500)")
            }
            "instance_system_metadata" => {
                format!("INSERT INTO {table} (instance_uuid, key) VALUES ('{uuid}', 'k')")
            }
            "block_device_mapping" => {
                format!(
                    "INSERT INTO {table} (instance_uuid, uuid) VALUES ('{uuid}', gen_random_uuid())"
                )
            }
            _ => format!("INSERT INTO {table} (instance_uuid) VALUES ('{uuid}')"),
        };
        exec(conn, &sql);
    }
    exec(
        conn,
        &format!(
            "INSERT INTO instance_actions (action, instance_uuid) VALUES ('create', '{uuid}')"
        ),
    );
    exec(
        conn,
        &format!(
            "INSERT INTO instance_actions_events (event, action_id)
             SELECT 'compute__do_build', id FROM instance_actions WHERE instance_uuid = '{uuid}'"
        ),
    );
    uuid
}

/// Soft-deletes an instance as a delete does: it and its lifecycle rows, not its actions.
fn delete_instance(conn: &mut PgConnection, uuid: InstanceUuid) {
    ringmaster::db::instances::soft_delete_instance(conn, uuid, Utc::now()).unwrap();
}

#[test]
fn six_rows_four_deleted_archive_two_at_a_time() {
    let db = TestDb::new();
    let mut conn = db.conn();
    services(&mut conn, 6, &[0, 2, 3, 5]);
    for expected in [2, 2, 0] {
        let moved = archive(&db, &options(2));
        assert_eq!(moved.get("services").copied().unwrap_or(0), expected);
        audit_clean(&mut conn);
    }
    assert_eq!(count_in(&mut conn, "SELECT count(*) AS n FROM services"), 2);
    assert_eq!(
        count_in(&mut conn, "SELECT count(*) AS n FROM shadow_services"),
        4
    );
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM services WHERE deleted <> 0"
        ),
        0
    );
}

#[test]
fn before_is_a_strict_bound() {
    let db = TestDb::new();
    let mut conn = db.conn();
    services(&mut conn, 1, &[]);
    exec(
        &mut conn,
        "UPDATE services SET deleted = id, deleted_at = '2026-01-01 12:00:00+00'",
    );
    let at: DateTime<Utc> = "2026-01-01T12:00:00Z".parse().unwrap();
    let mut bounded = options(10);
    bounded.before = Some(at);
    assert!(
        archive(&db, &bounded).is_empty(),
        "deleted_at == before is not before"
    );
    bounded.before = Some(at + chrono::Duration::seconds(1));
    assert_eq!(archive(&db, &bounded).get("services"), Some(&1));
}

#[test]
fn an_instance_moves_with_all_its_lifecycle_rows_one_tree_at_a_time() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let first = instance_family(&mut conn);
    let second = instance_family(&mut conn);
    let live = instance_family(&mut conn);
    delete_instance(&mut conn, first);
    delete_instance(&mut conn, second);
    audit_clean(&mut conn);

    let moved = archive(&db, &options(1));
    let expected: std::collections::BTreeMap<String, i64> = [
        "block_device_mapping",
        "instance_actions",
        "instance_actions_events",
        "instance_extra",
        "instance_faults",
        "instance_system_metadata",
        "instances",
    ]
    .iter()
    .map(|table| ((*table).to_owned(), 1))
    .collect();
    assert_eq!(
        moved, expected,
        "one instance, each of its rows riding along"
    );
    audit_clean(&mut conn);
    assert_eq!(archive(&db, &options(1)), expected, "then the second tree");
    assert!(archive(&db, &options(1)).is_empty());
    audit_clean(&mut conn);
    let live_rows = count_in(
        &mut conn,
        &format!("SELECT count(*) AS n FROM instance_actions WHERE instance_uuid = '{live}'"),
    );
    assert_eq!(live_rows, 1, "the live instance keeps its rows");
}

#[test]
fn until_complete_archives_everything_in_batches() {
    let db = TestDb::new();
    let mut conn = db.conn();
    services(&mut conn, 9, &[0, 1, 2, 3, 4, 5, 6]);
    let mut complete = options(2);
    complete.until_complete = true;
    let never = AtomicBool::new(false);
    let mut batches = 0;
    let summary = archive_deleted_rows(&db.pool(), &complete, &never, |_| batches += 1).unwrap();
    assert_eq!(summary.tables.get("services"), Some(&7));
    assert_eq!(batches, 4, "2 + 2 + 2 + 1");
    assert!(!summary.stopped);
}

#[test]
fn bug_1899541_an_allocated_pci_device_is_never_archived_and_its_free_succeeds() {
    let db = TestDb::new();
    let mut conn = db.conn();
    exec(
        &mut conn,
        "INSERT INTO compute_nodes (uuid, host, hypervisor_hostname) VALUES (gen_random_uuid(), 'cmp-1', 'node-1')",
    );
    exec(
        &mut conn,
        "INSERT INTO resource_providers (uuid, name) SELECT uuid, hypervisor_hostname FROM compute_nodes",
    );
    let compute_node = ComputeNodeId(count_in(&mut conn, "SELECT id AS n FROM compute_nodes"));
    ringmaster::db::pci::sync_devices(&mut conn, &[compute_node], 2, Utc::now()).unwrap();
    let instance = instance_family(&mut conn);
    let claimed =
        ringmaster::db::pci::claim_devices(&mut conn, compute_node, instance, 1, Utc::now())
            .unwrap();

    // The instance is deleted; the compute host has not freed the device yet.
    delete_instance(&mut conn, instance);
    let moved = archive(&db, &options(1000));
    assert_eq!(moved.get("instances"), Some(&1));
    assert_eq!(
        moved.get("pci_devices"),
        None,
        "the allocated device is live: it stays"
    );
    audit_clean(&mut conn);

    // The tracker's late free matches the device by key and succeeds.
    let stale = ringmaster::db::pci::stale_allocations(&mut conn, &[compute_node]).unwrap();
    assert_eq!(stale.len(), 1);
    ringmaster::db::pci::update_device(
        &mut conn,
        compute_node,
        &claimed[0],
        "available",
        None,
        Utc::now(),
    )
    .unwrap();
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM pci_devices WHERE compute_node_id IS NULL"
        ),
        0
    );
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM pci_devices WHERE status = 'available'"
        ),
        2
    );

    an_update_of_a_missing_device_inserts_nothing(&mut conn, compute_node);
    a_compute_node_waits_for_its_live_devices(&db, &mut conn);
}

/// An update of a device that does not exist is an error, never an insert.
fn an_update_of_a_missing_device_inserts_nothing(conn: &mut PgConnection, node: ComputeNodeId) {
    let missing = ringmaster::db::pci::update_device(
        conn,
        node,
        "0000:ff:00.0",
        "available",
        None,
        Utc::now(),
    );
    assert!(
        matches!(missing, Err(ringmaster::db::DbError::NotFound(_))),
        "{missing:?}"
    );
    assert_eq!(count_in(conn, "SELECT count(*) AS n FROM pci_devices"), 2);
}

/// A soft-deleted compute node waits while live devices reference it.
fn a_compute_node_waits_for_its_live_devices(db: &TestDb, conn: &mut PgConnection) {
    exec(
        conn,
        "UPDATE compute_nodes SET deleted = id, deleted_at = now()",
    );
    assert_eq!(archive(db, &options(1000)).get("compute_nodes"), None);
    exec(
        conn,
        "UPDATE pci_devices SET deleted = id, deleted_at = now()",
    );
    let moved = archive(db, &options(1000));
    assert_eq!(
        (moved.get("pci_devices"), moved.get("compute_nodes")),
        (Some(&2), Some(&1))
    );
    audit_clean(conn);
}

#[test]
fn purge_all_and_purge_before() {
    let db = TestDb::new();
    let mut conn = db.conn();
    services(&mut conn, 3, &[0, 1, 2]);
    exec(
        &mut conn,
        "UPDATE services SET deleted_at = '2026-01-01 00:00:00+00' WHERE host = 'host-0'",
    );
    archive(&db, &options(10));
    let purged = purge(&mut conn, Some("2026-06-01T00:00:00Z".parse().unwrap())).unwrap();
    assert_eq!(
        purged,
        vec![("shadow_services".to_owned(), "deleted_at", 1)]
    );
    assert_eq!(
        purge(&mut conn, None).unwrap(),
        vec![("shadow_services".to_owned(), "deleted_at", 2)]
    );
    assert!(purge(&mut conn, None).unwrap().is_empty());
}

/// Deletes, undeletes and archives run at the same time for a while; afterwards every row is
/// in exactly one of its table and its shadow, every live row in its table, nothing lost.
#[test]
fn concurrent_deletes_undeletes_and_archives_never_half_archive_a_row() {
    let db = TestDb::new();
    let mut conn = db.conn();
    services(&mut conn, 200, &[]);
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for worker in 0..2_u64 {
        let (url, stop) = (db.url().to_owned(), stop.clone());
        workers.push(std::thread::spawn(move || {
            let mut conn = ringmaster::db::connect(&url).unwrap();
            let mut round = worker;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                round += 1;
                let id = (round * 7919) % 200 + 1;
                let sql = if round % 3 == 0 {
                    format!("UPDATE services SET deleted = 0, deleted_at = NULL WHERE id = {id} AND deleted <> 0")
                } else {
                    format!("UPDATE services SET deleted = id, deleted_at = now() WHERE id = {id} AND deleted = 0")
                };
                diesel::sql_query(sql).execute(&mut conn).unwrap();
            }
        }));
    }
    let pool = db.pool();
    let archiver = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let never = AtomicBool::new(false);
            let mut total = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                total += archive_deleted_rows(&pool, &options(5), &never, |_| {})
                    .unwrap()
                    .total();
            }
            total
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    let archived = archiver.join().unwrap();
    assert!(archived > 0, "the archiver ran while rows changed");
    audit_clean(&mut conn);
    let live = count_in(&mut conn, "SELECT count(*) AS n FROM services");
    let shadow = count_in(&mut conn, "SELECT count(*) AS n FROM shadow_services");
    assert_eq!(live + shadow, 200, "nothing lost, nothing doubled");
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM shadow_services WHERE deleted = 0"
        ),
        0
    );
}

/// Bug 1899541 with real compute hosts: the instance is deleted, the archive runs before the
/// host frees the device, and the host's next pass frees it by key.
#[actix_web::test]
async fn bug_1899541_the_hosts_late_free_succeeds_after_an_archive() {
    use ringmaster::actors::archiver::{ArchiveOnce, ArchiveRequest};
    let d = crate::helpers::TestDeployment::start(&["cmp-1"], 2).await;
    let instance = d.boot_with_devices("vm-pci", 1).await.unwrap();
    assert_eq!(instance.vm_state, "active");
    let mut conn = d.db.conn();
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM pci_devices WHERE status = 'allocated'"
        ),
        1
    );

    // The delete lands, but the host has not freed the device yet (busy, or down).
    let consumer = ConsumerUuid::from(instance.uuid);
    ringmaster::db::placement::allocations::delete_consumer(&mut conn, consumer).unwrap();
    ringmaster::db::instances::soft_delete_instance(&mut conn, instance.uuid, Utc::now()).unwrap();
    let request = ArchiveRequest {
        options: options(1000),
        purge: false,
    };
    let report = d
        .actors
        .archiver
        .send(ArchiveOnce { request })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.summary.tables.get("instances"), Some(&1));
    assert_eq!(report.summary.tables.get("pci_devices"), None);
    d.audit();

    let pass = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(
        pass.devices_freed, 1,
        "the late free finds the device by key"
    );
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM pci_devices WHERE status = 'allocated'"
        ),
        0
    );
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM pci_devices WHERE compute_node_id IS NULL"
        ),
        0
    );
    assert_eq!(
        count_in(&mut conn, "SELECT count(*) AS n FROM pci_devices"),
        4,
        "2 nodes x 2 devices, none inserted"
    );
    d.audit();
}

/// Issue 14, item 1: a node deleted from Ironic while its PCI device is still allocated to a
/// destroyed instance (the free deferred: the host was busy) keeps its compute node — kept and
/// reported — until the late free by key has freed the device; only then is it deleted. No
/// device is deleted or archived while allocated, and the audit says so when one is.
#[actix_web::test]
async fn an_orphan_node_waits_for_its_allocated_pci_devices() {
    use ringmaster::actors::compute_host::DestroyInstance;
    use ringmaster::actors::ironic::DeleteNode;
    let d = crate::helpers::TestDeployment::start(&["cmp-1"], 1).await;
    let instance = d.boot_with_devices("vm-pci", 1).await.unwrap();
    let node: Uuid = instance.node.unwrap().uuid();
    let host = d.actors.hosts.get("cmp-1").unwrap();
    host.send(DestroyInstance {
        instance: instance.uuid,
        defer_pci_free: true,
    })
    .await
    .unwrap()
    .unwrap();
    d.actors
        .ironic
        .send(DeleteNode {
            node: ringmaster::domain::identity::NodeUuid(node),
        })
        .await
        .unwrap()
        .unwrap();
    let mut conn = d.db.conn();
    let allocated = "SELECT count(*) AS n FROM pci_devices WHERE status = 'allocated'";
    assert_eq!(count_in(&mut conn, allocated), 1, "the free is deferred");

    let pass = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(
        pass.orphans_kept,
        vec![node.to_string()],
        "kept while its device is allocated"
    );
    assert!(pass.orphans_deleted.is_empty());
    assert_eq!(
        pass.devices_freed, 1,
        "the late free finds the device by key"
    );
    assert_eq!(count_in(&mut conn, allocated), 0);
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM pci_devices WHERE deleted <> 0"
        ),
        0,
        "nothing deleted while allocated"
    );
    d.audit();

    let pass = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(
        pass.orphans_deleted,
        vec![node.to_string()],
        "freed, then deleted"
    );
    d.audit();
    archive(&d.db, &options(1000));
    d.audit();
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM shadow_pci_devices WHERE status IN ('allocated', 'claimed')"
        ),
        0
    );
}

/// Issue 14, item 1: a device soft-deleted while allocated (by any road) is reported by the
/// audit and never archived.
#[actix_web::test]
async fn a_deleted_but_allocated_device_is_reported_and_never_archived() {
    let d = crate::helpers::TestDeployment::start(&["cmp-1"], 1).await;
    d.boot_with_devices("vm-pci", 1).await.unwrap();
    let mut conn = d.db.conn();
    exec(
        &mut conn,
        "UPDATE pci_devices SET deleted = id, deleted_at = now() - interval '1 day'
          WHERE status = 'allocated'",
    );
    let violations = check_invariants(&mut conn).unwrap();
    assert!(
        violations
            .iter()
            .any(|v| v.invariant == 8 && v.message.contains("is allocated to instance")),
        "{violations:#?}"
    );
    let moved = archive(&d.db, &options(1000));
    assert_eq!(
        moved.get("pci_devices"),
        None,
        "an allocated device never moves: {moved:?}"
    );
    assert_eq!(
        count_in(&mut conn, "SELECT count(*) AS n FROM shadow_pci_devices"),
        0
    );
}

/// Issue 14, item 2: `max_rows` counts as Nova counts (its functional test
/// `test_archive_deleted_rows_parent_child_trees_one_at_time`): a tree is its parent and each
/// child row; trees are added while the count is below `max_rows`, at least one, never half.
#[test]
fn max_rows_counts_whole_trees_as_nova_does() {
    let db = TestDb::new();
    let mut conn = db.conn();
    for _ in 0..2 {
        let uuid = instance_family(&mut conn);
        delete_instance(&mut conn, uuid);
    }
    // Each tree: the instance and 6 lifecycle rows = 7 rows.
    for expected in [1, 1, 0] {
        let moved = archive(&db, &options(5));
        assert_eq!(
            moved.get("instances").copied().unwrap_or(0),
            expected,
            "{moved:?}"
        );
        let total: i64 = moved.values().sum();
        assert_eq!(total, 7 * expected, "whole trees only: {moved:?}");
        audit_clean(&mut conn);
    }

    // Under the budget after the first tree, a second is added (and the count may pass it).
    let db = TestDb::new();
    let mut conn = db.conn();
    for _ in 0..3 {
        let uuid = instance_family(&mut conn);
        delete_instance(&mut conn, uuid);
    }
    let moved = archive(&db, &options(8));
    assert_eq!(moved.get("instances"), Some(&2), "{moved:?}");
    let moved = archive(&db, &options(8));
    assert_eq!(moved.get("instances"), Some(&1), "{moved:?}");
    audit_clean(&mut conn);
}
