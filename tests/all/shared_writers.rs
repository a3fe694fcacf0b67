//! One writer per invariant (issue 15): every caller of the allocation writer
//! (`replace_allocations`), of the ownership fence (`compute_nodes::fence`) and of the consumer
//! deleter (`delete_consumer`) gets the same guarantee, shown here from each caller.

use reqwest::Method;
use ringmaster::actors::compute_host::{
    DestroyInstance, HostError, ReadOwnedNodes, UpdateAvailableResourceFrom,
};
use ringmaster::actors::registry::DeleteOrphan;
use ringmaster::actors::scheduler::BootError;
use ringmaster::db::compute_nodes::OrphanOutcome;
use ringmaster::domain::identity::{ConsumerUuid, OwnerEpoch, ProviderUuid};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{
    TestApp, TestDeployment, create_placement_provider, deployment_rows, leave_a_build, move_node,
    other_than,
};

const RP: &str = "7d1d3ffe-3a9b-4b6a-9f0e-5a2f4d1c0b11";

/// A provider with 8 of `CUSTOM_STEPPED`, taken 2 to 4 at a time in steps of 2.
async fn stepped_provider(app: &TestApp) {
    create_placement_provider(app, RP).await;
    let (status, _, body) = app
        .placement(Method::PUT, "/placement/resource_classes/CUSTOM_STEPPED")
        .version("1.7")
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 201, "{body}");
    let inventories = json!({"resource_provider_generation": 0, "inventories": {
        "CUSTOM_STEPPED": {"total": 8, "min_unit": 2, "max_unit": 4, "step_size": 2}}});
    let (status, _, body) = app
        .placement(
            Method::PUT,
            &format!("/placement/resource_providers/{RP}/inventories"),
        )
        .version("1.20")
        .token("admin")
        .json(inventories)
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
}

/// One consumer's allocation of `amount` as a 1.28+ body.
fn allocation(amount: i64) -> Value {
    json!({"allocations": {RP: {"resources": {"CUSTOM_STEPPED": amount}}},
           "project_id": "p", "user_id": "u", "consumer_generation": null})
}

/// The allocation writer checks min_unit, max_unit and step_size for every caller: Placement's
/// PUT and POST, the reshaper, and the scheduler's claim (which once skipped them).
#[actix_web::test]
async fn every_caller_of_the_allocation_writer_gets_the_inventory_constraints() {
    let app = TestApp::spawn().await;
    stepped_provider(&app).await;
    for amount in [1, 3, 6] {
        let consumer = Uuid::new_v4();
        let put = app
            .placement(Method::PUT, &format!("/placement/allocations/{consumer}"))
            .version("1.28")
            .token("admin")
            .json(allocation(amount));
        let post = app
            .placement(Method::POST, "/placement/allocations")
            .version("1.28")
            .token("admin")
            .json(json!({ consumer.to_string(): allocation(amount) }));
        let reshape = app
            .placement(Method::POST, "/placement/reshaper")
            .version("1.30")
            .token("admin")
            .json(json!({
                "inventories": {RP: {"resource_provider_generation": 1, "inventories": {
                    "CUSTOM_STEPPED": {"total": 8, "min_unit": 2, "max_unit": 4, "step_size": 2}}}},
                "allocations": { consumer.to_string(): allocation(amount) }}));
        for (caller, request) in [("PUT", put), ("POST", post), ("reshaper", reshape)] {
            let (status, _, body) = request.send().await;
            assert_eq!(status, 409, "{caller} of {amount}: {body}");
            assert!(
                body["errors"][0]["detail"]
                    .as_str()
                    .is_some_and(|detail| detail.contains("violate inventory constraints")),
                "{caller} of {amount}: {body}"
            );
        }
    }
    let (status, _, body) = app
        .placement(
            Method::PUT,
            &format!("/placement/allocations/{}", Uuid::new_v4()),
        )
        .version("1.28")
        .token("admin")
        .json(allocation(2))
        .send()
        .await;
    assert_eq!(
        status, 204,
        "an amount the constraints allow is written: {body}"
    );

    // The scheduler's claim goes through the same writer: a node that must be taken two at a
    // time cannot take a boot's one.
    let d = TestDeployment::start(&["cmp-1"], 2).await;
    deployment_rows(
        &d,
        "WITH changed AS (UPDATE inventories SET total = 2, min_unit = 2, max_unit = 2
                           RETURNING 1) SELECT count(*) AS n FROM changed",
    );
    let refused = d.boot("vm-1").await;
    assert!(
        matches!(refused, Err(BootError::NoValidHost { .. })),
        "{refused:?}"
    );
    assert!(d.allocations().is_empty(), "nothing was claimed");
    assert_eq!(
        deployment_rows(&d, "SELECT count(*) AS n FROM instances"),
        0
    );
    d.audit();
}

