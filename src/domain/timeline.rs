//! The timeline of moves: batches of moves (`move_batches`, one per reason and host per
//! statement) merged into one entry per event — a failover, a drain, a join — and said in one
//! line: "cmp-5 down: 5,037 nodes → cmp-1 262, cmp-2 260, …".

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::host::natural_cmp;

/// Batches of one reason and host this close together are one event (a failover moved in
/// several statements, a join spread over ticks).
pub const MERGE_WINDOW: Duration = Duration::seconds(60);

/// How many counterpart hosts a summary names before "…".
const NAMED: usize = 6;

/// The moves of one statement for one reason and host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveBatch {
    pub moved_at: DateTime<Utc>,
    pub reason: String,
    /// The host left (host_down, drain, manual) or joined (join).
    pub host: String,
    pub nodes: i64,
    /// Where the nodes went, or (join) came from, and how many.
    pub counterparts: BTreeMap<String, i64>,
}

/// One event of the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineEntry {
    pub started_at: DateTime<Utc>,
    pub moved_at: DateTime<Utc>,
    pub reason: String,
    pub host: String,
    pub nodes: i64,
    /// The other hosts, most nodes first.
    pub hosts: Vec<HostCount>,
    pub summary: String,
}

/// How many nodes went to (or came from) one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostCount {
    pub host: String,
    pub nodes: i64,
}

/// Merges `batches` (newest first) into timeline entries (newest first): a batch joins the
/// entry of its reason and host that started at most `MERGE_WINDOW` after it; at most `limit`.
pub fn merge(batches: Vec<MoveBatch>, limit: usize) -> Vec<TimelineEntry> {
    struct Open {
        started_at: DateTime<Utc>,
        moved_at: DateTime<Utc>,
        reason: String,
        host: String,
        nodes: i64,
        counterparts: BTreeMap<String, i64>,
    }
    let mut open: Vec<Open> = Vec::new();
    for batch in batches {
        let joins = open.iter().position(|entry| {
            entry.reason == batch.reason
                && entry.host == batch.host
                && entry.started_at - batch.moved_at <= MERGE_WINDOW
        });
        match joins {
            Some(index) => {
                let entry = &mut open[index];
                entry.started_at = entry.started_at.min(batch.moved_at);
                entry.nodes += batch.nodes;
                for (host, nodes) in batch.counterparts {
                    *entry.counterparts.entry(host).or_default() += nodes;
                }
            }
            None if open.len() >= limit => break,
            None => open.push(Open {
                started_at: batch.moved_at,
                moved_at: batch.moved_at,
                reason: batch.reason,
                host: batch.host,
                nodes: batch.nodes,
                counterparts: batch.counterparts,
            }),
        }
    }
    open.into_iter()
        .map(|entry| {
            let mut hosts: Vec<HostCount> = entry
                .counterparts
                .into_iter()
                .map(|(host, nodes)| HostCount { host, nodes })
                .collect();
            hosts.sort_by(|a, b| b.nodes.cmp(&a.nodes).then(natural_cmp(&a.host, &b.host)));
            let summary = summary(&entry.reason, &entry.host, entry.nodes, &hosts);
            TimelineEntry {
                started_at: entry.started_at,
                moved_at: entry.moved_at,
                reason: entry.reason,
                host: entry.host,
                nodes: entry.nodes,
                hosts,
                summary,
            }
        })
        .collect()
}

/// Says an entry in one line: "cmp-5 down: 5,037 nodes → cmp-1 262, cmp-2 260, …".
pub fn summary(reason: &str, host: &str, nodes: i64, hosts: &[HostCount]) -> String {
    let (what, arrow) = match reason {
        "host_down" => ("down", "→"),
        "drain" => ("drained", "→"),
        "join" => ("joined", "←"),
        "manual" => ("moved by hand", "→"),
        "regroup" => ("regrouped", "→"),
        other => (other, "→"),
    };
    let mut named: Vec<String> = hosts
        .iter()
        .take(NAMED)
        .map(|other| {
            let name = if other.host.is_empty() {
                "no host"
            } else {
                &other.host
            };
            format!("{name} {}", thousands(other.nodes))
        })
        .collect();
    if hosts.len() > NAMED {
        named.push("…".to_owned());
    }
    let noun = if nodes == 1 { "node" } else { "nodes" };
    format!(
        "{host} {what}: {} {noun} {arrow} {}",
        thousands(nodes),
        named.join(", ")
    )
}

/// Writes `n` with a comma between thousands: 5037 → "5,037".
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(seconds: i64, reason: &str, host: &str, to: &[(&str, i64)]) -> MoveBatch {
        MoveBatch {
            moved_at: DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap(),
            reason: reason.to_owned(),
            host: host.to_owned(),
            nodes: to.iter().map(|(_, n)| n).sum(),
            counterparts: to.iter().map(|(h, n)| ((*h).to_owned(), *n)).collect(),
        }
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(5037), "5,037");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(-1_234_567), "-1,234,567");
    }

    #[test]
    fn a_failover_in_two_statements_is_one_entry_naming_the_biggest_shares_first() {
        let entries = merge(
            vec![
                batch(3, "host_down", "cmp-5", &[("cmp-1", 12), ("cmp-2", 25)]),
                batch(1, "host_down", "cmp-5", &[("cmp-1", 250), ("cmp-10", 4750)]),
            ],
            20,
        );
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].nodes, 5037);
        assert_eq!(
            entries[0].summary,
            "cmp-5 down: 5,037 nodes → cmp-10 4,750, cmp-1 262, cmp-2 25"
        );
    }

    #[test]
    fn other_hosts_and_distant_times_are_entries_of_their_own() {
        let entries = merge(
            vec![
                batch(200, "join", "cmp-5", &[("cmp-1", 3)]),
                batch(100, "host_down", "cmp-6", &[("cmp-1", 1)]),
                batch(90, "host_down", "cmp-5", &[("cmp-1", 2)]),
                batch(0, "host_down", "cmp-5", &[("cmp-1", 2)]),
            ],
            3,
        );
        let summaries: Vec<&str> = entries.iter().map(|e| e.summary.as_str()).collect();
        assert_eq!(
            summaries,
            [
                "cmp-5 joined: 3 nodes ← cmp-1 3",
                "cmp-6 down: 1 node → cmp-1 1",
                "cmp-5 down: 2 nodes → cmp-1 2"
            ],
            "the oldest is beyond the limit"
        );
    }

    #[test]
    fn a_long_list_of_hosts_ends_with_an_ellipsis() {
        let to: Vec<(String, i64)> = (1..=9).map(|i| (format!("cmp-{i}"), 10)).collect();
        let to: Vec<(&str, i64)> = to.iter().map(|(h, n)| (h.as_str(), *n)).collect();
        let entries = merge(vec![batch(0, "drain", "cmp-20", &to)], 5);
        assert_eq!(
            entries[0].summary,
            "cmp-20 drained: 90 nodes → cmp-1 10, cmp-2 10, cmp-3 10, cmp-4 10, cmp-5 10, cmp-6 10, …"
        );
    }
}
