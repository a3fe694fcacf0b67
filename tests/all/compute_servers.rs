//! Servers through the Compute API (issue 26): a boot through the flavor's class and traits
//! lands on a node and goes ACTIVE; a project sees its own; several at once are named as Nova
//! names them; fewer free nodes than `min_count` books nothing and leaves the servers in error
//! with Nova's "No valid host"; bad input is refused with nothing claimed.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    IMAGE, TestApp, create_bare_metal_flavor, create_server, one_host_four_nodes, rows,
    wait_for_status,
};

fn server_body(name: &str, flavor: &str) -> Value {
    json!({"server": {"name": name, "imageRef": IMAGE, "flavorRef": flavor, "networks": "none"}})
}

#[actix_web::test]
async fn a_server_boots_on_a_node_of_its_flavor_and_is_its_project_s() {
    let app = TestApp::spawn().await;
    let nodes = one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm.small", "CUSTOM_BAREMETAL").await;
    let (status, answer) = create_server(&app, "alice:p1", server_body("web", &flavor)).await;
    assert_eq!(status, 202, "{answer}");
    let id = answer["server"]["id"].as_str().unwrap().to_owned();
    assert!(
        answer["server"]["links"][0]["href"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/compute/v2.1/servers/{id}"))
    );

    let server = wait_for_status(&app, "alice:p1", &id, "ACTIVE").await;
    assert_eq!(server["tenant_id"], "p1");
    assert_eq!(server["user_id"], "alice");
    assert_eq!(server["flavor"]["original_name"], "bm.small");
    assert_eq!(
        server["flavor"]["extra_specs"]["resources:CUSTOM_BAREMETAL"],
        "1"
    );
    assert_eq!(server["image"]["id"], IMAGE);
    assert_eq!(server["OS-EXT-STS:vm_state"], "active");
    its_address_is_found_by_ip(&app, &server).await;
    assert!(
        server.get("OS-EXT-SRV-ATTR:host").is_none(),
        "a member sees no host"
    );
    assert_eq!(server["OS-EXT-SRV-ATTR:hostname"], "web");
    assert!(server["hostId"].as_str().unwrap().len() == 56);

    let (_, _, seen_by_admin) = app
        .compute(Method::GET, &format!("/servers/{id}"))
        .version("2.100")
        .send()
        .await;
    let node = seen_by_admin["server"]["OS-EXT-SRV-ATTR:hypervisor_hostname"]
        .as_str()
        .unwrap();
    assert!(
        nodes.contains(&node.to_owned()),
        "{node} is an enrolled node"
    );
    assert_eq!(seen_by_admin["server"]["OS-EXT-SRV-ATTR:host"], "cmp-1");
    // The admin API (and so the dashboard) shows its flavor, image and project.
    let shown: Value = app
        .get(&format!("/api/v1/instances/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["flavor"], "bm.small", "{shown}");
    assert_eq!(shown["image"], IMAGE);
    assert_eq!(shown["project"], "p1");
    let listed: Value = app.get("/api/v1/instances").await.json().await.unwrap();
    assert_eq!(listed[0]["project"], "p1", "{listed}");

    only_its_project_and_admins_see_it(&app, &id).await;

    only_its_project_deletes_it_and_its_claim_goes(&app, &id).await;
}

/// Another project's delete finds nothing (404); its own deletes it, and its claim goes.
async fn only_its_project_deletes_it_and_its_claim_goes(app: &TestApp, id: &str) {
    let (status, _, _) = app
        .compute(Method::DELETE, &format!("/servers/{id}"))
        .token(Some("bob:p2"))
        .send()
        .await;
    assert_eq!(status, 404);
    let (status, _, body) = app
        .compute(Method::DELETE, &format!("/servers/{id}"))
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 204, "{body}");
    let (status, _, _) = app
        .compute(Method::GET, &format!("/servers/{id}"))
        .send()
        .await;
    assert_eq!(status, 404, "a deleted server is gone");
    assert_eq!(
        rows(app, "SELECT count(*) FROM allocations"),
        0,
        "its claim is freed"
    );
}

/// A simulated node's made-up address (clients such as openstacksdk need one), which the `ip`
/// filter finds.
async fn its_address_is_found_by_ip(app: &TestApp, server: &Value) {
    let address = &server["addresses"]["baremetal"][0];
    assert!(
        address["addr"]
            .as_str()
            .unwrap_or_default()
            .starts_with("10."),
        "{server}"
    );
    assert_eq!(address["OS-EXT-IPS:type"], "fixed");
    let addr = address["addr"].as_str().unwrap().to_owned();
    for (query, expected) in [
        (format!("ip={}", addr.replace('.', "%5C.")), 1),
        ("ip=%5E192%5C.".to_owned(), 0),
        ("ip6=.".to_owned(), 0),
    ] {
        let (status, _, body) = app
            .compute(Method::GET, &format!("/servers?{query}"))
            .token(Some("alice:p1"))
            .send()
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["servers"].as_array().unwrap().len(),
            expected,
            "{query}"
        );
    }
    let (status, _, _) = app
        .compute(Method::GET, "/servers?ip=(")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 400, "an invalid regular expression");
}

