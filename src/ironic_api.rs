//! A real OpenStack Ironic over its REST API: connecting with the API microversion
//! negotiated (and a clear refusal of a server older than ringmaster needs), `noauth` or
//! `http_basic` authentication, and the node listing — one paginated read of only the fields
//! used, optionally of one conductor group or shard, as Nova's ironic driver reads it.
//!
//! The gateway to Ironic, as `db` is the gateway to PostgreSQL: IO only, no policy.

use std::time::Duration;

use serde::Deserialize;
use uuid::Uuid;

mod listing;

pub use listing::ListedPage;

/// The oldest API ringmaster speaks: node `resource_class` (1.21), `traits` in a listing
/// (1.37) and the `conductor_group` filter (1.46).
pub const MIN_VERSION: ApiVersion = ApiVersion(1, 46);
/// The newest API ringmaster asks for: the `shard` filter (1.82).
pub const MAX_VERSION: ApiVersion = ApiVersion(1, 82);
/// The header that carries the microversion.
const VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Version";
/// Nodes per page of a listing.
pub const PAGE_SIZE: usize = 1000;
/// The fields of a node the listing reads.
const NODE_FIELDS: &str = "uuid,name,resource_class,provision_state,power_state,maintenance,\
                           last_error,instance_uuid,reservation,traits,properties,\
                           conductor_group";

/// An Ironic API microversion, `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiVersion(pub u16, pub u16);

impl ApiVersion {
    /// Reads `1.46`.
    pub fn parse(text: &str) -> Option<ApiVersion> {
        let (major, minor) = text.trim().split_once('.')?;
        Some(ApiVersion(major.parse().ok()?, minor.parse().ok()?))
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}.{}", self.0, self.1)
    }
}

/// How ringmaster authenticates to Ironic: as standalone Ironic deployments run it, or as
/// Nova's ironic driver does behind Keystone.
#[derive(Clone)]
pub enum IronicAuth {
    /// `auth_strategy = noauth`.
    None,
    /// `auth_strategy = http_basic`.
    Basic { user: String, password: String },
    /// `auth_strategy = keystone`: ringmaster's service token (`X-Auth-Token`), renewed once
    /// when Ironic refuses it.
    Keystone(std::sync::Arc<crate::keystone::Keystone>),
}

impl std::fmt::Debug for IronicAuth {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IronicAuth::None => formatter.write_str("None"),
            IronicAuth::Basic { user, .. } => write!(formatter, "Basic({user}, ..)"),
            IronicAuth::Keystone(keystone) => write!(formatter, "Keystone({})", keystone.url()),
        }
    }
}

/// Which nodes a listing reads, as Nova's `[ironic] conductor_group` and `shard` choose them.
pub use crate::domain::selection::NodeSelection;

/// Why talking to Ironic failed.
#[derive(Debug, thiserror::Error)]
pub enum IronicError {
    #[error("cannot reach Ironic at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("Ironic at {url} speaks API {min} to {max}; ringmaster needs at least {MIN_VERSION}")]
    TooOld {
        url: String,
        min: ApiVersion,
        max: ApiVersion,
    },
    #[error("Ironic at {url} does not say which API versions it speaks")]
    NoVersion { url: String },
    #[error("Ironic refused {what}: {status} {detail}")]
    Refused {
        what: String,
        status: u16,
        detail: String,
    },
    #[error("Ironic answered {what} with a body ringmaster cannot read: {reason}")]
    BadAnswer { what: String, reason: String },
    #[error("listing nodes by shard needs Ironic API 1.82; {url} speaks {max} at most")]
    NoShards { url: String, max: ApiVersion },
}

impl IronicError {
    /// Says whether Ironic answered `409 NodeLocked`: a conductor holds the node for now, and
    /// the same request may succeed later.
    pub fn is_node_locked(&self) -> bool {
        matches!(self, IronicError::Refused { status: 409, detail, .. }
            if detail.contains("locked") || detail.contains("NodeLocked"))
    }

    /// Says whether Ironic could not be reached at all (nothing was done).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, IronicError::Unreachable { .. })
    }
}

/// One operation of a JSON patch (RFC 6902), as Ironic's node PATCH takes it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PatchOp {
    pub op: &'static str,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

