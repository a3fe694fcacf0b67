//! `Config`: everything a ringmaster process is told, built once from the command line and
//! environment and passed down; nothing reads the environment after this.

use std::fmt;
use std::net::ToSocketAddrs;

use std::time::Duration;

use crate::db::cluster::ClusterOptions;
use crate::domain::host::Liveness;
use crate::domain::ring::RingAlgorithm;

/// Where the database is.
#[derive(Debug, Clone)]
pub enum DatabaseSource {
    /// An existing PostgreSQL server (DATABASE_URL).
    Url(DatabaseUrl),
    /// The embedded cluster in a data directory.
    Embedded(ClusterOptions),
}

/// A database URL; kept out of logs and debug output, since it may hold a password.
#[derive(Clone)]
pub struct DatabaseUrl(pub String);

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("DatabaseUrl(..)")
    }
}

/// The admin token that mutating requests must carry; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

impl AdminToken {
    /// Wraps a token; an empty token is no token.
    pub fn new(token: &str) -> Option<AdminToken> {
        let token = token.trim();
        (!token.is_empty()).then(|| AdminToken(token.to_owned()))
    }

    /// Compares `presented` with the token in time independent of where they differ and of
    /// the length of either: their SHA-256 digests are compared in constant time.
    pub fn matches(&self, presented: &str) -> bool {
        use sha2::Digest as _;
        use subtle::ConstantTimeEq as _;
        let expected = sha2::Sha256::digest(self.0.as_bytes());
        let presented = sha2::Sha256::digest(presented.as_bytes());
        expected.as_slice().ct_eq(presented.as_slice()).into()
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("AdminToken(..)")
    }
}

/// How the Placement API authorizes callers and answers browsers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementSettings {
    pub policy: crate::domain::placement::PolicyProfile,
    /// Origins allowed cross-origin requests (CORS); none: no CORS headers at all.
    pub cors_origins: Vec<String>,
    /// Request headers a cross-origin request may send.
    pub cors_headers: Vec<String>,
    /// How allocation candidates are generated.
    pub candidates: CandidateSettings,
}

/// How allocation candidates are generated (`--placement-max-allocation-candidates`,
/// `--placement-candidates-strategy`, `--placement-randomize-candidates`,
/// `--placement-candidates-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CandidateSettings {
    /// The most candidates one request generates; `None`: no cap.
    pub cap: Option<usize>,
    pub strategy: crate::domain::candidates::Strategy,
    pub randomize: bool,
    /// How long one request may compute.
    pub timeout: std::time::Duration,
}

/// The default cap: a documented divergence from Placement's -1 (no cap), so that one request
/// cannot take the process's memory.
pub const DEFAULT_CANDIDATE_CAP: usize = 1000;

impl Default for CandidateSettings {
    fn default() -> Self {
        CandidateSettings {
            cap: Some(DEFAULT_CANDIDATE_CAP),
            strategy: crate::domain::candidates::Strategy::DepthFirst,
            randomize: false,
            timeout: std::time::Duration::from_secs(30),
        }
    }
}

/// The HTTP server's settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `host:port` to listen on; port 0 picks a free port.
    pub bind: String,
    pub admin_token: Option<AdminToken>,
    pub placement: PlacementSettings,
    /// Whether the server stops on SIGINT/SIGTERM (off for servers inside tests).
    pub handle_signals: bool,
    /// How long a database that does not answer is ridden out before the process gives up.
    pub database_grace: std::time::Duration,
    /// Names a `Host` header may carry besides IP literals and `localhost` (the name in
    /// `bind` is added).
    pub allowed_hosts: Vec<String>,
    /// Event streams served at once, by the process and per client address.
    pub event_streams: StreamLimits,
    /// How long a client may take to send a request body.
    pub body_timeout: std::time::Duration,
    /// Keystone, when it authenticates callers (`--auth-strategy keystone`).
    pub keystone: Option<crate::keystone::KeystoneSettings>,
    /// Where the Compute API resolves images.
    pub images: ImageSettings,
    /// TLS, trusted proxies, and who may read what.
    pub access: AccessSettings,
    /// What else SIGHUP does (besides reading the certificates again): the log levels.
    pub hangup: HangupHooks,
    /// The listener bound before the start touched anything (`serve`, `demo`); else `bind` is
    /// bound when the server is built.
    pub listener: BoundListener,
}

