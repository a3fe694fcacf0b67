//! A deployment started again on its own data (issue 44, item 1): `demo` on its embedded
//! PostgreSQL after a clean stop (SIGTERM) and after a crash (SIGKILL), and `serve` on an
//! external PostgreSQL after SIGKILL, start at once with the same command and hold the same
//! nodes, compute-node uuids, instances, allocations and providers as before.

use std::path::Path;
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use nix::sys::signal::Signal;
use serde_json::Value;

use crate::helpers::{
    FAST, RestartedServer, Running, TempDir, address_of, eventually, http, http_json,
    postmaster_pid, ringmaster,
};
use ringmaster::db::cluster::{Cluster, ClusterOptions};

/// Every identity a restart must keep, one line each, sorted: node → compute-node uuid and
/// owner; instance → host, node and state; allocation → consumer, provider, amount; provider →
/// uuid and name.
fn identities(url: &str) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Line {
        #[diesel(sql_type = diesel::sql_types::Text)]
        line: String,
    }
    let mut conn = PgConnection::establish(url).unwrap();
    let lines: Vec<Line> = diesel::sql_query(
        "SELECT line FROM (
           SELECT 'node ' || hypervisor_hostname || ' ' || uuid || ' on ' || host AS line
             FROM compute_nodes WHERE deleted = 0
           UNION ALL
           SELECT 'instance ' || uuid || ' ' || COALESCE(host, '-') || ' ' || COALESCE(node, '-')
                  || ' ' || vm_state
             FROM instances WHERE deleted = 0
           UNION ALL
           SELECT 'allocation ' || a.consumer_id || ' ' || p.uuid || ' ' || a.resource_class_id
                  || ' ' || a.used
             FROM allocations a JOIN resource_providers p ON p.id = a.resource_provider_id
           UNION ALL
           SELECT 'provider ' || uuid || ' ' || name FROM resource_providers) lines
         ORDER BY line",
    )
    .load(&mut conn)
    .unwrap();
    lines.into_iter().map(|line| line.line).collect()
}

/// The identities of the embedded database on `data_dir`, joining its running server.
fn embedded_identities(data_dir: &Path) -> Vec<String> {
    let cluster = Cluster::start_or_join(&ClusterOptions {
        data_dir: data_dir.to_path_buf(),
        bin_dir: None,
        throwaway: false,
    })
    .unwrap();
    assert!(!cluster.is_owner(), "the demo's own server is joined");
    identities(&cluster.url("ringmaster"))
}

fn demo_command(data_dir: &Path) -> std::process::Command {
    let mut command = ringmaster();
    command
        .args([
            "demo",
            "--bind",
            "127.0.0.1:0",
            "--nodes",
            "6",
            "--data-dir",
        ])
        .arg(data_dir)
        .args(FAST)
        .env("RUST_LOG", "warn");
    command
}

/// Starts `command`; returns the process and its address once it listens and every one of
/// its `hosts` is up and run here.
fn start(command: std::process::Command, hosts: usize) -> (Running, String) {
    serving(Running::spawn(command), hosts)
}

