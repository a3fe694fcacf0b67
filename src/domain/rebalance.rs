//! The rebalancer's policy, pure: from the hosts, the node owners and what the last tick
//! remembered, what this tick does — which hosts are members, which are joining, the plan,
//! and the claims and moves that carry it out. The `Rebalancer` actor only takes the lease,
//! reads, calls these and sends; `ring::plan` decides where each node goes.
//!
//! A tick is two steps so that a quiet deployment costs no read of every node: `judge` sorts
//! the hosts (from heartbeats, with a database outage credited) and says whether the
//! deployment is as it was when the last plan came out empty; only when it is not does the
//! caller read the owners and call `plan_tick`.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::host::{Host, HostState, Liveness};
use super::identity::{HostName, NodeUuid, OwnerEpoch};
use super::ring::{Assignment, MoveReason, PlanInput, RingAlgorithm, plan};
use super::selection::{NodeSelection, UnservedGroup};

mod pools;

/// A node to give its first owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeClaim {
    pub node: Uuid,
    pub host: String,
}

/// A node to move from its owner at the epoch it was read at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMove {
    pub node: NodeUuid,
    pub from: HostName,
    pub epoch: OwnerEpoch,
    pub to: HostName,
    pub reason: MoveReason,
}

/// One ironic node with its owner and the epoch it is owned at, if it has a live compute node,
/// and its conductor group (`""`: Ironic's default) and shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOwnership {
    pub node: Uuid,
    pub owner: Option<String>,
    pub epoch: Option<i64>,
    pub conductor_group: String,
    pub shard: Option<String>,
}

/// A database outage as a rebalancer saw it: hosts could not heartbeat while it lasted, so
/// for one down time after it ends a host that was up when it began is not judged down for
/// the heartbeats it missed (nothing moves because the database went away).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outage {
    pub began: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
}

impl Outage {
    /// Whether it has begun and not ended.
    pub fn is_going_on(&self) -> bool {
        self.began.is_some() && self.ended.is_none()
    }

    /// The outage as it stands after the database could not be reached at `now`: one going on
    /// goes on; one that ended within `window` goes on again from when it began (a database
    /// that comes and goes is one outage); otherwise one begins now.
    pub fn failed(self, now: DateTime<Utc>, window: chrono::Duration) -> Outage {
        match (self.began, self.ended) {
            (Some(_), None) => self,
            (Some(began), Some(ended)) if now - ended <= window => Outage {
                began: Some(began),
                ended: None,
            },
            _ => Outage {
                began: Some(now),
                ended: None,
            },
        }
    }

    /// The outage as it stands after nothing could be heard from `from` to `to` (a tick far
    /// later than its interval, a database that answered only after a long wait): merged with
    /// one going on or ended within `window` (the earliest beginning kept; still going on if it
    /// was), otherwise that gap alone.
    pub fn gap(self, from: DateTime<Utc>, to: DateTime<Utc>, window: chrono::Duration) -> Outage {
        match (self.began, self.ended) {
            (Some(began), None) => Outage {
                began: Some(began.min(from)),
                ended: None,
            },
            (Some(began), Some(ended)) if from - ended <= window => Outage {
                began: Some(began.min(from)),
                ended: Some(ended.max(to)),
            },
            _ => Outage {
                began: Some(from),
                ended: Some(to),
            },
        }
    }

    /// The outage as it stands once the database answers again at `now`.
    pub fn recovered(self, now: DateTime<Utc>) -> Outage {
        if self.is_going_on() {
            Outage {
                began: self.began,
                ended: Some(now),
            }
        } else {
            self
        }
    }

    /// Returns the last heartbeat a host is judged by at `now`. Hosts are judged only on what
    /// was just read from the database, so an outage still going on ends at `now` for this:
    /// the first tick that reaches the database again credits as the next ones do.
    pub fn credited(
        &self,
        last_seen_up: Option<DateTime<Utc>>,
        liveness: &Liveness,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let Some(began) = self.began else {
            return last_seen_up;
        };
        let ended = self.ended.unwrap_or(now);
        let was_up = last_seen_up.is_some_and(|seen| seen >= began - liveness.service_down_time);
        if was_up && now - ended <= liveness.service_down_time {
            last_seen_up.map(|seen| seen.max(ended))
        } else {
            last_seen_up
        }
    }
}

/// How a process judges hosts now, as it shows and uses their states (lists, events, the
/// scheduler, os-services): its liveness settings, with the heartbeats a database outage its
/// rebalancer noted kept a host from writing credited, as the rebalancer credits them
/// (invariant 15 of docs/design.md: a failover is not a host failure).
#[derive(Debug, Clone, Copy)]
pub struct HostJudge {
    pub liveness: Liveness,
    pub outage: Outage,
}

