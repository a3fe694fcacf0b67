//! The command line (clap): `demo`, `serve`, `db migrate`, and the commands of later issues,
//! which exit non-zero saying they are not implemented yet. Every flag can also come from a
//! `RINGMASTER_*` environment variable; the database URL from `DATABASE_URL`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::app::{AppError, Application};
use crate::config::{AdminToken, Config, ConfigError, DatabaseSource, DatabaseUrl, ServerConfig};
use crate::db::cluster::{self, ClusterOptions};
use crate::db::database::{Database, OpenError};

/// Exit code of a command that exists but is not implemented yet.
const EXIT_NOT_IMPLEMENTED: u8 = 70;

/// ringmaster: a control plane for bare-metal (ironic) compute.
#[derive(Debug, Parser)]
#[command(name = "ringmaster", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub database: DatabaseArgs,
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
    /// Largest number of pooled database connections.
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
    /// Checks the invariants of a live database (not implemented yet).
    Audit(PendingArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (host:port).
    #[arg(long, env = "RINGMASTER_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Token every mutating request must carry; required to bind a non-loopback address.
    #[arg(long, env = "RINGMASTER_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Applies pending migrations.
    Migrate,
    /// Moves soft-deleted rows to the shadow tables (not implemented yet).
    ArchiveDeletedRows(PendingArgs),
    /// Deletes rows from the shadow tables (not implemented yet).
    Purge(PendingArgs),
}

#[derive(Debug, Subcommand)]
pub enum ScriptCommand {
    /// Runs message scripts (not implemented yet).
    Run(PendingArgs),
}

/// Accepts any arguments of a command that is not implemented yet.
#[derive(Debug, Args)]
pub struct PendingArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., hide = true)]
    pub args: Vec<String>,
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
    #[error("`ringmaster {0}` is not implemented yet")]
    NotImplemented(&'static str),
}

impl CliError {
    /// Returns the process exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Config(_) => ExitCode::from(2),
            CliError::NotImplemented(_) => ExitCode::from(EXIT_NOT_IMPLEMENTED),
            CliError::Open(_) | CliError::App(_) => ExitCode::FAILURE,
        }
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let database = database_source(&cli.database);
    match cli.command {
        Command::Demo(args) => serve(config(database, &cli.database, args), "demo"),
        Command::Serve(args) => serve(config(database, &cli.database, args), "serve"),
        Command::Db(DbCommand::Migrate) => migrate(&database),
        Command::Db(DbCommand::ArchiveDeletedRows(_)) => {
            Err(CliError::NotImplemented("db archive-deleted-rows"))
        }
        Command::Db(DbCommand::Purge(_)) => Err(CliError::NotImplemented("db purge")),
        Command::Script(ScriptCommand::Run(_)) => Err(CliError::NotImplemented("script run")),
        Command::Audit(_) => Err(CliError::NotImplemented("audit")),
    }
}

fn database_source(args: &DatabaseArgs) -> DatabaseSource {
    let url = args
        .database_url
        .clone()
        .or_else(|| std::env::var("RINGMASTER_DATABASE_URL").ok())
        .filter(|url| !url.trim().is_empty());
    match url {
        Some(url) => DatabaseSource::Url(DatabaseUrl(url)),
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

fn config(database: DatabaseSource, database_args: &DatabaseArgs, args: ServeArgs) -> Config {
    Config {
        database,
        pool_size: database_args.db_pool_size,
        server: ServerConfig {
            bind: args.bind,
            admin_token: args.admin_token.as_deref().and_then(AdminToken::new),
            handle_signals: true,
        },
    }
}

fn open(source: &DatabaseSource, pool_size: u32) -> Result<Database, OpenError> {
    match source {
        DatabaseSource::Url(url) => Database::open_url(&url.0, pool_size),
        DatabaseSource::Embedded(options) => Database::open_embedded(options, pool_size),
    }
}

fn migrate(source: &DatabaseSource) -> Result<ExitCode, CliError> {
    let database = open(source, 1)?;
    match database.migrations_applied.len() {
        0 => println!("database schema is up to date"),
        count => println!(
            "applied {count} migrations: {}",
            database.migrations_applied.join(", ")
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(config: Config, command: &'static str) -> Result<ExitCode, CliError> {
    config.server.validate()?;
    let database = open(&config.database, config.pool_size)?;
    let probe = database.probe();
    let pool = database.pool.clone();
    let system = actix::System::new();
    let served = system.block_on(async move {
        let application = Application::build(&config.server, pool)?;
        let address = application.local_addr();
        println!("ringmaster {command}: listening on http://{address}/");
        application.run_until_stopped(Some(probe)).await
    });
    drop(database);
    served?;
    Ok(ExitCode::SUCCESS)
}
