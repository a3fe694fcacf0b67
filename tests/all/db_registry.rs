//! The registry's writes against a real database: claims keep one identity per node (reuse,
//! adoption, undelete), batched moves are fenced and keep providers and allocations, orphans
//! are deleted only when invariant 6 allows, and the audit sees what breaks an invariant.

use chrono::{DateTime, Duration, Utc};
use diesel::connection::SimpleConnection;
use diesel::{PgConnection, RunQueryDsl};
use ringmaster::db::audit::check_invariants;
use ringmaster::db::compute_nodes::{
    NodeClaim, NodeMove, OrphanOutcome, ProviderOutcome, claim_nodes, create_provider,
    delete_orphan, list_compute_nodes, move_nodes,
};
use ringmaster::db::ironic::{NewIronicNode, enroll_nodes};
use ringmaster::db::node_reports::report_inventory;
use ringmaster::db::placement::allocations::{ConsumerAllocations, replace_allocations};
use ringmaster::domain::identity::{ConsumerUuid, OwnerEpoch, ProviderUuid};
use ringmaster::domain::node::NodeInventory;
use ringmaster::domain::ring::MoveReason;
use uuid::Uuid;

use crate::helpers::{TestDb, count_in};

/// Allocates one unit of the provider to a new consumer, through the one allocation writer.
fn allocate_one(conn: &mut PgConnection, provider: ProviderUuid) {
    let write = ConsumerAllocations {
        consumer: ConsumerUuid(Uuid::new_v4()),
        project: "p".to_owned(),
        user: "u".to_owned(),
        expected_generation: ringmaster::domain::placement::GenerationCheck::MustBeNew,
        consumer_type: None,
        allocations: [(provider, [("CUSTOM_BAREMETAL".to_owned(), 1)].into())].into(),
    };
    replace_allocations(conn, &[write]).unwrap();
}

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

fn enroll(conn: &mut PgConnection, count: usize) -> Vec<Uuid> {
    let nodes: Vec<NewIronicNode> = (0..count)
        .map(|index| {
            NewIronicNode::enrolling(Uuid::new_v4(), Some(format!("node-{index}")), "baremetal")
        })
        .collect();
    enroll_nodes(conn, &nodes).unwrap();
    nodes.iter().map(|node| node.uuid).collect()
}

fn claims(nodes: &[Uuid], host: &str) -> Vec<NodeClaim> {
    nodes
        .iter()
        .map(|node| NodeClaim {
            node: *node,
            host: host.to_owned(),
        })
        .collect()
}

fn assert_audit_clean(conn: &mut PgConnection) {
    let violations = check_invariants(conn).unwrap();
    assert!(violations.is_empty(), "invariants broken: {violations:#?}");
}

fn inventory() -> NodeInventory {
    NodeInventory {
        resource_class: "CUSTOM_BAREMETAL".to_owned(),
        total: 1,
        reserved: 0,
    }
}

#[test]
fn a_claim_creates_one_compute_node_and_its_provider_and_is_idempotent() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 3);
    let claimed = claim_nodes(&mut conn, &claims(&nodes, "compute-1"), now()).unwrap();
    assert_eq!(claimed.len(), 3);
    assert!(
        claimed
            .iter()
            .all(|cn| cn.host == "compute-1" && cn.owner_epoch == 1)
    );
    assert_audit_clean(&mut conn);

    let again = claim_nodes(&mut conn, &claims(&nodes, "compute-2"), now()).unwrap();
    assert!(
        again.is_empty(),
        "a node with a live compute node is not claimed twice"
    );
    assert_eq!(
        list_compute_nodes(&mut conn, Some("compute-1"))
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn a_claim_adopts_the_provider_already_named_after_the_node() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 1);
    let existing = Uuid::new_v4();
    diesel::sql_query(format!(
        "INSERT INTO resource_providers (uuid, name) VALUES ('{existing}', '{}')",
        nodes[0]
    ))
    .execute(&mut conn)
    .unwrap();

    let claimed = claim_nodes(&mut conn, &claims(&nodes, "compute-1"), now()).unwrap();
    assert_eq!(
        claimed[0].uuid, existing,
        "the compute node takes the provider's uuid: no 409"
    );
    assert_audit_clean(&mut conn);
    assert_eq!(
        create_provider(
            &mut conn,
            ProviderUuid(Uuid::new_v4()),
            &nodes[0].to_string(),
            now()
        )
        .unwrap(),
        ProviderOutcome::Adopted(ProviderUuid(existing))
    );
}