impl HostJudge {
    /// The state of `host` at `now`.
    pub fn state(&self, host: &Host, now: DateTime<Utc>) -> HostState {
        self.credited(host, now).state(&self.liveness, now)
    }

    /// Whether `host` is up (heartbeating, not forced down) at `now`, disabled or not.
    pub fn is_up(&self, host: &Host, now: DateTime<Utc>) -> bool {
        self.credited(host, now).is_up(&self.liveness, now)
    }

    /// `host` with its last heartbeat as the outage credits it.
    fn credited(&self, host: &Host, now: DateTime<Utc>) -> Host {
        Host {
            last_seen_up: self.outage.credited(host.last_seen_up, &self.liveness, now),
            ..host.clone()
        }
    }
}

/// The up hosts sorted by what they may do, and the ownership counter read with them: what a
/// plan depends on besides the owners themselves. When this is unchanged and the last plan
/// was empty, the next plan is empty too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quiet {
    pub ownership: i64,
    /// Up, enabled hosts (may receive nodes), sorted.
    pub eligible: Vec<String>,
    /// Up hosts whose nodes must leave, sorted.
    pub draining: Vec<String>,
    /// Up, disabled, not draining hosts: they keep their nodes and receive none, sorted.
    pub holding: Vec<String>,
    /// The up hosts that serve only some nodes (a conductor group or shard), sorted; the
    /// others serve every node.
    pub groups: Vec<(String, NodeSelection)>,
}

/// What the last tick leaves to the next.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RingMemory {
    /// The eligible hosts of the last tick (empty before the first).
    pub members: Vec<String>,
    /// Hosts still pulling their share.
    pub joining: BTreeSet<String>,
    /// Set when the last plan was empty: what it was computed from.
    pub quiet: Option<Quiet>,
    /// The groups no up host serves, as the last plan found them.
    pub unserved: Vec<UnservedGroup>,
}

/// How a tick plans.
#[derive(Debug, Clone, Copy)]
pub struct TickSettings {
    pub algorithm: RingAlgorithm,
    /// The most nodes a joining host pulls in one tick.
    pub max_join_moves: usize,
}

/// What `judge` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// As when the last plan came out empty: nothing to plan, no owners to read.
    Unchanged(Quiet),
    /// Something changed: read the owners and `plan_tick`.
    Changed(Quiet),
}

/// Sorts the hosts up at `now` (a heartbeat missed during `outage` is credited) into eligible,
/// draining and holding, and compares with the last tick.
pub fn judge(
    hosts: &[Host],
    ownership: i64,
    outage: Outage,
    liveness: &Liveness,
    now: DateTime<Utc>,
    memory: &RingMemory,
) -> Judged {
    let mut quiet = Quiet {
        ownership,
        ..Quiet::default()
    };
    for host in hosts {
        let credited = Host {
            last_seen_up: outage.credited(host.last_seen_up, liveness, now),
            ..host.clone()
        };
        if !credited.is_up(liveness, now) {
            continue;
        }
        let set = if !host.disabled {
            &mut quiet.eligible
        } else if host.is_draining() {
            &mut quiet.draining
        } else {
            &mut quiet.holding
        };
        set.push(host.name.clone());
        if !host.serves.is_all() {
            quiet.groups.push((host.name.clone(), host.serves.clone()));
        }
    }
    for set in [&mut quiet.eligible, &mut quiet.draining, &mut quiet.holding] {
        set.sort();
    }
    quiet.groups.sort();
    if memory.joining.is_empty() && memory.quiet.as_ref() == Some(&quiet) {
        Judged::Unchanged(quiet)
    } else {
        Judged::Changed(quiet)
    }
}

/// What one tick does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickPlan {
    /// What the next tick starts from.
    pub memory: RingMemory,
    /// Every change of owner, as the ring planned it.
    pub plan: Vec<Assignment>,
    /// The plan's first owners.
    pub claims: Vec<NodeClaim>,
    /// The plan's moves, each with the epoch its node was read at.
    pub moves: Vec<NodeMove>,
}

/// The tick of an unchanged deployment: the same members, nothing to do, the same groups
/// unserved.
pub fn quiet_tick(quiet: Quiet, memory: &RingMemory) -> TickPlan {
    TickPlan {
        memory: RingMemory {
            members: quiet.eligible.clone(),
            joining: BTreeSet::new(),
            quiet: Some(quiet),
            unserved: memory.unserved.clone(),
        },
        ..TickPlan::default()
    }
}