/// A listener bound ahead of the server, so that a port in use stops a start before its
/// database is initialized or its nodes enrolled, and nothing takes the port meanwhile.
#[derive(Debug, Clone, Default)]
pub struct BoundListener(pub Option<std::sync::Arc<std::net::TcpListener>>);

impl BoundListener {
    /// Binds `bind` now.
    pub fn bind(bind: &str) -> std::io::Result<BoundListener> {
        let listener = std::net::TcpListener::bind(bind)?;
        Ok(BoundListener(Some(std::sync::Arc::new(listener))))
    }

    /// The bound listener (a new handle on it), or `bind` bound now.
    pub fn take_or_bind(&self, bind: &str) -> std::io::Result<std::net::TcpListener> {
        match &self.0 {
            Some(listener) => listener.try_clone(),
            None => std::net::TcpListener::bind(bind),
        }
    }
}

/// Work SIGHUP runs, each hook on a blocking thread.
#[derive(Clone, Default)]
pub struct HangupHooks(pub Vec<std::sync::Arc<dyn Fn() + Send + Sync>>);

impl fmt::Debug for HangupHooks {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "HangupHooks({})", self.0.len())
    }
}

/// How the listener is reached and who may read what.
#[derive(Debug, Clone)]
pub struct AccessSettings {
    /// Serve HTTPS with this certificate and key (`--tls-cert`, `--tls-key`).
    pub tls: Option<crate::tls::server::TlsFiles>,
    /// Proxies whose `Forwarded`/`X-Forwarded-Proto` are believed (`--trusted-proxies`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// `/metrics` answers anyone (loopback by default, or `--metrics-public`).
    pub metrics_open: bool,
    /// A token that `/metrics` takes besides the admin credentials (`--metrics-token-file`).
    pub metrics_token: Option<AdminToken>,
    /// The Keystone project whose `reader`/`admin` members may read the admin API.
    pub admin_project: String,
}

impl Default for AccessSettings {
    fn default() -> AccessSettings {
        AccessSettings {
            tls: None,
            trusted_proxies: Vec::new(),
            metrics_open: true,
            metrics_token: None,
            admin_project: "admin".to_owned(),
        }
    }
}

/// Where the Compute API finds images, and how the deploying Ironic reads them.
#[derive(Debug, Clone, Default)]
pub struct ImageSettings {
    /// The image service (`--glance-url`); without it, the `image` endpoint of Keystone's
    /// catalog, if Keystone authenticates callers.
    pub glance_url: Option<String>,
    /// The real Ironic reads images from Glance as this project (`--ironic-glance-project`).
    pub ironic_glance_project: Option<String>,
    /// Whether a real Ironic deploys (`--ironic-url`); the simulated one takes any image.
    pub real_ironic: bool,
}

/// How many event streams are served at once: beyond, 503.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    pub per_process: usize,
    pub per_client: usize,
}

impl Default for StreamLimits {
    fn default() -> StreamLimits {
        StreamLimits {
            per_process: 256,
            per_client: 16,
        }
    }
}

/// Says why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot use --bind {bind}: {reason}")]
    BadBind { bind: String, reason: String },
    #[error("{0}")]
    Invalid(String),
    #[error(
        "refusing to listen on {bind} without an admin token: it is not a loopback address, so \
         set --admin-token (or RINGMASTER_ADMIN_TOKEN), or bind 127.0.0.1"
    )]
    AdminTokenRequired { bind: String },
}

impl ServerConfig {
    /// Checks that the bind address resolves and that a non-loopback address has a token.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let addresses: Vec<_> = self
            .bind
            .to_socket_addrs()
            .map_err(|error| ConfigError::BadBind {
                bind: self.bind.clone(),
                reason: error.to_string(),
            })?
            .collect();
        if addresses.is_empty() {
            return Err(ConfigError::BadBind {
                bind: self.bind.clone(),
                reason: "it resolves to no address".to_owned(),
            });
        }
        let all_loopback = addresses.iter().all(|address| address.ip().is_loopback());
        if !all_loopback && self.admin_token.is_none() {
            return Err(ConfigError::AdminTokenRequired {
                bind: self.bind.clone(),
            });
        }
        Ok(())
    }
}

