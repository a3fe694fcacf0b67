//! The command line (clap): `demo`, `serve`, the database, script, audit, upgrade and
//! configuration commands. Every flag can also come from a `RINGMASTER_*` environment variable
//! (the database URL from `DATABASE_URL`) and from the configuration file (`--config`,
//! docs/configuration.md): a flag beats the environment, which beats the file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

mod access;
mod archive;
mod builds;
mod config_cmd;
pub mod config_file;
pub mod config_keys;
mod database;
mod demo;
mod glance;
pub mod invocation;
mod ironic;
mod keystone;
mod log_args;
mod manual;
mod placement;
mod secret_mask;
mod serve_args;
mod upgrade;

use clap::{Args, Subcommand};

pub use self::invocation::{Invocation, command, parse, parse_from};
pub use self::log_args::LogArgs;
pub use self::serve_args::ServeArgs;
use crate::actors::rebalancer::Resign;
use crate::app::{self, AppError};
use crate::config::{Config, ConfigError, DatabaseSource, DatabaseUrl};
use crate::db::DbError;
use crate::db::cluster::{self, ClusterOptions};
use crate::db::database::OpenError;
use crate::db::scratch::ScratchServer;

/// The compute hosts `demo` runs unless told otherwise.
const DEMO_HOSTS: &[&str] = &["cmp-1", "cmp-2", "cmp-3"];
/// The nodes `demo` enrolls unless told otherwise.
const DEMO_NODES: u32 = 12;

/// ringmaster: a control plane for bare-metal (ironic) compute.
#[derive(Debug, clap::Parser)]
#[command(name = "ringmaster", version, about)]
pub struct Cli {
    /// The configuration file (TOML, docs/configuration.md); its settings give way to flags and
    /// the environment [default: /etc/ringmaster/ringmaster.toml when it exists].
    /// An empty name: no file.
    #[arg(long, env = "RINGMASTER_CONFIG", global = true, value_name = "FILE")]
    pub config: Option<std::ffi::OsString>,
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub log: LogArgs,
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
    Demo(demo::DemoArgs),
    /// Runs the control plane's HTTP server.
    Serve(ServeArgs),
    /// Database maintenance.
    #[command(subcommand)]
    Db(DbCommand),
    /// Message scripts.
    #[command(subcommand)]
    Script(ScriptCommand),
    /// Checks every invariant of docs/design.md against the database; exits 1 on a violation.
    Audit,
    /// Upgrade checks (as nova-status).
    #[command(subcommand)]
    Upgrade(UpgradeCommand),
    /// The configuration file: the effective settings, or a file checked without starting.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Prints the shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Writes the man pages (roff): ringmaster.1 and one per command (ringmaster-serve.1,
    /// ringmaster-db-archive-deleted-rows.1, …) into DIR; without DIR, prints ringmaster.1.
    Man {
        /// The folder the pages are written to (created if missing).
        dir: Option<PathBuf>,
        /// The same as DIR.
        #[arg(
            long,
            visible_alias = "dir",
            value_name = "DIR",
            conflicts_with = "dir"
        )]
        out_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Prints the settings `serve` would run with (these flags, the environment, the file,
    /// the defaults), each with where it came from; secrets masked.
    Show(Box<ServeArgs>),
    /// Checks a configuration file (every key, type and value, and every check `serve` makes of
    /// its settings) without starting anything:
    /// exit 0 when it is good, 1 naming the line and key when not.
    Check {
        /// The file to check.
        file: PathBuf,
    },
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
    ConfigFile(#[from] config_file::FileError),
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
            CliError::ConfigFile(_)
            | CliError::Open(_)
            | CliError::App(_)
            | CliError::Startup(_)
            | CliError::Scripts(_)
            | CliError::Refused(_)
            | CliError::Failed(_) => ExitCode::FAILURE,
        }
    }
}

impl Cli {
    /// Says whether this command runs a service (`serve`, `demo`) rather than doing one thing
    /// and exiting.
    pub fn runs_a_service(&self) -> bool {
        matches!(self.command, Command::Serve(_) | Command::Demo(_))
    }

    /// Says whether this command runs message scripts.
    pub fn runs_scripts(&self) -> bool {
        matches!(self.command, Command::Script(_))
    }
}

