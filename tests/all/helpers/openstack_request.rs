//! One request to an OpenStack API of the app (Placement or Compute), being built:
//! `app.placement(method, path)` or `app.compute(method, path)`, then any of
//! `.version("1.20")`, `.token("admin")` (or `.token(None)`), `.roles("reader")`, `.json(body)`,
//! and `.send().await`.

use super::app::TestApp;

pub struct OpenStackRequest<'a> {
    app: &'a TestApp,
    /// The service named in `OpenStack-API-Version` (`placement`, `compute`).
    service: &'static str,
    method: reqwest::Method,
    path: String,
    version: Option<String>,
    token: Option<String>,
    /// `X-Roles`, when given.
    roles: Option<String>,
    body: Option<serde_json::Value>,
}

impl TestApp {
    /// A Placement request to `path` (no microversion, no token, no body until given).
    pub fn placement(&self, method: reqwest::Method, path: &str) -> OpenStackRequest<'_> {
        OpenStackRequest::new(self, "placement", method, path.to_owned(), None)
    }

    /// A Compute request to `/compute/v2.1{path}`, with the admin's token until told.
    pub fn compute(&self, method: reqwest::Method, path: &str) -> OpenStackRequest<'_> {
        let path = format!("/compute/v2.1{path}");
        OpenStackRequest::new(self, "compute", method, path, Some("admin"))
    }
}

impl<'a> OpenStackRequest<'a> {
    fn new(
        app: &'a TestApp,
        service: &'static str,
        method: reqwest::Method,
        path: String,
        token: Option<&str>,
    ) -> Self {
        OpenStackRequest {
            app,
            service,
            method,
            path,
            version: None,
            token: token.map(str::to_owned),
            roles: None,
            body: None,
        }
    }

    /// Asks for this microversion (`OpenStack-API-Version: {service} {version}`).
    pub fn version(mut self, version: &str) -> Self {
        self.version = Some(version.to_owned());
        self
    }

    /// Authenticates with this token (`x-auth-token`; `user[:project]` under noauth2), or none.
    pub fn token<'t>(mut self, token: impl Into<Option<&'t str>>) -> Self {
        self.token = token.into().map(str::to_owned);
        self
    }

    /// Sends `X-Roles: {roles}` (under noauth2, the caller's roles).
    pub fn roles(mut self, roles: &str) -> Self {
        self.roles = Some(roles.to_owned());
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
            let value = format!("{} {version}", self.service);
            request = request.header("openstack-api-version", value);
        }
        if let Some(token) = &self.token {
            request = request.header("x-auth-token", token);
        }
        if let Some(roles) = &self.roles {
            request = request.header("x-roles", roles);
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
