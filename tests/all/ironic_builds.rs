//! A build whose deploy fails on its node is tried again on an alternate picked at its first
//! scheduling (issue 31, Nova's `[scheduler] max_attempts`), against a real Ironic whose
//! `direct` nodes fail validation: two failures then a success on the third node, one fault per
//! attempt, each failed node counting its failed builds and resting for the cooldown (shown in
//! `GET /api/v1/nodes`, honoured by the next boot); every attempt spent → `error` naming each
//! node, nothing claimed; a success clears the node's count. Audited after every step.

use std::time::Duration;

use diesel::RunQueryDsl;
use ringmaster::domain::identity::InstanceUuid;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{RealIronic, TestDeployment, test_deployment_config};

const HOSTS: [&str; 2] = ["cmp-1", "cmp-2"];
/// Uuids that sort in enrollment order: the scheduler offers free nodes by uuid.
const ORDERED: &str = "00000000-0000-4000-8000-";

/// The messages of instance `uuid`'s faults, oldest first.
fn faults(d: &TestDeployment, uuid: InstanceUuid) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Fault {
        #[diesel(sql_type = diesel::sql_types::Text)]
        message: String,
    }
    diesel::sql_query(
        "SELECT message::text AS message FROM instance_faults WHERE instance_uuid = $1 ORDER BY id",
    )
    .bind::<diesel::sql_types::Uuid, _>(uuid)
    .load::<Fault>(&mut d.db.conn())
    .expect("faults")
    .into_iter()
    .map(|fault| fault.message)
    .collect()
}

/// `GET /api/v1/nodes`, by node uuid.
async fn nodes(address: &str) -> std::collections::HashMap<Uuid, Value> {
    let listed: Vec<Value> = reqwest::get(format!("{address}/api/v1/nodes"))
        .await
        .expect("the admin API answers")
        .json()
        .await
        .expect("nodes");
    listed
        .into_iter()
        .map(|node| {
            (
                node["uuid"]
                    .as_str()
                    .unwrap_or("")
                    .parse()
                    .unwrap_or_default(),
                node,
            )
        })
        .collect()
}

#[actix_web::test]
async fn a_failed_build_is_tried_on_alternates_and_failing_nodes_rest_then_come_last() {
    let ironic = RealIronic::start();
    let direct = ironic.enroll_with(
        2,
        &["--deploy-interface", "direct", "--uuid-prefix", ORDERED],
    );
    let good = ironic.enroll_with(1, &["--uuid-prefix", ORDERED])[0];
    let mut config = test_deployment_config(&HOSTS);
    config.ironic = Some(ironic.settings());
    config.actors.host.build_failure_cooldown = Duration::from_secs(3);
    let d = TestDeployment::start_with(config).await;
    d.track(&HOSTS).await;
    d.rebalance().await;
    d.track(&HOSTS).await;
    d.track(&HOSTS).await;
    d.audit();
    let address = d.serve();

    builds_on_the_third_after_two_failures(&d, &ironic, &address, (direct.as_slice(), good)).await;
    // Both failed nodes rest for the cooldown: nothing else is free, so no valid host.
    let refused = d.boot("vm-2").await;
    assert!(
        refused.is_err(),
        "nodes cooling down are not offered: {refused:?}"
    );
    d.audit();

    let third = a_new_node_first_then_the_failed_ones(&d, &ironic, &address, &direct).await;
    a_fixed_node_builds_again_and_its_count_goes(&d, &ironic, &address, (direct.as_slice(), third))
        .await;
}

