//! The Compute API's front matter and flavors (issue 26): version documents, microversion
//! negotiation and Nova's error envelope, flavors with their extra specs and access lists as
//! Nova answers them at each microversion, and bad input refused with nothing written.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, create_bare_metal_flavor, rows};

#[actix_web::test]
async fn the_version_documents_answer_anyone_and_name_the_range() {
    let app = TestApp::spawn().await;
    let listed: Value = app.get("/compute").await.json().await.unwrap();
    assert_eq!(listed["versions"][0]["id"], "v2.1");
    assert_eq!(listed["versions"][0]["version"], "2.100");
    assert_eq!(listed["versions"][0]["min_version"], "2.1");
    let response = app.get("/compute/v2.1").await;
    assert_eq!(response.status(), 200);
    let shown: Value = response.json().await.unwrap();
    assert_eq!(shown["version"]["status"], "CURRENT");
    let self_link = shown["version"]["links"][0]["href"].as_str().unwrap();
    assert!(self_link.ends_with("/compute/v2.1/"), "{self_link}");
}

#[actix_web::test]
async fn microversions_are_negotiated_as_nova_does() {
    let app = TestApp::spawn().await;
    let (status, headers, _) = app.compute(Method::GET, "/flavors").send().await;
    assert_eq!(status, 200);
    assert_eq!(headers["openstack-api-version"], "compute 2.1");
    assert_eq!(headers["x-openstack-nova-api-version"], "2.1");
    assert!(
        headers["x-openstack-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req-")
    );
    assert!(headers.contains_key("x-compute-request-id"));
    let (_, headers, _) = app
        .compute(Method::GET, "/flavors")
        .version("latest")
        .send()
        .await;
    assert_eq!(headers["openstack-api-version"], "compute 2.100");
    let legacy = app
        .client
        .get(app.url("/compute/v2.1/flavors"))
        .header("x-auth-token", "admin")
        .header("x-openstack-nova-api-version", "2.53")
        .send()
        .await
        .unwrap();
    assert_eq!(legacy.headers()["openstack-api-version"], "compute 2.53");

    let (status, _, body) = app
        .compute(Method::GET, "/flavors")
        .version("2.101")
        .send()
        .await;
    assert_eq!(status, 406);
    assert_eq!(
        body["computeFault"]["message"],
        "Version 2.101 is not supported by the API. Minimum is 2.1 and maximum is 2.100."
    );
    let (status, _, body) = app
        .compute(Method::GET, "/flavors")
        .version("2.x")
        .send()
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["badRequest"]["code"], 400);
    let (status, _, body) = app
        .compute(Method::GET, "/flavors")
        .token(None)
        .send()
        .await;
    assert_eq!(status, 401, "{body}");
    assert!(body["unauthorized"]["message"].is_string());
    let (status, _, body) = app.compute(Method::GET, "/no-such-thing").send().await;
    assert_eq!(status, 404);
    assert!(body["itemNotFound"].is_object(), "{body}");
    let (status, headers, body) = app.compute(Method::PATCH, "/flavors").send().await;
    assert_eq!(status, 405);
    assert!(body["badMethod"].is_object(), "{body}");
    assert!(headers.contains_key("allow"));
}