/// Every owner's write goes through the fence: after its node moved, the old owner's tracker
/// pass (on a read taken before the move), its destroy, its inventory report and its orphan
/// delete each write nothing.
#[actix_web::test]
async fn every_caller_of_the_fence_writes_nothing_for_a_node_that_moved() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 2).await;
    let instance = d.boot("vm-1").await.unwrap();
    let (node, old_host) = (
        instance.node.unwrap().to_string(),
        instance.host.clone().unwrap(),
    );
    let view = d
        .nodes()
        .into_iter()
        .find(|view| view.uuid.to_string() == node)
        .unwrap();
    let old_epoch = OwnerEpoch(view.owner_epoch.unwrap());
    let old = d.actors.hosts.get(&old_host).unwrap();
    let mut read = old.send(ReadOwnedNodes).await.unwrap().unwrap();
    // As the stale read has it, every node is short of its PCI devices: the pass has writes
    // to make, each through the fence.
    for owned in &mut read {
        owned.devices = 0;
    }
    let allocations = d.allocations();
    move_node(&d, &node, &old_host, other_than(&old_host)).await;
    d.audit();

    // The tracker pass (`fence` over every changed node).
    let report = old
        .send(UpdateAvailableResourceFrom { read })
        .await
        .unwrap()
        .unwrap();
    assert!(report.lost.contains(&node), "{report:?}");
    // A destroy (`hold_one` through `Owned::write`).
    let destroyed = old
        .send(DestroyInstance {
            instance: instance.uuid,
            defer_pci_free: false,
        })
        .await
        .unwrap();
    assert!(
        matches!(destroyed, Err(HostError::NotOwner { .. })),
        "{destroyed:?}"
    );
    let compute_node = view.compute_node_uuid.unwrap();
    a_report_and_an_orphan_delete_of_the_old_owner_write_nothing(
        &d,
        (&node, compute_node),
        &old_host,
        old_epoch,
    )
    .await;

    assert_eq!(d.allocations(), allocations, "the instance keeps its claim");
    let after = d
        .nodes()
        .into_iter()
        .find(|view| view.uuid.to_string() == node)
        .unwrap();
    assert_eq!(after.host.as_deref(), Some(other_than(&old_host)));
    assert_eq!(after.compute_node_uuid, view.compute_node_uuid);
    d.audit();
}

/// The old owner's inventory report (`hold_one`) and orphan delete (`fence` for update) of a
/// node that moved: both refused.
async fn a_report_and_an_orphan_delete_of_the_old_owner_write_nothing(
    d: &TestDeployment,
    (node, compute_node): (&str, Uuid),
    old_host: &str,
    old_epoch: OwnerEpoch,
) {
    // An inventory report (`hold_one`).
    let inventory = ringmaster::domain::node::NodeInventory {
        resource_class: "CUSTOM_BAREMETAL".to_owned(),
        total: 1,
        reserved: 1,
    };
    let reported = ringmaster::db::node_reports::report_inventory(
        &mut d.db.conn(),
        ProviderUuid(compute_node),
        &old_host.into(),
        old_epoch,
        &inventory,
        d.clock_now(),
    )
    .unwrap();
    assert!(!reported, "the stale owner's report is refused");
    // An orphan delete (`fence` for update).
    let orphan = d
        .actors
        .registry
        .send(DeleteOrphan {
            node: node.parse().unwrap(),
            host: old_host.to_owned().into(),
            epoch: old_epoch,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(orphan, OrphanOutcome::NotOwner);
}

/// Consumers that are not left without allocations, and whether `consumer` is gone.
fn consumers_without_allocations(
    d_conn: &mut diesel::PgConnection,
    consumer: ConsumerUuid,
) -> (i64, bool) {
    use diesel::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        empty: i64,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        gone: bool,
    }
    let row: Row = diesel::sql_query(
        "SELECT (SELECT count(*) FROM consumers c
                  WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.uuid)) AS empty,
                NOT EXISTS (SELECT 1 FROM consumers WHERE uuid = $1) AS gone",
    )
    .bind::<diesel::sql_types::Uuid, _>(consumer)
    .get_result(d_conn)
    .unwrap();
    (row.empty, row.gone)
}

