//! `serve`'s and `demo`'s flags and the `Config` they make: the process's settings, checked
//! together (a report interval the down time allows, a lease the rebalance interval allows, host
//! names, secrets read from their files).

use std::time::Duration;

use clap::Args;

use super::{access, builds, glance, ironic, keystone, parse_duration, placement, read_secret};
use crate::actors::ActorSettings;
use crate::actors::compute_host::HostSettings;
use crate::actors::rebalancer::RebalancerSettings;
use crate::config::{
    AdminToken, Config, ConfigError, DatabaseSource, DeploymentConfig, ServerConfig,
};
use crate::domain::host::Liveness;
use crate::domain::ring::RingAlgorithm;

use super::DatabaseArgs;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (host:port).
    #[arg(long, env = "RINGMASTER_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Token every mutating request must carry; required to bind a non-loopback address. On
    /// the command line it shows in the process list: prefer --admin-token-file or the
    /// environment.
    #[arg(long, env = "RINGMASTER_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// File whose first line is the admin token.
    #[arg(long, env = "RINGMASTER_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<std::path::PathBuf>,
    /// Names the server answers to besides IP addresses and localhost (comma-separated): a
    /// request whose Host header names anything else is refused (DNS rebinding).
    #[arg(long, env = "RINGMASTER_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    /// How long a client may take to send a request body; slower ones get 408 and are closed.
    #[arg(long, env = "RINGMASTER_BODY_TIMEOUT", default_value = "15s", value_parser = parse_duration)]
    pub body_timeout: Duration,
    /// Event streams (GET /api/v1/events) served at once; beyond, 503.
    #[arg(long, env = "RINGMASTER_MAX_EVENT_STREAMS", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_event_streams: u32,
    /// Event streams one client address may hold at once; beyond, 503.
    #[arg(long, env = "RINGMASTER_MAX_EVENT_STREAMS_PER_CLIENT", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_event_streams_per_client: u32,
    /// Compute services this process runs, comma-separated [demo default: cmp-1,cmp-2,cmp-3].
    #[arg(long, env = "RINGMASTER_HOSTS", value_delimiter = ',')]
    pub hosts: Option<Vec<String>>,
    /// Enroll this many simulated nodes when Ironic has none [demo default: 12].
    #[arg(long, env = "RINGMASTER_NODES", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub nodes: Option<u32>,
    /// Ironic resource class of the nodes --nodes enrolls.
    #[arg(long, env = "RINGMASTER_RESOURCE_CLASS", default_value = "baremetal")]
    pub resource_class: String,
    /// Time between heartbeats of each compute host (2s, 500ms, 1m); at most 3/8 of the down
    /// time [default: 2s, or 3/16 of a down time too short for it].
    #[arg(long, env = "RINGMASTER_REPORT_INTERVAL", value_parser = parse_duration)]
    pub report_interval: Option<Duration>,
    /// A host not heard from for this long is down and its nodes move.
    #[arg(long, env = "RINGMASTER_SERVICE_DOWN_TIME", default_value = "10s", value_parser = parse_duration)]
    pub service_down_time: Duration,
    /// Time between resource-tracker passes of each compute host.
    #[arg(long, env = "RINGMASTER_UPDATE_RESOURCES_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub update_resources_interval: Duration,
    /// Time between rebalancer ticks.
    #[arg(long, env = "RINGMASTER_REBALANCE_INTERVAL", default_value = "1s", value_parser = parse_duration)]
    pub rebalance_interval: Duration,
    /// Hash ring: default (rendezvous, bounded loads) or tooz (Nova's md5 ring, bit for bit).
    #[arg(long, env = "RINGMASTER_RING", default_value = "default")]
    pub ring: RingAlgorithm,
    /// Simulated PCI devices on each node (instances may ask for them).
    #[arg(long, env = "RINGMASTER_PCI_DEVICES", default_value_t = 2)]
    pub pci_devices: u32,
    /// Run archive_deleted_rows on this schedule (off by default), e.g. 1h.
    #[arg(long, env = "RINGMASTER_ARCHIVE_INTERVAL", value_parser = parse_duration)]
    pub archive_interval: Option<Duration>,
    /// The most nodes a joining host pulls in one rebalancer tick.
    #[arg(long, env = "RINGMASTER_MAX_JOIN_MOVES", default_value_t = 1000)]
    pub max_join_moves: usize,
    /// How long rebalancer leadership lasts without a renewal; another process takes over
    /// once it has expired [default: half the service down time, at least 3 rebalance
    /// intervals].
    #[arg(long, env = "RINGMASTER_LEADER_LEASE", value_parser = parse_duration)]
    pub leader_lease: Option<Duration>,
    #[command(flatten)]
    pub builds: builds::BuildArgs,
    /// How long the process rides out a database it cannot reach (a restart, a crash recovery,
    /// a failover) before it exits with an error.
    #[arg(long, env = "RINGMASTER_DATABASE_GRACE", default_value = "60s", value_parser = parse_duration)]
    pub database_grace: Duration,
    #[command(flatten)]
    pub access: access::AccessArgs,
    #[command(flatten)]
    pub ironic: ironic::IronicArgs,
    #[command(flatten)]
    pub glance: glance::GlanceArgs,
    #[command(flatten)]
    pub keystone: keystone::KeystoneArgs,
    #[command(flatten)]
    pub placement: placement::PlacementArgs,
}