#[test]
fn a_returning_node_is_undeleted_under_its_old_uuid() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 1);
    let first = claim_nodes(&mut conn, &claims(&nodes, "compute-1"), now())
        .unwrap()
        .remove(0);
    diesel::sql_query("UPDATE compute_nodes SET deleted = id, deleted_at = now()")
        .execute(&mut conn)
        .unwrap();
    diesel::sql_query("DELETE FROM resource_providers")
        .execute(&mut conn)
        .unwrap();

    let back = claim_nodes(&mut conn, &claims(&nodes, "compute-2"), now())
        .unwrap()
        .remove(0);
    assert_eq!(back.uuid, first.uuid);
    assert_eq!(back.id, first.id, "the same row, undeleted");
    assert_eq!(back.host, "compute-2");
    assert_eq!(back.owner_epoch, 2);
    assert_audit_clean(&mut conn);
}

#[test]
fn a_batched_move_keeps_identity_inventory_and_allocations_and_logs_each_move() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 50);
    let claimed = claim_nodes(&mut conn, &claims(&nodes, "compute-1"), now()).unwrap();
    for cn in &claimed {
        assert!(
            report_inventory(
                &mut conn,
                cn.provider(),
                &"compute-1".into(),
                OwnerEpoch(1),
                &inventory(),
                now()
            )
            .unwrap()
        );
    }
    allocate_one(&mut conn, claimed[0].provider());
    let before = placement_snapshot(&mut conn);

    let moves: Vec<NodeMove> = claimed
        .iter()
        .map(|cn| NodeMove {
            node: cn.node,
            from: "compute-1".into(),
            epoch: OwnerEpoch(1),
            to: "compute-2".into(),
            reason: MoveReason::HostDown,
        })
        .collect();
    let moved = move_nodes(&mut conn, &moves, 7, now()).unwrap();
    assert_eq!(moved.len(), 50);
    assert!(
        moved
            .iter()
            .all(|cn| cn.host == "compute-2" && cn.owner_epoch == 2)
    );
    let mut moved_uuids: Vec<Uuid> = moved.iter().map(|cn| cn.uuid).collect();
    let mut claimed_uuids: Vec<Uuid> = claimed.iter().map(|cn| cn.uuid).collect();
    moved_uuids.sort();
    claimed_uuids.sort();
    assert_eq!(
        moved_uuids, claimed_uuids,
        "compute-node uuids never change"
    );
    assert_eq!(
        placement_snapshot(&mut conn),
        before,
        "providers, inventories, allocations untouched"
    );
    assert_eq!(
        count_in(
            &mut conn,
            "SELECT count(*) AS n FROM node_moves WHERE reason = 'host_down' AND ring_version = 7"
        ),
        50
    );
    assert_audit_clean(&mut conn);

    // The same moves again are stale (epoch 1 is gone): nothing happens.
    assert!(move_nodes(&mut conn, &moves, 8, now()).unwrap().is_empty());
    assert_eq!(
        count_in(&mut conn, "SELECT count(*) AS n FROM node_moves"),
        50
    );
}

