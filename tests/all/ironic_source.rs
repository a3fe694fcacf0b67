//! A real Ironic 39.0.0 (fake-hardware) as the node source (issue 16), end to end: its nodes
//! claimed by three hosts with inventory and traits as Ironic has them; boots through the admin
//! API deployed by Ironic; a crash that moves an active instance's node without one request to
//! Ironic for it; tear-downs that leave the node clean; maintenance reserved within one pass;
//! deploys Ironic refuses or fails ending in error with the claim released; an Ironic outage
//! longer than three passes that changes nothing; nodes deleted and added in Ironic; and the
//! listing loop, one listing per interval for all of a process's hosts. The invariants are
//! audited after every step.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{
    RealIronic, THREE_HOSTS, TestDeployment, deployment_on, eventually, eventually_async, http,
    start_demo_with, test_deployment_config,
};

/// Boots `name` of `class` through `POST /api/v1/instances`; returns the answer's body.
/// Boots `name` of `class` through the admin API of process `address`, which must answer 201.
async fn admin_boot(address: &str, name: &str, class: &str) -> Value {
    let response = crate::helpers::http_client()
        .post(format!("{address}/api/v1/instances"))
        .json(&json!({"name": name, "resource_class": class}))
        .send()
        .await
        .expect("the admin API answers");
    assert_eq!(response.status(), 201, "boot {name}");
    response.json().await.expect("an instance")
}

async fn delete_instance(address: &str, instance: &str) -> u16 {
    crate::helpers::json_client()
        .delete(format!("{address}/api/v1/instances/{instance}"))
        .send()
        .await
        .expect("the admin API answers")
        .status()
        .as_u16()
}

fn uuid_of(value: &Value) -> Uuid {
    value.as_str().expect("a uuid").parse().expect("a uuid")
}

#[actix_web::test]
async fn nodes_of_a_real_ironic_are_claimed_booted_moved_without_a_request_and_torn_down() {
    let ironic = RealIronic::start();
    let plain = ironic.enroll(14);
    let gold = ironic.enroll_with(6, &["--trait", "CUSTOM_GOLD", "--trait", "CUSTOM_RAID"]);
    let d = deployment_on(&ironic, &THREE_HOSTS).await;
    let address = d.serve();

    every_node_claimed_with_its_inventory_and_traits(&d, (plain.as_slice(), gold.as_slice()));

    // 5 boots: Ironic deploys each node with the instance's uuid; Placement's allocations match.
    let mut booted = Vec::new();
    for index in 0..5 {
        let instance = admin_boot(&address, &format!("vm-{index}"), "baremetal").await;
        assert_eq!(instance["vm_state"], "active", "{instance}");
        let (uuid, node) = (uuid_of(&instance["uuid"]), uuid_of(&instance["node"]));
        let shown = ironic.node(node).await;
        assert_eq!(shown["provision_state"], "active");
        assert_eq!(shown["instance_uuid"], json!(uuid));
        assert_eq!(
            shown["instance_info"]["display_name"],
            json!(format!("vm-{index}"))
        );
        let allocations: Vec<_> = d
            .allocations()
            .into_iter()
            .filter(|(consumer, _, _)| *consumer == uuid)
            .collect();
        assert_eq!(allocations, [(uuid, node, 1)]);
        booted.push((uuid, node, instance["host"].as_str().unwrap().to_owned()));
        d.audit();
    }

    let (instance, node, host) = booted[0].clone();
    a_crashed_hosts_node_moves_without_a_request_to_ironic(&d, &ironic, node, &host).await;

    // Delete the instance on its new host: the node is available again, clean, unallocated.
    assert_eq!(delete_instance(&address, &instance.to_string()).await, 204);
    let shown = ironic.node(node).await;
    assert_eq!(shown["provision_state"], "available");
    assert_eq!(shown["instance_uuid"], Value::Null);
    assert_eq!(shown["instance_info"], json!({}));
    assert!(
        d.allocations()
            .iter()
            .all(|(consumer, _, _)| *consumer != instance)
    );
    d.audit();
}

