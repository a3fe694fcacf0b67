//! `ringmaster db archive-deleted-rows` and `ringmaster db purge`, with Nova's options, words and
//! exit codes (nova-manage db archive_deleted_rows / purge).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;

use super::CliError;
use crate::actors::archiver::{
    ArchiveReport, ArchiveRequest, InvalidArchiveOption, NovaArchiveOptions, run_archive,
};
use crate::config::DatabaseSource;
use crate::db::{self, DbError};
use crate::domain::archive::parse_before;
use crate::domain::clock::{SharedClock, SystemClock};

/// Options of `db archive-deleted-rows`.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// Maximum number of deleted rows to archive per batch, shared across tables.
    #[arg(
        long = "max_rows",
        visible_alias = "max-rows",
        default_value_t = crate::domain::archive::DEFAULT_MAX_ROWS,
        allow_negative_numbers = true
    )]
    pub max_rows: i64,
    /// Archive only rows deleted before this date (YYYY-MM-DD [HH:MM:SS], or `date` output).
    #[arg(long)]
    pub before: Option<String>,
    /// Print how many rows were archived per table.
    #[arg(long)]
    pub verbose: bool,
    /// Run batches of max_rows until everything deleted is archived.
    #[arg(long = "until-complete", visible_alias = "until_complete")]
    pub until_complete: bool,
    /// Purge the shadow tables afterwards if anything was archived.
    #[arg(long)]
    pub purge: bool,
    /// Also archive task_log rows (by updated_at with --before).
    #[arg(long = "task-log", visible_alias = "task_log")]
    pub task_log: bool,
    /// Seconds to sleep between batches with --until-complete.
    #[arg(long, default_value_t = 0)]
    pub sleep: u64,
    /// Archive every cell: ringmaster is one cell, so the same as without (nova-manage's
    /// spelling, accepted so its scripts run unchanged).
    #[arg(long = "all-cells", visible_alias = "all_cells")]
    pub all_cells: bool,
}

/// Options of `db purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// Purge every row of the shadow tables.
    #[arg(long)]
    pub all: bool,
    /// Purge shadow rows older than this date.
    #[arg(long)]
    pub before: Option<String>,
    /// Print what was purged.
    #[arg(long)]
    pub verbose: bool,
    /// With --all: refused while a compute host heartbeats unless --force; asks on a terminal
    /// unless --yes.
    #[command(flatten)]
    pub safeguards: super::database::DestructiveArgs,
}

/// Runs `db archive-deleted-rows`: exit 0 when nothing was archived, 1 when rows were, 2 for an
/// invalid --max_rows, 4 for an invalid --before.
pub fn archive_deleted_rows(
    source: &DatabaseSource,
    args: ArchiveArgs,
) -> Result<ExitCode, CliError> {
    let today = chrono::Utc::now().date_naive();
    let request = ArchiveRequest::from_nova(
        &NovaArchiveOptions {
            max_rows: args.max_rows,
            before: args.before.clone(),
            until_complete: args.until_complete,
            purge: args.purge,
            task_log: args.task_log,
            sleep: Duration::from_secs(args.sleep),
        },
        today,
    );
    let request = match request {
        Ok(request) => request,
        Err(InvalidArchiveOption::MaxRows(message)) => {
            println!("{message}");
            return Ok(ExitCode::from(2));
        }
        Err(InvalidArchiveOption::Before(reason)) => {
            println!("Invalid value for --before: {reason}");
            return Ok(ExitCode::from(4));
        }
    };
    let database = super::database::open(source, 2)?;
    let progress = args.until_complete && args.verbose;
    let report = archive_with_progress(&database.pool, request, progress)?;
    print_archive_report(&report, &args, progress);
    Ok(ExitCode::from(u8::from(report.summary.total() > 0)))
}

