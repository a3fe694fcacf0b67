//! Compute API requests: `app.compute(method, "/flavors")` (a path under `/compute/v2.1`),
//! then any of `.version("2.61")`, `.token("admin")`, `.json(body)`, and `.send().await`.

use super::app::TestApp;

pub struct ComputeRequest<'a> {
    app: &'a TestApp,
    method: reqwest::Method,
    path: String,
    version: Option<String>,
    token: Option<String>,
    body: Option<serde_json::Value>,
}

impl TestApp {
    /// A Compute request to `/compute/v2.1{path}`, with the admin's token until told.
    pub fn compute(&self, method: reqwest::Method, path: &str) -> ComputeRequest<'_> {
        ComputeRequest {
            app: self,
            method,
            path: format!("/compute/v2.1{path}"),
            version: None,
            token: Some("admin".to_owned()),
            body: None,
        }
    }
}

impl ComputeRequest<'_> {
    /// Asks for this microversion (`OpenStack-API-Version: compute {version}`).
    pub fn version(mut self, version: &str) -> Self {
        self.version = Some(version.to_owned());
        self
    }

    /// Authenticates with this token (`user[:project]` under noauth2), or none.
    pub fn token(mut self, token: Option<&str>) -> Self {
        self.token = token.map(str::to_owned);
        self
    }

    pub fn json(mut self, body: serde_json::Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Sends it; returns the status, the headers and the JSON body (`Null` when not JSON).
    pub async fn send(self) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
        let mut request = self
            .app
            .client
            .request(self.method, self.app.url(&self.path));
        if let Some(version) = &self.version {
            request = request.header("openstack-api-version", format!("compute {version}"));
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
