//! What a rebalancer tick's moves mean to an operator, pure: for each host nodes left, why
//! (down, forced down, drained, a joining host's share, an operator), since when, how many
//! nodes went where, and — for a host declared down — how long from that moment to its last
//! node owned elsewhere. The rebalancer logs one line per departure and feeds the metrics.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, SecondsFormat, Utc};

use super::host::{Host, Liveness};
use super::node::ComputeNode;
use super::rebalance::NodeMove;
use super::ring::MoveReason;

/// Why nodes left a host, as the log says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// No heartbeat for the service down time.
    Down,
    /// Forced down by an operator.
    ForcedDown,
    /// Draining.
    Drained,
    /// A joining host took its share, or an operator moved them.
    Rebalanced(MoveReason),
}

impl Cause {
    fn describe(self) -> &'static str {
        match self {
            Cause::Down => "down",
            Cause::ForcedDown => "forced down",
            Cause::Drained => "drained",
            Cause::Rebalanced(MoveReason::Manual) => "moved by an operator",
            Cause::Rebalanced(MoveReason::Regroup) => {
                "no longer serves their conductor group or shard"
            }
            Cause::Rebalanced(_) => "rebalanced to a joining host",
        }
    }
}

/// The nodes that left one host in one tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departure {
    pub host: String,
    pub reason: MoveReason,
    pub cause: Cause,
    pub last_seen_up: Option<DateTime<Utc>>,
    /// When the host was declared down (last heartbeat + service down time); `None` for a
    /// drain, a forced down or a rebalance (no moment the database records).
    pub declared_at: Option<DateTime<Utc>>,
    /// How many nodes went to each host.
    pub to: BTreeMap<String, usize>,
}

impl Departure {
    /// Nodes moved in all.
    pub fn moved(&self) -> usize {
        self.to.values().sum()
    }

    /// From the host declared down to `now` (its last node owned elsewhere), when known.
    pub fn duration(&self, now: DateTime<Utc>) -> Option<Duration> {
        self.declared_at.map(|at| now - at)
    }

    /// Whether this is a failover (or a drain) rather than a rebalance.
    pub fn is_failover(&self) -> bool {
        !matches!(self.cause, Cause::Rebalanced(_))
    }

    /// The log line: which host, why, since when, how many nodes went where, how long it took.
    pub fn describe(&self, now: DateTime<Utc>, ring_version: i64) -> String {
        let kind = if self.is_failover() {
            "failover"
        } else {
            "rebalance"
        };
        let since = match (self.cause, self.last_seen_up) {
            (Cause::Down | Cause::ForcedDown, Some(seen)) => format!(
                " (last heartbeat {}, {} ago)",
                seen.to_rfc3339_opts(SecondsFormat::Millis, true),
                seconds(now - seen)
            ),
            (Cause::Down | Cause::ForcedDown, None) => " (never heartbeat)".to_owned(),
            _ => String::new(),
        };
        let targets: Vec<String> = self
            .to
            .iter()
            .map(|(host, count)| format!("{host} ({count})"))
            .collect();
        let took = match self.duration(now) {
            Some(duration) => format!(
                "; {} from declared down to its last node elsewhere",
                seconds(duration)
            ),
            None => String::new(),
        };
        format!(
            "{kind}: host {} {}{since}: {} nodes moved to {}{took} (ring v{ring_version})",
            self.host,
            self.cause.describe(),
            self.moved(),
            targets.join(", ")
        )
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.num_milliseconds() as f64 / 1000.0)
}