/// Plans a tick: which eligible hosts are joining (new since the last tick, or owning nothing
/// while others own nodes), the ring's plan for `owners` — each pool of nodes (`pools`: those
/// the same hosts serve) over its own hosts, a node whose owner no longer serves it moved
/// (`Regroup`), nodes no up host serves left where they are — and whether the joining hosts
/// have converged (no pool moved as many nodes to them as the per-tick cap).
pub fn plan_tick(
    quiet: Quiet,
    owners: &[NodeOwnership],
    memory: &RingMemory,
    settings: TickSettings,
) -> TickPlan {
    let joining = joining_hosts(&quiet.eligible, owners, memory);
    let joining_list: Vec<String> = joining.iter().cloned().collect();
    let pools::Pools { served, unserved } = pools::pools(&quiet, owners);
    let mut planned = Vec::new();
    let mut join_moves = 0;
    for pool in &served {
        let part = plan(PlanInput {
            algorithm: settings.algorithm,
            nodes: &pool.nodes,
            eligible: &pool.keep(&quiet.eligible),
            draining: &pool.keep(&quiet.draining),
            holding: &pool.keep(&quiet.holding),
            joining: &pool.keep(&joining_list),
            max_join_moves: settings.max_join_moves,
        });
        let joined = part
            .iter()
            .filter(|assignment| assignment.from.is_some() && assignment.reason == MoveReason::Join)
            .count();
        join_moves = join_moves.max(joined);
        planned.extend(part);
    }
    drop(served);
    for assignment in &mut planned {
        // An owner that is up yet not among the pool's hosts does not serve the node's group.
        if assignment.reason == MoveReason::HostDown
            && assignment
                .from
                .as_ref()
                .is_some_and(|from| quiet.is_up(from))
        {
            assignment.reason = MoveReason::Regroup;
        }
    }
    let (claims, moves) = carry_out(&planned, owners);
    TickPlan {
        memory: RingMemory {
            members: quiet.eligible.clone(),
            // Converged: the joining hosts have their share.
            joining: if join_moves < settings.max_join_moves {
                BTreeSet::new()
            } else {
                joining
            },
            quiet: planned.is_empty().then_some(quiet),
            unserved,
        },
        plan: planned,
        claims,
        moves,
    }
}

impl Quiet {
    /// Whether `host` is up (eligible, draining or holding).
    fn is_up(&self, host: &str) -> bool {
        [&self.eligible, &self.draining, &self.holding]
            .into_iter()
            .any(|set| set.iter().any(|name| name == host))
    }
}

/// The eligible hosts that pull nodes this tick: those still joining, those new since the
/// last tick, and those owning nothing while some host owns nodes.
fn joining_hosts(
    eligible: &[String],
    owners: &[NodeOwnership],
    memory: &RingMemory,
) -> BTreeSet<String> {
    let mut load: HashMap<&str, usize> = HashMap::new();
    for owner in owners.iter().filter_map(|row| row.owner.as_deref()) {
        *load.entry(owner).or_default() += 1;
    }
    let anyone_owns = !load.is_empty();
    let mut joining = memory.joining.clone();
    for host in eligible {
        let is_new = !memory.members.is_empty() && !memory.members.contains(host);
        let is_empty = anyone_owns && !load.contains_key(host.as_str());
        if is_new || is_empty {
            joining.insert(host.clone());
        }
    }
    joining.retain(|host| eligible.contains(host));
    joining
}

/// Splits a plan into first claims and moves, each move with the epoch its node was read at.
/// Every assignment is of a node of `owners` (the plan was made from them); a node planned
/// away from an owner has that owner's epoch.
fn carry_out(planned: &[Assignment], owners: &[NodeOwnership]) -> (Vec<NodeClaim>, Vec<NodeMove>) {
    let by_node: HashMap<String, &NodeOwnership> = owners
        .iter()
        .map(|row| (row.node.to_string(), row))
        .collect();
    let mut claims = Vec::new();
    let mut moves = Vec::new();
    for assignment in planned {
        let Some(row) = by_node.get(&assignment.node) else {
            continue;
        };
        match (&assignment.from, row.epoch) {
            (None, _) => claims.push(NodeClaim {
                node: row.node,
                host: assignment.to.clone(),
            }),
            (Some(from), Some(epoch)) => moves.push(NodeMove {
                node: NodeUuid(row.node),
                from: HostName::from(from.as_str()),
                epoch: OwnerEpoch(epoch),
                to: HostName::from(assignment.to.as_str()),
                reason: assignment.reason,
            }),
            // An owner is only read together with its epoch.
            (Some(_), None) => {}
        }
    }
    (claims, moves)
}

#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod tests;
