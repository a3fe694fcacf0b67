//! ringmaster's Ironic client (issue 16) against a real Ironic 39.0.0 (fake-hardware): the
//! microversion negotiated, the node listing in one request with the fields ringmaster uses;
//! and against a stand-in, a server too old refused by name and HTTP basic credentials sent.

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use ringmaster::ironic_api::{ApiVersion, IronicApi, IronicAuth, IronicError, NodeSelection};
use serde_json::json;

use crate::helpers::RealIronic;

#[actix_web::test]
async fn a_real_ironics_nodes_are_listed_in_one_request_with_what_ringmaster_uses() {
    let ironic = RealIronic::start();
    let enrolled = ironic.enroll(20);
    let api = IronicApi::connect(
        &ironic.url,
        IronicAuth::None,
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await
    .expect("connect");
    assert_eq!(api.version(), ApiVersion(1, 82), "the newest both speak");

    let (nodes, requests) = api.list_nodes(&NodeSelection::default()).await.unwrap();
    assert_eq!(requests, 1, "20 nodes are one page");
    let mut listed: Vec<uuid::Uuid> = nodes.iter().map(|node| node.uuid).collect();
    let mut expected = enrolled.clone();
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected);
    for node in &nodes {
        assert_eq!(node.provision_state, "available");
        assert_eq!(node.resource_class.as_deref(), Some("baremetal"));
        assert!(!node.maintenance);
        assert_eq!(node.instance_uuid, None);
        assert_eq!(node.properties["cpus"], json!(8));
        assert_eq!(node.properties["memory_mb"], json!(16384));
    }

    // Nova's conductor-group filter: no node is in that group.
    let other_group = NodeSelection {
        conductor_group: Some("elsewhere".to_owned()),
        shard: None,
    };
    let (none, _) = api.list_nodes(&other_group).await.unwrap();
    assert!(none.is_empty());
    // The same connection with `/v1` in the URL.
    let with_v1 = IronicApi::connect(
        &format!("{}/v1/", ironic.url),
        IronicAuth::None,
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await
    .unwrap();
    assert_eq!(with_v1.url(), ironic.url);
}

/// A stand-in Ironic on a free loopback port: its version document says `max`; its node
/// listing answers only a caller presenting `user`/`secret` (HTTP basic).
fn stand_in(max: &'static str) -> (String, actix_web::dev::ServerHandle) {
    let server = HttpServer::new(move || {
        App::new()
            .route(
                "/",
                web::get().to(move || async move {
                    HttpResponse::Ok().json(json!({"default_version": {
                        "id": "v1", "version": max, "min_version": "1.1"}}))
                }),
            )
            .route(
                "/v1/nodes",
                web::get().to(|request: HttpRequest| async move {
                    // "user:secret", base64.
                    let expected = "Basic dXNlcjpzZWNyZXQ=";
                    let sent = request
                        .headers()
                        .get("authorization")
                        .and_then(|value| value.to_str().ok());
                    if sent != Some(expected) {
                        return HttpResponse::Unauthorized().body("who are you?");
                    }
                    HttpResponse::Ok().json(json!({"nodes": [{
                        "uuid": "5a9e6d2e-2b4f-4a47-9c1e-0b8f1f6b2a10",
                        "provision_state": "active", "maintenance": true,
                        "instance_uuid": null, "traits": ["CUSTOM_GOLD"], "properties": {}}]}))
                }),
            )
    })
    .workers(1)
    .disable_signals()
    .bind("127.0.0.1:0")
    .expect("bind a loopback port");
    let address = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (format!("http://{address}"), handle)
}

#[actix_web::test]
async fn an_ironic_older_than_ringmaster_needs_is_refused_by_name() {
    let (url, server) = stand_in("1.30");
    let refused = IronicApi::connect(
        &url,
        IronicAuth::None,
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await
    .unwrap_err();
    assert!(matches!(refused, IronicError::TooOld { .. }), "{refused:?}");
    assert_eq!(
        refused.to_string(),
        format!("Ironic at {url} speaks API 1.1 to 1.30; ringmaster needs at least 1.46")
    );
    server.stop(false).await;

    // Nothing listening: unreachable, saying where.
    let gone = IronicApi::connect(
        &url,
        IronicAuth::None,
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await
    .unwrap_err();
    assert!(matches!(gone, IronicError::Unreachable { .. }), "{gone:?}");
    assert!(gone.to_string().contains(&url), "{gone}");
}

/// `serve --ironic-url` against an Ironic older than ringmaster needs stops at start with one
/// error line naming the versions (exit 1).
#[actix_web::test]
async fn serve_refuses_an_ironic_older_than_it_needs_in_one_line() {
    let (url, server) = stand_in("1.30");
    let db = crate::helpers::TestDb::new();
    let (code, _, stderr) = actix_web::rt::task::spawn_blocking({
        let (url, database) = (url.clone(), db.url().to_owned());
        move || {
            crate::helpers::run_to_end(
                crate::helpers::ringmaster()
                    .args(["serve", "--bind", "127.0.0.1:0", "--ironic-url", &url])
                    .env("DATABASE_URL", database),
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{stderr}");
    let lines: Vec<String> = stderr.lines().map(str::to_owned).collect();
    crate::helpers::assert_one_error_line(&lines, "ringmaster needs at least 1.46");
    server.stop(false).await;
}

#[actix_web::test]
async fn http_basic_credentials_are_sent_and_a_refusal_is_reported() {
    let (url, server) = stand_in("1.99");
    let with = IronicApi::connect(
        &url,
        IronicAuth::Basic {
            user: "user".to_owned(),
            password: "secret".to_owned(),
        },
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await
    .unwrap();
    assert_eq!(with.version(), ApiVersion(1, 82));
    let (nodes, _) = with.list_nodes(&NodeSelection::default()).await.unwrap();
    assert_eq!(nodes.len(), 1);
    assert!(nodes[0].maintenance);
    assert_eq!(nodes[0].traits, ["CUSTOM_GOLD"]);

    let without = IronicApi::connect(
        &url,
        IronicAuth::None,
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await
    .unwrap();
    let refused = without
        .list_nodes(&NodeSelection::default())
        .await
        .unwrap_err();
    assert!(
        matches!(refused, IronicError::Refused { status: 401, .. }),
        "{refused:?}"
    );
    server.stop(false).await;
}
