//! The image service (Glance v2) as the Compute API reads it: one image by id with
//! the caller's token, whether an image is shared with a project, and whether an image's data
//! can be downloaded without a token (what a standalone Ironic needs). The gateway to Glance, as
//! `keystone` is to Keystone: IO, no policy.

use std::time::Duration;

use serde_json::Value;

/// Why the image service could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlanceError {
    /// The image service refused the caller's token (401).
    #[error("the image service refused the token")]
    Unauthorized,
    /// The image service could not be asked, or answered what it should not.
    #[error("the image service cannot be reached now: {0}")]
    Unavailable(String),
}

/// A connection to one Glance.
pub struct Glance {
    base: String,
    client: reqwest::Client,
}

impl Glance {
    /// A connection to the Glance at `url` (`http://host:9292`, with or without `/v2`).
    pub fn new(
        url: &str,
        tls: &std::sync::Arc<crate::tls::client::ClientTls>,
    ) -> Result<Glance, GlanceError> {
        let base = url
            .trim_end_matches('/')
            .trim_end_matches("/v2")
            .trim_end_matches('/')
            .to_owned();
        let client = tls
            .http_client(Duration::from_secs(10))
            .map_err(|error| GlanceError::Unavailable(crate::tls::with_causes(&error)))?;
        Ok(Glance { base, client })
    }

    /// Where the image service is.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// Where image `id`'s data is downloaded from.
    pub fn file_url(&self, id: &str) -> String {
        format!("{}/v2/images/{id}/file", self.base)
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Result<reqwest::Response, GlanceError> {
        let mut request = self.client.get(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.header("X-Auth-Token", token);
        }
        request
            .send()
            .await
            .map_err(|error| GlanceError::Unavailable(crate::tls::with_causes(&error)))
    }

    /// Image `id` as the caller (`token`) sees it; `None` when it does not exist or the caller
    /// may not see it.
    pub async fn image(&self, id: &str, token: Option<&str>) -> Result<Option<Value>, GlanceError> {
        let response = self.get(&format!("/v2/images/{id}"), token).await?;
        match response.status().as_u16() {
            200 => response
                .json()
                .await
                .map(Some)
                .map_err(|error| GlanceError::Unavailable(crate::tls::with_causes(&error))),
            403 | 404 => Ok(None),
            401 => Err(GlanceError::Unauthorized),
            status => Err(GlanceError::Unavailable(format!(
                "GET /v2/images/{id} answered {status}"
            ))),
        }
    }

    /// Whether image `id` is shared with `project` (any member status).
    pub async fn is_member(
        &self,
        id: &str,
        project: &str,
        token: Option<&str>,
    ) -> Result<bool, GlanceError> {
        let response = self
            .get(&format!("/v2/images/{id}/members/{project}"), token)
            .await?;
        match response.status().as_u16() {
            200 => Ok(true),
            403 | 404 => Ok(false),
            401 => Err(GlanceError::Unauthorized),
            status => Err(GlanceError::Unavailable(format!(
                "GET /v2/images/{id}/members/{project} answered {status}"
            ))),
        }
    }

    /// Whether image `id`'s data can be downloaded without a token: its first byte is asked
    /// for, as a standalone Ironic would ask for all of it.
    pub async fn data_reachable(&self, id: &str) -> Result<bool, GlanceError> {
        let response = self
            .client
            .get(self.file_url(id))
            .header("Range", "bytes=0-0")
            .send()
            .await
            .map_err(|error| GlanceError::Unavailable(crate::tls::with_causes(&error)))?;
        Ok(matches!(response.status().as_u16(), 200 | 206))
    }
}
