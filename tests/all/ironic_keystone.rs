//! Issue 27 end to end: Keystone 30.0.0 on https and Ironic 39.0.0 on https behind it
//! (`auth_strategy = keystone`, a test CA's certificates): `serve --auth-strategy keystone`
//! without `--ironic-url` finds Ironic in Keystone's catalog, claims its nodes, boots and deletes
//! an instance; every request it made to Ironic carried a token (Ironic's log names the user
//! of each), and Ironic refuses a request without one. A token Ironic refuses is renewed once.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{
    FAST, RealIronic, RealKeystone, TempDir, TestCa, TestDb, eventually_async, start_serve,
};

#[actix_web::test]
async fn serve_finds_an_https_ironic_behind_keystone_in_the_catalog_and_deploys_on_it() {
    let dir = TempDir::new("ironic-keystone");
    let (keystone, ironic, ca_file, enrolled) = keystone_and_ironic_on_https(&dir);
    let ca_path = ca_file.display().to_string();
    let client =
        ringmaster::tls::client::ClientTls::load(ringmaster::tls::client::ClientTlsSettings {
            cafile: Some(ca_file.clone()),
            ..Default::default()
        })
        .unwrap()
        .http_client(Duration::from_secs(30))
        .unwrap();
    ironic_takes_no_request_without_a_token(&client, &ironic.url).await;

    let password = dir.path.join("keystone-password");
    std::fs::write(&password, "placement-secret\n").unwrap();
    let password = password.display().to_string();
    let db = TestDb::new();
    let flags = format!(
        "--auth-strategy keystone --keystone-url {} --keystone-cafile {ca_path} \
         --keystone-password-file {password} --ironic-cafile {ca_path} \
         --ironic-poll-interval 100ms --hosts cmp-1,cmp-2",
        keystone.url
    );
    let mut flags: Vec<&str> = flags.split_whitespace().collect();
    flags.extend(FAST);
    let (mut serve, address) = start_serve(db.url(), &flags, "info");
    serve.wait_for_stderr(
        "ironic found in Keystone's catalog at https://",
        Duration::from_secs(10),
    );
    let base = format!("http://{address}");
    let admin = keystone.login("admin", "admin-secret", "admin").await;
    let api = crate::helpers::json_client();

    the_three_nodes_are_claimed(&api, &base, &admin).await;

    let (instance, node) =
        an_instance_deploys_on_a_node_of_ironic(&api, &base, &admin, &enrolled).await;
    // A project-scoped admin sees only its project's nodes in Ironic 39: read as the service
    // user, whose service role in project service sees every node.
    let service = keystone
        .login("placement", "placement-secret", "service")
        .await;
    let node_url = format!("{}/v1/nodes/{node}", ironic.url);
    let ironic_node = || {
        let request = client
            .get(&node_url)
            .header("x-auth-token", &service)
            .header("X-OpenStack-Ironic-API-Version", "1.82")
            .send();
        async move { request.await.ok()?.json::<Value>().await.ok() }
    };
    let deployed = ironic_node().await.unwrap();
    assert_eq!(deployed["provision_state"], "active", "{deployed}");
    assert_eq!(deployed["instance_uuid"], instance.as_str());

    let deleted = api
        .delete(format!("{base}/api/v1/instances/{instance}"))
        .header("x-auth-token", &admin)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    eventually_async(Duration::from_secs(60), "the node torn down", || {
        let read = ironic_node();
        async move {
            let node = read.await?;
            (node["provision_state"] == "available" && node["instance_uuid"].is_null())
                .then_some(())
        }
    })
    .await;
    serve.interrupt();
    serve.wait_exit(Duration::from_secs(30));

    every_request_ironic_logged_names_its_user(&ironic, node);
    a_refused_token_is_renewed_once_then_fails_clearly(&keystone).await;
}

