//! Conductor groups at scale (issue 31, item 4), against the stand-in Ironic: two `serve`
//! processes, one per conductor group, each group's nodes balanced over its own hosts only; the
//! group whose process dies is reported (ring API, metrics, one WARN) and its nodes are not given
//! to the other group; a node that moves to another group in Ironic keeps its compute node and
//! provider and moves to a host of its new group.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{
    FAST, StandinIronic, TestDb, eventually, get_json, http, nodes_by_api, owners_of, serve_with,
};

/// How many of `owners` each host has.
fn tally(owners: &[Option<String>]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for owner in owners {
        *counts.entry(owner.clone().unwrap_or_default()).or_default() += 1;
    }
    counts
}

fn borrow(flags: &[String]) -> Vec<&str> {
    flags.iter().map(String::as_str).collect()
}

/// The value of the metric line starting with `series` in `/metrics`.
fn metric(address: &str, series: &str) -> Option<f64> {
    let (_, text) = http(address, "GET", "/metrics");
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn each_conductor_group_is_served_by_its_own_hosts_and_a_group_without_a_live_host_is_reported() {
    let ironic = StandinIronic::start(0);
    let rack1 = ironic.enroll(30, "rack-1");
    let rack2 = ironic.enroll(10, "rack-2");
    let db = TestDb::new();
    let flags = |group: &'static str| -> Vec<String> {
        FAST.iter()
            .map(|flag| flag.to_string())
            .chain(["--ironic-url".into(), ironic.url.clone()])
            .chain(["--ironic-conductor-group".into(), group.into()])
            .collect()
    };
    let (rack1_flags, rack2_flags) = (flags("rack-1"), flags("rack-2"));
    let (mut first, a) = serve_with(db.url(), "r1-a,r1-b", &borrow(&rack1_flags));
    let (mut second, _) = serve_with(db.url(), "r2-a", &borrow(&rack2_flags));

    each_group_on_its_own_hosts(&a, (rack1.as_slice(), rack2.as_slice()));
    let identities = nodes_by_api(&a);

    // rack-2's only process dies: its group is reported, its nodes stay with r2-a.
    second.child.kill().expect("SIGKILL");
    let _ = second.child.wait();
    let unserved = eventually(Duration::from_secs(30), "rack-2 reported", || {
        let ring = get_json(&a, "/api/v1/ring");
        let groups = ring["unserved_groups"].as_array()?.clone();
        (!groups.is_empty()).then_some(groups)
    });
    assert_eq!(unserved.len(), 1, "{unserved:?}");
    assert_eq!(
        (&unserved[0]["conductor_group"], &unserved[0]["nodes"]),
        (&json!("rack-2"), &json!(10))
    );
    first.wait_for_stderr(
        "no live host serves conductor group \"rack-2\" (10 nodes)",
        Duration::from_secs(10),
    );
    // (The metrics show the deployment's figures as last read, a moment ago.)
    eventually(Duration::from_secs(20), "the metric", || {
        (metric(&a, "ringmaster_unserved_node_groups ") == Some(1.0)).then_some(())
    });
    assert_eq!(
        metric(
            &a,
            "ringmaster_unserved_nodes{conductor_group=\"rack-2\",shard=\"\"} "
        ),
        Some(10.0)
    );
    // Several rebalance ticks later, none of them went to rack-1's hosts.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        owners_of(&a, &rack2)
            .iter()
            .all(|owner| owner.as_deref() == Some("r2-a"))
    );

    // rack-2's process back: the report clears; nothing of rack-2 moved, identities kept.
    let (_second, b) = serve_with(db.url(), "r2-a", &borrow(&rack2_flags));
    eventually(Duration::from_secs(30), "rack-2 served again", || {
        (get_json(&b, "/api/v1/ring")["unserved_groups"] == json!([])).then_some(())
    });
    eventually(Duration::from_secs(20), "the metric back to 0", || {
        (metric(&b, "ringmaster_unserved_node_groups ") == Some(0.0)).then_some(())
    });

    a_regrouped_node_moves_and_keeps_its_identity(&ironic, &a, rack1[0], &identities);
}

/// Each group on its own hosts, rack-1 balanced over both of its hosts; nothing unserved.
fn each_group_on_its_own_hosts(a: &str, (rack1, rack2): (&[Uuid], &[Uuid])) {
    let rack1_owners = eventually(Duration::from_secs(60), "every node owned", || {
        let (one, two) = (owners_of(a, rack1), owners_of(a, rack2));
        (one.iter().chain(&two).all(Option::is_some)).then_some(one)
    });
    let counts = tally(&rack1_owners);
    assert_eq!(
        counts.keys().collect::<Vec<_>>(),
        ["r1-a", "r1-b"],
        "{counts:?}"
    );
    assert!(
        counts.values().all(|n| (12..=18).contains(n)),
        "balanced: {counts:?}"
    );
    assert!(
        owners_of(a, rack2)
            .iter()
            .all(|owner| owner.as_deref() == Some("r2-a"))
    );
    let hosts = get_json(a, "/api/v1/hosts");
    let r2 = hosts
        .as_array()
        .and_then(|hosts| hosts.iter().find(|host| host["host"] == "r2-a"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&r2["conductor_group"], &r2["shard"]),
        (&json!("rack-2"), &Value::Null)
    );
    assert_eq!(get_json(a, "/api/v1/ring")["unserved_groups"], json!([]));
    assert_eq!(metric(a, "ringmaster_unserved_node_groups "), Some(0.0));
}

/// A rack-1 node moved to rack-2 in Ironic: it leaves rack-1's hosts for r2-a, keeping its
/// compute node and provider; rack-1's listing did not take it for gone.
fn a_regrouped_node_moves_and_keeps_its_identity(
    ironic: &StandinIronic,
    a: &str,
    regrouped: Uuid,
    identities: &BTreeMap<String, (Option<String>, Value, Value)>,
) {
    ironic.set(regrouped, "conductor_group", json!("rack-2"));
    eventually(
        Duration::from_secs(30),
        "the regrouped node on r2-a",
        || (owners_of(a, &[regrouped])[0].as_deref() == Some("r2-a")).then_some(()),
    );
    let after = nodes_by_api(a);
    let key = regrouped.to_string();
    assert_eq!(
        after[&key].1, identities[&key].1,
        "the compute node is kept"
    );
    assert_eq!(after[&key].2, identities[&key].2, "the provider is kept");
    for (node, (_, compute_node, provider)) in identities {
        assert_eq!(
            (&after[node].1, &after[node].2),
            (compute_node, provider),
            "{node}"
        );
    }
    let moves = get_json(a, "/api/v1/moves?limit=10");
    assert!(
        moves.as_array().is_some_and(|moves| moves
            .iter()
            .any(|entry| entry["node"] == key.as_str() && entry["reason"] == "regroup")),
        "{moves}"
    );
    let audit = get_json(a, "/api/v1/audit");
    assert_eq!(audit["ok"], true, "{audit}");
}
