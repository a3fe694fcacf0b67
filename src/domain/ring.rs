//! The hash ring: which live compute host owns which ironic node. Pure: no IO.
//!
//! Two algorithms, both specified here bit for bit so that assignments are stable across
//! releases and machines (never Rust's `DefaultHasher`):
//!
//! * `default` — rendezvous (highest-random-weight) hashing with bounded loads. A node's
//!   preference order over hosts is by `score(node, host) = fmix64(h(node) ^ h(host))`, with
//!   `h(s) = fmix64(fnv1a64(s))` (fmix64 is MurmurHash3's 64-bit finalizer). A node goes to the
//!   first host in its order whose load is under the cap, `max(ceil(mean), floor(mean × 1.05))`.
//! * `tooz` — `tooz.hashring.HashRing(hosts, partitions=32)` as Nova's ironic driver builds it:
//!   over the host names lowercased (as Nova does since bug 1866380), for each host 32 points
//!   `md5(host × (k + 1))` for k = 1..=32, a node at `md5(node uuid)`, owned by the first point
//!   after it (bisect right, wrapping around); the owner is the host whose lowercased name won
//!   (the first such in name order, should two differ only in case).
//!
//! `plan` turns the current owners into moves. Only nodes that must move do: nodes of hosts
//! that are down or draining, and nodes with no owner, go to their preferred eligible host;
//! a joining host pulls the nodes that now prefer it, up to its fair share and a per-tick limit.
//! A failure therefore moves only the dead host's nodes.

use std::collections::{HashMap, HashSet};

use md5::{Digest, Md5};

/// How far above the mean a host's load may go under the default algorithm.
pub const LOAD_CAP_FACTOR: f64 = 1.05;

/// Points per host in the tooz ring, as Nova and Ironic configure it.
pub const TOOZ_PARTITIONS: usize = 32;

/// Which ring assigns nodes to hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RingAlgorithm {
    /// Rendezvous hashing with bounded loads.
    #[default]
    Default,
    /// tooz's md5 hash ring, for deployments coming from Nova.
    Tooz,
}

named_choices!(RingAlgorithm, "ring", {
    Default => "default",
    Tooz => "tooz",
});

/// MurmurHash3's 64-bit finalizer: a bijection with full avalanche.
pub fn fmix64(mut value: u64) -> u64 {
    value ^= value >> 33;
    value = value.wrapping_mul(0xff51_afd7_ed55_8ccd);
    value ^= value >> 33;
    value = value.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    value ^ (value >> 33)
}

/// The stable hash of a name: `fmix64(fnv1a64(bytes))`.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    fmix64(hash)
}

/// Returns how much `node` prefers `host` (higher is preferred), from their stable hashes.
pub fn score(node_hash: u64, host_hash: u64) -> u64 {
    fmix64(node_hash ^ host_hash)
}

/// tooz's `HashRing(hosts, partitions)`, reproduced bit for bit.
#[derive(Debug, Clone)]
pub struct ToozRing {
    points: Vec<(u128, usize)>,
    hosts: Vec<String>,
}

impl ToozRing {
    /// Builds the ring over `hosts`.
    pub fn new(hosts: &[String], partitions: usize) -> ToozRing {
        let mut points = Vec::with_capacity(hosts.len() * partitions);
        for (index, host) in hosts.iter().enumerate() {
            let key = host.as_bytes();
            let mut hasher = Md5::new();
            hasher.update(key);
            for _ in 0..partitions {
                hasher.update(key);
                points.push((u128::from_be_bytes(hasher.clone().finalize().into()), index));
            }
        }
        points.sort_unstable();
        ToozRing {
            points,
            hosts: hosts.to_vec(),
        }
    }

    /// Returns the host owning `data` (Nova passes the ironic node's uuid), or `None` for an
    /// empty ring.
    pub fn owner(&self, data: &[u8]) -> Option<&str> {
        let hashed = u128::from_be_bytes(Md5::digest(data).into());
        let position = self.points.partition_point(|(point, _)| *point <= hashed);
        let (_, index) = self.points.get(position).or_else(|| self.points.first())?;
        self.hosts.get(*index).map(String::as_str)
    }
}

/// Why a node changes owner; the `node_moves.reason` of the move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MoveReason {
    /// Its owner is down (or gone).
    HostDown,
    /// Its owner is draining.
    Drain,
    /// A joining host takes its share, or an unowned node gets its first owner.
    Join,
    /// An operator moved it.
    Manual,
    /// Its conductor group or shard is no longer one its owner serves.
    Regroup,
}