/// Another project neither sees it nor lists it; a member may not list every project's; an
/// admin lists and filters them all.
async fn only_its_project_and_admins_see_it(app: &TestApp, id: &str) {
    let (status, _, _) = app
        .compute(Method::GET, &format!("/servers/{id}"))
        .token(Some("bob:p2"))
        .send()
        .await;
    assert_eq!(status, 404, "another project does not see it");
    let (_, _, theirs) = app
        .compute(Method::GET, "/servers")
        .token(Some("bob:p2"))
        .send()
        .await;
    assert_eq!(theirs["servers"], json!([]));
    let (_, _, mine) = app
        .compute(Method::GET, "/servers")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(mine["servers"][0]["id"], id);
    let (status, _, _) = app
        .compute(Method::GET, "/servers?all_tenants=1")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 403);
    let (_, _, all) = app
        .compute(Method::GET, "/servers/detail?all_tenants=1")
        .send()
        .await;
    assert_eq!(all["servers"][0]["id"], id);
    let (_, _, by_name) = app
        .compute(Method::GET, "/servers?all_tenants=1&name=^we")
        .send()
        .await;
    assert_eq!(by_name["servers"].as_array().unwrap().len(), 1);
    let (_, _, by_status) = app
        .compute(Method::GET, "/servers?all_tenants=1&status=SHUTOFF")
        .send()
        .await;
    assert_eq!(by_status["servers"], json!([]));
}

#[actix_web::test]
async fn several_servers_are_numbered_and_too_few_nodes_book_nothing() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let mut body = server_body("many", &flavor);
    body["server"]["min_count"] = json!(5);
    let (status, answer) = create_server(&app, "admin", body).await;
    assert_eq!(status, 202, "{answer}");
    let (_, _, listed) = app
        .compute(Method::GET, "/servers/detail")
        .version("2.1")
        .send()
        .await;
    let servers = listed["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 5, "{listed}");
    for server in servers {
        assert_eq!(server["status"], "ERROR");
        assert!(
            server["fault"]["message"]
                .as_str()
                .unwrap()
                .starts_with("No valid host was found")
        );
    }
    assert_eq!(
        rows(&app, "SELECT count(*) FROM allocations"),
        0,
        "nothing booked"
    );

    for server in servers {
        let (status, _, _) = app
            .compute(
                Method::DELETE,
                &format!("/servers/{}", server["id"].as_str().unwrap()),
            )
            .send()
            .await;
        assert_eq!(status, 204);
    }
    let mut body = server_body("web", &flavor);
    body["server"]["max_count"] = json!(3);
    let (status, _) = create_server(&app, "admin", body).await;
    assert_eq!(status, 202);
    let (_, _, listed) = app.compute(Method::GET, "/servers").send().await;
    let mut names: Vec<String> = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["web-1", "web-2", "web-3"]);
    for server in listed["servers"].as_array().unwrap() {
        wait_for_status(&app, "admin", server["id"].as_str().unwrap(), "ACTIVE").await;
    }
    assert_eq!(rows(&app, "SELECT count(*) FROM allocations"), 3);
    let (_, _, page) = app.compute(Method::GET, "/servers?limit=2").send().await;
    assert_eq!(page["servers"].as_array().unwrap().len(), 2);
    assert!(
        page["servers_links"][0]["href"]
            .as_str()
            .unwrap()
            .contains("marker=")
    );
}

