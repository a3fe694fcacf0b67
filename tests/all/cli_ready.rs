//! Ready means able to place (issue 44, item 11): `/readyz` answers 200 only once a boot can be
//! placed (a node owned, its inventory reported, by a host that is up and enabled), 503 saying
//! so before; and a start on a port in use stops before it touches its data directory.

use std::net::TcpListener;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::{
    Running, TempDir, address_of, assert_one_error_line, http, http_json, ringmaster, run_to_end,
};

/// A boot sent the moment `/readyz` first says ready is placed, with a first ring that takes
/// seconds to cut (a slow rebalance interval); until then `/readyz` is 503 saying why.
#[test]
fn a_boot_sent_as_soon_as_readyz_says_ready_is_placed() {
    let dir = TempDir::new("ready-places");
    let mut command = ringmaster();
    command
        .args(["demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path.join("pg"))
        .args([
            "--hosts",
            "cmp-1",
            "--nodes",
            "3",
            "--report-interval",
            "200ms",
        ])
        .args(["--service-down-time", "2s", "--rebalance-interval", "3s"])
        .args(["--update-resources-interval", "500ms"])
        .env("RUST_LOG", "warn");
    let mut demo = Running::spawn(command);
    let address =
        address_of(&demo.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    let mut not_ready = 0;
    crate::helpers::eventually(Duration::from_secs(30), "/readyz says ready", || {
        let (status, body) = http(&address, "GET", "/readyz");
        if status == 503 {
            let said: Value = serde_json::from_str(&body).unwrap();
            let message = said["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with("not ready: none of the deployment's 3 nodes is yet owned"),
                "{body}"
            );
            not_ready += 1;
        }
        (status == 200).then_some(())
    });
    let (status, body) = http_json(
        &address,
        "POST",
        "/api/v1/instances",
        r#"{"name": "first", "resource_class": "baremetal"}"#,
    );
    assert_eq!(status, 201, "placed once ready: {body}");
    let instance: Value = serde_json::from_str(&body).unwrap();
    assert_ne!(instance["vm_state"], "error", "{body}");
    assert!(
        not_ready > 0,
        "the first ring takes a rebalance interval: 503 before it"
    );
    let (status, _) = http(&address, "GET", "/readyz");
    assert_eq!(status, 200, "ready stays ready");
    demo.interrupt();
    assert_eq!(demo.wait_exit(Duration::from_secs(30)).0, Some(0));
}

/// `demo` (and `serve`) on a port in use: one line naming the address, exit 1, and the data
/// directory neither created nor, with `--fresh`, emptied.
#[test]
fn a_start_on_a_port_in_use_touches_no_data() {
    let dir = TempDir::new("ready-port");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let bind = taken.local_addr().unwrap().to_string();
    let data_dir = dir.path.join("pg");
    let refused = |fresh: bool| {
        let mut command = ringmaster();
        command
            .args(["demo", "--bind", &bind, "--data-dir"])
            .arg(&data_dir);
        if fresh {
            command.arg("--fresh");
        }
        let (code, stdout, stderr) = run_to_end(&mut command);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(!stdout.contains("listening"), "{stdout}");
        let stderr: Vec<String> = stderr.lines().map(str::to_owned).collect();
        assert_one_error_line(&stderr, &format!("cannot listen on {bind}"));
    };
    refused(false);
    assert!(!data_dir.exists(), "no database initialized");
    std::fs::create_dir_all(&data_dir).unwrap();
    std::fs::write(data_dir.join("kept"), "the data").unwrap();
    refused(true);
    assert!(data_dir.join("kept").exists(), "--fresh emptied nothing");
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .args(["serve", "--bind", &bind])
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {bind}")),
        "{stderr}"
    );
    drop(taken);
}
