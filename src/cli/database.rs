//! `db migrate`, `db version`, `db reset-placement`, `db dump`, `db restore` and `audit`: the
//! database commands that are not the archiver's. Destructive ones refuse while the deployment
//! is live and ask on a terminal (`confirm`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Args;

use super::CliError;
use crate::config::DatabaseSource;
use crate::db::cluster;
use crate::db::database::{Database, OpenError};
use crate::db::{self, DbError};

/// How a destructive command may go past its safeguards.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct DestructiveArgs {
    /// Run even while the deployment is live (a compute host heartbeating).
    #[arg(long)]
    pub force: bool,
    /// Do not ask for confirmation on a terminal.
    #[arg(long)]
    pub yes: bool,
}

/// The file `db dump` writes.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Where to write the dump (pg_dump's custom format).
    pub file: PathBuf,
}

/// The dump `db restore` reads, and its safeguards.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A dump written by `ringmaster db dump`.
    pub file: PathBuf,
    #[command(flatten)]
    pub safeguards: DestructiveArgs,
}

pub fn migrate(source: &DatabaseSource) -> Result<ExitCode, CliError> {
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

/// `db version`: the newest migration the database has (`0`: none), read without migrating
/// (as `nova-manage db version`); a database a newer ringmaster migrated is refused, pending
/// migrations are named in a warning.
pub fn schema_version(source: &DatabaseSource) -> Result<ExitCode, CliError> {
    let database = open_as_is(source)?;
    let status =
        db::refuse_unknown_migrations(&mut *connection(&database)?).map_err(CliError::Startup)?;
    println!("{}", status.applied.last().map_or("0", String::as_str));
    if !status.pending.is_empty() {
        log::warn!(
            "{} migrations pending ({}): `ringmaster db migrate` or the next start applies them",
            status.pending.len(),
            status.pending.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn reset_placement(
    source: &DatabaseSource,
    safeguards: DestructiveArgs,
) -> Result<ExitCode, CliError> {
    let database = open(source, 1)?;
    confirm(
        &database,
        "empties Placement: every resource provider, inventory, allocation, custom resource \
         class and custom trait",
        safeguards,
    )?;
    db::blocking_transaction(&database.pool, db::placement::names::reset_placement)
        .map_err(CliError::Startup)?;
    println!("placement emptied: standard resource classes and traits only");
    Ok(ExitCode::SUCCESS)
}

pub fn audit(source: &DatabaseSource) -> Result<ExitCode, CliError> {
    let database = open(source, 1)?;
    audit_and_report(&database)
}

/// Audits the database and prints the result: each violation, then the verdict; exit 1 on a
/// violation.
fn audit_and_report(database: &Database) -> Result<ExitCode, CliError> {
    let violations =
        db::audit::check_invariants(&mut *connection(database)?).map_err(CliError::Startup)?;
    for violation in &violations {
        println!("invariant {}: {}", violation.invariant, violation.message);
    }
    if violations.is_empty() {
        println!("audit: ok, every invariant holds");
        return Ok(ExitCode::SUCCESS);
    }
    println!("audit: {} violations", violations.len());
    Ok(ExitCode::FAILURE)
}

/// A connection of the command's database.
fn connection(database: &Database) -> Result<db::PooledConnection, CliError> {
    database
        .pool
        .get()
        .map_err(|error| CliError::Startup(DbError::from(error)))
}

/// Refuses (unless `--force`) while a live process runs a compute host, then asks on a terminal
/// (unless `--yes`) whether to go on with what the command `does`.
pub fn confirm(
    database: &Database,
    does: &str,
    safeguards: DestructiveArgs,
) -> Result<(), CliError> {
    let live = db::processes::live_hosts(&mut *connection(database)?).map_err(CliError::Startup)?;
    if let Some(first) = live.first()
        && !safeguards.force
    {
        let seen = first
            .seconds_since_heartbeat
            .map(|seconds| format!("last heartbeat {seconds}s ago"))
            .unwrap_or_else(|| "no heartbeat yet".to_owned());
        return Err(CliError::Refused(format!(
            "the deployment is live: {} compute host(s) running ({} {seen}); this command {does} \
             — stop the deployment's processes first, or pass --force",
            live.len(),
            first.host
        )));
    }
    if safeguards.yes || !std::io::stdin().is_terminal() {
        return Ok(());
    }
    eprint!("This command {does}. Type yes to go on: ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).ok();
    if answer.trim() == "yes" {
        Ok(())
    } else {
        Err(CliError::Refused(
            "not confirmed: nothing was changed".to_owned(),
        ))
    }
}

/// Opens (and migrates) the database of `source` for `serve`; a server that is away at the
/// start (restarting, or no primary yet in a failover) is waited for up to `grace`, checked
/// every second, as a running process rides it out. A server that refuses this client (a wrong
/// password, an unknown database) ends the start at once.
pub(super) fn open_waiting(
    source: &DatabaseSource,
    pool_size: u32,
    grace: Duration,
) -> Result<Database, OpenError> {
    let started = Instant::now();
    let mut warned = false;
    let waits = matches!(source, DatabaseSource::Url(_));
    loop {
        match open(source, pool_size) {
            Err(OpenError::Db(error))
                if waits && error.is_transient() && started.elapsed() < grace =>
            {
                if !warned {
                    log::warn!(
                        "database unreachable at start ({error}): waiting up to {} (--database-grace)",
                        humantime::format_duration(grace)
                    );
                    warned = true;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            other => return other,
        }
    }
}

/// Opens (and migrates) the database of `source`.
pub(super) fn open(source: &DatabaseSource, pool_size: u32) -> Result<Database, OpenError> {
    match source {
        DatabaseSource::Url(url) => Database::open_url(&url.0, pool_size),
        DatabaseSource::Embedded(options) => Database::open_embedded(options, pool_size),
    }
}

/// Opens the database of `source` as it is, without applying migrations.
pub(super) fn open_as_is(source: &DatabaseSource) -> Result<Database, OpenError> {
    match source {
        DatabaseSource::Url(url) => Database::open_url_as_is(&url.0),
        DatabaseSource::Embedded(options) => Database::open_embedded_as_is(options),
    }
}

/// `db dump FILE`: pg_dump (custom format) of the database as it is, on the embedded socket.
pub fn dump(
    source: &DatabaseSource,
    bin_dir: Option<&Path>,
    args: &DumpArgs,
) -> Result<ExitCode, CliError> {
    let database = open_as_is(source)?;
    let pg_dump = program(bin_dir, "pg_dump")?;
    let output = Command::new(pg_dump)
        .args(["--format=custom", "--no-owner", "--file"])
        .arg(&args.file)
        .arg(format!("--dbname={}", database.url()))
        .stdin(Stdio::null())
        .output()
        .map_err(|error| CliError::Failed(format!("cannot run pg_dump: {error}")))?;
    if !output.status.success() {
        return Err(CliError::Failed(format!(
            "pg_dump failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let bytes = std::fs::metadata(&args.file)
        .map(|meta| meta.len())
        .unwrap_or(0);
    println!(
        "dumped the database to {} ({bytes} bytes)",
        args.file.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `db restore FILE`: replaces the database with the dump in one transaction (nothing changes
/// when it fails), applies the migrations the dump lacks, then audits.
pub fn restore(
    source: &DatabaseSource,
    bin_dir: Option<&Path>,
    args: &RestoreArgs,
) -> Result<ExitCode, CliError> {
    if !args.file.is_file() {
        return Err(CliError::Failed(format!(
            "{} is not a file: give a dump written by `ringmaster db dump`",
            args.file.display()
        )));
    }
    let database = open_as_is(source)?;
    confirm(
        &database,
        &format!("replaces the whole database with {}", args.file.display()),
        args.safeguards,
    )?;
    let script = restore_script(bin_dir, &args.file)?;
    run_psql(bin_dir, database.url(), &script)?;
    let mut conn = db::connect(database.url()).map_err(CliError::Startup)?;
    let migrated = db::migrate(&mut conn).map_err(CliError::Startup)?;
    drop(conn);
    println!(
        "restored {} ({} migrations applied after it)",
        args.file.display(),
        migrated.len()
    );
    audit_and_report(&database)
}

/// The SQL that empties the database and loads the dump (pg_restore's script form).
fn restore_script(bin_dir: Option<&Path>, file: &Path) -> Result<Vec<u8>, CliError> {
    let pg_restore = program(bin_dir, "pg_restore")?;
    let output = Command::new(pg_restore)
        .args(["--no-owner", "--file=-"])
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| CliError::Failed(format!("cannot run pg_restore: {error}")))?;
    if !output.status.success() {
        return Err(CliError::Failed(format!(
            "pg_restore cannot read {}: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let mut script = b"DROP SCHEMA public CASCADE;\nCREATE SCHEMA public;\n".to_vec();
    script.extend_from_slice(&output.stdout);
    Ok(script)
}

/// Runs `script` with psql in one transaction, stopping at the first error.
fn run_psql(bin_dir: Option<&Path>, url: &str, script: &[u8]) -> Result<(), CliError> {
    let psql = program(bin_dir, "psql")?;
    let mut child = Command::new(psql)
        .args([
            "--quiet",
            "--no-psqlrc",
            "--single-transaction",
            "-v",
            "ON_ERROR_STOP=1",
        ])
        .arg(format!("--dbname={url}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| CliError::Failed(format!("cannot run psql: {error}")))?;
    // psql stops at the first error and closes its input: what it says is the error to show.
    let fed = child.stdin.take().map(|mut stdin| stdin.write_all(script));
    let output = child
        .wait_with_output()
        .map_err(|error| CliError::Failed(format!("psql failed: {error}")))?;
    if let Some(Err(error)) = fed
        && output.status.success()
    {
        return Err(CliError::Failed(format!("cannot feed psql: {error}")));
    }
    if !output.status.success() {
        return Err(CliError::Failed(format!(
            "restore failed, the database is unchanged: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

fn program(bin_dir: Option<&Path>, name: &str) -> Result<PathBuf, CliError> {
    cluster::server_program(bin_dir, name)
        .map_err(|error| CliError::Open(OpenError::Cluster(error)))
}