/// The departures of a tick: the planned `moves` that were carried out (`moved`, by node),
/// grouped by the host they left, with that host's state from `hosts`.
pub fn departures(
    moves: &[NodeMove],
    moved: &[ComputeNode],
    hosts: &[Host],
    liveness: &Liveness,
) -> Vec<Departure> {
    let carried: HashSet<uuid::Uuid> = moved.iter().map(|node| node.node.uuid()).collect();
    let hosts: HashMap<&str, &Host> = hosts
        .iter()
        .map(|host| (host.name.as_str(), host))
        .collect();
    let mut by_host: BTreeMap<(String, &'static str), Departure> = BTreeMap::new();
    for planned in moves
        .iter()
        .filter(|planned| carried.contains(&planned.node.uuid()))
    {
        let from = planned.from.as_str();
        let host = hosts.get(from).copied();
        let departure = by_host
            .entry((from.to_owned(), planned.reason.name()))
            .or_insert_with(|| {
                let cause = cause(planned.reason, host);
                let last_seen_up = host.and_then(|host| host.last_seen_up);
                Departure {
                    host: from.to_owned(),
                    reason: planned.reason,
                    cause,
                    last_seen_up,
                    declared_at: match cause {
                        Cause::Down => last_seen_up.map(|seen| seen + liveness.service_down_time),
                        _ => None,
                    },
                    to: BTreeMap::new(),
                }
            });
        *departure.to.entry(planned.to.to_string()).or_default() += 1;
    }
    by_host.into_values().collect()
}

fn cause(reason: MoveReason, host: Option<&Host>) -> Cause {
    match reason {
        MoveReason::HostDown if host.is_some_and(|host| host.forced_down) => Cause::ForcedDown,
        MoveReason::HostDown => Cause::Down,
        MoveReason::Drain => Cause::Drained,
        other => Cause::Rebalanced(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::identity::{ComputeNodeId, HostName, NodeUuid, OwnerEpoch};

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn host(name: &str, last_seen: i64) -> Host {
        Host {
            name: name.to_owned(),
            disabled: false,
            disabled_reason: None,
            forced_down: false,
            last_seen_up: Some(at(last_seen)),
            report_count: 1,
            serves: Default::default(),
        }
    }

    fn planned(index: u128, from: &str, to: &str, reason: MoveReason) -> (NodeMove, ComputeNode) {
        let node = NodeUuid(uuid::Uuid::from_u128(index));
        (
            NodeMove {
                node,
                from: HostName::from(from),
                epoch: OwnerEpoch(1),
                to: HostName::from(to),
                reason,
            },
            ComputeNode {
                id: ComputeNodeId(index as i64),
                uuid: node.uuid(),
                host: HostName::from(to),
                node,
                owner_epoch: OwnerEpoch(2),
            },
        )
    }

    #[test]
    fn a_dead_host_departure_says_since_when_where_and_how_long() {
        let liveness = Liveness::with_down_time(Duration::seconds(10));
        let (moves, moved): (Vec<_>, Vec<_>) = [
            planned(1, "cmp-3", "cmp-1", MoveReason::HostDown),
            planned(2, "cmp-3", "cmp-2", MoveReason::HostDown),
            planned(3, "cmp-3", "cmp-1", MoveReason::HostDown),
            planned(4, "cmp-3", "cmp-2", MoveReason::HostDown),
        ]
        .into_iter()
        .unzip();
        // The fourth move was refused (its epoch changed): it is not counted.
        let departures = departures(&moves, &moved[..3], &[host("cmp-3", 0)], &liveness);
        assert_eq!(departures.len(), 1);
        let departure = &departures[0];
        assert_eq!(departure.moved(), 3);
        assert_eq!(departure.duration(at(12)), Some(Duration::seconds(2)));
        assert_eq!(
            departure.describe(at(12), 4),
            "failover: host cmp-3 down (last heartbeat 2027-01-15T08:00:00.000Z, 12.0s ago): \
             3 nodes moved to cmp-1 (2), cmp-2 (1); 2.0s from declared down to its last node \
             elsewhere (ring v4)"
        );
    }

    #[test]
    fn drains_forced_downs_and_joins_have_no_declared_moment() {
        let liveness = Liveness::with_down_time(Duration::seconds(10));
        let mut forced = host("cmp-2", 0);
        forced.forced_down = true;
        let (moves, moved): (Vec<_>, Vec<_>) = [
            planned(1, "cmp-1", "cmp-3", MoveReason::Drain),
            planned(2, "cmp-2", "cmp-3", MoveReason::HostDown),
            planned(3, "cmp-3", "cmp-4", MoveReason::Join),
        ]
        .into_iter()
        .unzip();
        let hosts = [host("cmp-1", 0), forced, host("cmp-3", 0)];
        let found = departures(&moves, &moved, &hosts, &liveness);
        let causes: Vec<Cause> = found.iter().map(|departure| departure.cause).collect();
        assert_eq!(
            causes,
            [
                Cause::Drained,
                Cause::ForcedDown,
                Cause::Rebalanced(MoveReason::Join)
            ]
        );
        assert!(
            found
                .iter()
                .all(|departure| departure.duration(at(5)).is_none())
        );
        assert!(found[2].describe(at(5), 2).starts_with(
            "rebalance: host cmp-3 rebalanced to a joining host: 1 nodes moved to cmp-4"
        ));
    }
}