/// Everything `serve` and `demo` run with.
#[derive(Debug, Clone)]
pub struct Config {
    pub database: DatabaseSource,
    pub pool_size: u32,
    pub server: ServerConfig,
    pub deployment: DeploymentConfig,
}

/// What this process runs of the deployment.
#[derive(Debug, Clone)]
pub struct DeploymentConfig {
    /// The compute hosts this process runs.
    pub hosts: Vec<String>,
    /// Nodes to enroll when Ironic has none.
    pub nodes: Option<u32>,
    /// Their Ironic resource class.
    pub resource_class: String,
    /// How often to archive deleted rows; `None` for never.
    pub archive_interval: Option<std::time::Duration>,
    pub actors: ActorSettings,
    /// A real Ironic to take the nodes from; `None`: the simulated one.
    pub ironic: Option<IronicSettings>,
}

impl DeploymentConfig {
    /// A process that runs the actors alone, timed by `actors`: no compute host, no node
    /// enrolled, no archive schedule, the simulated Ironic (message scripts, tests and benches
    /// start hosts and enroll nodes by message).
    pub fn actors_only(actors: ActorSettings) -> DeploymentConfig {
        DeploymentConfig {
            hosts: Vec::new(),
            nodes: None,
            resource_class: "baremetal".to_owned(),
            archive_interval: None,
            actors,
            ironic: None,
        }
    }
}

/// A real Ironic as the node source.
#[derive(Debug, Clone)]
pub struct IronicSettings {
    /// Ironic's API endpoint, `http://host:port` (with or without `/v1`).
    pub url: String,
    pub auth: crate::ironic_api::IronicAuth,
    /// Only the nodes of this conductor group or shard.
    pub selection: crate::ironic_api::NodeSelection,
    /// The image every deploy asks for (`instance_info/image_source`).
    pub image_source: String,
    /// How often a deploy or a tear-down reads the node while Ironic works on it.
    pub poll_interval: Duration,
    /// How long a deploy or a tear-down may take before it fails.
    pub deploy_timeout: Duration,
    /// How often a request refused with `409 NodeLocked` is sent again, with backoff.
    pub lock_retries: u32,
    /// The most nodes one listing may take for gone at once (`--ironic-vanish-limit`).
    pub vanish_limit: crate::domain::mirror::VanishLimit,
    /// How Ironic's certificate is checked, and the client certificate sent.
    pub tls: std::sync::Arc<crate::tls::client::ClientTls>,
    /// Ironic is found at start in Keystone's catalog (`baremetal`), on the first of these
    /// interfaces it has (`url` is empty until then); no entry: the simulated Ironic.
    pub catalog: Option<Vec<String>>,
}

impl IronicSettings {
    /// Settings for the Ironic at `url` with no credentials and the defaults.
    pub fn new(url: &str) -> IronicSettings {
        IronicSettings {
            url: url.to_owned(),
            auth: crate::ironic_api::IronicAuth::None,
            selection: crate::ironic_api::NodeSelection::default(),
            image_source: DEFAULT_IMAGE_SOURCE.to_owned(),
            poll_interval: Duration::from_millis(500),
            deploy_timeout: Duration::from_secs(1800),
            tls: crate::tls::client::ClientTls::system(),
            catalog: None,
            lock_retries: 8,
            vanish_limit: crate::domain::mirror::VanishLimit::default(),
        }
    }
}

/// The image a deploy asks for unless told otherwise.
pub const DEFAULT_IMAGE_SOURCE: &str = "http://127.0.0.1/images/ringmaster.qcow2";

/// The actors' settings.
#[derive(Debug, Clone, Copy)]
pub struct ActorSettings {
    pub host: HostSettings,
    pub rebalancer: RebalancerSettings,
}

impl ActorSettings {
    /// Returns what the audit judges time by: `now`, and this deployment's build timeout.
    pub fn audit_clock(&self, now: chrono::DateTime<chrono::Utc>) -> crate::db::audit::AuditClock {
        crate::db::audit::AuditClock {
            now,
            build_timeout: chrono::Duration::from_std(self.host.instance_build_timeout)
                .unwrap_or(chrono::Duration::MAX),
        }
    }

