//! Keystone as the authority on who calls, as keystonemiddleware's `auth_token` does
//! it: ringmaster logs in as its service user (password, project-scoped), and validates each
//! caller's token with `GET /v3/auth/tokens` (its own token in `X-Auth-Token`, the caller's in
//! `X-Subject-Token`). A valid token's user, project and roles are cached until the token
//! expires or the cache lifetime ends, whichever is first (a short lifetime is how revocation
//! is honoured). The cache is bounded ([`CACHE_LIMIT`]; the least recently used token leaves
//! first, never the whole cache), and a token is validated once however many requests carry it
//! at the same moment: they wait on the one validation. A refused token is not cached. A
//! Keystone that cannot be reached is `Unavailable`: the caller gets 503, never an open door.
//!
//! The gateway to Keystone, as `ironic_api` is to Ironic: IO and the cache, no policy.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Deserialize;

/// Tokens cached at most (their identities); past it, the least recently used leave.
pub const CACHE_LIMIT: u64 = 10_000;

/// A validated token's identity, and how long it is believed.
#[derive(Clone)]
struct Cached {
    identity: Identity,
    lifetime: Duration,
}

/// Each entry lives until its token ends or the cache lifetime does, whichever is first.
struct UntilTokenEnds;

impl moka::Expiry<String, Cached> for UntilTokenEnds {
    fn expire_after_create(&self, _: &String, cached: &Cached, _: Instant) -> Option<Duration> {
        Some(cached.lifetime)
    }
}

/// ringmaster's own credentials in Keystone.
#[derive(Clone)]
pub struct KeystoneSettings {
    /// Keystone's identity endpoint, `http://host:5000/v3` (with or without `/v3`).
    pub url: String,
    pub user: String,
    pub password: String,
    pub project: String,
    pub user_domain: String,
    pub project_domain: String,
    /// How long a validated token is believed without asking again.
    pub cache_lifetime: Duration,
    /// How Keystone's certificate is checked.
    pub tls: std::sync::Arc<crate::tls::client::ClientTls>,
    /// The region whose endpoints the catalog gives (`--region-name`); any without it.
    pub region: Option<String>,
}

impl std::fmt::Debug for KeystoneSettings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("KeystoneSettings")
            .field("url", &self.url)
            .field("user", &self.user)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

/// A user's password login, scoped to a project (domains by name).
#[derive(Clone, Copy)]
pub struct Credentials<'a> {
    pub user: &'a str,
    pub password: &'a str,
    pub user_domain: &'a str,
    pub project: &'a str,
    pub project_domain: &'a str,
}

/// Who a valid token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user_id: String,
    pub user_name: String,
    pub project_id: String,
    /// The project's name (empty when the token is not project-scoped).
    pub project_name: String,
    /// Whether the token is system-scoped (`"system": {"all": true}`).
    pub system_scope: bool,
    pub roles: Vec<String>,
}