#[actix_web::test]
async fn a_required_trait_picks_the_node_and_none_free_is_no_valid_host() {
    let app = TestApp::spawn().await;
    let nodes = one_host_four_nodes(&app).await;
    let raid = &nodes[2];
    let (status, _, _) = app
        .placement(Method::PUT, "/placement/traits/CUSTOM_RAID")
        .version("1.6")
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 201);
    let (_, _, provider) = app
        .placement(
            Method::GET,
            &format!("/placement/resource_providers/{raid}"),
        )
        .version("1.6")
        .token("admin")
        .send()
        .await;
    let (status, _, body) = app
        .placement(Method::PUT, &format!("/placement/resource_providers/{raid}/traits"))
        .version("1.6")
        .token("admin")
        .json(json!({"traits": ["CUSTOM_RAID"], "resource_provider_generation": provider["generation"]}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    let flavor = create_bare_metal_flavor(&app, "bm.raid", "CUSTOM_BAREMETAL").await;
    let (status, _, _) = app
        .compute(Method::POST, &format!("/flavors/{flavor}/os-extra_specs"))
        .version("2.86")
        .json(json!({"extra_specs": {"trait:CUSTOM_RAID": "required"}}))
        .send()
        .await;
    assert_eq!(status, 200);

    let (_, first) = create_server(&app, "admin", server_body("raid-1", &flavor)).await;
    let first = first["server"]["id"].as_str().unwrap().to_owned();
    let server = wait_for_status(&app, "admin", &first, "ACTIVE").await;
    assert_eq!(server["OS-EXT-SRV-ATTR:hypervisor_hostname"], raid.as_str());
    let (_, second) = create_server(&app, "admin", server_body("raid-2", &flavor)).await;
    let second = second["server"]["id"].as_str().unwrap().to_owned();
    let server = wait_for_status(&app, "admin", &second, "ERROR").await;
    assert!(
        server["fault"]["message"]
            .as_str()
            .unwrap()
            .contains("No valid host"),
        "{server}"
    );
    assert_eq!(rows(&app, "SELECT count(*) FROM allocations"), 1);
}

#[actix_web::test]
async fn malformed_creates_are_refused_and_claim_nothing() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let (status, _, _) = app
        .compute(Method::POST, "/flavors")
        .json(json!({"flavor": {"name": "vm", "ram": 1, "vcpus": 1, "disk": 1, "id": "vm"}}))
        .send()
        .await;
    assert_eq!(status, 200);
    let good = server_body("ok", &flavor)["server"].clone();
    let bad = malformed_servers(&good);
    let mut none_before_2_37 = good.clone();
    none_before_2_37["networks"] = json!("none");
    for body in &bad {
        let (status, answer) = create_server(&app, "admin", body.clone()).await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert!(answer["badRequest"]["message"].is_string(), "{answer}");
    }
    let (status, _, _) = app
        .compute(Method::POST, "/servers")
        .version("2.36")
        .json(json!({ "server": none_before_2_37 }))
        .send()
        .await;
    assert_eq!(status, 400, "\"none\" needs 2.37");
    for raw in ["{", "[1,", "\u{0}"] {
        let response = app
            .client
            .post(app.url("/compute/v2.1/servers"))
            .header("x-auth-token", "admin")
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{raw:?}");
    }
    assert!(bad.len() + 4 >= 40, "{} malformed bodies", bad.len() + 4);
    assert_eq!(
        rows(&app, "SELECT count(*) FROM instances"),
        0,
        "no server written"
    );
    assert_eq!(
        rows(&app, "SELECT count(*) FROM allocations"),
        0,
        "nothing claimed"
    );
    bad_server_queries_are_refused(&app).await;
}

/// 36 server bodies Nova refuses, each a good one with one thing wrong.
fn malformed_servers(good: &Value) -> Vec<Value> {
    let with = |key: &str, value: Value| {
        let mut server = good.clone();
        server[key] = value;
        json!({ "server": server })
    };
    let without = |key: &str| {
        let mut server = good.clone();
        server.as_object_mut().unwrap().remove(key);
        json!({ "server": server })
    };
    let mut bad = vec![
        without("name"),
        without("flavorRef"),
        without("imageRef"),
        with("name", json!("")),
        with("name", json!(" x")),
        with("name", json!(7)),
        with("name", json!("x".repeat(256))),
        with("flavorRef", json!("no-such-flavor")),
        with("flavorRef", json!("vm")),
        with("flavorRef", json!({})),
        with("flavorRef", json!("")),
        with("imageRef", json!("not-a-uuid")),
        with("imageRef", json!(3)),
        with("imageRef", json!("")),
        with("min_count", json!(0)),
        with("min_count", json!(-1)),
        with("min_count", json!("x")),
        with("max_count", json!(1001)),
        with("max_count", json!(1.5)),
        with("networks", json!([{"uuid": IMAGE}])),
        with("networks", json!([{"port": IMAGE}])),
        with("networks", json!("everything")),
        with("networks", json!(5)),
        with("key_name", json!("no-such-key")),
        with("user_data", json!("not base64!")),
        with("user_data", json!(5)),
        with("config_drive", json!("perhaps")),
        with("config_drive", json!([])),
        with("unexpected", json!(1)),
        json!({"server": good.clone(), "extra": 1}),
        json!({"server": "x"}),
        json!({"servers": good.clone()}),
        json!([]),
        json!(null),
        json!("server"),
    ];
    let mut multi = good.clone();
    multi["min_count"] = json!(3);
    multi["max_count"] = json!(2);
    bad.push(json!({ "server": multi }));
    bad
}