#[test]
fn a_stale_owner_cannot_write_inventory() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 1);
    let cn = claim_nodes(&mut conn, &claims(&nodes, "compute-1"), now())
        .unwrap()
        .remove(0);
    move_nodes(
        &mut conn,
        &[NodeMove {
            node: cn.node,
            from: "compute-1".into(),
            epoch: OwnerEpoch(1),
            to: "compute-2".into(),
            reason: MoveReason::HostDown,
        }],
        1,
        now(),
    )
    .unwrap();
    let reserved = NodeInventory {
        reserved: 1,
        ..inventory()
    };
    assert!(
        !report_inventory(
            &mut conn,
            cn.provider(),
            &"compute-1".into(),
            OwnerEpoch(1),
            &reserved,
            now()
        )
        .unwrap(),
        "old owner"
    );
    assert!(
        !report_inventory(
            &mut conn,
            cn.provider(),
            &"compute-2".into(),
            OwnerEpoch(1),
            &reserved,
            now()
        )
        .unwrap(),
        "stale epoch"
    );
    assert_eq!(
        count_in(&mut conn, "SELECT count(*) AS n FROM inventories"),
        0,
        "nothing was written"
    );
    assert!(
        report_inventory(
            &mut conn,
            cn.provider(),
            &"compute-2".into(),
            OwnerEpoch(2),
            &reserved,
            now()
        )
        .unwrap()
    );
}

/// `delete_orphan` of `node` as `host` at `epoch`, now.
fn orphan(
    conn: &mut PgConnection,
    node: ringmaster::domain::identity::NodeUuid,
    host: &str,
    epoch: i64,
) -> OrphanOutcome {
    delete_orphan(conn, node, &host.into(), OwnerEpoch(epoch), now()).unwrap()
}

#[test]
fn an_orphan_is_deleted_only_by_its_owner_once_ironic_forgot_it_and_never_with_allocations() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 2);
    let claimed = claim_nodes(&mut conn, &claims(&nodes, "compute-1"), now()).unwrap();
    let (kept, freed) = (&claimed[0], &claimed[1]);
    assert_eq!(
        orphan(&mut conn, freed.node, "compute-1", 1),
        OrphanOutcome::StillInIronic
    );

    report_inventory(
        &mut conn,
        kept.provider(),
        &"compute-1".into(),
        OwnerEpoch(1),
        &inventory(),
        now(),
    )
    .unwrap();
    allocate_one(&mut conn, kept.provider());
    diesel::sql_query("DELETE FROM ironic_nodes")
        .execute(&mut conn)
        .unwrap();

    assert_eq!(
        orphan(&mut conn, freed.node, "compute-2", 1),
        OrphanOutcome::NotOwner
    );
    assert_eq!(
        orphan(&mut conn, freed.node, "compute-1", 9),
        OrphanOutcome::NotOwner
    );
    assert_eq!(
        orphan(&mut conn, kept.node, "compute-1", 1),
        OrphanOutcome::KeptWithAllocations
    );
    assert_eq!(
        orphan(&mut conn, freed.node, "compute-1", 1),
        OrphanOutcome::Deleted
    );

    assert_eq!(
        list_compute_nodes(&mut conn, None).unwrap().len(),
        1,
        "only the allocated one is kept"
    );
    assert_eq!(
        count_in(&mut conn, "SELECT count(*) AS n FROM allocations"),
        1
    );
    assert_audit_clean(&mut conn);
}

