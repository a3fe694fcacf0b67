//! Placement helpers that create providers and race writes (requests are built by
//! `openstack_request`).

use super::app::TestApp;

/// Creates Placement provider `uuid` (named `rp-{uuid}`); asserts success.
pub async fn create_placement_provider(app: &TestApp, uuid: &str) {
    let (status, _, body) = app
        .placement(reqwest::Method::POST, "/placement/resource_providers")
        .version("1.20")
        .token("admin")
        .json(serde_json::json!({"name": format!("rp-{uuid}"), "uuid": uuid}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Replaces provider `uuid`'s inventories (its generation 0: new); asserts success.
pub async fn put_placement_inventory(app: &TestApp, uuid: &str, inventories: serde_json::Value) {
    let (status, _, body) = app
        .placement(
            reqwest::Method::PUT,
            &format!("/placement/resource_providers/{uuid}/inventories"),
        )
        .version("1.20")
        .token("admin")
        .json(serde_json::json!({"resource_provider_generation": 0, "inventories": inventories}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Sends the PUT requests (path, body) all at once; returns each (status, error code).
pub async fn placement_race(
    app: &TestApp,
    requests: impl Iterator<Item = (String, serde_json::Value)>,
    version: &str,
) -> Vec<(u16, serde_json::Value)> {
    let sent = requests.map(|(path, body)| {
        app.client
            .put(app.url(&path))
            .header("x-auth-token", "admin")
            .header("openstack-api-version", format!("placement {version}"))
            .json(&body)
            .send()
    });
    let mut outcomes = Vec::new();
    for response in futures_util::future::join_all(sent).await {
        let response = response.unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
        outcomes.push((status, body["errors"][0]["code"].clone()));
    }
    outcomes
}
