//! Prometheus metrics (`GET /metrics`, docs/metrics.md). The counters and histograms are fed
//! where things happen (HTTP requests, moves, failovers, boots, archive runs, pool checkouts)
//! and live in memory; the gauges are rendered at each scrape from what the process already
//! holds (`Gauges`). A scrape never reads the database.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

use crate::domain::archive::ARCHIVE_ORDER;
use crate::domain::ring::MoveReason;

mod gauges;
pub use gauges::{Gauges, IronicView, Labelled, ProcessView};

/// The process's counters and histograms.
struct Families {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    moves: IntCounterVec,
    failover: HistogramVec,
    boots: IntCounterVec,
    boot_duration: HistogramVec,
    archive: ArchiveFamilies,
    pool_wait: HistogramVec,
    leadership_changes: IntCounterVec,
    fences: IntCounterVec,
    candidates_truncated: IntCounterVec,
    ironic: IronicFamilies,
}

/// The counters and histograms of the listing of a real Ironic.
struct IronicFamilies {
    listings: HistogramVec,
    changed: IntCounterVec,
    held: IntCounterVec,
    lease: IntCounterVec,
}

impl IronicFamilies {
    fn new(r: &Registry) -> prometheus::Result<IronicFamilies> {
        Ok(IronicFamilies {
            listings: histogram(
                r,
                "ringmaster_ironic_listing_duration_seconds",
                "Time a listing of a real Ironic took in this process (pages, compare, write), \
                 by result.",
                &["result"],
                LISTING_BUCKETS,
            )?,
            changed: counter(
                r,
                "ringmaster_ironic_listing_changed_nodes_total",
                "Nodes this process's listings of Ironic found new, changed or gone (and wrote).",
                &["source"],
            )?,
            held: counter(
                r,
                "ringmaster_ironic_removals_held_total",
                "Nodes a listing lacked beyond --ironic-vanish-limit: not taken for gone until \
                 the next listing agreed.",
                &["source"],
            )?,
            lease: counter(
                r,
                "ringmaster_ironic_listing_lease_changes_total",
                "The Ironic listing lease gained or lost by this process.",
                &["change"],
            )?,
        })
    }

    fn start_at_zero(&self) {
        for change in ["gained", "lost"] {
            self.lease.with_label_values(&[change]).inc_by(0);
        }
        for result in ["ok", "failed"] {
            self.listings.with_label_values(&[result]);
        }
        self.changed.with_label_values(&["ironic"]).inc_by(0);
        self.held.with_label_values(&["ironic"]).inc_by(0);
    }
}

static FAMILIES: LazyLock<Option<Families>> = LazyLock::new(|| match Families::new() {
    Ok(families) => {
        families.start_at_zero();
        Some(families)
    }
    Err(error) => {
        log::error!("metrics disabled: {error}");
        None
    }
});

fn counter(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<IntCounterVec> {
    let counter = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(counter.clone()))?;
    Ok(counter)
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> prometheus::Result<HistogramVec> {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    let histogram = HistogramVec::new(opts, labels)?;
    registry.register(Box::new(histogram.clone()))?;
    Ok(histogram)
}

const HTTP_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
const FAILOVER_BUCKETS: &[f64] = &[
    0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0, 300.0,
];
const BOOT_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0,
];
const LISTING_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];
const POOL_BUCKETS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0,
];

/// The archive's counters: rows moved by table, runs by result.
struct ArchiveFamilies {
    rows: IntCounterVec,
    runs: IntCounterVec,
}

impl ArchiveFamilies {
    fn new(r: &Registry) -> prometheus::Result<ArchiveFamilies> {
        Ok(ArchiveFamilies {
            rows: counter(
                r,
                "ringmaster_archived_rows_total",
                "Rows moved to shadow tables by this process's archive runs, by table.",
                &["table"],
            )?,
            runs: counter(
                r,
                "ringmaster_archive_runs_total",
                "Archive runs of this process (scheduled or asked for), by result (ok, failed).",
                &["result"],
            )?,
        })
    }
}