/// Fails on both direct nodes (validation), then builds on the third; each failure is a fault,
/// the failed nodes are cleared in Ironic and shown cooling down.
async fn builds_on_the_third_after_two_failures(
    d: &TestDeployment,
    ironic: &RealIronic,
    address: &str,
    (direct, good): (&[Uuid], Uuid),
) {
    let booted = d.boot("vm-1").await.expect("booted");
    let booted =
        ringmaster::db::instances::get_instance(&mut d.db.conn(), booted.uuid).expect("found");
    assert_eq!(booted.vm_state.as_str(), "active");
    assert_eq!(booted.node.map(|node| node.uuid()), Some(good));
    let said = faults(d, booted.uuid);
    assert_eq!(said.len(), 2, "one fault per failed attempt: {said:?}");
    for (fault, node) in said.iter().zip(direct) {
        assert!(
            fault.contains(&node.to_string()) && fault.contains("validation"),
            "{fault}"
        );
    }
    for node in direct {
        let shown = ironic.node(*node).await;
        assert_eq!(
            (
                shown["provision_state"].clone(),
                shown["instance_uuid"].clone()
            ),
            (json!("available"), Value::Null)
        );
        assert_eq!(
            shown["instance_info"],
            json!({}),
            "cleared before it is offered again"
        );
    }
    let listed = nodes(address).await;
    for node in direct {
        assert_eq!(listed[node]["failed_builds"], 1, "{}", listed[node]);
        assert!(
            listed[node]["build_cooldown_until"].is_string(),
            "cooldown shown"
        );
    }
    assert_eq!(listed[&good]["failed_builds"], 0);
    d.audit();
}

/// After the cooldown a new node comes first, the failed ones after; all three fail: error
/// naming each, nothing claimed. Returns the new node.
async fn a_new_node_first_then_the_failed_ones(
    d: &TestDeployment,
    ironic: &RealIronic,
    address: &str,
    direct: &[Uuid],
) -> Uuid {
    d.advance(4);
    d.heartbeat(&HOSTS).await;
    let third = ironic.enroll_with(
        1,
        &["--deploy-interface", "direct", "--uuid-prefix", ORDERED],
    )[0];
    d.track(&HOSTS).await;
    d.rebalance().await;
    d.track(&HOSTS).await;
    let failed = d.boot("vm-3").await.expect("answered");
    let failed =
        ringmaster::db::instances::get_instance(&mut d.db.conn(), failed.uuid).expect("found");
    assert_eq!(failed.vm_state.as_str(), "error");
    let last = faults(d, failed.uuid).pop().unwrap_or_default();
    assert!(
        last.contains("failed on 3 nodes (3 attempts allowed)"),
        "{last}"
    );
    for node in [third, direct[0], direct[1]] {
        assert!(last.contains(&node.to_string()), "{node} named: {last}");
    }
    assert!(
        d.allocations()
            .iter()
            .all(|(consumer, _, _)| *consumer != failed.uuid.uuid()),
        "nothing claimed"
    );
    let listed = nodes(address).await;
    assert_eq!(
        [direct[0], direct[1], third].map(|node| listed[&node]["failed_builds"].clone()),
        [json!(2), json!(2), json!(1)]
    );
    d.audit();
    third
}

/// A node fixed in Ironic builds again, and its count goes.
async fn a_fixed_node_builds_again_and_its_count_goes(
    d: &TestDeployment,
    ironic: &RealIronic,
    address: &str,
    (direct, third): (&[Uuid], Uuid),
) {
    let fixed = ironic
        .request(reqwest::Method::PATCH, &format!("/nodes/{}", direct[0]))
        .json(&json!([{"op": "replace", "path": "/deploy_interface", "value": "fake"}]))
        .send()
        .await
        .expect("ironic answers");
    assert_eq!(fixed.status(), 200);
    d.advance(4);
    d.heartbeat(&HOSTS).await;
    let rebuilt = d.boot("vm-4").await.expect("booted");
    let rebuilt =
        ringmaster::db::instances::get_instance(&mut d.db.conn(), rebuilt.uuid).expect("found");
    assert_eq!(rebuilt.vm_state.as_str(), "active");
    assert_eq!(
        rebuilt.node.map(|node| node.uuid()),
        Some(direct[0]),
        "after the new failure of {third}"
    );
    let listed = nodes(address).await;
    assert_eq!(
        listed[&direct[0]]["failed_builds"], 0,
        "a success clears the count"
    );
    assert_eq!(listed[&third]["failed_builds"], 2);
    d.audit();
}