    /// Returns settings with every timer off, so that tests and benchmarks drive the actors by
    /// message (`Heartbeat`, `UpdateAvailableResource`, `RebalanceNow`).
    pub fn driven_by_messages(service_down_time: chrono::Duration) -> ActorSettings {
        let liveness = crate::domain::host::Liveness::with_down_time(service_down_time);
        ActorSettings {
            host: HostSettings {
                report_interval: std::time::Duration::ZERO,
                update_resources_interval: std::time::Duration::ZERO,
                liveness,
                pci_devices_per_node: 2,
                instance_build_timeout: std::time::Duration::from_secs(600),
                max_build_attempts: 3,
                build_failure_cooldown: std::time::Duration::from_secs(300),
            },
            rebalancer: RebalancerSettings {
                interval: std::time::Duration::ZERO,
                liveness,
                algorithm: crate::domain::ring::RingAlgorithm::Default,
                max_join_moves: 1_000,
                lease: service_down_time / 2,
            },
        }
    }
}

impl HostSettings {
    /// Nodes whose build failed after this are cooling down at `now`.
    pub fn cooling_after(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> chrono::DateTime<chrono::Utc> {
        // At most a century: PostgreSQL's timestamps end long before chrono's.
        let century = chrono::Duration::days(36_525);
        let cooldown = chrono::Duration::from_std(self.build_failure_cooldown)
            .map_or(century, |cooldown| cooldown.min(century));
        now.checked_sub_signed(cooldown).unwrap_or(now)
    }
}

/// How often a host works; a zero interval turns that timer off (tests send the messages).
#[derive(Debug, Clone, Copy)]
pub struct HostSettings {
    pub report_interval: Duration,
    pub update_resources_interval: Duration,
    pub liveness: Liveness,
    /// Simulated PCI devices each node carries.
    pub pci_devices_per_node: u32,
    /// A build with no progress for this long ends in error, its claim released.
    pub instance_build_timeout: Duration,
    /// Attempts a build may make, on its first node and alternates (`--max-build-attempts`).
    pub max_build_attempts: u32,
    /// How long a node whose build failed is not offered (`--build-failure-cooldown`).
    pub build_failure_cooldown: Duration,
}

/// How the rebalancer works.
#[derive(Debug, Clone, Copy)]
pub struct RebalancerSettings {
    /// Time between ticks; zero turns the timer off (tests send `RebalanceNow`).
    pub interval: Duration,
    pub liveness: Liveness,
    pub algorithm: RingAlgorithm,
    /// The most nodes a joining host pulls in one tick.
    pub max_join_moves: usize,
    /// How long leadership lasts without a renewal.
    pub lease: chrono::Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(bind: &str, token: Option<&str>) -> ServerConfig {
        ServerConfig {
            bind: bind.to_owned(),
            admin_token: token.and_then(AdminToken::new),
            placement: PlacementSettings::default(),
            handle_signals: false,
            database_grace: std::time::Duration::from_secs(60),
            allowed_hosts: Vec::new(),
            event_streams: StreamLimits::default(),
            body_timeout: std::time::Duration::from_secs(15),
            keystone: None,
            images: ImageSettings::default(),
            access: AccessSettings::default(),
            hangup: HangupHooks::default(),
            listener: BoundListener::default(),
        }
    }

    #[test]
    fn loopback_needs_no_token() {
        assert!(server("127.0.0.1:0", None).validate().is_ok());
        assert!(server("[::1]:0", None).validate().is_ok());
    }

    #[test]
    fn any_other_address_needs_a_token() {
        let error = server("0.0.0.0:8080", None).validate().unwrap_err();
        assert!(
            error.to_string().contains("without an admin token"),
            "{error}"
        );
        assert!(server("0.0.0.0:8080", Some("s3cret")).validate().is_ok());
    }

    #[test]
    fn a_blank_token_is_no_token() {
        assert!(AdminToken::new("  ").is_none());
    }

    #[test]
    fn token_matches_only_itself() {
        let token = AdminToken::new("s3cret").unwrap();
        assert!(token.matches("s3cret"));
        assert!(!token.matches("s3cre"));
        assert!(!token.matches("s3cretx"));
        assert!(!token.matches(""));
    }

    #[test]
    fn unparseable_bind_is_an_error() {
        assert!(matches!(
            server("nonsense", None).validate(),
            Err(ConfigError::BadBind { .. })
        ));
    }
}
