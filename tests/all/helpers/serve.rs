//! `ringmaster serve` as a process of the test's, and its admin API read as JSON.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::{Running, address_of, http, ringmaster};

/// Starts `serve` with exactly these flags (no FAST defaults).
pub fn serve_with(url: &str, hosts: &str, flags: &[&str]) -> (Running, String) {
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--hosts", hosts])
        .args(flags)
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn");
    let mut running = Running::spawn(command);
    let address =
        address_of(&running.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    (running, address)
}

/// The JSON answer of `GET path` at `address`, which must be 200.
pub fn get_json(address: &str, path: &str) -> Value {
    let (status, body) = http(address, "GET", path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|error| panic!("{path}: {error}: {body}"))
}

/// Maps each node to (owner, compute-node uuid, provider uuid).
pub fn nodes_by_api(address: &str) -> BTreeMap<String, (Option<String>, Value, Value)> {
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