impl PatchOp {
    /// Adds (or replaces) `path` with `value`.
    pub fn add(path: &str, value: serde_json::Value) -> PatchOp {
        PatchOp {
            op: "add",
            path: path.to_owned(),
            value: Some(value),
        }
    }

    /// Removes `path`.
    pub fn remove(path: &str) -> PatchOp {
        PatchOp {
            op: "remove",
            path: path.to_owned(),
            value: None,
        }
    }
}

/// One interface's answer in a node validation.
#[derive(Debug, Clone, Deserialize)]
pub struct InterfaceCheck {
    pub result: Option<bool>,
    pub reason: Option<String>,
}

/// A node as the listing reads it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IronicNodeRecord {
    pub uuid: Uuid,
    pub name: Option<String>,
    pub resource_class: Option<String>,
    pub provision_state: String,
    pub power_state: Option<String>,
    pub maintenance: bool,
    pub last_error: Option<String>,
    pub instance_uuid: Option<Uuid>,
    /// The conductor holding the node's lock, when one does.
    pub reservation: Option<String>,
    #[serde(default)]
    pub traits: Vec<String>,
    #[serde(default)]
    pub properties: serde_json::Map<String, serde_json::Value>,
    /// The node's static network configuration (API 1.66), when read.
    #[serde(default)]
    pub network_data: Option<serde_json::Value>,
    /// The node's conductor group (`""`: the default group).
    #[serde(default)]
    pub conductor_group: Option<String>,
    /// The node's shard (API 1.82), when read.
    #[serde(default)]
    pub shard: Option<String>,
}

/// A node's power as Ironic shows it.
#[derive(Debug, Clone, Deserialize)]
pub struct PowerRecord {
    pub power_state: Option<String>,
    /// Set while a power change is under way.
    pub target_power_state: Option<String>,
    pub instance_uuid: Option<Uuid>,
    pub last_error: Option<String>,
}

/// A connection to one Ironic: its URL, the negotiated microversion, the credentials.
#[derive(Debug, Clone)]
pub struct IronicApi {
    base: String,
    version: ApiVersion,
    max_version: ApiVersion,
    auth: IronicAuth,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct Root {
    default_version: Option<VersionDoc>,
}

#[derive(Deserialize)]
struct VersionDoc {
    version: String,
    min_version: String,
}

impl IronicApi {
    /// Connects to the Ironic at `url` (`http://host:port`, with or without `/v1`): reads its
    /// version document and settles on the newest version both speak, refusing a server older
    /// than `MIN_VERSION`.
    pub async fn connect(
        url: &str,
        auth: IronicAuth,
        tls: &std::sync::Arc<crate::tls::client::ClientTls>,
    ) -> Result<IronicApi, IronicError> {
        let base = url.trim_end_matches('/').trim_end_matches("/v1").to_owned();
        let client =
            tls.http_client(Duration::from_secs(30))
                .map_err(|error| IronicError::Unreachable {
                    url: base.clone(),
                    reason: crate::tls::with_causes(&error),
                })?;
        let unreachable = |error: reqwest::Error| IronicError::Unreachable {
            url: base.clone(),
            reason: crate::tls::with_causes(&error),
        };
        // Behind Keystone, even the version document goes with the token (it is public in
        // Ironic; a proxy in front may not be).
        let root = with_token(&auth, &base, client.get(format!("{base}/")), false).await?;
        let root: Root = root
            .send()
            .await
            .map_err(unreachable)?
            .json()
            .await
            .map_err(|error| IronicError::BadAnswer {
                what: "its version document".to_owned(),
                reason: crate::tls::with_causes(&error),
            })?;
        let doc = root
            .default_version
            .ok_or_else(|| IronicError::NoVersion { url: base.clone() })?;
        let (Some(min), Some(max)) = (
            ApiVersion::parse(&doc.min_version),
            ApiVersion::parse(&doc.version),
        ) else {
            return Err(IronicError::NoVersion { url: base });
        };
        if max < MIN_VERSION {
            return Err(IronicError::TooOld {
                url: base,
                min,
                max,
            });
        }
        Ok(IronicApi {
            version: max.min(MAX_VERSION),
            max_version: max,
            base,
            auth,
            client,
        })
    }

    /// The microversion this connection speaks.
    pub fn version(&self) -> ApiVersion {
        self.version
    }