impl MoveReason {
    /// Returns the name stored in `node_moves.reason`.
    pub fn name(self) -> &'static str {
        match self {
            MoveReason::HostDown => "host_down",
            MoveReason::Drain => "drain",
            MoveReason::Join => "join",
            MoveReason::Manual => "manual",
            MoveReason::Regroup => "regroup",
        }
    }
}

/// One node as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOwner {
    /// The ironic node's uuid (the compute node's hypervisor_hostname).
    pub node: String,
    /// Its current owner, if it has a live compute node.
    pub owner: Option<String>,
}

/// A planned change of owner; `from` is `None` for a node's first owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub node: String,
    pub from: Option<String>,
    pub to: String,
    pub reason: MoveReason,
}

/// What the planner is told.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    pub algorithm: RingAlgorithm,
    pub nodes: &'a [NodeOwner],
    /// Hosts that may receive nodes: up, enabled, not draining.
    pub eligible: &'a [String],
    /// Hosts whose nodes must leave while they are still up.
    pub draining: &'a [String],
    /// Up hosts that keep their nodes but receive none (disabled, not draining).
    pub holding: &'a [String],
    /// Eligible hosts that pull the nodes preferring them, then (default ring) the nodes
    /// ranking them highest on crowded hosts, up to their fair share.
    pub joining: &'a [String],
    /// The most join moves in one plan (the per-tick rate limit).
    pub max_join_moves: usize,
}

/// Plans the moves that bring `input.nodes` to their owners among the eligible hosts.
/// Deterministic: the same input gives the same plan, in the same order.
pub fn plan(input: PlanInput<'_>) -> Vec<Assignment> {
    if input.eligible.is_empty() {
        return Vec::new();
    }
    let mut eligible: Vec<&str> = input.eligible.iter().map(String::as_str).collect();
    eligible.sort_unstable();
    eligible.dedup();
    let chooser = Chooser::new(input.algorithm, &eligible, input.nodes.len());

    let mut load: HashMap<&str, usize> = eligible.iter().map(|host| (*host, 0)).collect();
    let mut to_place: Vec<(&NodeOwner, MoveReason)> = Vec::new();
    for node in input.nodes {
        match node.owner.as_deref() {
            Some(owner) if load.contains_key(owner) => {
                *load.entry(owner).or_default() += 1;
            }
            Some(owner) if input.holding.iter().any(|host| host == owner) => {}
            Some(owner) if input.draining.iter().any(|host| host == owner) => {
                to_place.push((node, MoveReason::Drain));
            }
            Some(_) => to_place.push((node, MoveReason::HostDown)),
            None => to_place.push((node, MoveReason::Join)),
        }
    }
    // Hash order, not input order, so that which nodes hit the cap does not depend on how
    // the caller listed them.
    to_place.sort_by_key(|(node, _)| (stable_hash(node.node.as_bytes()), node.node.as_str()));

    let mut plan = Vec::with_capacity(to_place.len());
    for (node, reason) in to_place {
        let Some(to) = chooser.choose(&node.node, &load) else {
            continue;
        };
        *load.entry(to).or_default() += 1;
        plan.push(Assignment {
            node: node.node.clone(),
            from: node.owner.clone(),
            to: to.to_owned(),
            reason,
        });
    }
    let joins = join_moves(&input, &chooser, &mut load);
    let budget = input.max_join_moves.saturating_sub(joins.len());
    plan.extend(joins);
    let planned: HashSet<&str> = plan.iter().map(|m| m.node.as_str()).collect();
    let balance = balance_moves(&input, &chooser, &mut load, &planned, budget);
    plan.extend(balance);
    plan
}

