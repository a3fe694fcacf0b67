//! `os-services`, `os-hypervisors`, limits and quotas (issue 26): every compute host is a
//! `nova-compute` service; disabling one stops new builds there and moves nothing; forcing one
//! down moves its nodes, the server on one included, to a live host at once, the server still
//! ACTIVE on its node. A disabled host's providers carry COMPUTE_STATUS_DISABLED; deleting a
//! service is refused while it hosts instances, and otherwise its nodes keep their identity
//! on a live host.

use std::time::Duration;

use reqwest::Method;
use ringmaster::actors::compute_host::UpdateAvailableResource;
use ringmaster::actors::rebalancer::RebalanceNow;
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, create_bare_metal_flavor, create_server, eventually_async, one_host_four_nodes, rows,
    second_host,
};

const IMAGE: &str = "6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1";

async fn service(app: &TestApp, host: &str) -> Value {
    let (status, _, body) = app
        .compute(
            Method::GET,
            &format!("/os-services?binary=nova-compute&host={host}"),
        )
        .version("2.69")
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    body["services"][0].clone()
}

async fn put_service(app: &TestApp, id: &str, body: Value) -> (u16, Value) {
    let (status, _, answer) = app
        .compute(Method::PUT, &format!("/os-services/{id}"))
        .version("2.53")
        .json(body)
        .send()
        .await;
    (status, answer)
}

/// Providers carrying COMPUTE_STATUS_DISABLED.
fn status_traits(app: &TestApp) -> i64 {
    rows(
        app,
        "SELECT count(*) FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id \
          WHERE t.name = 'COMPUTE_STATUS_DISABLED'",
    )
}

async fn server(app: &TestApp, id: &str) -> Value {
    let (_, _, body) = app
        .compute(Method::GET, &format!("/servers/{id}"))
        .version("2.100")
        .send()
        .await;
    body["server"].clone()
}

#[actix_web::test]
async fn a_disabled_service_takes_no_build_and_keeps_its_nodes() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let listed = service(&app, "cmp-1").await;
    assert_eq!(listed["binary"], "nova-compute");
    assert_eq!(listed["state"], "up");
    assert_eq!(listed["status"], "enabled");
    assert_eq!(listed["forced_down"], false);
    let id = listed["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "2.53 ids are uuids");

    let (status, answer) = put_service(
        &app,
        &id,
        json!({"status": "disabled", "disabled_reason": "maintenance"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["service"]["status"], "disabled");
    assert_eq!(answer["service"]["disabled_reason"], "maintenance");
    let (status, created) = create_server(&app, "admin", json!({"server": {"name": "refused", "imageRef": IMAGE, "flavorRef": flavor, "networks": "none"}})).await;
    assert_eq!(status, 202);
    let refused = server(&app, created["server"]["id"].as_str().unwrap()).await;
    assert_eq!(
        refused["status"], "ERROR",
        "no build lands on a disabled host: {refused}"
    );
    let (_, _, nodes) = app
        .compute(Method::GET, "/os-hypervisors/detail")
        .version("2.88")
        .send()
        .await;
    let nodes = nodes["hypervisors"].as_array().unwrap().clone();
    assert_eq!(nodes.len(), 4, "nothing moved");
    for node in &nodes {
        assert_eq!(node["status"], "disabled");
        assert_eq!(node["service"]["host"], "cmp-1");
        assert_eq!(node["hypervisor_type"], "ironic");
    }
    assert_eq!(
        status_traits(&app),
        4,
        "each of its providers carries COMPUTE_STATUS_DISABLED, as Nova sets it"
    );

    let (status, answer) = put_service(&app, &id, json!({"status": "enabled"})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["service"]["disabled_reason"], Value::Null);
    assert_eq!(status_traits(&app), 0, "enabled: the trait is gone");
    let (_, created) = create_server(&app, "admin", json!({"server": {"name": "accepted", "imageRef": IMAGE, "flavorRef": flavor, "networks": "none"}})).await;
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    eventually_async(Duration::from_secs(30), "the server ACTIVE", || async {
        (server(&app, &id).await["status"] == "ACTIVE").then_some(())
    })
    .await;

    bad_service_updates_are_refused(&app, listed["id"].as_str().unwrap()).await;
    the_actions_before_2_53_work_on_host_and_binary(&app).await;
}

/// Updates Nova refuses (400), an unknown service (404), a non-admin (403).
async fn bad_service_updates_are_refused(app: &TestApp, id: &str) {
    for (body, why) in [
        (json!({}), "nothing asked"),
        (
            json!({"status": "enabled", "disabled_reason": "x"}),
            "a reason to enable",
        ),
        (json!({"disabled_reason": "x"}), "a reason alone"),
        (json!({"status": "sleeping"}), "an unknown status"),
        (json!({"forced_down": "yes"}), "a string for a boolean"),
        (
            json!({"status": "disabled", "colour": "red"}),
            "an unknown property",
        ),
    ] {
        let (status, answer) = put_service(app, id, body).await;
        assert_eq!(status, 400, "{why}: {answer}");
    }
    let (status, _) = put_service(
        app,
        "4c1f9a52-0000-4000-8000-000000000000",
        json!({"status": "enabled"}),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _, _) = app
        .compute(Method::GET, "/os-services")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 403, "services are for admins");
}

/// Before 2.53: the action in the path, the host and binary in the body.
async fn the_actions_before_2_53_work_on_host_and_binary(app: &TestApp) {
    let legacy = |action: &str, body: Value| {
        app.compute(Method::PUT, &format!("/os-services/{action}"))
            .version("2.11")
            .json(body)
    };
    let host = json!({"host": "cmp-1", "binary": "nova-compute"});
    let mut with_reason = host.clone();
    with_reason["disabled_reason"] = json!("old-style");
    let (status, _, answer) = legacy("disable-log-reason", with_reason).send().await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["service"]["status"], "disabled");
    assert_eq!(answer["service"]["disabled_reason"], "old-style");
    let (status, _, answer) = legacy("enable", host.clone()).send().await;
    assert_eq!(status, 200);
    assert_eq!(answer["service"]["status"], "enabled");
    let (status, _, _) = legacy("disable", json!({"host": "nope", "binary": "nova-compute"}))
        .send()
        .await;
    assert_eq!(status, 404);
    let (status, _, _) = legacy("disable", json!({"host": "cmp-1"})).send().await;
    assert_eq!(status, 400);
    let (status, _, _) = legacy("hibernate", host).send().await;
    assert_eq!(status, 404);
}

