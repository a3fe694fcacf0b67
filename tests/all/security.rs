//! The holes an attacker found on the default setup (issue 17), each shown closed: cross-site
//! requests and DNS rebinding, missing security headers, event streams and slow bodies that
//! exhaust the server, 500s on NUL bytes and over-long names, protocol details (405 with
//! `Allow`, Placement's 413 envelope, an empty allocation POST, an unbounded PCI count) and a
//! secret on the command line. Each refused request writes nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, app_with_host, eventually_async, raw};

pub(crate) async fn host_state(app: &TestApp, host: &str) -> String {
    let hosts: Vec<Value> = app.get("/api/v1/hosts").await.json().await.unwrap();
    hosts
        .iter()
        .find(|entry| entry["host"] == host)
        .map(|entry| entry["state"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[actix_web::test]
async fn cross_site_and_rebound_requests_change_nothing() {
    let app = app_with_host().await;
    let local = app.address.trim_start_matches("http://").to_owned();
    let crash = "POST /api/v1/hosts/cmp-3/crash HTTP/1.1";
    let refusals = [
        // The issue's request: a page on another site, its name rebound to 127.0.0.1.
        (
            format!(
                "{crash}\r\nHost: evil.example:8080\r\nOrigin: https://evil.example\r\n\
                 Content-Type: application/x-www-form-urlencoded"
            ),
            "x=1",
            400,
        ),
        // A rebound name alone, even with JSON.
        (
            format!("{crash}\r\nHost: evil.example:8080\r\nContent-Type: application/json"),
            "",
            400,
        ),
        // The right Host, another origin.
        (
            format!(
                "{crash}\r\nHost: {local}\r\nOrigin: https://evil.example\r\n\
                 Content-Type: application/json"
            ),
            "",
            403,
        ),
        // What a form or a no-cors fetch can send: a form body, text/plain, nothing at all.
        (
            format!("{crash}\r\nHost: {local}\r\nContent-Type: application/x-www-form-urlencoded"),
            "x=1",
            415,
        ),
        (
            format!("{crash}\r\nHost: {local}\r\nContent-Type: text/plain"),
            "x=1",
            415,
        ),
        (format!("{crash}\r\nHost: {local}"), "", 415),
    ];
    for (head, body, status) in refusals {
        let (got, _, answer) = raw(&app, &head, body).await;
        assert_eq!(got, status, "{head}: {answer}");
        let envelope: Value = serde_json::from_str(&answer).unwrap();
        assert!(envelope["error"]["message"].is_string(), "{answer}");
        assert_eq!(host_state(&app, "cmp-3").await, "up", "{head}");
    }
    // A rebound name is refused on every route, reads included.
    for path in ["/", "/api/v1/hosts", "/placement/", "/healthz"] {
        let (got, _, _) = raw(
            &app,
            &format!("GET {path} HTTP/1.1\r\nHost: evil.example"),
            "",
        )
        .await;
        assert_eq!(got, 400, "{path}");
    }
    // The same origin with JSON, or a token, is served.
    let (got, _, answer) = raw(
        &app,
        &format!(
            "{crash}\r\nHost: {local}\r\nOrigin: http://{local}\r\nContent-Type: application/json"
        ),
        "",
    )
    .await;
    assert_eq!(got, 202, "{answer}");
    let (got, _, _) = raw(
        &app,
        "POST /api/v1/hosts/cmp-3/start HTTP/1.1\r\nHost: localhost\r\nX-Auth-Token: t",
        "",
    )
    .await;
    assert_eq!(got, 202);
}

#[actix_web::test]
async fn a_name_in_allowed_hosts_is_served() {
    let app = TestApp::spawn_configured(|config| {
        config.allowed_hosts = vec!["ringmaster.test".to_owned()];
    })
    .await;
    let (got, _, _) = raw(
        &app,
        "GET /api/v1/hosts HTTP/1.1\r\nHost: ringmaster.test:8080",
        "",
    )
    .await;
    assert_eq!(got, 200);
    let (got, _, _) = raw(
        &app,
        "GET /api/v1/hosts HTTP/1.1\r\nHost: other.test:8080",
        "",
    )
    .await;
    assert_eq!(got, 400);
}

#[actix_web::test]
async fn every_answer_carries_the_security_headers() {
    let app = TestApp::spawn().await;
    for path in [
        "/",
        "/app.js",
        "/api/v1/ring",
        "/placement/",
        "/nothing-here",
    ] {
        let response = app.get(path).await;
        let headers = response.headers();
        assert_eq!(
            headers["content-security-policy"].to_str().unwrap(),
            "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
            "{path}"
        );
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["referrer-policy"], "no-referrer", "{path}");
    }
}

#[actix_web::test]
async fn event_streams_are_capped_per_client_and_per_process() {
    let app = TestApp::spawn_configured(|config| {
        config.event_streams = ringmaster::config::StreamLimits {
            per_process: 5,
            per_client: 3,
        };
    })
    .await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(app.events().await);
    }
    let refused = app.get("/api/v1/events").await;
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("3 per client"),
        "{body}"
    );
    // A closed stream frees its place.
    drop(open.pop());
    // The server notices a client went away at its next write (a keepalive every 15 s).
    eventually_async(Duration::from_secs(30), "a place again", || async {
        (app.get("/api/v1/events").await.status() == 200).then_some(())
    })
    .await;
    assert_eq!(app.get("/healthz").await.status(), 200);

    // The process's cap holds whatever the client.
    let small = TestApp::spawn_configured(|config| {
        config.event_streams = ringmaster::config::StreamLimits {
            per_process: 2,
            per_client: 10,
        };
    })
    .await;
    let _first = small.events().await;
    let _second = small.events().await;
    let refused = small.get("/api/v1/events").await;
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 2 in all"),
        "{body}"
    );
}