async fn bad_server_queries_are_refused(app: &TestApp) {
    for query in [
        "?limit=x",
        "?marker=nope",
        "?changes-since=yesterday",
        "?name=(",
        "?marker=6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1",
    ] {
        let (status, _, body) = app
            .compute(Method::GET, &format!("/servers{query}"))
            .send()
            .await;
        assert_eq!(status, 400, "{query} → {body}");
    }
    let (status, _, _) = app.compute(Method::GET, "/servers/not-a-uuid").send().await;
    assert_eq!(status, 404);
}

/// Issue 26, point 3: `os-stop`, `os-start` and `reboot` drive the node's power in Ironic and
/// the server's status follows; an action its state does not allow is 409.
#[actix_web::test]
async fn stop_start_and_reboot_follow_the_node_s_power() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let (_, created) = create_server(&app, "alice:p1", server_body("power", &flavor)).await;
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    let server = wait_for_status(&app, "alice:p1", &id, "ACTIVE").await;
    assert_eq!(server["OS-EXT-STS:power_state"], 1);
    let node = {
        let (_, _, seen) = app
            .compute(Method::GET, &format!("/servers/{id}"))
            .send()
            .await;
        seen["server"]["OS-EXT-SRV-ATTR:hypervisor_hostname"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let power = |app: &TestApp| {
        let sql = format!(
            "SELECT count(*) FROM ironic_nodes WHERE uuid = '{node}' AND power_state = 'power on'"
        );
        rows(app, &sql)
    };
    let act = |body: Value| {
        app.compute(Method::POST, &format!("/servers/{id}/action"))
            .token(Some("alice:p1"))
            .json(body)
    };
    let (status, _, body) = act(json!({"os-start": null})).send().await;
    assert_eq!(status, 409, "an active server does not start: {body}");
    assert!(
        body["conflictingRequest"]["message"]
            .as_str()
            .unwrap()
            .contains("vm_state active")
    );

    let (status, _, _) = act(json!({"os-stop": null})).send().await;
    assert_eq!(status, 202);
    let stopped = wait_for_status(&app, "alice:p1", &id, "SHUTOFF").await;
    assert_eq!(stopped["OS-EXT-STS:power_state"], 4);
    assert_eq!(stopped["OS-EXT-STS:task_state"], Value::Null);
    assert_eq!(power(&app), 0, "Ironic powered the node off");
    assert_eq!(
        rows(&app, "SELECT count(*) FROM allocations"),
        1,
        "a stopped server keeps its claim"
    );
    let (status, _, _) = act(json!({"reboot": {"type": "SOFT"}})).send().await;
    assert_eq!(status, 409, "a soft reboot needs an active server");

    let (status, _, _) = act(json!({"os-start": null})).send().await;
    assert_eq!(status, 202);
    wait_for_status(&app, "alice:p1", &id, "ACTIVE").await;
    assert_eq!(power(&app), 1);
    for kind in ["SOFT", "hard"] {
        let (status, _, body) = act(json!({"reboot": {"type": kind}})).send().await;
        assert_eq!(status, 202, "{kind}: {body}");
        wait_for_status(&app, "alice:p1", &id, "ACTIVE").await;
    }
    for bad in [
        json!({"reboot": {"type": "GENTLE"}}),
        json!({"reboot": {}}),
        json!({"pause": null}),
        json!({}),
        json!({"os-stop": null, "os-start": null}),
    ] {
        let (status, _, body) = act(bad.clone()).send().await;
        assert_eq!(status, 400, "{bad} → {body}");
    }
    let (status, _, _) = app
        .compute(Method::POST, &format!("/servers/{id}/action"))
        .token(Some("bob:p2"))
        .json(json!({"os-stop": null}))
        .send()
        .await;
    assert_eq!(status, 404, "another project's server is not found");
}
