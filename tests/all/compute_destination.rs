//! An admin's requested destination (issue 44, item 6; Nova 2.74): `host` and
//! `hypervisor_hostname` place the server on that host or node, or nowhere (no valid host when
//! it has no free node); a host or node that does not exist is 400 with Nova's message, and
//! nothing is written.

use std::collections::BTreeMap;

use reqwest::Method;
use ringmaster::actors::compute_host::UpdateAvailableResource;
use ringmaster::actors::rebalancer::RebalanceNow;
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, create_bare_metal_flavor, create_server_at, one_host_with_nodes, rows, second_host,
    wait_for_status,
};

/// Two hosts sharing twenty nodes (each owns some: the ring leaves one without in 2 of 2^20
/// draws); the nodes of each host, by host.
async fn two_hosts(app: &TestApp) -> BTreeMap<String, Vec<String>> {
    one_host_with_nodes(app, 20).await;
    let second = second_host(app).await;
    app.actors
        .rebalancer
        .send(RebalanceNow)
        .await
        .unwrap()
        .unwrap();
    second.send(UpdateAvailableResource).await.unwrap().unwrap();
    let first = app.actors.hosts.get("cmp-1").unwrap();
    first.send(UpdateAvailableResource).await.unwrap().unwrap();
    let (_, _, listed) = app
        .compute(Method::GET, "/os-hypervisors/detail")
        .version("2.88")
        .send()
        .await;
    let mut nodes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for node in listed["hypervisors"].as_array().unwrap() {
        let host = node["service"]["host"].as_str().unwrap().to_owned();
        let name = node["hypervisor_hostname"].as_str().unwrap().to_owned();
        nodes.entry(host).or_default().push(name);
    }
    assert_eq!(nodes.len(), 2, "both hosts own nodes: {listed}");
    nodes
}

/// Boots at 2.74 as admin with `destination`; the server once it settled at `status`.
async fn boot_at(app: &TestApp, flavor: &str, destination: Value, status: &str) -> Value {
    let (code, body) = create_server_at(app, "2.74", "admin", destination.clone(), flavor).await;
    assert_eq!(code, 202, "{destination}: {body}");
    let id = body["server"]["id"].as_str().unwrap();
    wait_for_status(app, "admin", id, status).await
}

#[actix_web::test]
async fn a_requested_host_or_node_places_the_server_there() {
    let app = TestApp::spawn().await;
    let nodes = two_hosts(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let (on_first, on_second) = (&nodes["cmp-1"], &nodes["cmp-2"]);

    let server = boot_at(&app, &flavor, json!({"host": "cmp-2"}), "ACTIVE").await;
    assert_eq!(server["OS-EXT-SRV-ATTR:host"], "cmp-2", "{server}");
    // The last of cmp-1's nodes by uuid: the one a boot without a destination takes last.
    let last = on_first.iter().max().unwrap();
    let server = boot_at(
        &app,
        &flavor,
        json!({"hypervisor_hostname": last}),
        "ACTIVE",
    )
    .await;
    assert_eq!(
        server["OS-EXT-SRV-ATTR:hypervisor_hostname"], *last,
        "{server}"
    );
    assert_eq!(server["OS-EXT-SRV-ATTR:host"], "cmp-1", "{server}");
    // Another of cmp-1's nodes (the listing's order is not the uuids': its first may be `last`).
    let other = on_first.iter().find(|node| *node != last).unwrap();
    let both = json!({"host": "cmp-1", "hypervisor_hostname": other});
    let server = boot_at(&app, &flavor, both, "ACTIVE").await;
    assert_eq!(server["OS-EXT-SRV-ATTR:hypervisor_hostname"], *other);

    // A node that is taken: no valid host, nothing claimed for the server.
    let server = boot_at(&app, &flavor, json!({"hypervisor_hostname": last}), "ERROR").await;
    assert!(
        server["fault"]["message"]
            .as_str()
            .unwrap()
            .contains("No valid host"),
        "{server}"
    );
    assert_eq!(rows(&app, "SELECT count(*) FROM allocations"), 3);

    let instances = rows(&app, "SELECT count(*) FROM instances");
    for (destination, named) in [
        (json!({"host": "cmp-9"}), "cmp-9"),
        (
            json!({"hypervisor_hostname": "no-such-node"}),
            "no-such-node",
        ),
        (
            json!({"host": "cmp-1", "hypervisor_hostname": on_second[0]}),
            "cmp-1",
        ),
    ] {
        let (code, body) =
            create_server_at(&app, "2.74", "admin", destination.clone(), &flavor).await;
        assert_eq!(code, 400, "{destination}: {body}");
        assert_eq!(
            body["badRequest"]["message"],
            format!("Compute host {named} could not be found."),
            "{destination}"
        );
    }
    assert_eq!(
        rows(&app, "SELECT count(*) FROM instances"),
        instances,
        "nothing written for a destination that is not there"
    );
}
