//! Two ringmaster processes on one database form one deployment: when the one leading the
//! rebalancer is killed with SIGKILL, the other takes over leadership and the dead process's
//! nodes, keeping every node's identity.

use std::collections::BTreeMap;
use std::time::Duration;

use ringmaster::db::cluster::Cluster;
use serde_json::Value;

use crate::helpers::{FAST, Running, address_of, eventually, http, ringmaster};

fn serve(url: &str, hosts: &str, extra: &[&str]) -> (Running, String) {
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--hosts", hosts])
        .args(FAST)
        .args(extra)
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn");
    let mut running = Running::spawn(command);
    let address =
        address_of(&running.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    (running, address)
}

fn get_json(address: &str, path: &str) -> Value {
    let (status, body) = http(address, "GET", path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// Maps each node to (owner, compute-node uuid, provider uuid).
fn nodes(address: &str) -> BTreeMap<String, (Option<String>, Value, Value)> {
    get_json(address, "/api/v1/nodes")
        .as_array()
        .unwrap()
        .iter()
        .map(|node| {
            (
                node["uuid"].as_str().unwrap().to_owned(),
                (
                    node["host"].as_str().map(str::to_owned),
                    node["compute_node_uuid"].clone(),
                    node["resource_provider_uuid"].clone(),
                ),
            )
        })
        .collect()
}

#[test]
fn the_survivor_takes_over_leadership_and_the_killed_processs_nodes() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let url = cluster.url("postgres");
    let (mut first, first_address) = serve(&url, "a-1,a-2", &["--nodes", "12"]);
    eventually(
        Duration::from_secs(20),
        "the first process to own all 12 nodes",
        || {
            let owned = nodes(&first_address)
                .values()
                .filter(|(host, _, _)| host.is_some())
                .count();
            (owned == 12).then_some(())
        },
    );
    assert_eq!(get_json(&first_address, "/api/v1/ring")["leader"], true);

    let (_second, second_address) = serve(&url, "b-1,b-2", &[]);
    eventually(
        Duration::from_secs(20),
        "the second process's hosts to receive nodes",
        || {
            let spread = nodes(&second_address)
                .values()
                .filter(|(host, _, _)| host.as_deref().is_some_and(|h| h.starts_with("b-")))
                .count();
            (spread > 0).then_some(())
        },
    );
    assert_eq!(
        get_json(&second_address, "/api/v1/ring")["leader"],
        false,
        "one leader per deployment"
    );
    let before = nodes(&second_address);

    first.child.kill().unwrap(); // SIGKILL: no clean-up at all.
    first.child.wait().unwrap();

    eventually(
        Duration::from_secs(30),
        "the survivor to own every node",
        || {
            let owners = nodes(&second_address);
            owners
                .values()
                .all(|(host, _, _)| host.as_deref().is_some_and(|h| h.starts_with("b-")))
                .then_some(())
        },
    );
    assert_eq!(
        get_json(&second_address, "/api/v1/ring")["leader"],
        true,
        "leadership moved"
    );
    let after = nodes(&second_address);
    for (node, (_, compute_node, provider)) in &before {
        assert_eq!(
            &after[node].1, compute_node,
            "node {node} keeps its compute-node uuid"
        );
        assert_eq!(&after[node].2, provider, "node {node} keeps its provider");
    }
    let audit = get_json(&second_address, "/api/v1/audit");
    assert_eq!(audit["ok"], true, "{audit}");
}

/// The demo keeps every invariant while hosts are crashed and restarted from the admin API.
#[test]
fn the_demo_audit_stays_ok_through_crashes_and_restarts() {
    let dir = crate::helpers::TempDir::new("demo-ha");
    let mut command = ringmaster();
    command
        .args(["demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path.join("pg"))
        .args(FAST)
        .env("RUST_LOG", "warn");
    let mut demo = Running::spawn(command);
    let address =
        address_of(&demo.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    let audit_ok = |address: &str| {
        let audit = get_json(address, "/api/v1/audit");
        assert_eq!(audit["ok"], true, "{audit}");
    };
    let owned_by = |address: &str, host: &str| {
        nodes(address)
            .values()
            .filter(|(owner, _, _)| owner.as_deref() == Some(host))
            .count()
    };
    eventually(
        Duration::from_secs(20),
        "the 12 demo nodes to be owned",
        || {
            audit_ok(&address);
            (nodes(&address)
                .values()
                .filter(|(host, _, _)| host.is_some())
                .count()
                == 12)
                .then_some(())
        },
    );

    for host in ["cmp-1", "cmp-2"] {
        assert_eq!(
            http(&address, "POST", &format!("/api/v1/hosts/{host}/crash")).0,
            202
        );
        eventually(
            Duration::from_secs(20),
            "the crashed host's nodes to move",
            || {
                audit_ok(&address);
                (owned_by(&address, host) == 0).then_some(())
            },
        );
        assert_eq!(
            http(&address, "POST", &format!("/api/v1/hosts/{host}/start")).0,
            202
        );
        eventually(
            Duration::from_secs(20),
            "the restarted host to receive nodes again",
            || {
                audit_ok(&address);
                (owned_by(&address, host) > 0).then_some(())
            },
        );
    }
    audit_ok(&address);
    demo.interrupt();
    let (code, stderr) = demo.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr:#?}");
}
