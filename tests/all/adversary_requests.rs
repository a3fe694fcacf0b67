//! What a second adversarial pass sent (issue 25), each shown refused or bounded: a `Host` or
//! `Origin` the request guard cannot read, a missing or doubled one, an absolute-form target
//! (items 4), metric labels that would grow with what clients send (item 2). Each refused
//! request writes nothing.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::helpers::{TestApp, TestDb, app_with_host, exchange, http, raw, start_serve};

/// The hosts `GET /api/v1/hosts` lists.
async fn hosts(app: &TestApp) -> Vec<String> {
    let listed: Vec<Value> = app.get("/api/v1/hosts").await.json().await.unwrap();
    listed
        .iter()
        .map(|host| host["host"].as_str().unwrap().to_owned())
        .collect()
}

const CREATE: &str = "/api/v1/hosts";
const NEW_HOST: &str = "{\"host\": \"cmp-9\"}";

/// Writes that the guard must refuse, by the form of their `Host` (or target): each would
/// add host cmp-9 if it passed.
#[actix_web::test]
async fn a_host_the_guard_cannot_read_is_refused() {
    let app = TestApp::spawn().await;
    let local = app.address.trim_start_matches("http://").to_owned();
    let create = CREATE;
    let json = "Content-Type: application/json";
    let refused = [
        // A non-ASCII byte in the name (sent as UTF-8: "evil.exämple").
        format!("POST {create} HTTP/1.1\r\nHost: evil.ex\u{e4}mple\r\n{json}"),
        // No Host at all, over HTTP/1.0 and HTTP/1.1.
        format!("POST {create} HTTP/1.0\r\n{json}"),
        format!("POST {create} HTTP/1.1\r\n{json}"),
        // Two Host headers, the allowed one first.
        format!("POST {create} HTTP/1.1\r\nHost: {local}\r\nHost: evil.example\r\n{json}"),
        // Not a host: user info, a space, an empty name, a bad port.
        format!("POST {create} HTTP/1.1\r\nHost: user@{local}\r\n{json}"),
        format!("POST {create} HTTP/1.1\r\nHost: {local} evil.example\r\n{json}"),
        format!("POST {create} HTTP/1.1\r\nHost: :8080\r\n{json}"),
        format!("POST {create} HTTP/1.1\r\nHost: 127.0.0.1:80x\r\n{json}"),
        // An absolute-form target naming another server: its authority is what counts, not
        // the Host header.
        format!("POST http://evil.example{create} HTTP/1.1\r\nHost: {local}\r\n{json}"),
    ];
    for head in &refused {
        let (status, _, answer) = raw(&app, head, NEW_HOST).await;
        assert_eq!(status, 400, "{head:?}: {answer}");
        // actix-web itself refuses an HTTP/1.1 request without a Host (an empty 400); the
        // guard refuses the others in the admin API's envelope.
        if !answer.is_empty() {
            let envelope: Value = serde_json::from_str(&answer)
                .unwrap_or_else(|_| panic!("{head:?}: not JSON: {answer:?}"));
            assert!(envelope["error"]["message"].is_string(), "{answer}");
        }
        assert!(hosts(&app).await.is_empty(), "{head:?} wrote");
    }
    // Placement's envelope under /placement.
    let (status, _, answer) = raw(
        &app,
        "POST /placement/resource_providers HTTP/1.0\r\nX-Auth-Token: admin\r\n\
         Content-Type: application/json",
        "{\"name\": \"rp\"}",
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let envelope: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(envelope["errors"][0]["status"], 400, "{answer}");

    // A load balancer's check over HTTP/1.0 without a Host is answered.
    for probe in ["GET /healthz HTTP/1.0", "GET /readyz HTTP/1.0"] {
        let (status, _, answer) = raw(&app, probe, "").await;
        assert_eq!(status, 200, "{probe}: {answer}");
    }
    // An absolute-form target naming this server is served, as RFC 9112 requires.
    let (status, _, answer) = raw(
        &app,
        &format!("POST http://{local}{create} HTTP/1.1\r\nHost: evil.example\r\n{json}"),
        NEW_HOST,
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(hosts(&app).await, ["cmp-9"]);
}

/// Writes that the guard must refuse by their `Origin`; a request without one passes.
#[actix_web::test]
async fn an_origin_the_guard_cannot_read_is_refused_on_writes() {
    let app = TestApp::spawn().await;
    let local = app.address.trim_start_matches("http://").to_owned();
    let create = format!("POST {CREATE} HTTP/1.1\r\nHost: {local}");
    let json = "Content-Type: application/json";
    let refused = [
        format!("{create}\r\nOrigin: null\r\n{json}"),
        format!("{create}\r\nOrigin: http://{local}\r\nOrigin: https://evil.example\r\n{json}"),
        format!("{create}\r\nOrigin: http://{local}/x\r\n{json}"),
        format!("{create}\r\nOrigin: {local}\r\n{json}"),
        format!("{create}\r\nOrigin: http://ev\u{e4}l.example\r\n{json}"),
        format!("{create}\r\nOrigin: file://\r\n{json}"),
    ];
    for head in &refused {
        let (status, _, answer) = raw(&app, head, NEW_HOST).await;
        assert_eq!(status, 403, "{head:?}: {answer}");
        assert!(hosts(&app).await.is_empty(), "{head:?} wrote");
    }
    // Placement's writes too, in its envelope.
    let (status, _, answer) = raw(
        &app,
        &format!(
            "POST /placement/resource_providers HTTP/1.1\r\nHost: {local}\r\nOrigin: null\r\n\
             X-Auth-Token: admin\r\n{json}"
        ),
        "{\"name\": \"rp\"}",
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    let envelope: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(envelope["errors"][0]["status"], 403, "{answer}");
    // No Origin (curl, the OpenStack clients) passes.
    let (status, _, answer) = raw(&app, &format!("{create}\r\n{json}"), NEW_HOST).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(hosts(&app).await, ["cmp-9"]);
}

/// The label sets of `ringmaster_http_requests_total` in a scrape of the process at
/// `address`.
fn request_series(address: &str) -> BTreeSet<String> {
    let (_, text) = http(address, "GET", "/metrics");
    text.lines()
        .filter(|line| line.starts_with("ringmaster_http_requests_total{"))
        .map(|line| line.rsplit_once(' ').unwrap().0.to_owned())
        .collect()
}

/// A method name a client may send: an HTTP token of 1 to 40 characters.
fn random_method(seed: &mut u64) -> String {
    const TOKEN: &[u8] =
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~";
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let length = 1 + (next() % 40) as usize;
    (0..length)
        .map(|_| TOKEN[(next() % TOKEN.len() as u64) as usize] as char)
        .collect()
}

/// 1,000 requests with random methods and paths add no series: every label of the request
/// counter takes values from a fixed set. A process of its own (`serve`), so that no other
/// test's requests count.
#[test]
fn random_methods_and_paths_add_no_metric_series() {
    let db = TestDb::new();
    let (_serve, address) = start_serve(db.url(), &[], "warn");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let paths = [
        "/api/v1/hosts",
        "/api/v1/whatever",
        "/placement/resource_providers",
        "/placement/nope",
        "/etc/passwd",
        "",
        "/healthz",
    ];
    // Every route family and status these requests can reach, once.
    for index in 0..200 {
        let path = format!("{}/{index}", paths[index % paths.len()]);
        exchange(&address, &random_method(&mut seed), &path, "");
    }
    for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
        for path in paths {
            exchange(&address, method, &format!("{path}/"), "");
            exchange(&address, method, &format!("{path}/x"), "");
        }
    }
    // The scrapes count too: one before the first compared.
    request_series(&address);
    let before = request_series(&address);
    for index in 0..1000 {
        let path = format!(
            "{}/{}",
            paths[index % paths.len()],
            random_method(&mut seed)
        );
        exchange(&address, &random_method(&mut seed), &path, "");
    }
    let after = request_series(&address);
    assert_eq!(before, after, "random methods and paths added series");
    let methods: BTreeSet<&str> = after
        .iter()
        .filter_map(|series| series.split("method=\"").nth(1)?.split('"').next())
        .collect();
    let known: BTreeSet<&str> = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other",
    ]
    .into_iter()
    .collect();
    assert!(methods.is_subset(&known), "{methods:?}");
    assert!(methods.contains("other"), "{methods:?}");
}

/// Counters documented with known label values show 0 before their first event: an alert on
/// them needs no `or vector(0)`.
#[actix_web::test]
async fn counters_start_at_zero_for_their_known_labels() {
    let app = app_with_host().await;
    let text = app.get("/metrics").await.text().await.unwrap();
    for series in [
        "ringmaster_node_moves_total{reason=\"host_down\"}",
        "ringmaster_node_moves_total{reason=\"drain\"}",
        "ringmaster_node_moves_total{reason=\"join\"}",
        "ringmaster_archived_rows_total{table=\"instances\"}",
        "ringmaster_archived_rows_total{table=\"pci_devices\"}",
        "ringmaster_host_fence_events_total{event=\"fenced\",host=\"cmp-3\"}",
        "ringmaster_leadership_changes_total{change=\"gained\"}",
        "ringmaster_boots_total{result=\"refused\"}",
        "ringmaster_placement_candidates_truncated_total{reason=\"max_allocation_candidates\"}",
        "ringmaster_failover_duration_seconds_count{reason=\"host_down\"}",
    ] {
        assert!(
            text.lines().any(|line| line.starts_with(series)),
            "{series} is missing:\n{text}"
        );
    }
}
