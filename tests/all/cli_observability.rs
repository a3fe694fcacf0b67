//! Issue 18, metrics and logs, on real processes: a failover shows in `/metrics` (parsed by
//! Prometheus's own Python parser) and in one log line saying which host, why, since when, how
//! many nodes went where and how long it took; access lines carry the request id the response
//! names; the dashboard's polls stay at DEBUG; JSON lines carry the same fields; a frozen
//! process logs its fence, its unfencing and its lost leadership.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::{
    FAST, Running, TempDir, TestDb, address_of, eventually, exchange, header, owners, ringmaster,
};

const START: Duration = Duration::from_secs(60);

/// The metrics of `address`, parsed by prometheus_client (scripts/metrics-parse).
fn scrape(address: &str) -> Value {
    let (status, head, text) = exchange(address, "GET", "/metrics", "");
    assert_eq!(status, 200, "{text}");
    assert!(
        header(&head, "content-type")
            .is_some_and(|kind| kind.starts_with("text/plain; version=0.0.4")),
        "{head}"
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/metrics-parse");
    let output = crate::helpers::run_with_input(&mut Command::new(script), &text);
    assert!(
        output.status.success(),
        "the exposition parses: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The value of sample `name` whose labels include `labels`.
fn sample(parsed: &Value, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    parsed["samples"].as_array()?.iter().find_map(|sample| {
        let matches = sample["name"] == name
            && labels
                .iter()
                .all(|(key, value)| sample["labels"][*key] == *value);
        matches.then(|| sample["value"].as_f64()).flatten()
    })
}

#[test]
fn a_failover_shows_in_the_metrics_and_in_one_log_line() {
    let dir = TempDir::new("metrics");
    let mut command = ringmaster();
    command
        .args(["demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path.join("pg"))
        .args(FAST)
        .env("RUST_LOG", "info");
    let mut demo = Running::spawn(command);
    let address = address_of(&demo.wait_for_stdout("listening on http://", START));
    eventually(Duration::from_secs(30), "12 nodes owned", || {
        (owners(&address).values().flatten().count() == 12).then_some(())
    });
    let victim_nodes = owners(&address)
        .values()
        .flatten()
        .filter(|owner| *owner == "cmp-2")
        .count();
    assert!(victim_nodes > 0);

    // The dashboard's polls: answered, logged at DEBUG only.
    assert_eq!(exchange(&address, "GET", "/api/v1/hosts", "").0, 200);
    let (status, head, _) = exchange(&address, "POST", "/api/v1/hosts/cmp-2/crash", "");
    assert_eq!(status, 202);
    let request_id = header(&head, "openstack-request-id")
        .expect("every answer names its request id")
        .to_owned();
    assert!(request_id.starts_with("req-"), "{request_id}");

    eventually(
        Duration::from_secs(30),
        "cmp-2's nodes owned elsewhere",
        || {
            (!owners(&address)
                .values()
                .flatten()
                .any(|owner| owner == "cmp-2"))
            .then_some(())
        },
    );
    let failover = demo.wait_for_stderr("failover: host cmp-2 down", Duration::from_secs(10));
    for part in [
        "WARN",
        "(last heartbeat 20",
        &format!("{victim_nodes} nodes moved to cmp-"),
        "from declared down to its last node elsewhere",
        "(ring v",
    ] {
        assert!(failover.contains(part), "{part:?} in {failover}");
    }

    // The figures task reads the deployment every few seconds: cmp-2 shows down.
    let parsed = eventually(Duration::from_secs(30), "the move in the metrics", || {
        let parsed = scrape(&address);
        let nodes = |host| sample(&parsed, "ringmaster_host_nodes", &[("host", host)]);
        let down = sample(
            &parsed,
            "ringmaster_host_state",
            &[("host", "cmp-2"), ("state", "down")],
        );
        (down == Some(1.0)
            && nodes("cmp-2") == Some(0.0)
            && nodes("cmp-1").unwrap_or(0.0) + nodes("cmp-3").unwrap_or(0.0) == 12.0)
            .then_some(parsed)
    });
    the_metrics_show_the_failover(&parsed, victim_nodes);

    demo.interrupt();
    let (code, stderr) = demo.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0));
    one_info_line_for_the_write_with_its_request_id(&stderr, &request_id);
}

/// A sample expected: its name, its labels, a value.
type Expected<'a> = (&'a str, &'a [(&'a str, &'a str)], f64);

/// What the scrape after cmp-2's failover shows, metric by metric.
fn the_metrics_show_the_failover(parsed: &Value, victim_nodes: usize) {
    let version = env!("CARGO_PKG_VERSION");
    let post_hosts = [
        ("family", "api/hosts"),
        ("method", "POST"),
        ("status", "202"),
    ];
    let exact: [Expected; 9] = [
        (
            "ringmaster_node_moves_total",
            &[("reason", "host_down")],
            victim_nodes as f64,
        ),
        (
            "ringmaster_failover_duration_seconds_count",
            &[("reason", "host_down")],
            1.0,
        ),
        ("ringmaster_host_nodes", &[("host", "cmp-2")], 0.0),
        ("ringmaster_host_fenced", &[("host", "cmp-1")], 0.0),
        ("ringmaster_leader", &[], 1.0),
        ("ringmaster_nodes", &[("state", "available")], 12.0),
        ("ringmaster_http_requests_total", &post_hosts, 1.0),
        (
            "ringmaster_db_pool_max_connections",
            &[("pool", "api")],
            10.0,
        ),
        ("ringmaster_build_info", &[("version", version)], 1.0),
    ];
    for (name, labels, value) in exact {
        assert_eq!(
            sample(parsed, name, labels),
            Some(value),
            "{name} {labels:?}"
        );
    }
    let at_least: [Expected; 4] = [
        ("ringmaster_host_nodes", &[("host", "cmp-1")], 1.0),
        (
            "ringmaster_host_heartbeat_age_seconds",
            &[("host", "cmp-2")],
            2.0,
        ),
        (
            "ringmaster_http_request_duration_seconds_count",
            &[("family", "api/nodes")],
            1.0,
        ),
        (
            "ringmaster_db_pool_wait_seconds_count",
            &[("outcome", "ok")],
            1.0,
        ),
    ];
    for (name, labels, least) in at_least {
        let found = sample(parsed, name, labels);
        assert!(
            found.is_some_and(|value| value >= least),
            "{name} {labels:?}: {found:?}"
        );
    }
    let labels = [("reason", "host_down")];
    let seconds = sample(parsed, "ringmaster_failover_duration_seconds_sum", &labels);
    assert!(
        seconds.is_some_and(|seconds| (0.0..30.0).contains(&seconds)),
        "{seconds:?}"
    );
    assert_eq!(
        parsed["families"]["ringmaster_failover_duration_seconds"],
        "histogram"
    );
}

/// The crash request is logged once at INFO with its request id; the dashboard's polls are not
/// (DEBUG); the leadership is.
fn one_info_line_for_the_write_with_its_request_id(stderr: &[String], request_id: &str) {
    let crash_line = stderr
        .iter()
        .find(|line| line.contains("\"POST /api/v1/hosts/cmp-2/crash\" 202"))
        .expect("the write is logged");
    assert!(crash_line.contains(request_id), "the same id: {crash_line}");
    assert!(crash_line.contains("INFO"), "{crash_line}");
    assert!(
        !stderr.iter().any(|line| line.contains("\"GET /api/v1/")),
        "dashboard polls stay at DEBUG: {stderr:#?}"
    );
    assert!(
        stderr
            .iter()
            .any(|line| line.contains("leadership gained: this process now leads"))
    );
}

#[test]
fn json_log_lines_carry_the_same_fields() {
    let db = TestDb::new();
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
        .env("DATABASE_URL", db.url())
        .env(
            "RUST_LOG",
            "debug,actix=info,actix_server=info,actix_web=info,reqwest=info,hyper=info,mio=info",
        );
    let mut serve = Running::spawn(command);
    let address = address_of(&serve.wait_for_stdout("listening on http://", START));
    let (status, head, _) = exchange(&address, "GET", "/api/v1/ring", "");
    assert_eq!(status, 200);
    let id = header(&head, "openstack-request-id").unwrap().to_owned();
    let (placement_status, head, body) =
        exchange(&address, "GET", "/placement/resource_providers/nope", "");
    assert!(placement_status >= 400, "{body}");
    let placement_id = header(&head, "openstack-request-id").unwrap().to_owned();
    assert!(
        body.contains(&placement_id),
        "Placement's error body names the same id: {body}"
    );
    serve.interrupt();
    let (_, stderr) = serve.wait_exit(Duration::from_secs(30));
    let lines: Vec<Value> = stderr
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("a JSON line: {line}")))
        .collect();
    for line in &lines {
        for field in ["timestamp", "level", "target", "message"] {
            assert!(line[field].is_string(), "{field} in {line}");
        }
    }
    let access = lines
        .iter()
        .find(|line| line["request_id"] == id.as_str())
        .expect("the access line of the ring read (at DEBUG)");
    assert_eq!(access["level"], "DEBUG");
    assert_eq!(access["target"], "ringmaster::access");
    assert_eq!(access["method"], "GET");
    assert_eq!(access["path"], "/api/v1/ring");
    assert_eq!(access["status"], 200);
    assert!(access["duration_ms"].is_number(), "{access}");
    let placement = lines
        .iter()
        .find(|line| line["request_id"] == placement_id.as_str())
        .expect("Placement's access line");
    assert_eq!(placement["level"], "INFO");
    assert_eq!(placement["status"], placement_status);

    // A command that fails ends with its one error line, as JSON too.
    let (code, _, stderr) = crate::helpers::run_to_end(
        ringmaster()
            .args(["serve", "--log-format", "json", "--bind", "no-such-address"])
            .env("DATABASE_URL", db.url()),
    );
    assert_eq!(code, Some(2), "a configuration error: {stderr}");
    let last: Value = serde_json::from_str(stderr.lines().last().unwrap_or("")).unwrap();
    assert_eq!(last["level"], "ERROR");
    assert!(
        last["message"]
            .as_str()
            .is_some_and(|message| message
                .starts_with("ringmaster: error: cannot use --bind no-such-address")),
        "{last}"
    );
}

#[test]
fn a_frozen_process_logs_its_fence_and_a_peer_logs_the_failover() {
    let db = TestDb::new();
    let spawn = |hosts: &str, nodes: Option<&str>| {
        let mut command = ringmaster();
        command
            .args(["serve", "--bind", "127.0.0.1:0", "--hosts", hosts])
            .args(FAST)
            .args(
                nodes
                    .map(|nodes| vec!["--nodes", nodes])
                    .unwrap_or_default(),
            )
            .env("DATABASE_URL", db.url())
            .env("RUST_LOG", "info");
        let mut process = Running::spawn(command);
        let address = address_of(&process.wait_for_stdout("listening on http://", START));
        (process, address)
    };
    let (mut frozen, first) = spawn("frozen-1", Some("6"));
    frozen.wait_for_stderr("leadership gained", Duration::from_secs(20));
    let (mut peer, _) = spawn("peer-1", None);
    eventually(Duration::from_secs(30), "both hosts own nodes", || {
        let owners: Vec<String> = owners(&first).into_values().flatten().collect();
        (owners.iter().any(|owner| owner == "peer-1")
            && owners.iter().any(|owner| owner == "frozen-1"))
        .then_some(())
    });

    let pid = nix::unistd::Pid::from_raw(frozen.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let failover = peer.wait_for_stderr("failover: host frozen-1 down", Duration::from_secs(30));
    assert!(failover.contains("nodes moved to peer-1"), "{failover}");
    peer.wait_for_stderr("leadership gained", Duration::from_secs(30));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();

    let fenced = frozen.wait_for_stderr("host frozen-1 fenced:", Duration::from_secs(30));
    assert!(
        fenced.contains("WARN") && fenced.contains("no heartbeat recorded for"),
        "{fenced}"
    );
    frozen.wait_for_stderr(
        "host frozen-1 unfenced: heartbeat recorded again",
        Duration::from_secs(30),
    );
    let lost = frozen.wait_for_stderr("leadership lost:", Duration::from_secs(30));
    assert!(lost.contains("WARN"), "{lost}");
    frozen.interrupt();
    peer.interrupt();
    frozen.wait_exit(Duration::from_secs(30));
    peer.wait_exit(Duration::from_secs(30));
}