    /// The URL of the Ironic (without `/v1`).
    pub fn url(&self) -> &str {
        &self.base
    }

    /// A GET of `path` (under `/v1`) with the version header and the credentials.
    fn get(&self, path_and_query: &str) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::GET, path_and_query)
    }

    /// A request of `path` (under `/v1`) with the version header and the credentials.
    fn request(&self, method: reqwest::Method, path_and_query: &str) -> reqwest::RequestBuilder {
        let request = self
            .client
            .request(method, format!("{}/v1{path_and_query}", self.base))
            .header(VERSION_HEADER, self.version.to_string());
        match &self.auth {
            IronicAuth::None | IronicAuth::Keystone(_) => request,
            IronicAuth::Basic { user, password } => request.basic_auth(user, Some(password)),
        }
    }

    /// `request` with ringmaster's Keystone token, when Ironic takes Keystone tokens (`renew`:
    /// Ironic refused the one held). A Keystone that cannot be asked is an outage: nothing is
    /// done.
    async fn with_token(
        &self,
        request: reqwest::RequestBuilder,
        renew: bool,
    ) -> Result<reqwest::RequestBuilder, IronicError> {
        with_token(&self.auth, &self.base, request, renew).await
    }

    /// Reads node `uuid` (the fields a listing reads).
    pub async fn get_node(&self, uuid: Uuid) -> Result<IronicNodeRecord, IronicError> {
        self.read(
            &format!("/nodes/{uuid}?fields={}", self.node_fields()),
            &format!("the read of node {uuid}"),
        )
        .await
    }

    /// Node `uuid`'s power: its state, the state it is moving to, and its instance.
    pub async fn get_power(&self, uuid: Uuid) -> Result<PowerRecord, IronicError> {
        self.read(
            &format!(
                "/nodes/{uuid}?fields=power_state,target_power_state,instance_uuid,last_error"
            ),
            &format!("the read of node {uuid}'s power"),
        )
        .await
    }

    /// Patches node `uuid` with `ops`.
    pub async fn patch_node(&self, uuid: Uuid, ops: &[PatchOp]) -> Result<(), IronicError> {
        let request = self
            .request(reqwest::Method::PATCH, &format!("/nodes/{uuid}"))
            .json(ops);
        self.send(request, &format!("the update of node {uuid}"))
            .await
    }

    /// Validates node `uuid`'s interfaces; returns each interface's answer by name.
    pub async fn validate_node(
        &self,
        uuid: Uuid,
    ) -> Result<std::collections::BTreeMap<String, InterfaceCheck>, IronicError> {
        self.read(
            &format!("/nodes/{uuid}/validate"),
            &format!("the validation of node {uuid}"),
        )
        .await
    }

    /// Asks Ironic to take node `uuid` to provision state `target` (`active`, `deleted`).
    pub async fn set_provision_state(&self, uuid: Uuid, target: &str) -> Result<(), IronicError> {
        self.set_provision_state_with(uuid, target, None).await
    }

    /// As `set_provision_state`, with a config drive for Ironic to build (API 1.56 takes its
    /// `meta_data`/`user_data` as JSON).
    pub async fn set_provision_state_with(
        &self,
        uuid: Uuid,
        target: &str,
        configdrive: Option<serde_json::Value>,
    ) -> Result<(), IronicError> {
        let mut body = serde_json::json!({ "target": target });
        if let Some(drive) = configdrive {
            body["configdrive"] = drive;
        }
        let request = self
            .request(
                reqwest::Method::PUT,
                &format!("/nodes/{uuid}/states/provision"),
            )
            .json(&body);
        self.send(
            request,
            &format!("the provision request {target:?} for node {uuid}"),
        )
        .await
    }

    /// Asks for power target `target` (`power on`, `soft power off`, `rebooting`, …) of node
    /// `uuid`; a soft target gives up after `timeout_secs`.
    pub async fn set_power_state(
        &self,
        uuid: Uuid,
        target: &str,
        timeout_secs: Option<u64>,
    ) -> Result<(), IronicError> {
        let mut body = serde_json::json!({ "target": target });
        if let Some(timeout) = timeout_secs {
            body["timeout"] = serde_json::json!(timeout);
        }
        let request = self
            .request(reqwest::Method::PUT, &format!("/nodes/{uuid}/states/power"))
            .json(&body);
        self.send(
            request,
            &format!("the power request {target:?} for node {uuid}"),
        )
        .await
    }

    /// Sends a write and reads only its status; `what` names it in errors.
    async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> Result<(), IronicError> {
        self.answer(request, what).await.map(drop)
    }

    /// Sends `request`; returns its answer when it succeeded, else why not (`what` names it).
    async fn answer(
        &self,
        request: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<reqwest::Response, IronicError> {
        let keystone = matches!(self.auth, IronicAuth::Keystone(_));
        let mut renewed = false;
        loop {
            let attempt = request.try_clone().ok_or_else(|| IronicError::BadAnswer {
                what: what.to_owned(),
                reason: "the request cannot be sent twice".to_owned(),
            })?;
            let response = self
                .with_token(attempt, renewed)
                .await?
                .send()
                .await
                .map_err(|error| IronicError::Unreachable {
                    url: self.base.clone(),
                    reason: crate::tls::with_causes(&error),
                })?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            // A token Ironic refuses (expired, revoked): a new one, once.
            if status.as_u16() == 401 && keystone && !renewed {
                renewed = true;
                continue;
            }
            let detail = fault_text(&response.text().await.unwrap_or_default());
            let detail = if status.as_u16() == 401 && keystone {
                format!("Ironic refused ringmaster's Keystone token, renewed once: {detail}")
            } else {
                detail
            };
            return Err(IronicError::Refused {
                what: what.to_owned(),
                status: status.as_u16(),
                detail,
            });
        }
    }

    /// GETs `path` and reads its JSON answer; `what` names it in errors.
    async fn read<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        what: &str,
    ) -> Result<T, IronicError> {
        self.answer(self.get(path), what)
            .await?
            .json()
            .await
            .map_err(|error| IronicError::BadAnswer {
                what: what.to_owned(),
                reason: crate::tls::with_causes(&error),
            })
    }
}

