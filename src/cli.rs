//! The command line (clap): `demo`, `serve`, `db migrate`, and the commands of later issues,
//! which exit non-zero saying they are not implemented yet. Every flag can also come from a
//! `RINGMASTER_*` environment variable; the database URL from `DATABASE_URL`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

mod access;
mod archive;
mod builds;
mod database;
mod glance;
mod ironic;
mod keystone;
mod placement;
mod upgrade;

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::actors::ActorSettings;
use crate::actors::compute_host::HostSettings;
use crate::actors::rebalancer::{RebalancerSettings, Resign};
use crate::app::{self, AppError};
use crate::config::{
    AdminToken, Config, ConfigError, DatabaseSource, DatabaseUrl, DeploymentConfig, ServerConfig,
};
use crate::db::DbError;
use crate::db::cluster::{self, ClusterOptions};
use crate::db::database::OpenError;
use crate::db::scratch::ScratchServer;
use crate::domain::host::Liveness;
use crate::domain::ring::RingAlgorithm;

/// The compute hosts `demo` runs unless told otherwise.
const DEMO_HOSTS: &[&str] = &["cmp-1", "cmp-2", "cmp-3"];
/// The nodes `demo` enrolls unless told otherwise.
const DEMO_NODES: u32 = 12;

/// ringmaster: a control plane for bare-metal (ironic) compute.
#[derive(Debug, Parser)]
#[command(name = "ringmaster", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Log lines as text or as JSON objects (levels from RUST_LOG, default info).
    #[arg(
        long,
        env = "RINGMASTER_LOG_FORMAT",
        global = true,
        default_value = "text"
    )]
    pub log_format: crate::logging::LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the database is; shared by every command.
#[derive(Debug, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL to use instead of the embedded cluster (also RINGMASTER_DATABASE_URL).
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,
    /// Data directory of the embedded PostgreSQL cluster, used when no database URL is given
    /// [default: ./.ringmaster/pg]
    #[arg(long, env = "RINGMASTER_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Folder holding the PostgreSQL server's initdb and postgres (searched for when unset).
    #[arg(long, env = "RINGMASTER_PG_BIN_DIR", global = true)]
    pub pg_bin_dir: Option<PathBuf>,
    /// Largest number of pooled database connections for the API; the background work (hosts,
    /// rebalancer, scheduler, archiver) has a pool of the same size of its own.
    #[arg(long, env = "RINGMASTER_DB_POOL_SIZE", global = true, default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub db_pool_size: u32,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Runs the demo deployment: embedded PostgreSQL, the admin API and the dashboard.
    Demo(ServeArgs),
    /// Runs the control plane's HTTP server.
    Serve(ServeArgs),
    /// Database maintenance.
    #[command(subcommand)]
    Db(DbCommand),
    /// Message scripts.
    #[command(subcommand)]
    Script(ScriptCommand),
    /// Checks every invariant of DESIGN.md against the database; exits 1 on a violation.
    Audit,
    /// Upgrade checks (as nova-status).
    #[command(subcommand)]
    Upgrade(UpgradeCommand),
    /// Prints the shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Prints the man page (roff).
    Man,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (host:port).
    #[arg(long, env = "RINGMASTER_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Token every mutating request must carry; required to bind a non-loopback address. On
    /// the command line it shows in the process list: prefer --admin-token-file or the
    /// environment.
    #[arg(
        long,
        env = "RINGMASTER_ADMIN_TOKEN",
        hide_env_values = true,
        conflicts_with = "admin_token_file"
    )]
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

/// Reads the secret in the first line of `file` (given as `flag`): an unreadable or empty file
/// is an error naming the flag. Secrets come from files so that `ps` does not show them.
fn read_secret(flag: &str, file: &std::path::Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(file)
        .map_err(|error| ConfigError::Invalid(format!("{flag} {}: {error}", file.display())))?;
    let secret = text.lines().next().unwrap_or("").trim().to_owned();
    if secret.is_empty() {
        return Err(ConfigError::Invalid(format!(
            "{flag} {} is empty",
            file.display()
        )));
    }
    Ok(secret)
}