async fn ironic_takes_no_request_without_a_token(client: &reqwest::Client, ironic: &str) {
    let anonymous = client
        .get(format!("{ironic}/v1/nodes"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        anonymous.status(),
        401,
        "Ironic takes no request without a token"
    );
}

/// Ironic's 3 nodes claimed, as the admin API shows them to a Keystone admin.
async fn the_three_nodes_are_claimed(api: &reqwest::Client, base: &str, admin: &str) {
    let get = |path: &str| {
        api.get(format!("{base}{path}"))
            .header("x-auth-token", admin)
            .send()
    };
    eventually_async(Duration::from_secs(60), "Ironic's 3 nodes claimed", || {
        let request = get("/api/v1/nodes");
        async move {
            let nodes: Value = request.await.ok()?.json().await.ok()?;
            let nodes = nodes.as_array()?;
            (nodes.len() == 3
                && nodes
                    .iter()
                    .all(|node| node["host"].is_string() && node["source"] == "ironic"))
            .then_some(())
        }
    })
    .await;
}

/// A test CA's certificate on a real Keystone and a real Ironic (which takes Keystone's tokens),
/// both on https, Ironic in Keystone's catalog with 3 nodes enrolled.
fn keystone_and_ironic_on_https(
    dir: &TempDir,
) -> (
    RealKeystone,
    RealIronic,
    std::path::PathBuf,
    Vec<uuid::Uuid>,
) {
    let ca = TestCa::new("ringmaster test CA");
    let ca_file = ca.write_ca(&dir.path, "ca.pem");
    let server = ca.issue(&dir.path, "server", &["127.0.0.1", "localhost"]);
    let keystone = RealKeystone::start_tls(&server.cert, &server.key, &ca_file);
    assert!(keystone.url.starts_with("https://"), "{}", keystone.url);
    let (cert, key, ca_path) = (
        server.cert.display().to_string(),
        server.key.display().to_string(),
        ca_file.display().to_string(),
    );
    let ironic = RealIronic::start_with(&[
        "--keystone",
        &keystone.url,
        "--tls",
        &cert,
        &key,
        "--cafile",
        &ca_path,
    ]);
    assert!(ironic.url.starts_with("https://"), "{}", ironic.url);
    let enrolled = ironic.enroll(3);
    keystone.catalog(&["--baremetal", &ironic.url]);
    (keystone, ironic, ca_file, enrolled)
}

/// An instance booted through the admin API with a Keystone token goes active on one of
/// `enrolled`; returns it and its node.
async fn an_instance_deploys_on_a_node_of_ironic(
    api: &reqwest::Client,
    base: &str,
    admin: &str,
    enrolled: &[uuid::Uuid],
) -> (String, uuid::Uuid) {
    let get = |path: &str| {
        api.get(format!("{base}{path}"))
            .header("x-auth-token", admin)
            .send()
    };
    let created: Value = api
        .post(format!("{base}/api/v1/instances"))
        .header("x-auth-token", admin)
        .json(&json!({"name": "vm-1", "resource_class": "baremetal"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let instance = created["uuid"].as_str().unwrap().to_owned();
    let node: uuid::Uuid = created["node"].as_str().unwrap().parse().unwrap();
    assert!(enrolled.contains(&node), "{created}");
    eventually_async(Duration::from_secs(60), "the instance active", || {
        let request = get(&format!("/api/v1/instances/{instance}"));
        async move {
            let shown: Value = request.await.ok()?.json().await.ok()?;
            (shown["vm_state"] == "active").then_some(())
        }
    })
    .await;
    (instance, node)
}

/// Every API request Ironic logged names its user: none came without a token (but the root
/// version document, which Ironic serves without reading tokens, and this test's own anonymous
/// request); the deploy went to Ironic.
fn every_request_ironic_logged_names_its_user(ironic: &RealIronic, node: uuid::Uuid) {
    let lines = ironic.api_log_lines(" 127.0.0.1 - ");
    assert!(lines.len() >= 5, "{lines:#?}");
    let anonymous: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("[None req-") && line.contains(" - - - - - -]"))
        .filter(|line| !line.contains("GET /v1/nodes -") && !line.contains("GET / -"))
        .collect();
    assert!(
        anonymous.is_empty(),
        "requests without a token: {anonymous:#?}"
    );
    let deploys: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains(&node.to_string()) && line.contains("PUT"))
        .collect();
    assert!(!deploys.is_empty(), "the deploy went to Ironic: {lines:#?}");
}

/// A token Ironic refuses is renewed once (a new login), then the request fails naming it; no
/// node is touched. The stand-in Ironic refuses every token and counts them.
async fn a_refused_token_is_renewed_once_then_fails_clearly(keystone: &RealKeystone) {
    use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
    use ringmaster::ironic_api::{IronicApi, IronicAuth, NodeSelection};
    let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let tokens = seen.clone();
    let server = HttpServer::new(move || {
        let tokens = tokens.clone();
        App::new()
            .route(
                "/",
                web::get().to(|| async {
                    HttpResponse::Ok().json(json!({"default_version": {
                        "id": "v1", "version": "1.82", "min_version": "1.1"}}))
                }),
            )
            .default_service(web::to(move |request: HttpRequest| {
                let tokens = tokens.clone();
                async move {
                    let token = request
                        .headers()
                        .get("x-auth-token")
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    tokens.lock().unwrap().push(token);
                    HttpResponse::Unauthorized()
                        .body("The request you have made requires authentication.")
                }
            }))
    })
    .workers(1)
    .disable_signals()
    .bind("127.0.0.1:0")
    .unwrap();
    let url = format!("http://{}", server.addrs()[0]);
    let running = server.run();
    let handle = running.handle();
    actix_rt::spawn(running);

    let settings = keystone.settings(Duration::from_secs(30));
    let auth = IronicAuth::Keystone(std::sync::Arc::new(
        ringmaster::keystone::Keystone::new(settings).unwrap(),
    ));
    let api = IronicApi::connect(&url, auth, &ringmaster::tls::client::ClientTls::system())
        .await
        .unwrap();
    let error = api
        .list_nodes(&NodeSelection::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("401"), "{error}");
    assert!(error.contains("renewed once"), "{error}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "one request, one retry: {seen:?}");
    assert!(
        seen.iter().all(|token| !token.is_empty()),
        "every request has a token"
    );
    assert_ne!(seen[0], seen[1], "the retry carries a new token");
    handle.stop(false).await;
}