#[actix_web::test]
async fn a_flavor_is_shown_in_the_shape_of_each_microversion() {
    let app = TestApp::spawn().await;
    let id = create_bare_metal_flavor(&app, "bm.small", "CUSTOM_BAREMETAL").await;
    assert_eq!(id.len(), 36, "the server picked a uuid: {id}");

    let (_, _, old) = app
        .compute(Method::GET, &format!("/flavors/{id}"))
        .send()
        .await;
    let flavor = &old["flavor"];
    assert_eq!(flavor["swap"], "", "before 2.75 no swap is an empty string");
    assert!(flavor.get("description").is_none());
    assert!(flavor.get("extra_specs").is_none());
    for key in [
        "ram",
        "vcpus",
        "disk",
        "OS-FLV-EXT-DATA:ephemeral",
        "OS-FLV-DISABLED:disabled",
        "os-flavor-access:is_public",
        "rxtx_factor",
        "links",
    ] {
        assert!(flavor.get(key).is_some(), "{key} in {flavor}");
    }
    let (_, _, new) = app
        .compute(Method::GET, &format!("/flavors/{id}"))
        .version("2.75")
        .send()
        .await;
    let flavor = &new["flavor"];
    assert_eq!(flavor["swap"], 0);
    assert_eq!(flavor["description"], Value::Null);
    assert_eq!(flavor["extra_specs"]["resources:CUSTOM_BAREMETAL"], "1");
    let bookmark = flavor["links"][1]["href"].as_str().unwrap();
    assert!(
        bookmark.ends_with(&format!("/compute/flavors/{id}")),
        "{bookmark}"
    );

    let (_, _, listed) = app
        .compute(Method::GET, "/flavors")
        .version("2.55")
        .send()
        .await;
    assert_eq!(listed["flavors"][0]["id"], id.as_str());
    assert!(
        listed["flavors"][0].get("ram").is_none(),
        "the list is brief"
    );
    let (_, _, detailed) = app.compute(Method::GET, "/flavors/detail").send().await;
    assert_eq!(detailed["flavors"][0]["ram"], 1024);

    let (status, _, body) = app
        .compute(Method::PUT, &format!("/flavors/{id}"))
        .version("2.55")
        .json(json!({"flavor": {"description": "one bare-metal node"}}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["flavor"]["description"], "one bare-metal node");

    let gone = format!("Flavor {id} could not be found.");
    delete_then_not_found(&app, &format!("/flavors/{id}"), 202, &gone).await;
    assert_eq!(rows(&app, "SELECT count(*) FROM flavor_extra_specs"), 0);
}

#[actix_web::test]
async fn a_private_flavor_is_seen_only_by_the_projects_it_is_shared_with() {
    let app = TestApp::spawn().await;
    let (status, _, body) = app
        .compute(Method::POST, "/flavors")
        .json(
            json!({"flavor": {"name": "bm.private", "ram": 1, "vcpus": 1, "disk": 0,
                                "id": "private-1", "os-flavor-access:is_public": false}}),
        )
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, _, listed) = app.compute(Method::GET, "/flavors").send().await;
    assert_eq!(
        listed["flavors"],
        json!([]),
        "an admin sees public ones by default"
    );
    let (_, _, listed) = app
        .compute(Method::GET, "/flavors?is_public=None")
        .send()
        .await;
    assert_eq!(listed["flavors"][0]["id"], "private-1");
    let (status, _, _) = app
        .compute(Method::GET, "/flavors/private-1")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 404);
    let (status, _, body) = app
        .compute(Method::POST, "/flavors/private-1/action")
        .json(json!({"addTenantAccess": {"tenant": "p1"}}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["flavor_access"]
            .as_array()
            .unwrap()
            .contains(&json!({"flavor_id": "private-1", "tenant_id": "p1"}))
    );
    let (status, _, _) = app
        .compute(Method::GET, "/flavors/private-1")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 200);
    let (_, _, listed) = app
        .compute(Method::GET, "/flavors")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(listed["flavors"][0]["id"], "private-1");
    let (status, _, body) = app
        .compute(Method::POST, "/flavors/private-1/action")
        .json(json!({"addTenantAccess": {"tenant": "p1"}}))
        .send()
        .await;
    assert_eq!(status, 409, "{body}");
    let (status, _, _) = app
        .compute(Method::POST, "/flavors/private-1/action")
        .json(json!({"removeTenantAccess": {"tenant": "p1"}}))
        .send()
        .await;
    assert_eq!(status, 200);
    let (status, _, _) = app
        .compute(Method::GET, "/flavors/private-1")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 404);
}

#[actix_web::test]
async fn extra_specs_are_validated_from_2_86_and_kept_as_strings() {
    let app = TestApp::spawn().await;
    let id = create_bare_metal_flavor(&app, "bm.specs", "CUSTOM_BAREMETAL").await;
    let path = format!("/flavors/{id}/os-extra_specs");
    let set = |version: &'static str, specs: Value| {
        app.compute(Method::POST, &path)
            .version(version)
            .json(json!({"extra_specs": specs}))
    };
    let (status, _, body) = set("2.86", json!({"hw:cpu_policy": "mine"})).send().await;
    assert_eq!(status, 400);
    assert!(
        body["badRequest"]["message"]
            .as_str()
            .unwrap()
            .contains("is not one of"),
        "{body}"
    );
    let (status, _, _) = set("2.61", json!({"hw:cpu_policy": "mine"})).send().await;
    assert_eq!(status, 200, "before 2.86 Nova does not validate");
    let (status, _, _) = set(
        "2.86",
        json!({"trait:CUSTOM_RAID": "required", "numbers": 3}),
    )
    .send()
    .await;
    assert_eq!(status, 200);
    let (status, _, body) = app
        .compute(Method::GET, &format!("{path}/numbers"))
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"numbers": "3"}));
    let (status, _, body) = app
        .compute(Method::PUT, &format!("{path}/numbers"))
        .json(json!({"other": "4"}))
        .send()
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["badRequest"]["message"],
        "Request body and URI mismatch"
    );
    let gone = format!("Flavor {id} has no extra specs with key numbers.");
    delete_then_not_found(&app, &format!("{path}/numbers"), 200, &gone).await;
    let (status, _, _) = app
        .compute(Method::POST, &path)
        .token(Some("alice:p1"))
        .json(json!({"extra_specs": {"a": "b"}}))
        .send()
        .await;
    assert_eq!(status, 403, "only admins write extra specs");
}

