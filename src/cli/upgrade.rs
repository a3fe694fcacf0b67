//! `ringmaster upgrade check`, as `nova-status upgrade check`: is the database reachable, are
//! migrations pending or unknown, do the invariants hold, which versions do the deployment's
//! processes run. Exit 0 when all is well, 1 for a warning, 2 for a failure.

use std::process::ExitCode;

use super::CliError;
use crate::config::DatabaseSource;
use crate::db;
use crate::db::database::Database;
use crate::db::processes::{self, VERSION};

/// How one check came out; the worst decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Success,
    Warning,
    Failure,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "Success",
            Outcome::Warning => "Warning",
            Outcome::Failure => "Failure",
        }
    }
}

struct Check {
    name: &'static str,
    outcome: Outcome,
    details: String,
}

impl Check {
    fn new(name: &'static str, outcome: Outcome, details: impl Into<String>) -> Check {
        Check {
            name,
            outcome,
            details: details.into(),
        }
    }
}

/// Runs the checks and prints them as nova-status does.
pub fn upgrade_check(source: &DatabaseSource) -> Result<ExitCode, CliError> {
    let checks = match super::database::open_as_is(source) {
        Ok(database) => checks(&database),
        Err(error) => vec![Check::new(
            "Database",
            Outcome::Failure,
            format!("unreachable: {}", db::error::one_line(&error.to_string())),
        )],
    };
    print!("{}", render(&checks));
    let worst = checks
        .iter()
        .map(|check| check.outcome)
        .max()
        .unwrap_or(Outcome::Success);
    Ok(ExitCode::from(worst as u8))
}

fn checks(database: &Database) -> Vec<Check> {
    let mut conn = match database.pool.get() {
        Ok(conn) => conn,
        Err(error) => {
            return vec![Check::new(
                "Database",
                Outcome::Failure,
                format!("unreachable: {error}"),
            )];
        }
    };
    let mut checks = vec![database_check(&mut conn)];
    let (migrations, schema) = migrations_check(&mut conn);
    checks.push(migrations);
    let not_checked =
        |name, why: &str| Check::new(name, Outcome::Warning, format!("not checked: {why}"));
    match schema {
        Schema::Current => {
            checks.push(invariants_check(&mut conn));
            checks.push(processes_check(&mut conn));
        }
        Schema::Other => {
            checks.push(not_checked("Invariants", "the schema is not this binary's"));
            checks.push(processes_check(&mut conn));
        }
        Schema::NotInitialized => {
            let why = "the database is not initialized";
            checks.push(not_checked("Invariants", why));
            checks.push(not_checked("Processes", why));
        }
    }
    checks
}

fn database_check(conn: &mut db::Connection) -> Check {
    match db::database::server_version(conn) {
        Ok(version) => Check::new(
            "Database",
            Outcome::Success,
            format!("reachable, PostgreSQL {version}"),
        ),
        Err(error) => Check::new(
            "Database",
            Outcome::Failure,
            format!("unreachable: {error}"),
        ),
    }
}

/// What the database's schema is to this binary.
enum Schema {
    /// Exactly this binary's migrations.
    Current,
    /// Some applied, others pending or unknown.
    Other,
    /// No migration applied: an empty database.
    NotInitialized,
}

/// The migrations check, and what the schema is.
fn migrations_check(conn: &mut db::Connection) -> (Check, Schema) {
    let status = match db::migration_status(conn) {
        Ok(status) => status,
        Err(error) => {
            return (
                Check::new("Migrations", Outcome::Failure, error.to_string()),
                Schema::Other,
            );
        }
    };
    if !status.unknown.is_empty() {
        let details = format!(
            "migration {} was applied by a newer ringmaster: this binary ({VERSION}) must not run \
             on this database",
            status.unknown.join(", ")
        );
        return (
            Check::new("Migrations", Outcome::Failure, details),
            Schema::Other,
        );
    }
    if status.applied.is_empty() {
        let details = format!(
            "not initialized: the database is empty, {} migrations pending; `ringmaster db \
             migrate` or the first start applies them",
            status.pending.len()
        );
        return (
            Check::new("Migrations", Outcome::Warning, details),
            Schema::NotInitialized,
        );
    }
    if !status.pending.is_empty() {
        let details = format!(
            "{} pending ({}): `ringmaster db migrate` or the next start applies them",
            status.pending.len(),
            status.pending.join(", ")
        );
        return (
            Check::new("Migrations", Outcome::Warning, details),
            Schema::Other,
        );
    }
    let newest = status.applied.last().cloned().unwrap_or_default();
    let details = format!("all {} applied, newest {newest}", status.applied.len());
    (
        Check::new("Migrations", Outcome::Success, details),
        Schema::Current,
    )
}

fn invariants_check(conn: &mut db::Connection) -> Check {
    match db::audit::check_invariants(conn) {
        Ok(violations) if violations.is_empty() => {
            Check::new("Invariants", Outcome::Success, "every invariant holds")
        }
        Ok(violations) => {
            let first = &violations[0];
            Check::new(
                "Invariants",
                Outcome::Failure,
                format!(
                    "{} violations (`ringmaster audit` lists them), first: invariant {}: {}",
                    violations.len(),
                    first.invariant,
                    first.message
                ),
            )
        }
        Err(error) => Check::new("Invariants", Outcome::Failure, error.to_string()),
    }
}

fn processes_check(conn: &mut db::Connection) -> Check {
    let live = match processes::live_processes(conn) {
        Ok(live) => live,
        Err(error) => {
            return Check::new(
                "Processes",
                Outcome::Warning,
                format!("not checked: {error}"),
            );
        }
    };
    if live.is_empty() {
        return Check::new("Processes", Outcome::Success, "no process is running");
    }
    let described: Vec<String> = live
        .iter()
        .map(|process| {
            let hosts = if process.hosts.is_empty() {
                "no hosts".to_owned()
            } else {
                format!("hosts {}", process.hosts)
            };
            format!(
                "{} on {} (pid {}, {hosts})",
                process.version, process.hostname, process.pid
            )
        })
        .collect();
    let others = live
        .iter()
        .filter(|process| process.version != VERSION)
        .count();
    let outcome = if others == 0 {
        Outcome::Success
    } else {
        Outcome::Warning
    };
    let summary = if others == 0 {
        format!("{} running, all at {VERSION}", live.len())
    } else {
        format!(
            "{others} of {} running another version than {VERSION}",
            live.len()
        )
    };
    Check::new(
        "Processes",
        outcome,
        format!("{summary}: {}", described.join("; ")),
    )
}

/// The checks as nova-status prints them: a box, one block per check.
fn render(checks: &[Check]) -> String {
    let mut lines = vec!["Upgrade Check Results".to_owned()];
    for check in checks {
        lines.push(String::new());
        lines.push(format!("Check: {}", check.name));
        lines.push(format!("Result: {}", check.outcome.label()));
        lines.push(format!("Details: {}", check.details));
    }
    let width = lines
        .iter()
        .map(|line| line.chars().count())
        .max()
        .unwrap_or(0);
    let rule = format!("+{}+", "-".repeat(width + 2));
    let mut out = format!("{rule}\n");
    for line in &lines {
        if line.is_empty() {
            out.push_str(&format!("{rule}\n"));
        } else {
            out.push_str(&format!("| {line:<width$} |\n"));
        }
    }
    out.push_str(&format!("{rule}\n"));
    out
}