impl Identity {
    /// Whether the token carries `role` (Keystone lists implied roles too: admin → member →
    /// reader).
    pub fn has_role(&self, role: &str) -> bool {
        self.roles
            .iter()
            .any(|held| held.eq_ignore_ascii_case(role))
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeystoneError {
    /// Keystone does not know the token (unknown, expired, revoked): 401.
    #[error("the token is not valid (unknown, expired or revoked)")]
    Invalid,
    /// Keystone could not be asked (down, refusing ringmaster's own credentials): 503.
    #[error("Keystone cannot validate tokens now: {0}")]
    Unavailable(String),
}

/// A connection to Keystone with its token cache.
pub struct Keystone {
    settings: KeystoneSettings,
    base: String,
    client: reqwest::Client,
    service_token: tokio::sync::Mutex<Option<(String, DateTime<Utc>)>>,
    cache: moka::future::Cache<String, Cached>,
}

#[derive(Deserialize)]
struct TokenBody {
    token: TokenDoc,
}

#[derive(Deserialize)]
struct TokenDoc {
    expires_at: DateTime<Utc>,
    user: Named,
    project: Option<Named>,
    #[serde(default)]
    system: Option<serde_json::Value>,
    #[serde(default)]
    roles: Vec<Named>,
}

#[derive(Deserialize)]
struct Named {
    id: String,
    #[serde(default)]
    name: String,
}

impl Keystone {
    /// A connection to the Keystone `settings` names; nothing is asked yet.
    pub fn new(settings: KeystoneSettings) -> Result<Keystone, KeystoneError> {
        let base = settings
            .url
            .trim_end_matches('/')
            .trim_end_matches("/v3")
            .to_owned();
        let client = settings
            .tls
            .http_client(Duration::from_secs(10))
            .map_err(|error| KeystoneError::Unavailable(crate::tls::with_causes(&error)))?;
        Ok(Keystone {
            settings,
            base,
            client,
            service_token: tokio::sync::Mutex::new(None),
            cache: moka::future::Cache::builder()
                .max_capacity(CACHE_LIMIT)
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .expire_after(UntilTokenEnds)
                .build(),
        })
    }

    /// How the services found in Keystone's catalog are trusted (its own trust).
    pub fn tls(&self) -> std::sync::Arc<crate::tls::client::ClientTls> {
        self.settings.tls.clone()
    }

    /// The identity endpoint (`…/v3`).
    pub fn url(&self) -> String {
        format!("{}/v3", self.base)
    }

    /// Returns who `token` belongs to, from the cache or from Keystone. Concurrent calls with
    /// one token not yet cached wait on a single validation; a refusal is not cached.
    pub async fn validate(&self, token: &str) -> Result<Identity, KeystoneError> {
        self.cache
            .try_get_with_by_ref(token, self.ask(token))
            .await
            .map(|cached| cached.identity)
            .map_err(|error| (*error).clone())
    }

    /// The tokens the cache holds now (its pending evictions done first).
    pub async fn cached_tokens(&self) -> u64 {
        self.cache.run_pending_tasks().await;
        self.cache.entry_count()
    }

    /// Asks Keystone who `token` belongs to, and for how long to believe it.
    async fn ask(&self, token: &str) -> Result<Cached, KeystoneError> {
        let mut retried = false;
        loop {
            let service = self.service_token(retried).await?;
            let response = self
                .client
                .get(format!("{}/v3/auth/tokens", self.base))
                .header("X-Auth-Token", &service)
                .header("X-Subject-Token", token)
                .send()
                .await
                .map_err(|error| KeystoneError::Unavailable(crate::tls::with_causes(&error)))?;
            match response.status().as_u16() {
                200 => {
                    let body: TokenBody = response.json().await.map_err(|error| {
                        KeystoneError::Unavailable(crate::tls::with_causes(&error))
                    })?;
                    let left = (body.token.expires_at - Utc::now())
                        .to_std()
                        .unwrap_or(Duration::ZERO);
                    return Ok(Cached {
                        identity: identity_of(&body.token),
                        lifetime: left.min(self.settings.cache_lifetime),
                    });
                }
                404 => return Err(KeystoneError::Invalid),
                // Our own token was refused (expired, revoked): log in again, once.
                401 | 403 if !retried => retried = true,
                status => {
                    return Err(KeystoneError::Unavailable(format!(
                        "Keystone answered {status} to a token validation"
                    )));
                }
            }
        }
    }

    /// The public endpoint of `service_type` (`image`) in the catalog of ringmaster's own
    /// token; `None` when the catalog has none.
    pub async fn endpoint(&self, service_type: &str) -> Result<Option<String>, KeystoneError> {
        self.endpoint_in(service_type, &["public".to_owned()]).await
    }

    /// The endpoint of `service_type` of the first of `interfaces` (`internal`, `public`,
    /// `admin`) the catalog has, in `--region-name`'s region when one is set, as keystoneauth's
    /// `valid_interfaces` chooses; `None` when the catalog has none.
    pub async fn endpoint_in(
        &self,
        service_type: &str,
        interfaces: &[String],
    ) -> Result<Option<String>, KeystoneError> {
        let service = self.service_token(false).await?;
        let response = self
            .client
            .get(format!("{}/v3/auth/catalog", self.base))
            .header("X-Auth-Token", &service)
            .send()
            .await
            .map_err(|error| KeystoneError::Unavailable(crate::tls::with_causes(&error)))?;
        if response.status().as_u16() != 200 {
            return Err(KeystoneError::Unavailable(format!(
                "Keystone answered {} to GET /v3/auth/catalog",
                response.status()
            )));
        }
        let body: serde_json::Value = response
            .json()
            .await
            .map_err(|error| KeystoneError::Unavailable(crate::tls::with_causes(&error)))?;
        let endpoints = body["catalog"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|entry| entry["type"].as_str() == Some(service_type))
            .flat_map(|entry| entry["endpoints"].as_array().into_iter().flatten());
        let region = self.settings.region.as_deref();
        let endpoints: Vec<&serde_json::Value> = endpoints
            .filter(|endpoint| {
                region.is_none_or(|region| {
                    endpoint["region_id"].as_str() == Some(region)
                        || endpoint["region"].as_str() == Some(region)
                })
            })
            .collect();
        Ok(interfaces.iter().find_map(|interface| {
            endpoints
                .iter()
                .filter(|endpoint| endpoint["interface"].as_str() == Some(interface.as_str()))
                .find_map(|endpoint| endpoint["url"].as_str().map(str::to_owned))
        }))
    }

    /// ringmaster's own token, for the services it calls (Ironic): logged in once, again when
    /// it nears its end or `renew` says it was refused.
    pub async fn own_token(&self, renew: bool) -> Result<String, KeystoneError> {
        self.service_token(renew).await
    }

    /// ringmaster's own token: logged in once, again when it nears its end or `renew` says
    /// Keystone refused it.
    async fn service_token(&self, renew: bool) -> Result<String, KeystoneError> {
        let mut held = self.service_token.lock().await;
        if let Some((token, expires_at)) = held.as_ref()
            && !renew
            && *expires_at - chrono::Duration::seconds(60) > Utc::now()
        {
            return Ok(token.clone());
        }
        let settings = &self.settings;
        let credentials = Credentials {
            user: &settings.user,
            password: &settings.password,
            user_domain: &settings.user_domain,
            project: &settings.project,
            project_domain: &settings.project_domain,
        };
        let (token, expires_at) = match self.login(&credentials).await {
            Ok(login) => login,
            Err(KeystoneError::Invalid) => {
                return Err(KeystoneError::Unavailable(format!(
                    "Keystone refused ringmaster's own login as {}",
                    settings.user
                )));
            }
            Err(error) => return Err(error),
        };
        *held = Some((token.clone(), expires_at));
        Ok(token)
    }

    /// Logs a user in with a password, scoped to a project (ringmaster's own login, the
    /// dashboard's); returns the token and its end. Wrong credentials are `Invalid`.
    pub async fn login(
        &self,
        credentials: &Credentials<'_>,
    ) -> Result<(String, DateTime<Utc>), KeystoneError> {
        let body = serde_json::json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": credentials.user, "password": credentials.password,
                "domain": {"name": credentials.user_domain}}}},
            "scope": {"project": {"name": credentials.project,
                                  "domain": {"name": credentials.project_domain}}}}});
        let response = self
            .client
            .post(format!("{}/v3/auth/tokens", self.base))
            .json(&body)
            .send()
            .await
            .map_err(|error| KeystoneError::Unavailable(crate::tls::with_causes(&error)))?;
        match response.status().as_u16() {
            201 => {}
            // Unknown user, wrong password, no role on the project (or no such project).
            400 | 401 | 403 | 404 => return Err(KeystoneError::Invalid),
            status => {
                return Err(KeystoneError::Unavailable(format!(
                    "Keystone answered {status} to a login"
                )));
            }
        }
        let token = response
            .headers()
            .get("x-subject-token")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| KeystoneError::Unavailable("no X-Subject-Token".to_owned()))?;
        let doc: TokenBody = response
            .json()
            .await
            .map_err(|error| KeystoneError::Unavailable(crate::tls::with_causes(&error)))?;
        Ok((token, doc.token.expires_at))
    }
}

fn identity_of(token: &TokenDoc) -> Identity {
    Identity {
        user_id: token.user.id.clone(),
        user_name: token.user.name.clone(),
        project_id: token
            .project
            .as_ref()
            .map(|project| project.id.clone())
            .unwrap_or_default(),
        project_name: token
            .project
            .as_ref()
            .map(|project| project.name.clone())
            .unwrap_or_default(),
        system_scope: token
            .system
            .as_ref()
            .is_some_and(|system| system["all"] == true),
        roles: token.roles.iter().map(|role| role.name.clone()).collect(),
    }
}