#[actix_web::test]
async fn a_body_sent_too_slowly_is_cut_off_and_the_server_stays_available() {
    let app = TestApp::spawn_configured(|config| {
        config.body_timeout = Duration::from_secs(1);
    })
    .await;
    let address = app.address.trim_start_matches("http://").to_owned();
    // 50 clients announce a body and send one byte of it.
    let mut slow: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut stream = TcpStream::connect(&address).unwrap();
            write!(
                stream,
                "POST /api/v1/hosts HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
                 Content-Length: 100\r\n\r\n{{"
            )
            .unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            stream
        })
        .collect();
    assert_eq!(app.get("/healthz").await.status(), 200);
    for stream in &mut slow {
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("did not arrive within 1s"), "{answer}");
    }
    let hosts: Vec<Value> = app.get("/api/v1/hosts").await.json().await.unwrap();
    assert!(hosts.is_empty(), "nothing created");
}

#[actix_web::test]
async fn nul_bytes_and_over_long_names_are_refused_by_field_and_write_nothing() {
    let app = app_with_host().await;
    let admin = [
        ("/api/v1/hosts", json!({"host": "a\u{0}b"}), "field `host`"),
        (
            "/api/v1/nodes",
            json!({"nodes": [{"uuid": "6f1c7c2a-1b2c-4d5e-8f90-112233445566",
                              "name": "n\u{0}x", "resource_class": "baremetal"}]}),
            "field `nodes[0].name`",
        ),
        (
            "/api/v1/nodes",
            json!({"nodes": [{"uuid": "6f1c7c2a-1b2c-4d5e-8f90-112233445566",
                              "name": "n".repeat(300), "resource_class": "baremetal"}]}),
            "invalid node name",
        ),
        (
            "/api/v1/instances",
            json!({"name": "vm\u{0}", "resource_class": "baremetal"}),
            "field `name`",
        ),
        (
            "/api/v1/instances",
            json!({"name": "vm", "resource_class": "bare\u{0}metal"}),
            "field `resource_class`",
        ),
    ];
    for (path, body, says) in admin {
        let response = app
            .client
            .post(app.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{path} {body}");
        let answer: Value = response.json().await.unwrap();
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{path}: {message}");
    }
    placement_refuses_nul_characters_wherever_they_are(&app).await;
    let nodes: Vec<Value> = app.get("/api/v1/nodes").await.json().await.unwrap();
    assert!(nodes.is_empty(), "nothing enrolled");
    let (_, _, providers) = app
        .placement(Method::GET, "/placement/resource_providers")
        .token("admin")
        .send()
        .await;
    assert_eq!(providers["resource_providers"], json!([]));
}

/// Placement refuses a NUL character in a body, a path or a query, naming it.
async fn placement_refuses_nul_characters_wherever_they_are(app: &TestApp) {
    let consumer = uuid::Uuid::new_v4();
    let placement = [
        (
            Method::POST,
            "/placement/resource_providers".to_owned(),
            json!({"name": "p\u{0}x"}),
        ),
        (
            Method::PUT,
            "/placement/traits/CUSTOM_A%00B".to_owned(),
            Value::Null,
        ),
        (
            Method::GET,
            "/placement/resource_providers?name=a%00b".to_owned(),
            Value::Null,
        ),
        (
            Method::PUT,
            format!("/placement/allocations/{consumer}"),
            json!({"allocations": {}, "project_id": "p\u{0}", "user_id": "u",
                   "consumer_generation": null}),
        ),
    ];
    for (method, path, body) in placement {
        let mut request = app
            .placement(method.clone(), &path)
            .version("1.38")
            .token("admin");
        if !body.is_null() {
            request = request.json(body);
        }
        let (status, _, answer) = request.send().await;
        assert_eq!(status, 400, "{method} {path}");
        assert!(
            answer["errors"][0]["detail"]
                .as_str()
                .unwrap()
                .contains("NUL"),
            "{path}: {answer}"
        );
    }
}

#[actix_web::test]
async fn protocol_details_are_as_the_apis_define_them() {
    let app = app_with_host().await;
    // A wrong method on an admin path: 405 with Allow, in the admin envelope.
    let response = app
        .client
        .put(app.url("/api/v1/hosts"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    let allow = response.headers()["allow"].to_str().unwrap().to_owned();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["code"], "method_not_allowed");

    // Placement's 413 in its envelope.
    let huge = format!("{{\"name\": \"{}\"}}", "x".repeat(17 * 1024 * 1024));
    let response = app
        .client
        .post(app.url("/placement/resource_providers"))
        .header("x-auth-token", "admin")
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["errors"][0]["status"], 413);

    // Placement 16.0.0 wants at least one consumer in a POST of allocations.
    let (status, _, _) = app
        .placement(Method::POST, "/placement/allocations")
        .version("1.38")
        .token("admin")
        .json(json!({}))
        .send()
        .await;
    assert_eq!(status, 400);

    // No node has 4294967295 PCI devices.
    let response = app
        .client
        .post(app.url("/api/v1/instances"))
        .json(&json!({"name": "vm", "resource_class": "baremetal", "pci_devices": 4294967295u64}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pci_devices must be at most"),
        "{answer}"
    );
}

/// A secret given as a file stays out of the process list; one given on the command line
/// works, with a warning that `ps` shows it.
#[test]
fn the_admin_token_can_come_from_a_file_and_a_command_line_one_is_warned_about() {
    use crate::helpers::{Running, TempDir, address_of, http_json, ringmaster};
    let db = crate::helpers::TestDb::new();
    let dir = TempDir::new("token-file");
    let file = dir.path.join("admin-token");
    std::fs::write(&file, "s3cret-from-file\n").unwrap();
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--admin-token-file"])
        .arg(&file)
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn");
    let mut serve = Running::spawn(command);
    let address =
        address_of(&serve.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", serve.child.id())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains("s3cret"));
    let (status, _) = http_json(&address, "POST", "/api/v1/hosts", r#"{"host": "cmp-1"}"#);
    assert_eq!(status, 401, "no token, no write");
    let mut stream = TcpStream::connect(&address).unwrap();
    let body = r#"{"host": "cmp-1"}"#;
    write!(
        stream,
        "POST /api/v1/hosts HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Authorization: Bearer s3cret-from-file\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.contains(" 201 Created"), "{answer}");
    serve.interrupt();
    serve.wait_exit(Duration::from_secs(30));

    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--admin-token", "s3cret"])
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn");
    let mut serve = Running::spawn(command);
    serve.wait_for_stdout("listening on http://", Duration::from_secs(60));
    serve.interrupt();
    let (_, stderr) = serve.wait_exit(Duration::from_secs(30));
    assert!(
        stderr.iter().any(
            |line| line.contains("--admin-token on the command line shows in the process list")
        ),
        "{stderr:#?}"
    );
}
