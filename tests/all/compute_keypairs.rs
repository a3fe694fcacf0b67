//! Key pairs (issue 26): imported per user, listed, shown and deleted as Nova does; a server
//! booted with one names it and keeps its public key for the config drive; bad names and keys
//! are refused with nothing written.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::helpers::{
    KEY, TestApp, create_bare_metal_flavor, eventually_async, one_host_four_nodes, rows,
};

#[actix_web::test]
async fn a_key_pair_is_imported_per_user_and_boots_with_a_server() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let import = |token: &'static str, name: &str| {
        app.compute(Method::POST, "/os-keypairs")
            .version("2.92")
            .token(Some(token))
            .json(json!({"keypair": {"name": name, "public_key": KEY}}))
    };
    let (status, _, created) = import("alice:p1", "alice@laptop").send().await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["keypair"]["type"], "ssh");
    assert_eq!(created["keypair"]["user_id"], "alice");
    assert_eq!(
        created["keypair"]["fingerprint"].as_str().unwrap().len(),
        47
    );
    let (status, _, _) = import("alice:p1", "alice@laptop").send().await;
    assert_eq!(status, 409, "one name per user");
    let (status, _, _) = import("bob:p1", "alice@laptop").send().await;
    assert_eq!(status, 201, "another user may use the name");

    let (_, _, listed) = app
        .compute(Method::GET, "/os-keypairs")
        .version("2.92")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(listed["keypairs"].as_array().unwrap().len(), 1);
    assert_eq!(listed["keypairs"][0]["keypair"]["name"], "alice@laptop");
    let (status, _, shown) = app
        .compute(Method::GET, "/os-keypairs/alice@laptop")
        .version("2.92")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(shown["keypair"]["public_key"], KEY);
    assert_eq!(shown["keypair"]["deleted"], false);

    a_server_boots_with_the_key(&app, &flavor).await;

    let (status, _, _) = app
        .compute(Method::DELETE, "/os-keypairs/alice@laptop")
        .version("2.92")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 204);
    let (status, _, body) = app
        .compute(Method::GET, "/os-keypairs/alice@laptop")
        .version("2.92")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        body["itemNotFound"]["message"],
        "Keypair alice@laptop not found for user alice"
    );
}

/// A server booted with alice's key shows its name and a config drive, and carries the key.
async fn a_server_boots_with_the_key(app: &TestApp, flavor: &str) {
    let (status, _, answer) = app
        .compute(Method::POST, "/servers")
        .version("2.92")
        .token(Some("alice:p1"))
        .json(
            json!({"server": {"name": "keyed", "imageRef": "6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1",
                                "flavorRef": flavor, "networks": "none", "key_name": "alice@laptop",
                                "config_drive": true}}),
        )
        .send()
        .await;
    assert_eq!(status, 202, "{answer}");
    let id = answer["server"]["id"].as_str().unwrap().to_owned();
    let server = eventually_async(Duration::from_secs(30), "ACTIVE", || async {
        let (_, _, body) = app
            .compute(Method::GET, &format!("/servers/{id}"))
            .version("2.92")
            .token(Some("alice:p1"))
            .send()
            .await;
        (body["server"]["status"] == "ACTIVE").then_some(body["server"].clone())
    })
    .await;
    assert_eq!(server["key_name"], "alice@laptop");
    assert_eq!(server["config_drive"], "True");
    assert_eq!(
        rows(
            app,
            &format!("SELECT count(*) FROM instances WHERE key_data = '{KEY}'")
        ),
        1
    );
}

#[actix_web::test]
async fn bad_key_pairs_are_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let bodies = [
        ("2.92", json!({"keypair": {"name": "k"}})),
        ("2.91", json!({"keypair": {"name": "k"}})),
        (
            "2.92",
            json!({"keypair": {"name": "k", "public_key": "not a key"}}),
        ),
        (
            "2.92",
            json!({"keypair": {"name": "k", "public_key": "ssh-rsa !!!"}}),
        ),
        (
            "2.92",
            json!({"keypair": {"name": "k", "public_key": KEY, "type": "x509"}}),
        ),
        ("2.92", json!({"keypair": {"name": "", "public_key": KEY}})),
        (
            "2.92",
            json!({"keypair": {"name": "a/b", "public_key": KEY}}),
        ),
        (
            "2.91",
            json!({"keypair": {"name": "me@host", "public_key": KEY}}),
        ),
        (
            "2.92",
            json!({"keypair": {"name": "k", "public_key": KEY, "colour": 1}}),
        ),
        ("2.92", json!({"keypairs": {}})),
        ("2.92", json!([])),
    ];
    for (version, body) in bodies {
        let (status, _, answer) = app
            .compute(Method::POST, "/os-keypairs")
            .version(version)
            .json(body.clone())
            .send()
            .await;
        assert_eq!(status, 400, "{version} {body} → {answer}");
    }
    let (status, _, _) = app
        .compute(Method::GET, "/os-keypairs?user_id=bob")
        .version("2.10")
        .token(Some("alice:p1"))
        .send()
        .await;
    assert_eq!(status, 403, "another user's key pairs are for admins");
    assert_eq!(rows(&app, "SELECT count(*) FROM key_pairs"), 0);
}