#[actix_web::test]
async fn malformed_flavors_are_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let good = json!({"name": "ok", "ram": 1, "vcpus": 1, "disk": 0});
    let with = |key: &str, value: Value| {
        let mut flavor = good.clone();
        flavor[key] = value;
        json!({ "flavor": flavor })
    };
    let without = |key: &str| {
        let mut flavor = good.clone();
        flavor.as_object_mut().unwrap().remove(key);
        json!({ "flavor": flavor })
    };
    let bad = [
        with("ram", json!(0)),
        with("ram", json!(-1)),
        with("ram", json!("lots")),
        with("ram", json!(2_147_483_648_i64)),
        with("vcpus", json!(0)),
        with("vcpus", json!(1.5)),
        with("disk", json!(-1)),
        with("disk", json!(null)),
        with("swap", json!(-2)),
        with("OS-FLV-EXT-DATA:ephemeral", json!("x")),
        with("name", json!("")),
        with("name", json!(" lead")),
        with("name", json!("x".repeat(256))),
        with("name", json!(["list"])),
        with("id", json!("a/b")),
        with("id", json!(" x")),
        with("id", json!({})),
        with("rxtx_factor", json!(0)),
        with("os-flavor-access:is_public", json!("perhaps")),
        with("description", json!("needs 2.55")),
        with("unexpected", json!(1)),
        without("name"),
        without("ram"),
        without("vcpus"),
        without("disk"),
        json!({"flavor": "not an object"}),
        json!({"flavour": good.clone()}),
        json!([]),
        json!("flavor"),
    ];
    for body in &bad {
        let (status, _, answer) = app
            .compute(Method::POST, "/flavors")
            .json(body.clone())
            .send()
            .await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert!(answer["badRequest"]["message"].is_string(), "{answer}");
    }
    let raw = app
        .client
        .post(app.url("/compute/v2.1/flavors"))
        .header("x-auth-token", "admin")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);
    let (status, _, _) = app
        .compute(Method::POST, "/flavors")
        .token(Some("alice:p1"))
        .json(json!({ "flavor": good.clone() }))
        .send()
        .await;
    assert_eq!(status, 403);
    assert_eq!(
        rows(&app, "SELECT count(*) FROM flavors"),
        0,
        "nothing was written"
    );

    a_duplicate_name_and_bad_queries_are_refused(&app, &good).await;
}

/// A second flavor of one name is 409; bad list queries are 400 (unknown parameters only from
/// 2.75).
async fn a_duplicate_name_and_bad_queries_are_refused(app: &TestApp, good: &Value) {
    let (status, _, _) = app
        .compute(Method::POST, "/flavors")
        .json(json!({"flavor": good.clone()}))
        .send()
        .await;
    assert_eq!(status, 200);
    let (status, _, body) = app
        .compute(Method::POST, "/flavors")
        .json(json!({"flavor": good.clone()}))
        .send()
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        body["conflictingRequest"]["message"],
        "Flavor with name ok already exists."
    );
    for query in [
        "?limit=-1",
        "?minRam=lots",
        "?is_public=perhaps",
        "?sort_key=colour",
        "?sort_dir=up",
        "?marker=nope",
    ] {
        let (status, _, body) = app
            .compute(Method::GET, &format!("/flavors{query}"))
            .send()
            .await;
        assert_eq!(status, 400, "{query} → {body}");
    }
    let (status, _, _) = app
        .compute(Method::GET, "/flavors?colour=blue")
        .version("2.75")
        .send()
        .await;
    assert_eq!(status, 400, "2.75 refuses unknown query parameters");
    let (status, _, _) = app
        .compute(Method::GET, "/flavors?colour=blue")
        .send()
        .await;
    assert_eq!(status, 200, "earlier ones are ignored");
}

/// Deletes `path` (answered `deleted`), then finds it gone: 404 with Nova's `message`.
async fn delete_then_not_found(app: &TestApp, path: &str, deleted: u16, message: &str) {
    let (status, _, _) = app.compute(Method::DELETE, path).send().await;
    assert_eq!(status, deleted, "DELETE {path}");
    let (status, _, body) = app.compute(Method::GET, path).send().await;
    assert_eq!(status, 404, "GET {path}: {body}");
    assert_eq!(body["itemNotFound"]["message"], message);
}
