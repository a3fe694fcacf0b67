//! `demo` on a data directory another node source filled (issue 29): the simulated Ironic's
//! nodes under `--ironic-url` (or the other way round) would leave ghost instances, so the
//! demo refuses in one line that offers `--fresh`; `--fresh` begins again on an empty database.

use std::time::Duration;

use crate::helpers::{
    FAST, Running, address_of, assert_one_error_line, http, ringmaster, run_to_end, start_demo_with,
};

fn node_count(address: &str) -> usize {
    let (status, body) = http(address, "GET", "/api/v1/nodes");
    assert_eq!(status, 200, "{body}");
    let nodes: serde_json::Value = serde_json::from_str(&body).unwrap();
    nodes.as_array().unwrap().len()
}

#[test]
fn a_data_directory_of_another_node_source_is_refused_and_fresh_begins_again() {
    let (dir, mut demo, address) = start_demo_with("demo-fresh", &["--nodes", "5"]);
    assert_eq!(node_count(&address), 5);
    demo.interrupt();
    let (code, _) = demo.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0));
    let data_dir = dir.path.join("pg");

    // A real Ironic's URL on the simulator's data: refused before Ironic is asked anything.
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args([
                "demo",
                "--bind",
                "127.0.0.1:0",
                "--ironic-url",
                "http://127.0.0.1:9",
            ])
            .arg("--data-dir")
            .arg(&data_dir),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
    let stderr: Vec<String> = stderr.lines().map(str::to_owned).collect();
    assert_one_error_line(&stderr, "5 nodes of the simulated Ironic");
    assert_one_error_line(&stderr, "--fresh");

    // --fresh: the data directory removed, the demo's 12 nodes enrolled anew.
    let mut command = ringmaster();
    command
        .args(["demo", "--fresh", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .args(FAST)
        .env("RUST_LOG", "info");
    let mut demo = Running::spawn(command);
    let address =
        address_of(&demo.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    assert_eq!(node_count(&address), 12);
    demo.wait_for_stderr(
        "demo --fresh: removed the data directory",
        Duration::from_secs(5),
    );
    // --fresh refuses while a process uses the directory.
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .args(["demo", "--fresh", "--bind", "127.0.0.1:0", "--data-dir"])
            .arg(&data_dir),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("a PostgreSQL server runs on"), "{stderr}");
    assert_eq!(
        node_count(&address),
        12,
        "nothing removed under the running demo"
    );
    demo.interrupt();
    demo.wait_exit(Duration::from_secs(30));
}