/// Moves nodes off eligible hosts above the default ring's load cap onto hosts below it, each
/// to its most preferred host with room, until every host is within the cap (or the per-tick
/// limit is reached). After any sequence of failures and returns the default ring so ends
/// within its load bound (invariant 10); a settled ring plans nothing here.
fn balance_moves<'a>(
    input: &PlanInput<'a>,
    chooser: &Chooser<'a>,
    load: &mut HashMap<&'a str, usize>,
    planned: &HashSet<&str>,
    budget: usize,
) -> Vec<Assignment> {
    let Chooser::Rendezvous { hosts, cap } = chooser else {
        return Vec::new();
    };
    let over = |load: &HashMap<&'a str, usize>| {
        hosts
            .iter()
            .any(|(host, _)| load.get(host).copied().unwrap_or(0) > *cap)
    };
    if budget == 0 || !over(load) {
        return Vec::new();
    }
    let mut movable: Vec<(&NodeOwner, &'a str)> = input
        .nodes
        .iter()
        .filter(|node| !planned.contains(node.node.as_str()))
        .filter_map(|node| {
            let owner = node.owner.as_deref()?;
            let (host, _) = hosts.iter().find(|(host, _)| *host == owner)?;
            Some((node, *host))
        })
        .collect();
    movable.sort_by_key(|(node, _)| (stable_hash(node.node.as_bytes()), node.node.as_str()));
    let mut moves = Vec::new();
    for (node, from) in movable {
        if moves.len() >= budget || !over(load) {
            break;
        }
        if load.get(from).copied().unwrap_or(0) <= *cap {
            continue;
        }
        let node_hash = stable_hash(node.node.as_bytes());
        let to = hosts
            .iter()
            .filter(|(host, _)| load.get(host).copied().unwrap_or(0) < *cap)
            .max_by_key(|(host, host_hash)| (score(node_hash, *host_hash), *host))
            .map(|(host, _)| *host);
        let Some(to) = to else {
            break;
        };
        moves.push(join_move(load, node, from, to));
    }
    moves
}

/// Moves nodes that now prefer a joining host onto it, up to its fair share and the limit.
fn join_moves<'a>(
    input: &PlanInput<'a>,
    chooser: &Chooser<'a>,
    load: &mut HashMap<&'a str, usize>,
) -> Vec<Assignment> {
    let joining: Vec<&str> = input
        .joining
        .iter()
        .map(String::as_str)
        .filter(|host| load.contains_key(host))
        .collect();
    if joining.is_empty() || input.max_join_moves == 0 {
        return Vec::new();
    }
    let fair_share = input.nodes.len().div_ceil(load.len());
    let floor_mean = input.nodes.len() / load.len();
    let mut candidates: Vec<(&NodeOwner, &str)> = input
        .nodes
        .iter()
        .filter_map(|node| {
            let owner = node.owner.as_deref()?;
            if !load.contains_key(owner) || joining.contains(&owner) {
                return None;
            }
            let preferred = chooser.preferred(&node.node)?;
            joining.contains(&preferred).then_some((node, preferred))
        })
        .collect();
    candidates.sort_by_key(|(node, _)| (stable_hash(node.node.as_bytes()), node.node.as_str()));

    let mut moves = Vec::new();
    for (node, to) in candidates {
        if moves.len() >= input.max_join_moves {
            break;
        }
        let Some(from) = node.owner.as_deref() else {
            continue;
        };
        let to_load = load.get(to).copied().unwrap_or(0);
        let from_load = load.get(from).copied().unwrap_or(0);
        // Only from hosts above the mean, so a join leaves no host short.
        let worth_it = chooser.is_tooz()
            || (to_load < fair_share && from_load > to_load + 1 && from_load > floor_mean);
        if !worth_it {
            continue;
        }
        moves.push(join_move(load, node, from, to));
    }
    if !chooser.is_tooz() {
        top_up_joining(input, &joining, (fair_share, floor_mean), load, &mut moves);
    }
    moves
}

/// Brings each joining host still under its fair share up to it with the nodes that rank it
/// highest among the ones on crowded hosts. Rendezvous preference alone can leave a host
/// empty: with few nodes, none may prefer it (12 nodes on 3 hosts: 0.8 % of node sets).
fn top_up_joining<'a>(
    input: &PlanInput<'a>,
    joining: &[&'a str],
    (fair_share, floor_mean): (usize, usize),
    load: &mut HashMap<&'a str, usize>,
    moves: &mut Vec<Assignment>,
) {
    let moved: HashSet<&str> = moves.iter().map(|m| m.node.as_str()).collect();
    let movable: Vec<(&NodeOwner, &str)> = input
        .nodes
        .iter()
        .filter(|node| !moved.contains(node.node.as_str()))
        .filter_map(|node| {
            let owner = node.owner.as_deref()?;
            let eligible = load.contains_key(owner) && !joining.contains(&owner);
            eligible.then_some((node, owner))
        })
        .collect();
    let mut taken: HashSet<&str> = HashSet::new();
    for &to in joining {
        let host_hash = stable_hash(to.as_bytes());
        let mut ranked: Vec<(u64, &NodeOwner, &str)> = movable
            .iter()
            .map(|(node, owner)| {
                let rank = score(stable_hash(node.node.as_bytes()), host_hash);
                (rank, *node, *owner)
            })
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.node.cmp(&b.1.node)));
        for (_, node, from) in ranked {
            if moves.len() >= input.max_join_moves {
                return;
            }
            let to_load = load.get(to).copied().unwrap_or(0);
            if to_load >= fair_share {
                break;
            }
            let from_load = load.get(from).copied().unwrap_or(0);
            if from_load <= to_load + 1
                || from_load <= floor_mean
                || !taken.insert(node.node.as_str())
            {
                continue;
            }
            moves.push(join_move(load, node, from, to));
        }
    }
}

