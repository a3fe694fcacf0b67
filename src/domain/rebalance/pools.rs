//! The sets of nodes the ring balances separately: the nodes whose
//! conductor group and shard the same up hosts serve form one pool, balanced over those hosts
//! only; nodes no up host serves form none — they stay where they are and are reported.
//! When every up host serves every node (no `--ironic-conductor-group`, no `--ironic-shard`:
//! the usual case, and a million nodes) there is one pool and no per-node work.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{NodeOwnership, Quiet};
use crate::domain::ring::NodeOwner;
use crate::domain::selection::{NodeSelection, UnservedGroup};

/// Nodes balanced over one set of hosts.
pub(super) struct Pool<'a> {
    /// The up hosts that serve these nodes; `None`: every up host.
    hosts: Option<HashSet<&'a str>>,
    pub nodes: Vec<NodeOwner>,
}

impl Pool<'_> {
    /// Those of `hosts` that serve this pool's nodes.
    pub fn keep(&self, hosts: &[String]) -> Vec<String> {
        match &self.hosts {
            None => hosts.to_vec(),
            Some(serving) => hosts
                .iter()
                .filter(|host| serving.contains(host.as_str()))
                .cloned()
                .collect(),
        }
    }
}

/// The pools, and the groups no up host serves.
pub(super) struct Pools<'a> {
    pub served: Vec<Pool<'a>>,
    pub unserved: Vec<UnservedGroup>,
}

/// Sorts `owners` into pools by which of the up hosts of `quiet` serve them.
pub(super) fn pools<'a>(quiet: &'a Quiet, owners: &[NodeOwnership]) -> Pools<'a> {
    let up: Vec<&'a str> = [&quiet.eligible, &quiet.draining, &quiet.holding]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if quiet.groups.is_empty() {
        if up.is_empty() {
            return Pools {
                served: Vec::new(),
                unserved: unserved(owners.iter()),
            };
        }
        return Pools {
            served: vec![Pool {
                hosts: None,
                nodes: owners.iter().map(node_owner).collect(),
            }],
            unserved: Vec::new(),
        };
    }
    let serves: HashMap<&str, &NodeSelection> = quiet
        .groups
        .iter()
        .map(|(host, selection)| (host.as_str(), selection))
        .collect();
    let all = NodeSelection::default();
    let selection_of = |host: &str| serves.get(host).copied().unwrap_or(&all);
    // Which up hosts serve a node depends only on its group and shard: worked out once per
    // pair, not per node.
    let mut hosts_of: HashMap<(&str, Option<&str>), Vec<&'a str>> = HashMap::new();
    let mut by_hosts: BTreeMap<Vec<&'a str>, Vec<NodeOwner>> = BTreeMap::new();
    let mut unserved_nodes = Vec::new();
    for row in owners {
        let key = (row.conductor_group.as_str(), row.shard.as_deref());
        let hosts = hosts_of.entry(key).or_insert_with(|| {
            up.iter()
                .copied()
                .filter(|host| selection_of(host).matches(key.0, key.1))
                .collect()
        });
        if hosts.is_empty() {
            unserved_nodes.push(row);
        } else {
            by_hosts
                .entry(hosts.clone())
                .or_default()
                .push(node_owner(row));
        }
    }
    Pools {
        served: by_hosts
            .into_iter()
            .map(|(hosts, nodes)| Pool {
                hosts: Some(hosts.into_iter().collect()),
                nodes,
            })
            .collect(),
        unserved: unserved(unserved_nodes.into_iter()),
    }
}

fn node_owner(row: &NodeOwnership) -> NodeOwner {
    NodeOwner {
        node: row.node.to_string(),
        owner: row.owner.clone(),
    }
}

/// `nodes` counted by group and shard, in that order.
fn unserved<'r>(nodes: impl Iterator<Item = &'r NodeOwnership>) -> Vec<UnservedGroup> {
    let mut counts: BTreeMap<(&str, Option<&str>), usize> = BTreeMap::new();
    for row in nodes {
        *counts
            .entry((row.conductor_group.as_str(), row.shard.as_deref()))
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|((group, shard), nodes)| UnservedGroup {
            conductor_group: group.to_owned(),
            shard: shard.map(str::to_owned),
            nodes,
        })
        .collect()
}