/// The admin token, from --admin-token or the first line of --admin-token-file; a token given
/// on the command line is used, with a warning that the process list shows it.
fn admin_token(args: &ServeArgs) -> Result<Option<AdminToken>, ConfigError> {
    if let Some(file) = &args.admin_token_file {
        let token = read_secret("--admin-token-file", file)?;
        return Ok(AdminToken::new(&token));
    }
    if std::env::args().any(|arg| arg == "--admin-token" || arg.starts_with("--admin-token=")) {
        log::warn!(
            "--admin-token on the command line shows in the process list: use \
             --admin-token-file or RINGMASTER_ADMIN_TOKEN"
        );
    }
    Ok(args.admin_token.as_deref().and_then(AdminToken::new))
}

pub(super) fn config(
    database: DatabaseSource,
    database_args: &DatabaseArgs,
    args: ServeArgs,
) -> Result<Config, ConfigError> {
    let down_time = chrono::Duration::from_std(args.service_down_time)
        .map_err(|_| ConfigError::Invalid("--service-down-time is too long".to_owned()))?;
    let liveness = Liveness::with_down_time(down_time);
    let report_interval = report_interval(&args, liveness)?;
    let lease = leader_lease(&args)?;
    args.builds.check()?;
    let hosts = args.hosts.clone().unwrap_or_default();
    check_host_names(&hosts)?;
    let admin_token = admin_token(&args)?;
    let keystone = args.keystone.settings()?;
    let ironic = args.ironic.settings(keystone.as_ref())?;
    let access = args.access.settings(&args.bind)?;
    Ok(Config {
        database,
        pool_size: database_args.db_pool_size,
        server: ServerConfig {
            bind: args.bind,
            admin_token,
            placement: args.placement.settings()?,
            handle_signals: true,
            database_grace: args.database_grace,
            allowed_hosts: args.allowed_hosts.clone(),
            body_timeout: args.body_timeout,
            keystone,
            images: args.glance.settings(ironic.is_some())?,
            access,
            hangup: Default::default(),
            listener: Default::default(),
            event_streams: crate::config::StreamLimits {
                per_process: args.max_event_streams as usize,
                per_client: args.max_event_streams_per_client as usize,
            },
        },
        deployment: DeploymentConfig {
            archive_interval: args.archive_interval,
            hosts,
            nodes: args.nodes,
            resource_class: args.resource_class,
            actors: ActorSettings {
                host: HostSettings {
                    report_interval,
                    update_resources_interval: args.update_resources_interval,
                    liveness,
                    pci_devices_per_node: args.pci_devices,
                    instance_build_timeout: args.builds.instance_build_timeout,
                    max_build_attempts: args.builds.max_build_attempts,
                    build_failure_cooldown: args.builds.build_failure_cooldown,
                },
                rebalancer: RebalancerSettings {
                    interval: args.rebalance_interval,
                    liveness,
                    algorithm: args.ring,
                    max_join_moves: args.max_join_moves,
                    lease,
                },
            },
            ironic,
        },
    })
}

/// The heartbeat interval: as given, or 2 s, or 3/16 of a down time too short for 2 s; at most
/// 3/8 of the down time, so that a live host renews its lease before it fences itself.
fn report_interval(args: &ServeArgs, liveness: Liveness) -> Result<Duration, ConfigError> {
    let report_interval = args.report_interval.unwrap_or_else(|| {
        let usual = Duration::from_secs(2);
        if usual * 8 <= args.service_down_time * 3 {
            usual
        } else {
            args.service_down_time * 3 / 16
        }
    });
    let report = chrono::Duration::from_std(report_interval)
        .map_err(|_| ConfigError::Invalid("--report-interval is too long".to_owned()))?;
    if report_interval.is_zero() || report * 2 > liveness.fence_time {
        return Err(ConfigError::Invalid(format!(
            "--report-interval ({}) must be above zero and at most 3/8 of --service-down-time ({}), so that a \
             live host renews its lease before it fences itself",
            humantime::format_duration(report_interval),
            humantime::format_duration(args.service_down_time)
        )));
    }
    Ok(report_interval)
}

/// The rebalancer's lease: as given, or half the down time (at least three ticks); at least
/// two ticks, so that the leader renews it before it expires.
fn leader_lease(args: &ServeArgs) -> Result<chrono::Duration, ConfigError> {
    let lease = match args.leader_lease {
        Some(lease) => lease,
        None => (args.service_down_time / 2).max(args.rebalance_interval * 3),
    };
    if lease.is_zero()
        || (!args.rebalance_interval.is_zero() && lease < args.rebalance_interval * 2)
    {
        return Err(ConfigError::Invalid(format!(
            "--leader-lease ({}) must be at least twice --rebalance-interval ({}), so that the leader \
             renews it before it expires",
            humantime::format_duration(lease),
            humantime::format_duration(args.rebalance_interval)
        )));
    }
    chrono::Duration::from_std(lease)
        .map_err(|_| ConfigError::Invalid("--leader-lease is too long".to_owned()))
}

/// The longest host name: the database's columns hold 255 characters.
const MAX_HOST_NAME: usize = 255;

/// Host names are 1 to 255 letters, digits, `.`, `-` and `_`, each given once.
fn check_host_names(hosts: &[String]) -> Result<(), ConfigError> {
    let mut seen = std::collections::HashSet::new();
    for host in hosts {
        if !seen.insert(host.as_str()) {
            return Err(ConfigError::Invalid(format!(
                "host {host:?} is given twice in --hosts"
            )));
        }
        if host.is_empty()
            || host.len() > MAX_HOST_NAME
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(ConfigError::Invalid(format!(
                "invalid host name {host:?} in --hosts: a name is 1 to {MAX_HOST_NAME} \
                 letters, digits, '.', '-' and '_'"
            )));
        }
    }
    Ok(())
}