impl Families {
    fn new() -> prometheus::Result<Families> {
        let registry = Registry::new();
        let r = &registry;
        Ok(Families {
            http_requests: counter(
                r,
                "ringmaster_http_requests_total",
                "HTTP requests answered, by route family, method and status code.",
                &["family", "method", "status"],
            )?,
            http_duration: histogram(
                r,
                "ringmaster_http_request_duration_seconds",
                "Time to answer an HTTP request (to the response head), by route family.",
                &["family"],
                HTTP_BUCKETS,
            )?,
            moves: counter(
                r,
                "ringmaster_node_moves_total",
                "Nodes moved to another host by this process's rebalancer, by reason.",
                &["reason"],
            )?,
            failover: histogram(
                r,
                "ringmaster_failover_duration_seconds",
                "From a host declared down (its last heartbeat + the service down time) to its \
                 last node owned elsewhere.",
                &["reason"],
                FAILOVER_BUCKETS,
            )?,
            boots: counter(
                r,
                "ringmaster_boots_total",
                "Boots asked of this process, by result (active, error, building elsewhere, \
                 refused).",
                &["result"],
            )?,
            boot_duration: histogram(
                r,
                "ringmaster_boot_duration_seconds",
                "From a boot request to its instance active (or in error), by result.",
                &["result"],
                BOOT_BUCKETS,
            )?,
            archive: ArchiveFamilies::new(r)?,
            pool_wait: histogram(
                r,
                "ringmaster_db_pool_wait_seconds",
                "Time to check a connection out of a database pool.",
                &["outcome"],
                POOL_BUCKETS,
            )?,
            leadership_changes: counter(
                r,
                "ringmaster_leadership_changes_total",
                "Rebalancer leadership gained or lost by this process.",
                &["change"],
            )?,
            fences: counter(
                r,
                "ringmaster_host_fence_events_total",
                "Hosts of this process fenced (lease lapsed) or unfenced (heartbeat again).",
                &["host", "event"],
            )?,
            candidates_truncated: counter(
                r,
                "ringmaster_placement_candidates_truncated_total",
                "Allocation-candidate answers cut short at the candidate cap.",
                &["reason"],
            )?,
            ironic: IronicFamilies::new(r)?,
            registry,
        })
    }
}

/// The HTTP methods counted by name; any other method a client sends is counted as `other`,
/// so that the label takes values from a fixed set whatever clients send (invariant 16).
const HTTP_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// The label value of `method`: its name when it is a known method, `other` otherwise.
pub fn method_label(method: &str) -> &'static str {
    HTTP_METHODS
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("other")
}

/// Why a node moves, as `ringmaster_node_moves_total` and the failover histogram count it.
const MOVE_REASONS: [MoveReason; 5] = [
    MoveReason::HostDown,
    MoveReason::Drain,
    MoveReason::Join,
    MoveReason::Manual,
    MoveReason::Regroup,
];

/// How a boot ended, as `ringmaster_boots_total` counts it.
const BOOT_RESULTS: [&str; 5] = ["active", "error", "building", "deleted", "refused"];

/// Why candidates were cut short, as `ringmaster_placement_candidates_truncated_total` counts.
pub const TRUNCATED_BY: [&str; 1] = ["max_allocation_candidates"];

impl Families {
    /// Shows every counter of a known label set at 0 from the start, so an alert on a counter
    /// needs no `or vector(0)` before its first event. Labels that name hosts start when the
    /// host does (`start_host`).
    fn start_at_zero(&self) {
        for reason in MOVE_REASONS {
            self.moves.with_label_values(&[reason.name()]).inc_by(0);
            self.failover.with_label_values(&[reason.name()]);
        }
        for result in BOOT_RESULTS {
            self.boots.with_label_values(&[result]).inc_by(0);
            self.boot_duration.with_label_values(&[result]);
        }
        for table in ARCHIVE_ORDER {
            self.archive.rows.with_label_values(&[table.name]).inc_by(0);
        }
        for result in ["ok", "failed"] {
            self.archive.runs.with_label_values(&[result]).inc_by(0);
        }
        for change in ["gained", "lost"] {
            self.leadership_changes
                .with_label_values(&[change])
                .inc_by(0);
        }
        for outcome in ["ok", "failed"] {
            self.pool_wait.with_label_values(&[outcome]);
        }
        self.ironic.start_at_zero();
        for reason in TRUNCATED_BY {
            self.candidates_truncated
                .with_label_values(&[reason])
                .inc_by(0);
        }
    }
}

/// Shows host `host`'s fence counters at 0 (called when this process starts running it).
pub fn start_host(host: &str) {
    if let Some(families) = families() {
        for event in ["fenced", "unfenced"] {
            families.fences.with_label_values(&[host, event]).inc_by(0);
        }
    }
}

fn families() -> Option<&'static Families> {
    FAMILIES.as_ref()
}

/// Counts an HTTP request of route `family` answered with `status` after `elapsed` (a method
/// outside the known ones counts as `other`).
pub fn observe_http(family: &str, method: &str, status: u16, elapsed: Duration) {
    if let Some(families) = families() {
        let code = status.to_string();
        families
            .http_requests
            .with_label_values(&[family, method_label(method), code.as_str()])
            .inc();
        families
            .http_duration
            .with_label_values(&[family])
            .observe(elapsed.as_secs_f64());
    }
}

