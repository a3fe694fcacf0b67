//! The admin API as the tests call it: a request and its JSON answer, a listing, and the
//! smallest deployment the API tests start from (cmp-1 with its nodes enrolled and reported).

use ringmaster::actors::compute_host::{Heartbeat, UpdateAvailableResource};
use ringmaster::actors::rebalancer::RebalanceNow;
use serde_json::{Value, json};

use super::TestApp;

/// `method path` with an optional JSON body; the status and the JSON answer (null if none).
pub async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = app.client.request(method, app.url(path));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// How many items the listing at `path` holds.
pub async fn listing_len(app: &TestApp, path: &str) -> usize {
    get(app, path).await.as_array().map_or(0, Vec::len)
}

/// The JSON answer of `GET path`, which must be 200.
pub async fn get(app: &TestApp, path: &str) -> Value {
    let (status, body) = send(app, reqwest::Method::GET, path, None).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// Starts cmp-1 through the API, enrolls 4 nodes and lets the host own and report them.
pub async fn one_host_four_nodes(app: &TestApp) -> Vec<String> {
    one_host_with_nodes(app, 4).await
}

/// Host cmp-1, up, with `count` baremetal nodes it owns and has reported; their uuids.
pub async fn one_host_with_nodes(app: &TestApp, count: usize) -> Vec<String> {
    let (status, body) = send(
        app,
        reqwest::Method::POST,
        "/api/v1/hosts",
        Some(json!({"host": "cmp-1"})),
    )
    .await;
    assert_eq!((status, body), (201, json!({"host": "cmp-1"})));
    let host = app.actors.hosts.get("cmp-1").unwrap();
    assert!(host.send(Heartbeat).await.unwrap().unwrap());

    let (status, body) = send(
        app,
        reqwest::Method::POST,
        "/api/v1/nodes",
        Some(json!({"count": count, "resource_class": "baremetal"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["enrolled"], count);
    app.actors
        .rebalancer
        .send(RebalanceNow)
        .await
        .unwrap()
        .unwrap();
    host.send(UpdateAvailableResource).await.unwrap().unwrap();
    body["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|uuid| uuid.as_str().unwrap().to_owned())
        .collect()
}