#[actix_web::test]
async fn a_forced_down_service_s_nodes_move_with_their_server() {
    let app = TestApp::spawn().await;
    let nodes = one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let (_, created) = create_server(&app, "admin", json!({"server": {"name": "survivor", "imageRef": IMAGE, "flavorRef": flavor, "networks": "none"}})).await;
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    eventually_async(Duration::from_secs(30), "the server ACTIVE", || async {
        (server(&app, &id).await["status"] == "ACTIVE").then_some(())
    })
    .await;
    let node = server(&app, &id).await["OS-EXT-SRV-ATTR:hypervisor_hostname"].clone();
    let second = second_host(&app).await;

    let listed = service(&app, "cmp-1").await;
    let (status, answer) = put_service(
        &app,
        listed["id"].as_str().unwrap(),
        json!({"forced_down": true}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["service"]["forced_down"], true);
    assert_eq!(answer["service"]["state"], "down");
    app.actors
        .rebalancer
        .send(RebalanceNow)
        .await
        .unwrap()
        .unwrap();
    second.send(UpdateAvailableResource).await.unwrap().unwrap();

    let (_, _, listed) = app
        .compute(Method::GET, "/os-hypervisors/detail")
        .version("2.88")
        .send()
        .await;
    let owners: Vec<&str> = listed["hypervisors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["service"]["host"].as_str().unwrap())
        .collect();
    assert_eq!(owners, ["cmp-2"; 4], "every node moved: {listed}");
    let after = server(&app, &id).await;
    assert_eq!(after["status"], "ACTIVE", "{after}");
    assert_eq!(
        after["OS-EXT-SRV-ATTR:hypervisor_hostname"], node,
        "on its node"
    );
    assert_eq!(after["OS-EXT-SRV-ATTR:host"], "cmp-2");
    assert_eq!(
        rows(&app, "SELECT count(*) FROM allocations"),
        1,
        "its claim kept"
    );
    assert!(nodes.contains(&node.as_str().unwrap().to_owned()));
}

async fn delete_service(app: &TestApp, version: &str, id: &str) -> (u16, Value) {
    let (status, _, answer) = app
        .compute(Method::DELETE, &format!("/os-services/{id}"))
        .version(version)
        .send()
        .await;
    (status, answer)
}

#[actix_web::test]
async fn a_deleted_service_s_nodes_keep_their_identity_on_a_live_host() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let (_, created) = create_server(&app, "admin", json!({"server": {"name": "resident", "imageRef": IMAGE, "flavorRef": flavor, "networks": "none"}})).await;
    let server_id = created["server"]["id"].as_str().unwrap().to_owned();
    eventually_async(Duration::from_secs(30), "the server ACTIVE", || async {
        (server(&app, &server_id).await["status"] == "ACTIVE").then_some(())
    })
    .await;
    let listed = service(&app, "cmp-1").await;
    let id = listed["id"].as_str().unwrap().to_owned();
    let (status, answer) = delete_service(&app, "2.53", &id).await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(
        answer["conflictingRequest"]["message"],
        "Unable to delete compute service that is hosting instances. Migrate or delete the \
         instances first."
    );
    let (status, _, _) = app
        .compute(Method::DELETE, &format!("/servers/{server_id}"))
        .send()
        .await;
    assert_eq!(status, 204);

    bad_service_deletes_are_refused(&app, &id).await;

    second_host(&app).await;
    let (status, _) = put_service(&app, &id, json!({"status": "disabled"})).await;
    assert_eq!(status, 200);
    assert_eq!(status_traits(&app), 4);
    let before = identities(&app);

    let (status, answer) = delete_service(&app, "2.53", &id).await;
    assert_eq!(status, 204, "{answer}");
    app.actors
        .rebalancer
        .send(RebalanceNow)
        .await
        .unwrap()
        .unwrap();
    let (_, _, services) = app
        .compute(Method::GET, "/os-services")
        .version("2.53")
        .send()
        .await;
    let hosts: Vec<&str> = services["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["cmp-2"], "{services}");
    assert_eq!(
        rows(
            &app,
            "SELECT count(*) FROM compute_nodes WHERE deleted = 0 AND host = 'cmp-2'"
        ),
        4,
        "every node moved to the live host"
    );
    assert_eq!(
        identities(&app),
        before,
        "compute node uuids and providers kept"
    );
    assert_eq!(
        status_traits(&app),
        0,
        "on an enabled host, no status trait"
    );
    let (status, _) = delete_service(&app, "2.53", &id).await;
    assert_eq!(status, 404, "deleted once");
}

/// A malformed or unknown id (400, 404) and a non-admin (403) delete nothing.
async fn bad_service_deletes_are_refused(app: &TestApp, id: &str) {
    for (version, bad, expected) in [
        ("2.53", "not-a-uuid", 400),
        ("2.1", "x", 400),
        ("2.53", "4c1f9a52-0000-4000-8000-000000000000", 404),
        ("2.1", "999999", 404),
    ] {
        let (status, answer) = delete_service(app, version, bad).await;
        assert_eq!(status, expected, "{version} {bad}: {answer}");
    }
    let (status, _, _) = app
        .compute(Method::DELETE, &format!("/os-services/{id}"))
        .version("2.53")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 403, "deleting a service is for admins");
}

#[actix_web::test]
async fn hypervisors_limits_and_quotas_answer_in_nova_s_shapes() {
    let app = TestApp::spawn().await;
    let nodes = one_host_four_nodes(&app).await;
    let (_, _, listed) = app
        .compute(Method::GET, "/os-hypervisors")
        .version("2.88")
        .send()
        .await;
    let first = &listed["hypervisors"][0];
    assert!(nodes.contains(&first["hypervisor_hostname"].as_str().unwrap().to_owned()));
    assert_eq!(first["state"], "up");
    let id = first["id"].as_str().unwrap();
    let (status, _, shown) = app
        .compute(Method::GET, &format!("/os-hypervisors/{id}"))
        .version("2.88")
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(shown["hypervisor"]["id"], id);
    let (_, _, old) = app
        .compute(Method::GET, "/os-hypervisors/detail")
        .version("2.53")
        .send()
        .await;
    assert!(
        old["hypervisors"][0]["vcpus"].is_number(),
        "before 2.88 the capacities are shown"
    );
    let (_, _, page) = app
        .compute(Method::GET, "/os-hypervisors?limit=2")
        .version("2.53")
        .send()
        .await;
    assert_eq!(page["hypervisors"].as_array().unwrap().len(), 2);
    assert!(
        page["hypervisors_links"][0]["href"]
            .as_str()
            .unwrap()
            .contains("marker=")
    );
    let (status, _, _) = app
        .compute(Method::GET, "/os-hypervisors/nope")
        .version("2.88")
        .send()
        .await;
    assert_eq!(status, 404);

    let (status, _, limits) = app
        .compute(Method::GET, "/limits")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(limits["limits"]["absolute"]["maxTotalInstances"], -1);
    assert_eq!(limits["limits"]["absolute"]["totalInstancesUsed"], 0);
    let (status, _, quotas) = app
        .compute(Method::GET, "/os-quota-sets/p1")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(quotas["quota_set"]["instances"], -1);
    let (status, _, _) = app
        .compute(Method::GET, "/os-quota-sets/p2")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 403);
}

/// Each live compute node with its provider (by uuid and row id), summed into one figure, and
/// the number of providers.
fn identities(app: &TestApp) -> (i64, i64) {
    let identity = "SELECT COALESCE(sum(hashtext(c.uuid::text || ':' || rp.id::text)), 0)::bigint \
                    AS count FROM compute_nodes c JOIN resource_providers rp ON rp.uuid = c.uuid \
                    WHERE c.deleted = 0";
    (
        rows(app, identity),
        rows(app, "SELECT count(*) FROM resource_providers"),
    )
}