/// `start` for a process already spawned.
fn serving(mut process: Running, hosts: usize) -> (Running, String) {
    let address =
        address_of(&process.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    eventually(Duration::from_secs(30), "every host up and local", || {
        let (status, body) = http(&address, "GET", "/api/v1/hosts");
        let listed: Value = serde_json::from_str(&body).ok()?;
        let listed = listed.as_array()?;
        (status == 200
            && listed.len() == hosts
            && listed
                .iter()
                .all(|host| host["local"] == true && host["state"] == "up"))
        .then_some(())
    });
    (process, address)
}

/// Boots `count` instances and waits for the providers of `nodes` nodes to be reported.
fn boot_kept(address: &str, count: usize, nodes: usize) {
    crate::helpers::wait_for_reported_providers(address, nodes);
    for index in 0..count {
        let body =
            serde_json::json!({"name": format!("kept-{index}"), "resource_class": "baremetal"});
        let (status, answer) = crate::helpers::boot_instance(address, &body);
        assert_eq!(status, 201, "{answer}");
    }
}

/// The audit is clean and one more boot lands: the restarted process places work.
fn works(address: &str) {
    let (status, body) = http(address, "GET", "/api/v1/audit");
    let audit: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((status, &audit["ok"]), (200, &Value::Bool(true)), "{body}");
    let (status, body) = http_json(
        address,
        "POST",
        "/api/v1/instances",
        r#"{"name": "after-the-restart", "resource_class": "baremetal"}"#,
    );
    assert_eq!(status, 201, "{body}");
}

/// `demo` stopped by `signal`, then the same command on the same data directory.
fn demo_restarts_after(signal: Signal, label: &str) {
    let dir = TempDir::new(label);
    let data_dir = dir.path.join("pg");
    let (mut demo, address) = start(demo_command(&data_dir), 3);
    boot_kept(&address, 3, 6);
    let before = embedded_identities(&data_dir);
    assert_eq!(
        before
            .iter()
            .filter(|line| line.starts_with("node "))
            .count(),
        6,
        "{before:#?}"
    );
    demo.signal(signal);
    let (code, stderr) = demo.wait_exit(Duration::from_secs(30));
    if signal == Signal::SIGTERM {
        assert_eq!(code, Some(0), "a clean stop: {stderr:#?}");
    }

    let (mut again, address) = start(demo_command(&data_dir), 3);
    assert_eq!(
        embedded_identities(&data_dir),
        before,
        "nodes, compute-node uuids, instances, allocations and providers as they were"
    );
    works(&address);
    again.signal(Signal::SIGTERM);
    let (code, stderr) = again.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr:#?}");
}

#[test]
fn a_demo_stopped_by_sigterm_starts_again_on_its_data() {
    demo_restarts_after(Signal::SIGTERM, "restart-term");
}

#[test]
fn a_demo_killed_starts_again_on_its_data() {
    demo_restarts_after(Signal::SIGKILL, "restart-kill");
}

/// `serve` on an external PostgreSQL, killed, started again at once with the same hosts: the
/// killed process's presence is gone, so its hosts are taken over, its state intact; a host a
/// live process holds stays refused (`cli_ha`).
#[test]
fn serve_on_an_external_database_starts_again_after_sigkill() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let url = cluster.url("postgres");
    let command = || {
        let mut command = ringmaster();
        command
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(["--hosts", "cmp-1,cmp-2", "--nodes", "4"])
            .args(FAST)
            .env("DATABASE_URL", &url)
            .env("RUST_LOG", "warn");
        command
    };
    let (mut serve, address) = start(command(), 2);
    boot_kept(&address, 2, 4);
    let before = identities(&url);
    serve.signal(Signal::SIGKILL);
    serve.wait_exit(Duration::from_secs(30));

    let (mut again, address) = start(command(), 2);
    assert_eq!(identities(&url), before, "the state as it was");
    works(&address);
    again.signal(Signal::SIGTERM);
    let (code, stderr) = again.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr:#?}");
}

/// Right after a crash the last run's server may still be stopping: it refuses connections
/// while its `postmaster.pid` stays, and a new server would refuse to start beside it. The
/// demo waits for it to go, then starts as after any stop. (A smart shutdown held open by a
/// session stands in for the slow stop: it refuses newcomers until the session ends.)
#[test]
fn a_demo_waits_for_the_last_runs_server_to_stop() {
    let dir = TempDir::new("restart-stopping");
    let data_dir = dir.path.join("pg");
    let (mut demo, _) = start(demo_command(&data_dir), 3);
    demo.signal(Signal::SIGTERM);
    demo.wait_exit(Duration::from_secs(30));

    // Not stopped by its handle: by the time it would be, the demo's server runs there.
    std::mem::forget(RestartedServer::start(&data_dir));
    let url = ringmaster::db::url::socket_url(&data_dir, "ringmaster");
    let session = PgConnection::establish(&url).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(postmaster_pid(&data_dir)),
        Signal::SIGTERM,
    )
    .unwrap();
    eventually(Duration::from_secs(10), "newcomers refused", || {
        PgConnection::establish(&url).is_err().then_some(())
    });

    let mut next = Running::spawn(demo_command(&data_dir));
    next.wait_for_stderr(
        "waiting for the PostgreSQL server of the last run",
        Duration::from_secs(30),
    );
    drop(session);
    let (mut next, address) = serving(next, 3);
    boot_kept(&address, 0, 6);
    works(&address);
    next.signal(Signal::SIGTERM);
    let (code, stderr) = next.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr:#?}");
}