/// Parses a duration written as 2s, 500ms, 1m or 1h 30m.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|error| format!("{error} (write durations as 2s, 500ms, 1m)"))
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Applies pending migrations (also `db sync`, as nova-manage spells it).
    #[command(visible_alias = "sync")]
    Migrate,
    /// Prints the version of the newest migration the database has, without migrating (as
    /// nova-manage); pending migrations are named in a warning.
    Version,
    /// Moves soft-deleted rows to the shadow tables (Nova's archive_deleted_rows; also
    /// `db archive_deleted_rows`).
    #[command(visible_alias = "archive_deleted_rows")]
    ArchiveDeletedRows(archive::ArchiveArgs),
    /// Deletes rows from the shadow tables (--all or --before DATE).
    Purge(archive::PurgeArgs),
    /// Empties Placement (providers, allocations, custom classes and traits …), keeping the
    /// standard classes and traits: the RESET_CMD between Placement's gabbi files. Refused while
    /// a compute host heartbeats (unless --force); asks on a terminal (unless --yes).
    ResetPlacement(database::DestructiveArgs),
    /// Writes the whole database to FILE (pg_dump's custom format), the embedded one included.
    Dump(database::DumpArgs),
    /// Replaces the whole database with a dump (one transaction), applies the migrations it
    /// lacks and audits it. Refused while a compute host heartbeats (unless --force); asks on a
    /// terminal (unless --yes).
    Restore(database::RestoreArgs),
}

#[derive(Debug, Subcommand)]
pub enum UpgradeCommand {
    /// Checks that this binary can take over the deployment (database reachable, migrations
    /// pending or unknown, invariants, the processes' versions): exit 0 ok, 1 warning,
    /// 2 failure.
    Check,
}

#[derive(Debug, Subcommand)]
pub enum ScriptCommand {
    /// Runs message scripts, each on a fresh database; exit 0 only if all pass.
    Run(ScriptArgs),
}

/// The scripts to run.
#[derive(Debug, Args)]
pub struct ScriptArgs {
    /// YAML script files (docs/scripts.md).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Runs each script this many times, each on a fresh database, and fails one whose steps
    /// give anything else on a later run than on the first.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
}

/// Says why a command failed; each variant has its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    App(#[from] AppError),
    #[error("database work failed: {0}")]
    Startup(DbError),
    #[error("cannot run scripts: {0}")]
    Scripts(String),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// Returns the process exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Config(_) => ExitCode::from(2),
            CliError::Open(_)
            | CliError::App(_)
            | CliError::Startup(_)
            | CliError::Scripts(_)
            | CliError::Refused(_)
            | CliError::Failed(_) => ExitCode::FAILURE,
        }
    }
}