/// `request` with ringmaster's Keystone token when `auth` is Keystone's (`renew`: the one held
/// was refused); a Keystone that cannot give one is an outage of Ironic at `base`.
async fn with_token(
    auth: &IronicAuth,
    base: &str,
    request: reqwest::RequestBuilder,
    renew: bool,
) -> Result<reqwest::RequestBuilder, IronicError> {
    let IronicAuth::Keystone(keystone) = auth else {
        return Ok(request);
    };
    let token = keystone
        .own_token(renew)
        .await
        .map_err(|error| IronicError::Unreachable {
            url: base.to_owned(),
            reason: format!("no Keystone token for Ironic: {error}"),
        })?;
    Ok(request.header("X-Auth-Token", token))
}

/// Ironic's error text: the `faultstring` inside its `error_message` envelope when there is
/// one, else the body as it came; at most 300 characters.
fn fault_text(body: &str) -> String {
    #[derive(Deserialize)]
    struct Envelope {
        error_message: String,
    }
    #[derive(Deserialize)]
    struct Fault {
        faultstring: String,
    }
    let text = serde_json::from_str::<Envelope>(body)
        .ok()
        .map(|envelope| {
            serde_json::from_str::<Fault>(&envelope.error_message)
                .map(|fault| fault.faultstring)
                .unwrap_or(envelope.error_message)
        })
        .unwrap_or_else(|| body.to_owned());
    text.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_and_order_as_numbers() {
        assert_eq!(ApiVersion::parse("1.115"), Some(ApiVersion(1, 115)));
        assert!(ApiVersion(1, 115) > ApiVersion(1, 82));
        assert!(ApiVersion(1, 9) < MIN_VERSION);
        assert_eq!(ApiVersion::parse("one"), None);
        assert_eq!(ApiVersion(1, 46).to_string(), "1.46");
    }

    #[test]
    fn ironic_faults_are_read_out_of_their_envelope() {
        let body = r#"{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node x is locked by host c1, please retry after the current operation is completed.\", \"debuginfo\": null}"}"#;
        let text = fault_text(body);
        assert!(text.starts_with("Node x is locked by host c1"), "{text}");
        let locked = IronicError::Refused {
            what: "w".into(),
            status: 409,
            detail: text,
        };
        assert!(locked.is_node_locked());
        assert_eq!(fault_text("plain"), "plain");
    }
}