/// Archives as `request` says until done or interrupted (Ctrl-C stops it between batches),
/// showing progress when asked: a line on a terminal, Nova's dots elsewhere.
fn archive_with_progress(
    pool: &db::Pool,
    request: ArchiveRequest,
    progress: bool,
) -> Result<ArchiveReport, CliError> {
    // On a terminal, a line that says how far it got; elsewhere Nova's dots.
    let mut meter = (progress && std::io::stdout().is_terminal()).then(Progress::new);
    if progress && meter.is_none() {
        print!("Archiving..");
        flush();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let pool = pool.clone();
    let clock: SharedClock = Arc::new(SystemClock::new());
    let report = actix::System::new().block_on(async move {
        let on_interrupt = stop.clone();
        actix::spawn(async move {
            if actix_rt::signal::ctrl_c().await.is_ok() {
                on_interrupt.store(true, Ordering::Relaxed);
            }
        });
        actix_rt::task::spawn_blocking(move || {
            run_archive(&pool, &clock, &request, &stop, |batch| {
                match meter.as_mut() {
                    Some(meter) => meter.batch(batch),
                    None if progress => {
                        print!(".");
                        flush();
                    }
                    None => {}
                }
            })
        })
        .await
        .map_err(|_| DbError::Canceled)
    });
    report.and_then(|report| report).map_err(CliError::Startup)
}

/// Prints what an archive run did, as nova-manage does: the end of the progress line, the
/// table of rows archived (--verbose), and what was purged.
fn print_archive_report(report: &ArchiveReport, args: &ArchiveArgs, progress: bool) {
    if progress {
        println!(
            "{}{}",
            if std::io::stdout().is_terminal() {
                "\n"
            } else {
                "."
            },
            if report.summary.stopped {
                "stopped"
            } else {
                "complete"
            }
        );
    }
    if args.verbose {
        if report.summary.tables.is_empty() {
            println!("Nothing was archived.");
        } else {
            print!(
                "{}",
                table("Table", "Number of Rows Archived", &report.summary.tables)
            );
        }
    }
    if args.purge && args.verbose && report.summary.total() > 0 {
        println!("Rows were archived, running purge...");
        print_purged(&report.purged);
    }
}

/// Runs `db purge`: exit 0 when rows were deleted, 1 with neither --all nor --before, 2 for an
/// invalid --before, 3 when nothing was deleted.
pub fn purge(source: &DatabaseSource, args: PurgeArgs) -> Result<ExitCode, CliError> {
    if args.before.is_none() && !args.all {
        println!("Either --before or --all is required");
        return Ok(ExitCode::from(1));
    }
    let today = chrono::Utc::now().date_naive();
    let before = args.before.as_deref().map(|text| parse_before(text, today));
    let before = match before.transpose() {
        Ok(before) => before,
        Err(reason) => {
            println!("Invalid value for --before: {reason}");
            return Ok(ExitCode::from(2));
        }
    };
    let database = super::database::open(source, 1)?;
    if args.all {
        super::database::confirm(
            &database,
            "deletes every row of the shadow tables (the archived history)",
            args.safeguards,
        )?;
    }
    let mut conn = database
        .pool
        .get()
        .map_err(|error| CliError::Startup(DbError::from(error)))?;
    let purged = db::archive::purge(&mut conn, before).map_err(CliError::Startup)?;
    if args.verbose {
        print_purged(&purged);
    }
    Ok(ExitCode::from(if purged.is_empty() { 3 } else { 0 }))
}

fn print_purged(purged: &[(String, &'static str, i64)]) {
    for (table, column, count) in purged {
        println!("Deleted {count} rows from {table} based on timestamp column {column}");
    }
}

fn flush() {
    let _ = std::io::stdout().flush();
}

/// Renders `rows` as prettytable does for nova-manage: left-aligned, sorted by key.
pub fn table(key_header: &str, value_header: &str, rows: &BTreeMap<String, i64>) -> String {
    let values: Vec<String> = rows.values().map(ToString::to_string).collect();
    let key_width = rows
        .keys()
        .map(String::len)
        .chain([key_header.len()])
        .max()
        .unwrap_or(0);
    let value_width = values
        .iter()
        .map(String::len)
        .chain([value_header.len()])
        .max()
        .unwrap_or(0);
    let rule = format!(
        "+-{}-+-{}-+\n",
        "-".repeat(key_width),
        "-".repeat(value_width)
    );
    let mut out = rule.clone();
    out.push_str(&format!(
        "| {key_header:<key_width$} | {value_header:<value_width$} |\n"
    ));
    out.push_str(&rule);
    for ((key, _), value) in rows.iter().zip(&values) {
        out.push_str(&format!("| {key:<key_width$} | {value:<value_width$} |\n"));
    }
    out.push_str(&rule);
    out
}

/// The progress line of a long archive on a terminal: rows moved, rows per second, and the
/// tables done (moved rows before, none in the latest batch).
struct Progress {
    started: std::time::Instant,
    rows: i64,
    tables: BTreeMap<String, i64>,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            started: std::time::Instant::now(),
            rows: 0,
            tables: BTreeMap::new(),
        }
    }

    fn batch(&mut self, batch: &BTreeMap<String, i64>) {
        for (table, count) in batch {
            *self.tables.entry(table.clone()).or_default() += count;
        }
        self.rows += batch.values().sum::<i64>();
        let done = self
            .tables
            .keys()
            .filter(|table| !batch.contains_key(*table))
            .count();
        let seconds = self.started.elapsed().as_secs_f64().max(0.001);
        print!(
            "\rArchiving: {} rows, {} rows/s, {done} of {} tables done   ",
            crate::domain::timeline::thousands(self.rows),
            crate::domain::timeline::thousands((self.rows as f64 / seconds) as i64),
            self.tables.len()
        );
        flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_looks_like_nova_manages() {
        let rows: BTreeMap<String, i64> = [
            ("instances".to_owned(), 2),
            ("block_device_mapping".to_owned(), 10),
        ]
        .into();
        assert_eq!(
            table("Table", "Number of Rows Archived", &rows),
            "+----------------------+-------------------------+\n\
             | Table                | Number of Rows Archived |\n\
             +----------------------+-------------------------+\n\
             | block_device_mapping | 10                      |\n\
             | instances            | 2                       |\n\
             +----------------------+-------------------------+\n"
        );
    }
}