impl Cli {
    /// Says whether this command runs message scripts.
    pub fn runs_scripts(&self) -> bool {
        matches!(self.command, Command::Script(_))
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let source = database_source(&cli.database);
    match cli.command {
        Command::Demo(mut args) => {
            args.hosts
                .get_or_insert_with(|| DEMO_HOSTS.iter().map(|host| (*host).to_owned()).collect());
            args.nodes.get_or_insert(DEMO_NODES);
            serve(config(source, &cli.database, args)?, "demo")
        }
        Command::Serve(args) => serve(config(source, &cli.database, args)?, "serve"),
        Command::Db(DbCommand::Migrate) => database::migrate(&source),
        Command::Db(DbCommand::Version) => database::schema_version(&source),
        Command::Db(DbCommand::ArchiveDeletedRows(args)) => {
            archive::archive_deleted_rows(&source, args)
        }
        Command::Db(DbCommand::Purge(args)) => archive::purge(&source, args),
        Command::Db(DbCommand::ResetPlacement(safeguards)) => {
            database::reset_placement(&source, safeguards)
        }
        Command::Db(DbCommand::Dump(args)) => {
            database::dump(&source, cli.database.pg_bin_dir.as_deref(), &args)
        }
        Command::Db(DbCommand::Restore(args)) => {
            database::restore(&source, cli.database.pg_bin_dir.as_deref(), &args)
        }
        Command::Script(ScriptCommand::Run(args)) => {
            run_scripts(&source, &args.files, args.repeat as usize)
        }
        Command::Audit => database::audit(&source),
        Command::Upgrade(UpgradeCommand::Check) => upgrade::upgrade_check(&source),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "ringmaster",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            clap_mangen::Man::new(Cli::command())
                .render(&mut std::io::stdout())
                .map_err(|error| CliError::Failed(format!("cannot write the man page: {error}")))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Warns when a database URL with a password was given on the command line, where the process
/// list shows it (DATABASE_URL in the environment does not).
fn warn_of_password_in_arguments(url: &str) {
    let on_command_line = std::env::args().any(|arg| arg.contains(url));
    let userinfo = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .map(|(userinfo, _)| userinfo);
    if on_command_line && userinfo.is_some_and(|userinfo| userinfo.contains(':')) {
        log::warn!(
            "--database-url on the command line shows its password in the process list: use \
             DATABASE_URL"
        );
    }
}

fn database_source(args: &DatabaseArgs) -> DatabaseSource {
    let url = args
        .database_url
        .clone()
        .or_else(|| std::env::var("RINGMASTER_DATABASE_URL").ok())
        .filter(|url| !url.trim().is_empty());
    match url {
        Some(url) => {
            warn_of_password_in_arguments(&url);
            DatabaseSource::Url(DatabaseUrl(url))
        }
        None => DatabaseSource::Embedded(ClusterOptions {
            data_dir: args
                .data_dir
                .clone()
                .unwrap_or_else(cluster::default_data_dir),
            bin_dir: args.pg_bin_dir.clone(),
            throwaway: false,
        }),
    }
}

fn config(
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

/// Host names are letters, digits, `.`, `-` and `_`.
fn check_host_names(hosts: &[String]) -> Result<(), ConfigError> {
    for host in hosts {
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(ConfigError::Invalid(format!(
                "invalid host name {host:?} in --hosts"
            )));
        }
    }
    Ok(())
}

/// Runs scripts on throwaway databases: of the server at DATABASE_URL when given, otherwise
/// of a private throwaway cluster.
fn run_scripts(
    source: &DatabaseSource,
    files: &[PathBuf],
    repeat: usize,
) -> Result<ExitCode, CliError> {
    let server = match source {
        DatabaseSource::Url(url) => ScratchServer::from_url(&url.0),
        DatabaseSource::Embedded(options) => ScratchServer::start_private(options.bin_dir.clone()),
    }
    .map_err(|error| CliError::Scripts(error.to_string()))?;
    let summary = crate::script::run_files(files, &server, repeat);
    Ok(if summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn serve(config: Config, command: &'static str) -> Result<ExitCode, CliError> {
    config.server.validate()?;
    // A certificate that cannot be served stops the start before the database is touched.
    if let Some(files) = &config.server.access.tls {
        crate::tls::server::ServerTls::load(files.clone()).map_err(AppError::from)?;
    }
    let scheme = if config.server.access.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let database = database::open_waiting(
        &config.database,
        config.pool_size,
        config.server.database_grace,
    )?;
    let probe = database.probe();
    let pool = database.pool.clone();
    // The background work has its own bounded share of connections: the API never waits for
    // a pool the tracker passes and moves keep busy.
    let background = database
        .background_pool(config.pool_size)
        .map_err(|error| CliError::Open(OpenError::Db(error)))?;
    let system = actix::System::new();
    let served = system.block_on(async move {
        let clock = app::database_clock(&background).await?;
        let app::Process {
            application,
            actors,
        } = app::build(&config.server, &config.deployment, pool, background, clock).await?;
        let address = application.local_addr();
        println!("ringmaster {command}: listening on {scheme}://{address}/");
        let served = application.run_until_stopped(Some(probe)).await;
        actors.rebalancer.send(Resign).await.ok();
        // Last: the hosts stay held until nothing of this process serves any more.
        actors.hosts.release_all().await;
        served.map_err(CliError::from)
    });
    drop(database);
    served?;
    Ok(ExitCode::SUCCESS)
}