/// Moves `node` from `from` to the joining host `to`, keeping the loads up to date.
fn join_move<'a>(
    load: &mut HashMap<&'a str, usize>,
    node: &NodeOwner,
    from: &'a str,
    to: &'a str,
) -> Assignment {
    *load.entry(to).or_default() += 1;
    *load.entry(from).or_default() -= 1;
    Assignment {
        node: node.node.clone(),
        from: Some(from.to_owned()),
        to: to.to_owned(),
        reason: MoveReason::Join,
    }
}

/// Picks a node's host among the eligible ones.
enum Chooser<'a> {
    Rendezvous {
        hosts: Vec<(&'a str, u64)>,
        cap: usize,
    },
    Tooz {
        ring: ToozRing,
        hosts: Vec<&'a str>,
    },
}

impl<'a> Chooser<'a> {
    fn new(algorithm: RingAlgorithm, eligible: &[&'a str], node_count: usize) -> Chooser<'a> {
        match algorithm {
            RingAlgorithm::Default => {
                let hosts = eligible.len().max(1);
                let mean = node_count as f64 / hosts as f64;
                // The cap is never below the mean rounded up, so every node has room.
                let cap = ((mean * LOAD_CAP_FACTOR).floor() as usize)
                    .max(node_count.div_ceil(hosts))
                    .max(1);
                Chooser::Rendezvous {
                    hosts: eligible
                        .iter()
                        .map(|host| (*host, stable_hash(host.as_bytes())))
                        .collect(),
                    cap,
                }
            }
            RingAlgorithm::Tooz => {
                // Nova hashes lowercased host names; `eligible` is sorted, so the first host
                // of each lowercased name is the one that keeps it.
                let mut lowered: Vec<String> =
                    eligible.iter().map(|host| host.to_lowercase()).collect();
                lowered.sort_unstable();
                lowered.dedup();
                Chooser::Tooz {
                    ring: ToozRing::new(&lowered, TOOZ_PARTITIONS),
                    hosts: eligible.to_vec(),
                }
            }
        }
    }

    fn is_tooz(&self) -> bool {
        matches!(self, Chooser::Tooz { .. })
    }

    /// The host `node` prefers most, ignoring loads.
    fn preferred(&self, node: &str) -> Option<&'a str> {
        match self {
            Chooser::Rendezvous { hosts, .. } => {
                let node_hash = stable_hash(node.as_bytes());
                hosts
                    .iter()
                    .max_by_key(|(host, host_hash)| (score(node_hash, *host_hash), *host))
                    .map(|(host, _)| *host)
            }
            Chooser::Tooz { ring, hosts } => {
                let owner = ring.owner(node.as_bytes())?;
                hosts
                    .iter()
                    .copied()
                    .find(|host| host.to_lowercase() == owner)
            }
        }
    }

    /// The host `node` goes to given the current loads: its most preferred host under the
    /// cap (default), or exactly tooz's choice.
    fn choose(&self, node: &str, load: &HashMap<&'a str, usize>) -> Option<&'a str> {
        match self {
            Chooser::Rendezvous { hosts, cap } => {
                let node_hash = stable_hash(node.as_bytes());
                hosts
                    .iter()
                    .filter(|(host, _)| load.get(host).copied().unwrap_or(0) < *cap)
                    .max_by_key(|(host, host_hash)| (score(node_hash, *host_hash), *host))
                    .map(|(host, _)| *host)
                    .or_else(|| self.preferred(node))
            }
            Chooser::Tooz { .. } => self.preferred(node),
        }
    }
}

#[cfg(test)]
mod tests;
