//! Two ringmaster processes on one database form one deployment: when the one leading the
//! rebalancer is killed with SIGKILL, the other takes over leadership and the dead process's
//! nodes, keeping every node's identity.

use std::time::Duration;

use ringmaster::db::cluster::Cluster;
use serde_json::Value;

use crate::helpers::{
    FAST, Running, eventually, get_json, http, nodes_by_api, owners, ringmaster, serve_with,
};

fn serve(url: &str, hosts: &str, extra: &[&str]) -> (Running, String) {
    let flags: Vec<&str> = FAST.iter().copied().chain(extra.iter().copied()).collect();
    serve_with(url, hosts, &flags)
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
            let owned = nodes_by_api(&first_address)
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
            let spread = nodes_by_api(&second_address)
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
    let before = nodes_by_api(&second_address);

    first.child.kill().unwrap(); // SIGKILL: no clean-up at all.
    first.child.wait().unwrap();

    eventually(
        Duration::from_secs(30),
        "the survivor to own every node",
        || {
            let owners = nodes_by_api(&second_address);
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
    let after = nodes_by_api(&second_address);
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
    let (_dir, mut demo, address) = crate::helpers::start_demo("demo-ha");
    let audit_ok = |address: &str| {
        let audit = get_json(address, "/api/v1/audit");
        assert_eq!(audit["ok"], true, "{audit}");
    };
    let owned_by = |address: &str, host: &str| {
        nodes_by_api(address)
            .values()
            .filter(|(owner, _, _)| owner.as_deref() == Some(host))
            .count()
    };
    eventually(
        Duration::from_secs(20),
        "the 12 demo nodes to be owned",
        || {
            audit_ok(&address);
            (nodes_by_api(&address)
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

/// Counts the providers whose node's inventory has been reported.
fn reported(address: &str) -> usize {
    get_json(address, "/api/v1/providers")
        .as_array()
        .unwrap()
        .iter()
        .filter(|provider| provider["inventory"]["CUSTOM_BAREMETAL"]["total"] == 1)
        .count()
}

/// Issue 12, item 1, as a user saw it: twelve concurrent boots on a fresh demo (12 free
/// nodes) all land, on twelve nodes, active; a thirteenth gets 409 and leaves nothing.
#[test]
fn twelve_concurrent_boots_on_the_demo_use_twelve_nodes() {
    let (_dir, _demo, address) = crate::helpers::start_demo("demo-boots");
    eventually(
        Duration::from_secs(20),
        "the 12 demo nodes to be owned",
        || {
            (owners(&address)
                .values()
                .filter(|owner| owner.is_some())
                .count()
                == 12)
                .then_some(())
        },
    );
    // Let every host report its nodes' inventory once.
    eventually(
        Duration::from_secs(20),
        "every provider to have inventory",
        || (reported(&address) == 12).then_some(()),
    );
    let boots: Vec<_> = (0..12)
        .map(|index| {
            let address = address.clone();
            std::thread::spawn(move || {
                crate::helpers::http_json(
                    &address,
                    "POST",
                    "/api/v1/instances",
                    &format!(r#"{{"name": "vm-{index}", "resource_class": "baremetal"}}"#),
                )
            })
        })
        .collect();
    let mut nodes_used = std::collections::BTreeSet::new();
    for boot in boots {
        let (status, body) = boot.join().unwrap();
        assert_eq!(status, 201, "{body}");
        let instance: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(instance["vm_state"], "active", "{instance}");
        nodes_used.insert(instance["node"].as_str().unwrap().to_owned());
    }
    assert_eq!(nodes_used.len(), 12, "twelve distinct nodes");
    let (status, body) = crate::helpers::http_json(
        &address,
        "POST",
        "/api/v1/instances",
        r#"{"name": "vm-13", "resource_class": "baremetal"}"#,
    );
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("no free node of resource class baremetal"),
        "{body}"
    );
    assert_eq!(
        get_json(&address, "/api/v1/instances")
            .as_array()
            .unwrap()
            .len(),
        12,
        "the refused boot left nothing"
    );
    let audit = get_json(&address, "/api/v1/audit");
    assert_eq!(audit["ok"], true, "{audit}");
}

/// Issue 12, item 2: SIGSTOP the process that leads: its hosts go down and the other process
/// takes over the lease and their nodes within down time + one lease (+ ticks); when the frozen
/// process wakes (SIGCONT) it does not lead and writes nothing wrong.
#[test]
fn a_frozen_leader_is_replaced_and_writes_nothing_when_it_wakes() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let url = cluster.url("postgres");
    let (first, first_address) = serve(&url, "a-1,a-2", &["--nodes", "12"]);
    eventually(
        Duration::from_secs(20),
        "the first process to own every node",
        || {
            (owners(&first_address).values().all(Option::is_some)
                && get_json(&first_address, "/api/v1/ring")["leader"] == true)
                .then_some(())
        },
    );
    let (_second, second_address) = serve(&url, "b-1,b-2", &[]);
    eventually(
        Duration::from_secs(20),
        "the second process's hosts to get nodes",
        || {
            owners(&second_address)
                .values()
                .any(|owner| owner.as_deref().is_some_and(|h| h.starts_with("b-")))
                .then_some(())
        },
    );

    let pid = nix::unistd::Pid::from_raw(first.child.id() as i32);
    let frozen_at = std::time::Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    eventually(
        Duration::from_secs(30),
        "the survivor to own every node",
        || {
            owners(&second_address)
                .values()
                .all(|owner| owner.as_deref().is_some_and(|h| h.starts_with("b-")))
                .then_some(())
        },
    );
    let takeover = frozen_at.elapsed();
    println!(
        "frozen leader: every node owned by the survivor after {takeover:?} (down time 2s, lease 1s)"
    );
    assert_eq!(get_json(&second_address, "/api/v1/ring")["leader"], true);

    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    eventually(
        Duration::from_secs(20),
        "the woken process to see it no longer leads",
        || (get_json(&first_address, "/api/v1/ring")["leader"] == false).then_some(()),
    );
    // One leader: the survivor (its 1 s lease may lapse for a moment on a loaded machine; it
    // renews it, and the woken process does not take it).
    eventually(Duration::from_secs(10), "one leader, the survivor", || {
        (get_json(&second_address, "/api/v1/ring")["leader"] == true
            && get_json(&first_address, "/api/v1/ring")["leader"] == false)
            .then_some(())
    });
    let audit = get_json(&second_address, "/api/v1/audit");
    assert_eq!(audit["ok"], true, "{audit}");
}

/// Issue 12, item 3: a backend killed with SIGKILL (the server's crash recovery) and a full
/// server restart under a running deployment are ridden out: the process stays, comes back,
/// moves nothing because of the outage, and boots again.
#[test]
fn a_database_crash_recovery_and_restart_are_ridden_out() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let url = cluster.url("postgres");
    let (mut running, address) = serve_with(
        &url,
        "c-1,c-2",
        &[
            "--nodes",
            "6",
            "--service-down-time",
            "3s",
            "--report-interval",
            "300ms",
            "--rebalance-interval",
            "300ms",
            "--update-resources-interval",
            "500ms",
            "--leader-lease",
            "1s",
        ],
    );
    eventually(
        Duration::from_secs(20),
        "every node owned and reported",
        || (reported(&address) == 6).then_some(()),
    );
    let moves_before = get_json(&address, "/api/v1/moves?limit=10000")
        .as_array()
        .unwrap()
        .len();

    crate::helpers::RestartedServer::kill_a_backend(&url, "ringmaster ");
    std::thread::sleep(Duration::from_secs(1));
    eventually(
        Duration::from_secs(30),
        "the database to answer again",
        || (http(&address, "GET", "/readyz").0 == 200).then_some(()),
    );
    let restarted =
        crate::helpers::RestartedServer::restart(cluster.data_dir(), Duration::from_secs(3));
    eventually(
        Duration::from_secs(30),
        "the restarted database to answer",
        || (http(&address, "GET", "/readyz").0 == 200).then_some(()),
    );
    // Hosts heartbeat again and unfence; nothing moved because the database went away.
    eventually(Duration::from_secs(20), "both hosts up again", || {
        let hosts = get_json(&address, "/api/v1/hosts");
        hosts
            .as_array()
            .unwrap()
            .iter()
            .all(|host| host["state"] == "up")
            .then_some(())
    });
    assert!(
        running.child.try_wait().unwrap().is_none(),
        "the process rode the outages out"
    );
    let moves: Vec<Value> = get_json(&address, "/api/v1/moves?limit=10000")
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(moves.len(), moves_before, "nothing moved: {moves:#?}");
    let (status, body) = crate::helpers::http_json(
        &address,
        "POST",
        "/api/v1/instances",
        r#"{"name": "after-the-restart", "resource_class": "baremetal"}"#,
    );
    assert_eq!(status, 201, "{body}");
    let audit = get_json(&address, "/api/v1/audit");
    assert_eq!(audit["ok"], true, "{audit}");
    drop(restarted);
}

/// Issue 12, item 13: a second process refuses a host name the first runs, with one clear
/// error line; once the first is gone (SIGKILL), the name can be run again at once.
#[test]
fn a_host_name_runs_in_one_process_at_a_time() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let url = cluster.url("postgres");
    let (mut first, _) = serve(&url, "x-1", &[]);
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--hosts", "x-1"])
        .args(FAST)
        .env("DATABASE_URL", &url)
        .env("RUST_LOG", "warn");
    let mut second = Running::spawn(command);
    let (code, stderr) = second.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(1), "{stderr:#?}");
    crate::helpers::assert_one_error_line(
        &stderr,
        "cannot start host x-1: host x-1 is run by another ringmaster process",
    );

    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let (_third, address) = serve(&url, "x-1", &[]);
    let hosts = get_json(&address, "/api/v1/hosts");
    assert_eq!(hosts[0]["host"], "x-1");
    assert_eq!(hosts[0]["local"], true, "{hosts}");
}
