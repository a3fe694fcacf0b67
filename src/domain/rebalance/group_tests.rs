//! Conductor groups and shards in the plan: each group balanced over its own
//! hosts, a group without a live host left alone and reported, a regrouped node moved.

use std::collections::BTreeMap;

use super::tests::{host, liveness, now};
use super::*;

fn serving(name: &str, group: Option<&str>, shard: Option<&str>) -> Host {
    Host {
        serves: NodeSelection {
            conductor_group: group.map(str::to_owned),
            shard: shard.map(str::to_owned),
        },
        ..host(name, 1)
    }
}

/// `count` nodes of `group` (numbered from `first`), owned by `owner`.
fn nodes(first: u128, count: u128, group: &str, owner: Option<&str>) -> Vec<NodeOwnership> {
    (first..first + count)
        .map(|n| NodeOwnership {
            node: Uuid::from_u128(n),
            owner: owner.map(str::to_owned),
            epoch: owner.map(|_| 1),
            conductor_group: group.to_owned(),
            shard: None,
        })
        .collect()
}

fn tick(hosts: &[Host], owners: &[NodeOwnership]) -> TickPlan {
    let quiet = match judge(
        hosts,
        0,
        Outage::default(),
        &liveness(),
        now(),
        &RingMemory::default(),
    ) {
        Judged::Changed(quiet) | Judged::Unchanged(quiet) => quiet,
    };
    let settings = TickSettings {
        algorithm: RingAlgorithm::default(),
        max_join_moves: 10_000,
    };
    plan_tick(quiet, owners, &RingMemory::default(), settings)
}

/// Where each node went: node number → host.
fn claimed_by(tick: &TickPlan) -> BTreeMap<u128, String> {
    tick.claims
        .iter()
        .map(|claim| (claim.node.as_u128(), claim.host.clone()))
        .collect()
}

#[test]
fn each_group_is_balanced_over_its_own_hosts_and_a_group_without_hosts_is_reported() {
    let hosts = [
        serving("rack1-a", Some("rack-1"), None),
        serving("rack1-b", Some("rack-1"), None),
        serving("rack2-a", Some("rack-2"), None),
    ];
    let mut owners = nodes(0, 40, "rack-1", None);
    owners.extend(nodes(100, 10, "rack-2", None));
    owners.extend(nodes(200, 7, "rack-3", None));
    let tick = tick(&hosts, &owners);
    let claimed = claimed_by(&tick);
    for n in 0..40 {
        assert!(
            claimed[&n].starts_with("rack1-"),
            "node {n}: {}",
            claimed[&n]
        );
    }
    let on_a = (0..40).filter(|n| claimed[n] == "rack1-a").count();
    assert!(
        (18..=22).contains(&on_a),
        "rack-1 balanced over its two hosts: {on_a} of 40"
    );
    assert!((100..110).all(|n| claimed[&n] == "rack2-a"));
    assert!(
        (200..207).all(|n| !claimed.contains_key(&n)),
        "rack-3 has no host"
    );
    assert_eq!(
        tick.memory.unserved,
        [UnservedGroup {
            conductor_group: "rack-3".into(),
            shard: None,
            nodes: 7
        }]
    );
}

#[test]
fn the_nodes_of_a_group_whose_hosts_are_all_down_stay_where_they_are() {
    let hosts = [
        serving("rack1-a", Some("rack-1"), None),
        Host {
            last_seen_up: Some(now() - chrono::Duration::seconds(60)),
            ..serving("rack2-a", Some("rack-2"), None)
        },
    ];
    let mut owners = nodes(0, 5, "rack-1", Some("rack1-a"));
    owners.extend(nodes(100, 6, "rack-2", Some("rack2-a")));
    let tick = tick(&hosts, &owners);
    assert!(
        tick.moves.is_empty() && tick.claims.is_empty(),
        "{:?}",
        tick.plan
    );
    assert_eq!(tick.memory.unserved.len(), 1);
    assert_eq!(tick.memory.unserved[0].conductor_group, "rack-2");
    assert_eq!(tick.memory.unserved[0].nodes, 6);
}

#[test]
fn a_node_whose_group_changed_leaves_its_owner_for_a_host_of_its_new_group() {
    let hosts = [
        serving("rack1-a", Some("rack-1"), None),
        serving("rack2-a", Some("rack-2"), None),
    ];
    let mut owners = nodes(0, 3, "rack-1", Some("rack1-a"));
    owners.extend(nodes(10, 1, "rack-2", Some("rack1-a")));
    let tick = tick(&hosts, &owners);
    assert_eq!(tick.moves.len(), 1, "{:?}", tick.plan);
    let moved = &tick.moves[0];
    assert_eq!(moved.node.0.as_u128(), 10);
    assert_eq!(moved.to.as_str(), "rack2-a");
    assert_eq!(moved.reason, MoveReason::Regroup);
    assert!(tick.memory.unserved.is_empty());
}

#[test]
fn a_host_of_every_group_shares_each_group_with_its_own_hosts_and_takes_the_rest() {
    let hosts = [
        serving("all-a", None, None),
        serving("rack1-a", Some("rack-1"), None),
        serving("default-a", Some(""), None),
    ];
    let mut owners = nodes(0, 40, "rack-1", None);
    owners.extend(nodes(100, 40, "", None));
    owners.extend(nodes(200, 5, "rack-2", None));
    let tick = tick(&hosts, &owners);
    let claimed = claimed_by(&tick);
    let rack1: Vec<&str> = (0..40).map(|n| claimed[&n].as_str()).collect();
    assert!(rack1.iter().all(|host| ["all-a", "rack1-a"].contains(host)));
    assert!(rack1.contains(&"all-a") && rack1.contains(&"rack1-a"));
    // The default group ("") is not "every group": only all-a and default-a serve it.
    let default: Vec<&str> = (100..140).map(|n| claimed[&n].as_str()).collect();
    assert!(
        default
            .iter()
            .all(|host| ["all-a", "default-a"].contains(host))
    );
    assert!((200..205).all(|n| claimed[&n] == "all-a"));
    assert!(tick.memory.unserved.is_empty());
}

#[test]
fn a_shard_host_serves_only_its_shard() {
    let hosts = [serving("s1-a", None, Some("s1"))];
    let mut owners = nodes(0, 3, "", None);
    owners[0].shard = Some("s1".into());
    let tick = tick(&hosts, &owners);
    assert_eq!(claimed_by(&tick).into_keys().collect::<Vec<_>>(), [0]);
    assert_eq!(tick.memory.unserved[0].nodes, 2);
    assert_eq!(tick.memory.unserved[0].shard, None);
}