/// 20 nodes, all claimed by the 3 hosts: one compute node and one provider each, with the
/// node's uuid (invariant 1), inventory and traits as Ironic has them.
fn every_node_claimed_with_its_inventory_and_traits(
    d: &TestDeployment,
    (plain, gold): (&[Uuid], &[Uuid]),
) {
    let nodes = d.nodes();
    assert_eq!(nodes.len(), 20);
    for node in &nodes {
        assert!(node.host.is_some(), "node {} is owned", node.uuid);
        assert_eq!(node.compute_node_uuid, Some(node.uuid));
        assert_eq!(node.resource_provider_uuid, Some(node.uuid));
        assert_eq!(node.source, "ironic");
        assert_eq!(node.provision_state, "available");
    }
    for host in THREE_HOSTS {
        assert!(d.owner_count(host) > 0, "{host} owns nodes");
    }
    let inventories = d.inventories();
    assert_eq!(inventories.len(), 20, "{inventories:?}");
    for (provider, class, total, reserved) in &inventories {
        assert_eq!(
            (class.as_str(), *total, *reserved),
            ("CUSTOM_BAREMETAL", 1, 0),
            "{provider}"
        );
    }
    for node in gold {
        assert_eq!(d.provider_traits(*node), ["CUSTOM_GOLD", "CUSTOM_RAID"]);
    }
    for node in plain {
        assert!(d.provider_traits(*node).is_empty());
    }
}

/// Crash the host of an active instance: its node moves with the instance, identities and
/// allocations unchanged, and Ironic hears nothing about that node.
async fn a_crashed_hosts_node_moves_without_a_request_to_ironic(
    d: &TestDeployment,
    ironic: &RealIronic,
    node: Uuid,
    host: &str,
) {
    let provisioned_at = ironic.node(node).await["provision_updated_at"].clone();
    let requests_before = ironic.api_log_lines(&node.to_string()).len();
    let (identities, allocations) = (d.identities(), d.allocations());
    assert!(d.actors.hosts.crash(host));
    d.advance(11);
    let alive: Vec<&str> = THREE_HOSTS.iter().copied().filter(|h| *h != host).collect();
    d.heartbeat(&alive).await;
    let report = d.rebalance().await;
    assert!(
        report.moved.iter().any(|moved| moved.node.uuid() == node),
        "the crashed host's node moves: {report:?}"
    );
    d.track(&alive).await;
    let new_owner = d.owner_of(&node.to_string()).expect("owned");
    assert!(alive.contains(&new_owner.as_str()), "{new_owner}");
    assert_eq!(d.identities(), identities);
    assert_eq!(d.allocations(), allocations);
    d.audit();
    let since: Vec<String> = ironic.api_log_lines(&node.to_string())[requests_before..]
        .iter()
        .filter(|line| !line.contains(" GET /v1/nodes/"))
        .cloned()
        .collect();
    assert!(
        since.is_empty(),
        "ringmaster sent Ironic no request for node {node} during the move: {since:#?}"
    );
    assert_eq!(
        ironic.node(node).await["provision_updated_at"],
        provisioned_at,
        "no provision request for the moved node"
    );
}