/// Runs the parsed command.
pub fn run(invocation: Invocation) -> Result<ExitCode, CliError> {
    let Invocation { cli, matches, file } = invocation;
    let source = database_source(&cli.database);
    let hangup = || log_args::level_reload(&matches, file.clone());
    let config = |args| -> Result<Config, CliError> {
        let mut config = serve_args::config(source.clone(), &cli.database, args)?;
        config.server.hangup.0.extend(hangup());
        Ok(config)
    };
    match cli.command {
        Command::Demo(demo::DemoArgs {
            serve: mut args,
            fresh,
        }) => {
            args.hosts
                .get_or_insert_with(|| DEMO_HOSTS.iter().map(|host| (*host).to_owned()).collect());
            args.nodes.get_or_insert(DEMO_NODES);
            let config = bound(config(args)?)?;
            if fresh {
                demo::make_fresh(&config.database)?;
            }
            serve(config, "demo")
        }
        Command::Serve(args) => serve(bound(config(args)?)?, "serve"),
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
        Command::Config(ConfigCommand::Show(_)) => config_cmd::show(&matches, file.as_ref()),
        Command::Config(ConfigCommand::Check { file }) => config_cmd::check(&file),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut command(), "ringmaster", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir, out_dir } => manual::write(dir.or(out_dir).as_deref()),
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

/// The checks of a start made before anything is touched: the bind address (and the token a
/// non-loopback one needs), the certificate and key the listener serves.
fn startable(config: &Config) -> Result<(), CliError> {
    config.server.validate()?;
    if let Some(files) = &config.server.access.tls {
        crate::tls::server::ServerTls::load(files.clone()).map_err(AppError::from)?;
    }
    Ok(())
}

/// `config` with its listener bound: a certificate that cannot be served, or a port in use,
/// stops the start before the database is touched (a demo's `--fresh` empties it, its first
/// start initializes it and enrolls nodes).
fn bound(mut config: Config) -> Result<Config, CliError> {
    startable(&config)?;
    let bind = config.server.bind.clone();
    config.server.listener = crate::config::BoundListener::bind(&bind)
        .map_err(|source| AppError::Bind { bind, source })?;
    Ok(config)
}

fn serve(config: Config, command: &'static str) -> Result<ExitCode, CliError> {
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
    if command == "demo" {
        let real_ironic = config
            .deployment
            .ironic
            .as_ref()
            .map(|ironic| ironic.url.as_str());
        demo::check_node_source(&database, real_ironic)?;
    }
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
        // The database is up and migrated and the listener bound: systemd's Type=notify.
        crate::systemd::notify("READY=1");
        let served = application.run_until_stopped(Some(probe)).await;
        crate::systemd::notify("STOPPING=1");
        actors.rebalancer.send(Resign).await.ok();
        // Last: the hosts stay held until nothing of this process serves any more.
        actors.hosts.release_all().await;
        served.map_err(CliError::from)
    });
    drop(database);
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The largest secret file read: a token or a password is a line.
const MAX_SECRET_FILE: u64 = 64 * 1024;

thread_local! {
    /// While `config check` runs: the secret files named that are not on this machine (they
    /// are written at install time), noted instead of refused.
    static ABSENT_SECRETS: std::cell::RefCell<Option<Vec<String>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `check` with every secret file that does not exist noted (as `--flag path`) and
/// taken as present, rather than refused; returns what `check` returned and the files noted.
fn noting_absent_secrets<T>(check: impl FnOnce() -> T) -> (T, Vec<String>) {
    ABSENT_SECRETS.with(|noted| *noted.borrow_mut() = Some(Vec::new()));
    let checked = check();
    let noted = ABSENT_SECRETS.with(|noted| noted.borrow_mut().take().unwrap_or_default());
    (checked, noted)
}

/// Reads the secret in the first line of `file` (given as `flag`): a file that cannot be read,
/// is not a regular file, is larger than 64 KiB or is empty is an error naming the flag.
/// Secrets come from files so that `ps` does not show them.
fn read_secret(flag: &str, file: &std::path::Path) -> Result<String, ConfigError> {
    use crate::files::Refusal;
    let refused = |why: String| ConfigError::Invalid(format!("{flag} {}: {why}", file.display()));
    let bytes = match crate::files::read_bounded(file, MAX_SECRET_FILE) {
        Ok(bytes) => bytes,
        Err(Refusal::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => {
            let noted = ABSENT_SECRETS.with(|noted| {
                noted.borrow_mut().as_mut().map(|absent| {
                    absent.push(format!("{flag} {}", file.display()));
                })
            });
            return match noted {
                Some(()) => Ok("absent".to_owned()),
                None => Err(refused(error.to_string())),
            };
        }
        Err(Refusal::Io(error)) => return Err(refused(error.to_string())),
        Err(Refusal::NotRegular) => return Err(refused("not a regular file".to_owned())),
        Err(Refusal::TooLarge) => {
            return Err(refused(
                "larger than 64 KiB: a secret file holds one line".to_owned(),
            ));
        }
    };
    let text = String::from_utf8(bytes).map_err(|_| refused("not UTF-8 text".to_owned()))?;
    let secret = text.lines().next().unwrap_or("").trim().to_owned();
    if secret.is_empty() {
        return Err(ConfigError::Invalid(format!(
            "{flag} {} is empty",
            file.display()
        )));
    }
    Ok(secret)
}
