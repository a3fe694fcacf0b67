//! `ringmaster serve` as a process of the test's, and its admin API read as JSON.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::{Running, address_of, http, http_json, ringmaster};

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

/// The status and the JSON answer (`null` when it is none) of `GET path` at `address`.
pub fn get_answer(address: &str, path: &str) -> (u16, Value) {
    let (status, body) = http(address, "GET", path);
    (status, serde_json::from_str(&body).unwrap_or_default())
}

/// Boots an instance through the admin API of process `address` (`body`: its name, resource
/// class, uuid, …), over a socket of its own; the status and the JSON answer.
pub fn boot_instance(address: &str, body: &Value) -> (u16, Value) {
    let (status, answer) = http_json(address, "POST", "/api/v1/instances", &body.to_string());
    (status, serde_json::from_str(&answer).unwrap_or_default())
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

/// Node → owner (`None`: unowned), as process `address` lists them.
pub fn owners(address: &str) -> BTreeMap<String, Option<String>> {
    nodes_by_api(address)
        .into_iter()
        .map(|(node, (owner, _, _))| (node, owner))
        .collect()
}

/// The owner of each of `uuids`, as process `address` lists them (`None`: unowned or unknown).
pub fn owners_of(address: &str, uuids: &[uuid::Uuid]) -> Vec<Option<String>> {
    let all = owners(address);
    uuids
        .iter()
        .map(|uuid| all.get(&uuid.to_string()).cloned().flatten())
        .collect()
}