#[actix_web::test]
async fn maintenance_is_reserved_within_one_pass_and_failed_deploys_leave_nodes_clean() {
    let ironic = RealIronic::start();
    let plain = ironic.enroll(3);
    // A node whose validation fails: the direct deploy interface wants an image checksum.
    let invalid = ironic.enroll_with(
        1,
        &[
            "--resource-class",
            "baremetal-direct",
            "--deploy-interface",
            "direct",
        ],
    )[0];
    let d = deployment_on(&ironic, &THREE_HOSTS).await;
    let address = d.serve();
    let reserved = |node: Uuid| {
        d.inventories()
            .into_iter()
            .find(|(provider, _, _, _)| *provider == node)
            .map(|(_, _, _, reserved)| reserved)
    };

    // Maintenance on in Ironic: reserved after one pass; off: free again after one pass.
    ironic.set_maintenance(plain[0], true).await;
    d.track(&THREE_HOSTS).await;
    assert_eq!(reserved(plain[0]), Some(1));
    let listed: Vec<Value> = reqwest::get(format!("{address}/api/v1/nodes"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let shown = listed
        .iter()
        .find(|node| node["uuid"] == json!(plain[0]))
        .expect("listed");
    assert_eq!(shown["maintenance"], true);
    assert_eq!(shown["provision_state"], "available");
    assert_eq!(shown["source"], "ironic");
    assert!(shown.get("power_state").is_some() && shown.get("last_error").is_some());
    d.audit();
    ironic.set_maintenance(plain[0], false).await;
    d.track(&THREE_HOSTS).await;
    assert_eq!(reserved(plain[0]), Some(0));
    d.audit();

    a_deploy_that_fails_validation_leaves_its_node_clean(&d, &ironic, &address, invalid).await;

    // A deploy Ironic refuses: every node went into maintenance after the last listing, so
    // ringmaster still takes them for free; Ironic refuses to provision: error, claim
    // released, nothing left on the node.
    for node in &plain {
        ironic.set_maintenance(*node, true).await;
    }
    let refused = admin_boot(&address, "vm-refused", "baremetal").await;
    assert_eq!(refused["vm_state"], "error", "{refused}");
    assert!(
        refused["fault"].as_str().unwrap().contains("maintenance"),
        "{refused}"
    );
    let refused_uuid = uuid_of(&refused["uuid"]);
    assert!(
        d.allocations()
            .iter()
            .all(|(consumer, _, _)| *consumer != refused_uuid)
    );
    let node = uuid_of(&refused["node"]);
    let shown = ironic.node(node).await;
    assert_eq!(shown["instance_uuid"], Value::Null);
    assert_eq!(shown["instance_info"], json!({}));
    d.track(&THREE_HOSTS).await;
    for node in &plain {
        assert_eq!(reserved(*node), Some(1), "{node} in maintenance");
    }
    d.audit();
}

/// A deploy whose validation fails: error, the claim released, the node left clean.
async fn a_deploy_that_fails_validation_leaves_its_node_clean(
    d: &TestDeployment,
    ironic: &RealIronic,
    address: &str,
    invalid: Uuid,
) {
    let failed = admin_boot(address, "vm-invalid", "baremetal-direct").await;
    assert_eq!(failed["vm_state"], "error", "{failed}");
    assert!(
        failed["fault"].as_str().unwrap().contains("validation"),
        "{failed}"
    );
    let failed_uuid = uuid_of(&failed["uuid"]);
    assert!(
        d.allocations()
            .iter()
            .all(|(consumer, _, _)| *consumer != failed_uuid)
    );
    let shown = ironic.node(invalid).await;
    assert_eq!(shown["provision_state"], "available");
    assert_eq!(shown["instance_uuid"], Value::Null);
    assert_eq!(shown["instance_info"], json!({}));
    d.audit();
}

#[actix_web::test]
async fn the_admin_api_names_the_ironic_way_instead_of_touching_the_simulator() {
    let ironic = RealIronic::start();
    let nodes = ironic.enroll(2);
    let d = deployment_on(&ironic, &THREE_HOSTS[..1]).await;
    let address = d.serve();
    let client = crate::helpers::json_client();
    let node = nodes[0];
    let refusals = [
        (
            client
                .post(format!("{address}/api/v1/nodes"))
                .json(&json!({"count": 1})),
            "openstack baremetal node create",
        ),
        (
            client.delete(format!("{address}/api/v1/nodes/{node}")),
            "openstack baremetal node delete",
        ),
        (
            client.post(format!("{address}/api/v1/nodes/{node}/lock")),
            "openstack baremetal node maintenance set",
        ),
        (
            client.post(format!("{address}/api/v1/nodes/{node}/unlock")),
            "openstack baremetal node maintenance unset",
        ),
    ];
    for (request, way) in refusals {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 409);
        let body = response.text().await.unwrap();
        assert!(body.contains(way) && body.contains(&ironic.url), "{body}");
    }
    assert_eq!(d.nodes().len(), 2, "nothing enrolled or deleted");
    assert!(d.nodes().iter().all(|node| node.reservation.is_none()));

    let source: Value = reqwest::get(format!("{address}/api/v1/node-source"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(source["kind"], "ironic");
    assert_eq!(source["url"], json!(ironic.url));
    assert_eq!(source["api_version"], "1.82");
    assert_eq!(source["listing"]["nodes"], 2);
    assert_eq!(source["listing"]["error"], Value::Null);
    let ring: Value = reqwest::get(format!("{address}/api/v1/ring"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ring["node_source"]["kind"], "ironic");
    d.audit();
}

#[actix_web::test]
async fn an_ironic_down_for_more_than_three_passes_changes_nothing_and_work_resumes() {
    let ironic = RealIronic::start();
    ironic.enroll(6);
    let d = deployment_on(&ironic, &THREE_HOSTS).await;
    let address = d.serve();
    let active = admin_boot(&address, "vm-before", "baremetal").await;
    assert_eq!(active["vm_state"], "active");
    let (nodes, inventories, allocations) = (d.nodes(), d.inventories(), d.allocations());

    ironic.pause();
    for round in 0..4 {
        for host in THREE_HOSTS {
            let pass = d
                .actors
                .hosts
                .get(host)
                .unwrap()
                .send(ringmaster::actors::compute_host::UpdateAvailableResource)
                .await
                .unwrap();
            let error = pass.expect_err("a pass cannot list a stopped Ironic");
            assert!(error.to_string().contains("ironic"), "{error}");
        }
        d.advance(2);
        d.heartbeat(&THREE_HOSTS).await;
        let report = d.rebalance().await;
        assert!(
            report.moved.is_empty() && report.claimed.is_empty(),
            "round {round}"
        );
        assert_eq!(
            d.nodes(),
            nodes,
            "round {round}: no compute node deleted or moved"
        );
        assert_eq!(
            d.inventories(),
            inventories,
            "round {round}: no inventory changed"
        );
        assert_eq!(d.allocations(), allocations, "round {round}");
        d.audit();
    }
    // A boot meanwhile cannot deploy: it ends in error with its claim released.
    let failed = admin_boot(&address, "vm-during", "baremetal").await;
    assert_eq!(failed["vm_state"], "error", "{failed}");
    assert_eq!(d.allocations(), allocations);
    d.audit();

    ironic.resume();
    d.track(&THREE_HOSTS).await;
    assert_eq!(d.nodes().len(), 6);
    let after = admin_boot(&address, "vm-after", "baremetal").await;
    assert_eq!(after["vm_state"], "active", "work resumes: {after}");
    d.audit();
}

#[actix_web::test]
async fn nodes_deleted_and_added_in_ironic_lose_and_get_their_compute_nodes() {
    let ironic = RealIronic::start();
    let nodes = ironic.enroll(4);
    let hosts = ["cmp-1", "cmp-2"];
    let d = deployment_on(&ironic, &hosts).await;

    // Deleted in Ironic while free: its owner deletes its compute node, and its provider.
    ironic.delete_node(nodes[0]).await;
    d.track(&hosts).await;
    assert!(d.nodes().iter().all(|node| node.uuid != nodes[0]));
    assert!(d.owner_of(&nodes[0].to_string()).is_none());
    assert!(
        d.inventories()
            .iter()
            .all(|(provider, _, _, _)| *provider != nodes[0]),
        "its provider is gone"
    );
    d.audit();

    // A node that appears in Ironic, available, gets its first owner.
    let added = ironic.enroll(1)[0];
    d.track(&hosts).await;
    d.rebalance().await;
    d.track(&hosts).await;
    assert!(d.owner_of(&added.to_string()).is_some());
    assert_eq!(d.nodes().len(), 4);
    d.audit();

    // An active instance Ironic no longer shows on its node (torn down behind ringmaster's
    // back) is reported, once, and its node is not re-used while it holds the claim.
    let instance = d.boot("vm-behind").await.expect("boots");
    let node: Uuid = instance.node.unwrap().uuid();
    let status = ironic
        .request(Method::PUT, &format!("/nodes/{node}/states/provision"))
        .json(&json!({"target": "deleted"}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 202);
    eventually_async(Duration::from_secs(30), "the node torn down", || async {
        (ironic.node(node).await["provision_state"] == "available").then_some(())
    })
    .await;
    let reports = d.track(&hosts).await;
    assert!(
        reports
            .iter()
            .any(|report| report.instances_gone == [instance.uuid]),
        "{reports:?}"
    );
    assert!(
        d.allocations()
            .iter()
            .any(|(consumer, provider, _)| *consumer == instance.uuid.uuid() && *provider == node),
        "the claim is kept"
    );
    let fault = ringmaster::db::instances::latest_fault(&mut d.db.conn(), instance.uuid).unwrap();
    assert_eq!(
        fault.as_deref(),
        Some(ringmaster::db::node_reports::INSTANCE_GONE)
    );
    let again = d.track(&hosts).await;
    assert!(
        again.iter().all(|report| report.instances_gone.is_empty()),
        "reported once: {again:?}"
    );
    d.audit();
}

#[actix_web::test]
async fn one_listing_per_interval_serves_every_host_of_a_process() {
    let ironic = RealIronic::start();
    let nodes = ironic.enroll(20);
    let hosts = ["cmp-1", "cmp-2", "cmp-3", "cmp-4", "cmp-5"];
    let mut config = test_deployment_config(&hosts);
    config.ironic = Some(ironic.settings());
    config.actors.host.update_resources_interval = Duration::from_secs(1);
    config.actors.host.report_interval = Duration::from_millis(500);
    config.actors.rebalancer.interval = Duration::from_millis(200);
    let d = TestDeployment::start_with(config).await;
    let driver = d
        .actors
        .node_source
        .driver()
        .expect("a real ironic")
        .clone();
    eventually_async(Duration::from_secs(30), "every node owned", || async {
        let owned = d.nodes().iter().filter(|node| node.host.is_some()).count();
        (owned == 20 && d.inventories().len() == 20).then_some(())
    })
    .await;
    d.audit();

    let before = driver.status();
    actix_rt::time::sleep(Duration::from_secs(5)).await;
    let after = driver.status();
    let listings = after.listings - before.listings;
    assert!(
        (3..=6).contains(&listings),
        "one listing a second for 5 hosts, not one per host: {listings} in 5 s"
    );
    assert_eq!(after.requests, 1, "20 nodes are one page");
    assert_eq!(
        after.requests_total - before.requests_total,
        listings,
        "an idle Ironic costs its listings and nothing else"
    );
    assert_eq!(after.error, None);

    // Maintenance in Ironic shows within the next listing, through the owner's refresh.
    ironic.set_maintenance(nodes[3], true).await;
    eventually_async(Duration::from_secs(10), "the node reserved", || async {
        d.inventories()
            .iter()
            .any(|(provider, _, _, reserved)| *provider == nodes[3] && *reserved == 1)
            .then_some(())
    })
    .await;
    d.audit();
}

/// The README's way to try it: `demo --ironic-url` takes the nodes of a real Ironic (no
/// simulated node is enrolled) and gives each an owner.
#[test]
fn the_demo_takes_its_nodes_from_a_real_ironic_with_one_flag() {
    let ironic = RealIronic::start();
    let enrolled = ironic.enroll(5);
    let (_dir, _demo, address) = start_demo_with("ironic-demo", &["--ironic-url", &ironic.url]);
    let nodes: Vec<Value> = eventually(Duration::from_secs(60), "every node owned", || {
        let (status, body) = http(&address, "GET", "/api/v1/nodes");
        let nodes: Vec<Value> = serde_json::from_str(&body).ok()?;
        (status == 200 && nodes.len() == 5 && nodes.iter().all(|node| node["host"].is_string()))
            .then_some(nodes)
    });
    let mut listed: Vec<Uuid> = nodes.iter().map(|node| uuid_of(&node["uuid"])).collect();
    let mut expected = enrolled;
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected, "Ironic's nodes and no simulated one");
    assert!(nodes.iter().all(|node| node["source"] == "ironic"));
    let (status, audit) = http(&address, "GET", "/api/v1/audit");
    assert_eq!(status, 200);
    assert!(audit.contains("\"ok\":true"), "{audit}");
}