/// Every caller of the consumer deleter leaves no consumer without allocations: Placement's
/// DELETE, a PUT and a POST of no allocations, an instance's destroy and a failed build's
/// settling.
#[actix_web::test]
async fn every_caller_of_the_consumer_deleter_leaves_no_empty_consumer() {
    let app = TestApp::spawn().await;
    stepped_provider(&app).await;
    let empty = json!({"allocations": {}, "project_id": "p", "user_id": "u",
                       "consumer_generation": 1});
    for caller in ["DELETE", "PUT", "POST"] {
        let consumer = Uuid::new_v4();
        let path = format!("/placement/allocations/{consumer}");
        let (status, _, body) = app
            .placement(Method::PUT, &path)
            .version("1.28")
            .token("admin")
            .json(allocation(2))
            .send()
            .await;
        assert_eq!(status, 204, "{body}");
        let request = match caller {
            "DELETE" => app.placement(Method::DELETE, &path),
            "PUT" => app.placement(Method::PUT, &path).json(empty.clone()),
            _ => app
                .placement(Method::POST, "/placement/allocations")
                .json(json!({ consumer.to_string(): empty.clone() })),
        };
        let (status, _, body) = request.version("1.28").token("admin").send().await;
        assert_eq!(status, 204, "{caller}: {body}");
        assert_eq!(
            consumers_without_allocations(&mut app.db.conn(), ConsumerUuid(consumer)),
            (0, true),
            "{caller} deletes the consumer with its allocations"
        );
    }

    let d = TestDeployment::start(&["cmp-1"], 2).await;
    // An instance's destroy.
    let instance = d.boot("vm-1").await.unwrap();
    let host = d.actors.hosts.get("cmp-1").unwrap();
    host.send(DestroyInstance {
        instance: instance.uuid,
        defer_pci_free: false,
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        consumers_without_allocations(&mut d.db.conn(), instance.uuid.into()),
        (0, true)
    );
    // A build that made no progress, settled by its node's owner.
    let node = d.nodes()[0].clone();
    let left = leave_a_build(&d, &node);
    d.advance(601);
    d.heartbeat(&["cmp-1"]).await;
    let report = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(report.builds_failed, vec![left]);
    assert_eq!(
        consumers_without_allocations(&mut d.db.conn(), left.into()),
        (0, true)
    );
    d.audit();
}

/// What the consumer deleter prevents, the audit reports: an instance in error or deleted that
/// still holds its allocations is a leaked claim (invariant 12), named with its state.
#[actix_web::test]
async fn the_audit_names_a_claim_an_ended_instance_still_holds() {
    let d = TestDeployment::start(&["cmp-1"], 2).await;
    let instance = d.boot("vm-1").await.unwrap();
    // As a buggy deleter would leave it: the instance ended, its node freed, its claim kept.
    deployment_rows(
        &d,
        &format!(
            "WITH freed AS (UPDATE ironic_nodes SET instance_uuid = NULL, provision_state = 'available'
                             WHERE instance_uuid = '{0}' RETURNING 1),
                  ended AS (UPDATE instances SET vm_state = 'error' WHERE uuid = '{0}' RETURNING 1)
             SELECT (SELECT count(*) FROM freed) + (SELECT count(*) FROM ended) AS n",
            instance.uuid
        ),
    );
    let leaks = |d: &TestDeployment| -> Vec<String> {
        ringmaster::db::audit::check_invariants(&mut d.db.conn())
            .unwrap()
            .into_iter()
            .filter(|v| v.invariant == 12)
            .map(|v| v.message)
            .collect()
    };
    assert_eq!(
        leaks(&d),
        [format!(
            "instance {} is error but holds allocations (a leaked claim)",
            instance.uuid
        )]
    );
    deployment_rows(
        &d,
        &format!(
            "WITH gone AS (UPDATE instances SET deleted = id, deleted_at = now() WHERE uuid = '{}' RETURNING 1)
             SELECT count(*) AS n FROM gone",
            instance.uuid
        ),
    );
    assert_eq!(
        leaks(&d),
        [format!(
            "instance {} is deleted but holds allocations (a leaked claim)",
            instance.uuid
        )]
    );
    // The consumer deleter ends it.
    ringmaster::db::placement::allocations::delete_consumer(
        &mut d.db.conn(),
        ConsumerUuid::from(instance.uuid),
    )
    .unwrap();
    assert!(leaks(&d).is_empty());
    d.audit();
}
