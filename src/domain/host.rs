//! Compute hosts as the rest of ringmaster sees them, and how their liveness is judged.

use chrono::{DateTime, Duration, Utc};

/// The service binary name every ringmaster compute host registers under.
pub const COMPUTE_BINARY: &str = "ringmaster-compute";

/// The `disabled_reason` of a host that is draining.
pub const DRAINING_REASON: &str = "draining";

/// Describes one compute service (a `ComputeHost`) and its last heartbeat.
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub forced_down: bool,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub report_count: i64,
    /// The nodes it serves: its process's conductor group and shard.
    pub serves: crate::domain::selection::NodeSelection,
}

/// How long heartbeats stay good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// A host whose last heartbeat is older than this stops writing (its lease lapsed).
    pub fence_time: Duration,
    /// A host whose last heartbeat is older than this is down; its nodes may move.
    pub service_down_time: Duration,
}

impl Liveness {
    /// Returns liveness with the fence time at three quarters of the down time, so a host
    /// stops writing well before the rebalancer may give its nodes away.
    pub fn with_down_time(service_down_time: Duration) -> Liveness {
        Liveness {
            fence_time: service_down_time * 3 / 4,
            service_down_time,
        }
    }

    /// Says whether a lease renewed at `last_ok` still allows writes at `now`.
    pub fn lease_holds(&self, last_ok: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
        last_ok.is_some_and(|last| now - last <= self.fence_time)
    }
}

/// A host's state as the admin API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostState {
    Up,
    /// Heartbeats are late beyond the fence time: the host has stopped writing.
    Fenced,
    Down,
    Disabled,
}

impl HostState {
    pub fn as_str(self) -> &'static str {
        match self {
            HostState::Up => "up",
            HostState::Fenced => "fenced",
            HostState::Down => "down",
            HostState::Disabled => "disabled",
        }
    }
}

impl Host {
    /// Says whether the host counts as up at `now`: not forced down and heard from within
    /// the down time (docs/design.md: down = no heartbeat within the down time, or forced down).
    pub fn is_up(&self, liveness: &Liveness, now: DateTime<Utc>) -> bool {
        !self.forced_down
            && self
                .last_seen_up
                .is_some_and(|seen| now - seen <= liveness.service_down_time)
    }

    /// Says whether the host is draining (disabled for a drain, its nodes leaving).
    pub fn is_draining(&self) -> bool {
        self.disabled && self.disabled_reason.as_deref() == Some(DRAINING_REASON)
    }

    /// Returns the state shown for the host at `now`.
    pub fn state(&self, liveness: &Liveness, now: DateTime<Utc>) -> HostState {
        if self.disabled {
            HostState::Disabled
        } else if !self.is_up(liveness, now) {
            HostState::Down
        } else if !liveness.lease_holds(self.last_seen_up, now) {
            HostState::Fenced
        } else {
            HostState::Up
        }
    }
}

/// Orders host names as people read them: runs of digits compare as numbers, so `cmp-2` comes
/// before `cmp-10`; otherwise byte order.
pub fn natural_cmp(left: &str, right: &str) -> std::cmp::Ordering {
    let (mut left, mut right) = (left.as_bytes(), right.as_bytes());
    loop {
        match (left.first(), right.first()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(a), Some(b)) if a.is_ascii_digit() && b.is_ascii_digit() => {
                let digits = |text: &[u8]| text.iter().take_while(|c| c.is_ascii_digit()).count();
                let (a_len, b_len) = (digits(left), digits(right));
                let (a_num, b_num) = (&left[..a_len], &right[..b_len]);
                let trim =
                    |num: &'_ [u8]| -> usize { num.iter().take_while(|c| **c == b'0').count() };
                let (a_sig, b_sig) = (&a_num[trim(a_num)..], &b_num[trim(b_num)..]);
                let order = a_sig
                    .len()
                    .cmp(&b_sig.len())
                    .then_with(|| a_sig.cmp(b_sig))
                    .then_with(|| a_len.cmp(&b_len));
                if order != std::cmp::Ordering::Equal {
                    return order;
                }
                left = &left[a_len..];
                right = &right[b_len..];
            }
            (Some(a), Some(b)) => {
                if a != b {
                    return a.cmp(b);
                }
                left = &left[1..];
                right = &right[1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_sort_naturally() {
        let mut hosts = vec![
            "cmp-10", "cmp-2", "cmp-1", "cmp-02", "a", "cmp-100", "cmp-9b", "cmp-9a",
        ];
        hosts.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            hosts,
            vec![
                "a", "cmp-1", "cmp-2", "cmp-02", "cmp-9a", "cmp-9b", "cmp-10", "cmp-100"
            ]
        );
    }

    fn host(seconds_ago: Option<i64>, now: DateTime<Utc>) -> Host {
        Host {
            name: "compute-1".to_owned(),
            disabled: false,
            disabled_reason: None,
            forced_down: false,
            last_seen_up: seconds_ago.map(|ago| now - Duration::seconds(ago)),
            report_count: 1,
            serves: Default::default(),
        }
    }

    #[test]
    fn a_host_fences_itself_before_it_counts_as_down() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let liveness = Liveness::with_down_time(Duration::seconds(10));
        assert!(liveness.fence_time < liveness.service_down_time);
        assert_eq!(host(Some(1), now).state(&liveness, now), HostState::Up);
        assert_eq!(host(Some(8), now).state(&liveness, now), HostState::Fenced);
        assert_eq!(host(Some(11), now).state(&liveness, now), HostState::Down);
        assert_eq!(host(None, now).state(&liveness, now), HostState::Down);
        let forced = Host {
            forced_down: true,
            ..host(Some(1), now)
        };
        assert_eq!(forced.state(&liveness, now), HostState::Down);
        let disabled = Host {
            disabled: true,
            ..host(Some(1), now)
        };
        assert_eq!(disabled.state(&liveness, now), HostState::Disabled);
    }
}
