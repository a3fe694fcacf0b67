//! The event stream of the admin API: typed events, nothing for heartbeats, and events of
//! every process of the deployment.

use ringmaster::actors::compute_host::Heartbeat;
use serde_json::json;

use crate::helpers::{TestApp, one_host_four_nodes, send};

async fn read_until(
    response: &mut reqwest::Response,
    received: &mut String,
    what: &str,
    wanted: impl Fn(&str) -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !wanted(received) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "no {what}: {received:?}");
        match tokio_timeout(left, response.chunk()).await {
            Some(chunk) => received.push_str(&String::from_utf8_lossy(&chunk.unwrap().unwrap())),
            None => panic!("no {what}: {received:?}"),
        }
    }
}

async fn tokio_timeout<F: std::future::Future>(
    after: std::time::Duration,
    future: F,
) -> Option<F::Output> {
    actix_rt::time::timeout(after, future).await.ok()
}

/// Opens the event stream, reads its retry line and lets the hub's listener start.
async fn listening(app: &TestApp) -> (reqwest::Response, String) {
    let mut response = app.events().await;
    let mut received = String::new();
    read_until(&mut response, &mut received, "retry line", |text| {
        text.starts_with("retry: 2000\n\n")
    })
    .await;
    actix_rt::time::sleep(std::time::Duration::from_millis(600)).await;
    (response, received)
}

/// Issue 13, item 6: the event stream sends typed events with what changed — a host added,
/// nodes enrolled and claimed, an instance — and nothing for heartbeats alone.
#[actix_web::test]
async fn the_event_stream_sends_typed_events_and_nothing_for_heartbeats() {
    let app = TestApp::spawn().await;
    let (mut response, mut received) = listening(&app).await;

    one_host_four_nodes(&app).await;
    read_until(&mut response, &mut received, "host event", |text| {
        text.contains("event: host\ndata: ") && text.contains("\"host\":\"cmp-1\"")
    })
    .await;
    read_until(&mut response, &mut received, "nodes enrolled", |text| {
        text.contains("event: nodes\ndata: ") && text.contains("\"change\":\"enrolled\"")
    })
    .await;
    read_until(&mut response, &mut received, "nodes claimed", |text| {
        text.contains("event: nodes_claimed\ndata: ") && text.contains("\"cmp-1\":4")
    })
    .await;
    let (status, booted) = send(
        &app,
        reqwest::Method::POST,
        "/api/v1/instances",
        Some(json!({"name": "vm-1", "resource_class": "baremetal"})),
    )
    .await;
    assert_eq!(status, 201, "{booted}");
    let uuid = booted["uuid"].as_str().unwrap().to_owned();
    read_until(&mut response, &mut received, "instance active", |text| {
        text.contains("event: instance\ndata: ")
            && text.contains(&uuid)
            && text.contains("\"vm_state\":\"active\"")
    })
    .await;

    // Heartbeats alone: nothing.
    let seen = received.matches("event: ").count();
    let host = app.actors.hosts.get("cmp-1").unwrap();
    for _ in 0..3 {
        assert!(host.send(Heartbeat).await.unwrap().unwrap());
    }
    if let Some(chunk) =
        tokio_timeout(std::time::Duration::from_millis(2500), response.chunk()).await
    {
        received.push_str(&String::from_utf8_lossy(&chunk.unwrap().unwrap()));
    }
    assert_eq!(
        received.matches("event: ").count(),
        seen,
        "heartbeats send nothing: {received:?}"
    );
}

/// Issue 13, item 6: a change made by another process of the deployment reaches this
/// process's event stream (PostgreSQL LISTEN/NOTIFY).
#[actix_web::test]
async fn events_from_another_process_reach_every_stream() {
    let app = TestApp::spawn().await;
    let other = TestApp::spawn_sharing(&app).await;
    let (mut response, mut received) = listening(&app).await;
    let enrolled = other
        .client
        .post(other.url("/api/v1/nodes"))
        .json(&json!({"count": 3, "resource_class": "baremetal"}))
        .send()
        .await
        .unwrap();
    assert_eq!(enrolled.status(), 201);
    read_until(
        &mut response,
        &mut received,
        "the other process's enrollment",
        |text| text.contains("event: nodes\ndata: ") && text.contains("\"count\":3"),
    )
    .await;
}
