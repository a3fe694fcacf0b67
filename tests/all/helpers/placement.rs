//! Placement requests: a builder for one request (microversion, token, JSON body), and
//! helpers that create providers and race writes.

use super::app::TestApp;

/// One Placement request being built: `app.placement(method, path)`, then any of
/// `.version("1.20")`, `.token("admin")`, `.json(body)`, and `.send().await`.
pub struct PlacementRequest<'a> {
    app: &'a TestApp,
    method: reqwest::Method,
    path: String,
    version: Option<String>,
    token: Option<String>,
    body: Option<serde_json::Value>,
}

impl TestApp {
    /// A Placement request to `path` (no microversion, no token, no body until given).
    pub fn placement(&self, method: reqwest::Method, path: &str) -> PlacementRequest<'_> {
        PlacementRequest {
            app: self,
            method,
            path: path.to_owned(),
            version: None,
            token: None,
            body: None,
        }
    }
}

impl PlacementRequest<'_> {
    /// Asks for this microversion (`OpenStack-API-Version: placement {version}`).
    pub fn version(mut self, version: &str) -> Self {
        self.version = Some(version.to_owned());
        self
    }

    /// Authenticates with this token (`x-auth-token`).
    pub fn token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    /// Sends this JSON body.
    pub fn json(mut self, body: serde_json::Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Sends the request; returns the status, the headers and the JSON body (`Null` when the
    /// body is not JSON).
    pub async fn send(self) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
        let mut request = self
            .app
            .client
            .request(self.method, self.app.url(&self.path));
        if let Some(version) = &self.version {
            request = request.header("openstack-api-version", format!("placement {version}"));
        }
        if let Some(token) = &self.token {
            request = request.header("x-auth-token", token);
        }
        if let Some(body) = &self.body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        (
            status,
            headers,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    }
}

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