/// Counts `count` nodes moved for `reason` (host_down, drain, join, manual).
pub fn count_moves(reason: &str, count: usize) {
    if let Some(families) = families() {
        families
            .moves
            .with_label_values(&[reason])
            .inc_by(count as u64);
    }
}

/// Records a failover (or drain) that took `seconds` from the host declared down to its last
/// node owned elsewhere.
pub fn observe_failover(reason: &str, seconds: f64) {
    if let Some(families) = families() {
        families
            .failover
            .with_label_values(&[reason])
            .observe(seconds.max(0.0));
    }
}

/// Counts a boot that ended with `result` after `elapsed`.
pub fn observe_boot(result: &str, elapsed: Duration) {
    if let Some(families) = families() {
        families.boots.with_label_values(&[result]).inc();
        families
            .boot_duration
            .with_label_values(&[result])
            .observe(elapsed.as_secs_f64());
    }
}

/// Counts rows an archive run moved, by table.
pub fn count_archived<'a>(tables: impl IntoIterator<Item = (&'a String, &'a i64)>) {
    if let Some(families) = families() {
        for (table, rows) in tables {
            families
                .archive
                .rows
                .with_label_values(&[table.as_str()])
                .inc_by(u64::try_from(*rows).unwrap_or(0));
        }
    }
}

/// Counts an archive run that worked (`ok`) or failed.
pub fn count_archive_run(ok: bool) {
    if let Some(families) = families() {
        families
            .archive
            .runs
            .with_label_values(&[if ok { "ok" } else { "failed" }])
            .inc();
    }
}

/// Records a pool checkout that took `elapsed` (`ok` false: it timed out or failed).
pub fn observe_pool_wait(elapsed: Duration, ok: bool) {
    if let Some(families) = families() {
        families
            .pool_wait
            .with_label_values(&[if ok { "ok" } else { "failed" }])
            .observe(elapsed.as_secs_f64());
    }
}

/// Counts leadership `gained` or `lost`.
pub fn count_leadership(change: &str) {
    if let Some(families) = families() {
        families
            .leadership_changes
            .with_label_values(&[change])
            .inc();
    }
}

/// Counts an allocation-candidates answer cut short at the candidate cap.
pub fn count_candidates_truncated() {
    if let Some(families) = families() {
        families
            .candidates_truncated
            .with_label_values(&[TRUNCATED_BY[0]])
            .inc();
    }
}

/// Counts a host `fenced` or `unfenced`.
pub fn count_fence(host: &str, event: &str) {
    if let Some(families) = families() {
        families.fences.with_label_values(&[host, event]).inc();
    }
}

/// Counts a listing of Ironic by this process: how long it took, the nodes it changed.
pub fn observe_ironic_listing(ok: bool, took: Duration, changed: usize) {
    if let Some(families) = families() {
        let result = if ok { "ok" } else { "failed" };
        families
            .ironic
            .listings
            .with_label_values(&[result])
            .observe(took.as_secs_f64());
        families
            .ironic
            .changed
            .with_label_values(&["ironic"])
            .inc_by(changed as u64);
    }
}

/// Counts nodes a listing lacked beyond the vanish limit (held back).
pub fn count_ironic_removals_held(nodes: usize) {
    if let Some(families) = families() {
        families
            .ironic
            .held
            .with_label_values(&["ironic"])
            .inc_by(nodes as u64);
    }
}

/// Counts the Ironic listing lease `gained` or `lost` by this process.
pub fn count_listing_lease(change: &str) {
    if let Some(families) = families() {
        families.ironic.lease.with_label_values(&[change]).inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_registers_and_renders() {
        assert!(families().is_some(), "metric names and labels are valid");
        observe_http("healthz", "GET", 200, Duration::from_millis(2));
        count_moves("host_down", 3);
        let mut gauges = Gauges::new();
        gauges.add(
            "ringmaster_test_gauge",
            "A gauge.",
            &["host"],
            vec![(vec!["cmp-1".to_owned()], 2.0)],
        );
        let text = gauges.render();
        assert!(
            text.contains("ringmaster_test_gauge{host=\"cmp-1\"} 2"),
            "{text}"
        );
        assert!(
            text.contains(
                "ringmaster_http_requests_total{family=\"healthz\",method=\"GET\",status=\"200\"}"
            ),
            "{text}"
        );
        assert!(
            text.contains("ringmaster_node_moves_total{reason=\"host_down\"}"),
            "{text}"
        );
    }
}