/// The chaos fault run's invariant-4 report: an ERROR server keeps its node after the node's
/// orphan delete (it holds no allocation), and the re-enrolled node's claim by another host
/// must carry the server with it, in the claim's own statement. A deleted server is left as
/// it was.
#[test]
fn a_reclaimed_node_takes_its_live_instances_to_its_new_owner() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 1);
    let first = claim_nodes(&mut conn, &claims(&nodes, "compute-1"), now())
        .unwrap()
        .remove(0);
    let (failed, gone) = (Uuid::new_v4(), Uuid::new_v4());
    conn.batch_execute(&format!(
        "INSERT INTO instances (uuid, project_id, user_id, host, node, vm_state)
         VALUES ('{failed}', 'p', 'u', 'compute-1', '{node}', 'error'),
                ('{gone}', 'p', 'u', 'compute-1', '{node}', 'deleted');
         UPDATE instances SET deleted = id, deleted_at = now() WHERE uuid = '{gone}'",
        node = nodes[0]
    ))
    .unwrap();
    diesel::sql_query("DELETE FROM ironic_nodes")
        .execute(&mut conn)
        .unwrap();
    assert_eq!(
        orphan(&mut conn, first.node, "compute-1", 1),
        OrphanOutcome::Deleted
    );

    let again = [NewIronicNode::enrolling(nodes[0], None, "baremetal")];
    enroll_nodes(&mut conn, &again).unwrap();
    let back = claim_nodes(&mut conn, &claims(&nodes, "compute-2"), now())
        .unwrap()
        .remove(0);
    assert_eq!((back.uuid, back.host.as_str()), (first.uuid, "compute-2"));
    let host_of = |conn: &mut PgConnection, uuid: Uuid| {
        count_in(
            conn,
            &format!(
                "SELECT count(*) AS n FROM instances WHERE uuid = '{uuid}' AND host = 'compute-2'"
            ),
        )
    };
    assert_eq!(
        host_of(&mut conn, failed),
        1,
        "the live server follows its node"
    );
    assert_eq!(
        host_of(&mut conn, gone),
        0,
        "a deleted server is not rewritten"
    );
    assert_audit_clean(&mut conn);
}

#[test]
fn the_audit_names_each_broken_invariant() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let nodes = enroll(&mut conn, 2);
    let claimed = claim_nodes(
        &mut conn,
        &claims(&nodes, "compute-1"),
        now() - Duration::seconds(5),
    )
    .unwrap();
    assert_audit_clean(&mut conn);

    diesel::sql_query(format!(
        "DELETE FROM resource_providers WHERE uuid = '{}'",
        claimed[0].uuid
    ))
    .execute(&mut conn)
    .unwrap();
    diesel::sql_query(format!(
        "UPDATE compute_nodes SET deleted = id, deleted_at = now() WHERE uuid = '{}'",
        claimed[1].uuid
    ))
    .execute(&mut conn)
    .unwrap();
    diesel::sql_query(
        "INSERT INTO shadow_services (id, uuid, host, \"binary\", report_count, disabled, forced_down,
                                      version, created_at, deleted)
         VALUES (99, gen_random_uuid(), 'h', 'b', 0, false, false, 0, now(), 0)",
    )
    .execute(&mut conn)
    .unwrap();

    let violations = check_invariants(&mut conn).unwrap();
    let invariants: Vec<u8> = violations.iter().map(|v| v.invariant).collect();
    assert_eq!(invariants, vec![1, 1, 9], "{violations:#?}");
    assert!(
        violations[0].message.contains(&nodes[1].to_string())
            || violations[1].message.contains(&nodes[1].to_string())
    );
    assert_eq!(
        violations[2].message,
        "shadow_services row 99 was archived while live"
    );
}

fn placement_snapshot(conn: &mut PgConnection) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Line {
        #[diesel(sql_type = diesel::sql_types::Text)]
        line: String,
    }
    diesel::sql_query(
        "SELECT format('rp %s %s gen %s', uuid, name, generation) AS line FROM resource_providers
         UNION ALL SELECT format('inv %s %s %s %s', resource_provider_id, resource_class_id, total, reserved) FROM inventories
         UNION ALL SELECT format('alloc %s %s %s', resource_provider_id, consumer_id, used) FROM allocations
         UNION ALL SELECT format('consumer %s gen %s', uuid, generation) FROM consumers
         ORDER BY 1",
    )
    .load::<Line>(conn)
    .unwrap()
    .into_iter()
    .map(|line| line.line)
    .collect()
}
