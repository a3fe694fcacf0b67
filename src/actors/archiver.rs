//! `Archiver`: `archive_deleted_rows` and `purge` on demand (`ArchiveOnce`) and, optionally, on
//! a schedule. A `SyncArbiter` actor with one thread: one archive run at a time per process,
//! each recorded in `archive_runs`. `run_archive` is the same work for the command line.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use actix::prelude::*;

use crate::db::archive::{self, ArchiveOptions, ArchiveSummary};
use crate::db::{DbError, Pool};
pub use crate::domain::archive::NovaArchiveOptions;
use crate::domain::archive::{check_max_rows, parse_before};
use crate::domain::clock::SharedClock;

/// One archive request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveRequest {
    pub options: ArchiveOptions,
    /// Purge every shadow table afterwards if anything was archived.
    pub purge: bool,
}

/// Why an archive request's options were refused, in Nova's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidArchiveOption {
    #[error("{0}")]
    MaxRows(String),
    /// The reason dateutil gives; the message names the body's `before` field (the command
    /// line names its `--before` itself).
    #[error("Invalid value for before: {0}")]
    Before(String),
}

impl ArchiveRequest {
    /// Checks `--max_rows` and `--before` as Nova does (`today` filling what a date leaves
    /// out) and builds the request.
    pub fn from_nova(
        options: &NovaArchiveOptions,
        today: chrono::NaiveDate,
    ) -> Result<ArchiveRequest, InvalidArchiveOption> {
        let max_rows = check_max_rows(options.max_rows).map_err(InvalidArchiveOption::MaxRows)?;
        let before = options
            .before
            .as_deref()
            .map(|text| parse_before(text, today))
            .transpose()
            .map_err(InvalidArchiveOption::Before)?;
        Ok(ArchiveRequest {
            options: ArchiveOptions {
                max_rows,
                before,
                task_log: options.task_log,
                until_complete: options.until_complete,
                sleep: options.sleep,
            },
            purge: options.purge,
        })
    }
}

/// What an archive run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveReport {
    pub run_id: i64,
    pub summary: ArchiveSummary,
    /// (shadow table, timestamp column, rows deleted) of the purge, if one ran.
    pub purged: Vec<(String, &'static str, i64)>,
}

/// Runs and records one archive (blocking): batches as asked, then the purge if asked and
/// anything moved. `stop` ends an `until_complete` run between batches. Counted in
/// `ringmaster_archive_runs_total`, worked or failed.
pub fn run_archive(
    pool: &Pool,
    clock: &SharedClock,
    request: &ArchiveRequest,
    stop: &AtomicBool,
    on_batch: impl FnMut(&BTreeMap<String, i64>),
) -> Result<ArchiveReport, DbError> {
    let report = run_and_record(pool, clock, request, stop, on_batch);
    crate::metrics::count_archive_run(report.is_ok());
    report
}

fn run_and_record(
    pool: &Pool,
    clock: &SharedClock,
    request: &ArchiveRequest,
    stop: &AtomicBool,
    on_batch: impl FnMut(&BTreeMap<String, i64>),
) -> Result<ArchiveReport, DbError> {
    let options = &request.options;
    let recorded = serde_json::json!({
        "max_rows": options.max_rows,
        "before": options.before,
        "until_complete": options.until_complete,
        "purge": request.purge,
        "task_log": options.task_log,
        "sleep_seconds": options.sleep.as_secs(),
    });
    let run_id = archive::start_run(&mut *pool.get()?, &recorded, clock.now())?;
    let summary = match archive::archive_deleted_rows(pool, options, stop, on_batch) {
        Ok(summary) => summary,
        Err(error) => {
            let failed = ArchiveSummary::default();
            if let Err(record) =
                archive::finish_run(&mut *pool.get()?, run_id, &failed, 0, "failed", clock.now())
            {
                log::warn!("could not record failed archive run {run_id}: {record}");
            }
            return Err(error);
        }
    };
    let purged = if request.purge && summary.total() > 0 {
        archive::purge(&mut *pool.get()?, None)?
    } else {
        Vec::new()
    };
    let purged_rows = purged.iter().map(|(_, _, count)| count).sum();
    let status = if summary.stopped {
        "stopped"
    } else {
        "complete"
    };
    archive::finish_run(
        &mut *pool.get()?,
        run_id,
        &summary,
        purged_rows,
        status,
        clock.now(),
    )?;
    if summary.total() > 0 {
        log::info!("archive run {run_id} moved {} rows", summary.total());
    }
    crate::metrics::count_archived(&summary.tables);
    Ok(ArchiveReport {
        run_id,
        summary,
        purged,
    })
}

/// The archiver actor.
pub struct Archiver {
    pool: Pool,
    clock: SharedClock,
}

impl Archiver {
    /// Returns an archiver over `pool`.
    pub fn new(pool: Pool, clock: SharedClock) -> Archiver {
        Archiver { pool, clock }
    }
}

impl Actor for Archiver {
    type Context = SyncContext<Self>;
}

/// Runs one archive now.
#[derive(Debug, Message)]
#[rtype(result = "Result<ArchiveReport, DbError>")]
pub struct ArchiveOnce {
    pub request: ArchiveRequest,
}

impl Handler<ArchiveOnce> for Archiver {
    type Result = Result<ArchiveReport, DbError>;

    fn handle(&mut self, message: ArchiveOnce, _: &mut Self::Context) -> Self::Result {
        let never = AtomicBool::new(false);
        run_archive(&self.pool, &self.clock, &message.request, &never, |_| {})
    }
}

/// Sends `ArchiveOnce` with `request` every `interval` (the optional schedule).
pub fn schedule(archiver: Addr<Archiver>, interval: Duration, request: ArchiveRequest) {
    let request = Arc::new(request);
    actix::spawn(async move {
        let mut ticks = actix::clock::interval(interval);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            match archiver
                .send(ArchiveOnce {
                    request: (*request).clone(),
                })
                .await
            {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => log::error!("scheduled archive failed: {error}"),
                Err(error) => {
                    log::error!("archiver unavailable, schedule stopped: {error}");
                    return;
                }
            }
        }
    });
}
