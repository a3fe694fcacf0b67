//! The constraints that carry the invariants of docs/design.md hold in PostgreSQL itself.

use diesel::{PgConnection, RunQueryDsl};
use ringmaster::db::DbError;

use crate::helpers::TestDb;

fn exec(conn: &mut PgConnection, sql: &str) -> Result<usize, DbError> {
    diesel::sql_query(sql).execute(conn).map_err(DbError::from)
}

const NODE: &str = "11111111-1111-1111-1111-111111111111";

fn insert_compute_node(conn: &mut PgConnection, uuid: &str, node: &str) -> Result<usize, DbError> {
    exec(
        conn,
        &format!(
            "INSERT INTO compute_nodes (uuid, host, hypervisor_hostname) VALUES ('{uuid}', 'host-a', '{node}')"
        ),
    )
}

fn assert_unique_violation(result: Result<usize, DbError>, expected: &str) {
    match result {
        Err(DbError::UniqueViolation { constraint }) => assert_eq!(constraint, expected),
        other => panic!("expected unique violation of {expected}, got {other:?}"),
    }
}

#[test]
fn a_second_live_compute_node_for_one_ironic_node_is_refused() {
    let db = TestDb::new();
    let mut conn = db.conn();
    insert_compute_node(&mut conn, "aaaaaaaa-0000-0000-0000-000000000001", NODE).unwrap();
    assert_unique_violation(
        insert_compute_node(&mut conn, "aaaaaaaa-0000-0000-0000-000000000002", NODE),
        "compute_nodes_one_live_per_node",
    );

    exec(
        &mut conn,
        "UPDATE compute_nodes SET deleted = id, deleted_at = now()",
    )
    .unwrap();
    insert_compute_node(&mut conn, "aaaaaaaa-0000-0000-0000-000000000002", NODE)
        .expect("once the first is soft-deleted, a live one may exist again");
}

#[test]
fn a_compute_node_uuid_is_unique_across_deleted_rows_too() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let uuid = "aaaaaaaa-0000-0000-0000-000000000001";
    insert_compute_node(&mut conn, uuid, NODE).unwrap();
    exec(
        &mut conn,
        "UPDATE compute_nodes SET deleted = id, deleted_at = now()",
    )
    .unwrap();
    assert_unique_violation(
        insert_compute_node(&mut conn, uuid, NODE),
        "compute_nodes_uuid_key",
    );
}

#[test]
fn resource_provider_names_and_uuids_are_unique() {
    let db = TestDb::new();
    let mut conn = db.conn();
    exec(&mut conn, &format!("INSERT INTO resource_providers (uuid, name) VALUES ('aaaaaaaa-0000-0000-0000-000000000001', '{NODE}')")).unwrap();
    assert_unique_violation(
        exec(
            &mut conn,
            &format!(
                "INSERT INTO resource_providers (uuid, name) VALUES ('aaaaaaaa-0000-0000-0000-000000000002', '{NODE}')"
            ),
        ),
        "resource_providers_name_key",
    );
    assert_unique_violation(
        exec(
            &mut conn,
            "INSERT INTO resource_providers (uuid, name) VALUES ('aaaaaaaa-0000-0000-0000-000000000001', 'other')",
        ),
        "resource_providers_uuid_key",
    );
}

#[test]
fn a_pci_device_always_belongs_to_an_existing_compute_node() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let insert = |compute_node_id: &str| {
        format!(
            "INSERT INTO pci_devices (compute_node_id, address, vendor_id, product_id, dev_type, label, uuid)
             VALUES ({compute_node_id}, '0000:04:00.1', '8086', '1520', 'type-VF', 'label', gen_random_uuid())"
        )
    };
    match exec(&mut conn, &insert("NULL")) {
        Err(DbError::NotNullViolation { column }) => assert_eq!(column, "compute_node_id"),
        other => panic!("expected a not-null violation, got {other:?}"),
    }
    match exec(&mut conn, &insert("424242")) {
        Err(DbError::ForeignKeyViolation { constraint }) => {
            assert_eq!(constraint, "pci_devices_compute_node_id_fkey")
        }
        other => panic!("expected a foreign key violation, got {other:?}"),
    }
    insert_compute_node(&mut conn, "aaaaaaaa-0000-0000-0000-000000000001", NODE).unwrap();
    exec(&mut conn, &insert("(SELECT id FROM compute_nodes)"))
        .expect("a device of a real compute node");
}

#[test]
fn the_soft_delete_marker_is_the_rows_own_id_with_a_time() {
    let db = TestDb::new();
    let mut conn = db.conn();
    insert_compute_node(&mut conn, "aaaaaaaa-0000-0000-0000-000000000001", NODE).unwrap();
    for bad in [
        "deleted = id + 1, deleted_at = now()",
        "deleted = id",
        "deleted_at = now()",
    ] {
        match exec(&mut conn, &format!("UPDATE compute_nodes SET {bad}")) {
            Err(DbError::CheckViolation { constraint }) => {
                assert_eq!(constraint, "compute_nodes_soft_delete")
            }
            other => panic!("{bad}: expected a check violation, got {other:?}"),
        }
    }
}

#[test]
fn an_allocation_never_exists_without_its_consumer() {
    let db = TestDb::new();
    let mut conn = db.conn();
    exec(
        &mut conn,
        "INSERT INTO resource_providers (uuid, name) VALUES (gen_random_uuid(), 'rp')",
    )
    .unwrap();
    let result = exec(
        &mut conn,
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
         SELECT id, gen_random_uuid(), 0, 1 FROM resource_providers",
    );
    match result {
        Err(DbError::ForeignKeyViolation { constraint }) => {
            assert_eq!(constraint, "allocations_consumer_id_fkey")
        }
        other => panic!("expected a foreign key violation, got {other:?}"),
    }
}
