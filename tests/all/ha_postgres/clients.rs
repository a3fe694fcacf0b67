//! The clients of the `ha_postgres` test and what they saw: 8 booting and deleting, a Placement
//! client, the archiver and a watcher reading, each retrying after a 503 as a client must.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

pub(super) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// A Placement client's headers (1.12: an allocation PUT replaces, so a retry is idempotent).
pub(super) const PLACEMENT: &str =
    "X-Auth-Token: admin\r\nOpenStack-API-Version: placement 1.12\r\n";

/// One HTTP/1.0 exchange with timeouts; `None` when the connection failed.
pub(super) fn request(
    address: &str,
    method: &str,
    path: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    exchange(address, method, path, body, "")
}

/// One HTTP/1.0 exchange with `headers` (lines ending in CRLF) added.
pub(super) fn exchange(
    address: &str,
    method: &str,
    path: &str,
    body: &Value,
    headers: &str,
) -> Option<(u16, Value)> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok()?;
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         {headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

/// What the clients and the watcher saw.
#[derive(Default)]
pub(super) struct Seen {
    /// Acknowledged boots: uuid → name.
    pub(super) booted: BTreeMap<String, String>,
    /// Acknowledged deletes.
    pub(super) deleted: BTreeSet<String>,
    /// Consumers whose allocation PUT answered 204.
    pub(super) allocated: BTreeSet<String>,
    /// Archive runs answered 200: run id → rows moved.
    pub(super) archived: BTreeMap<i64, i64>,
    /// Every answer's status, counted.
    pub(super) statuses: BTreeMap<u16, usize>,
    /// The watcher's reads: (Unix time, status; 0 for no answer).
    pub(super) reads: Vec<(f64, u16)>,
    /// Hosts seen `down`, with when.
    pub(super) down: BTreeSet<String>,
}

/// Sends `method path body` until an answer other than 503 or none, at most 120 s.
pub(super) fn until_answered(
    seen: &Mutex<Seen>,
    addresses: &[String],
    method: &str,
    path: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    until_answered_with(seen, addresses, method, path, body, "")
}

/// `until_answered` with `headers` added to each request.
pub(super) fn until_answered_with(
    seen: &Mutex<Seen>,
    addresses: &[String],
    method: &str,
    path: &str,
    body: &Value,
    headers: &str,
) -> Option<(u16, Value)> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut attempt = 0;
    while Instant::now() < deadline {
        let address = &addresses[attempt % addresses.len()];
        attempt += 1;
        match exchange(address, method, path, body, headers) {
            Some((status, reply)) => {
                *seen.lock().unwrap().statuses.entry(status).or_default() += 1;
                if status == 409 {
                    eprintln!("{method} {path}: 409 {reply}");
                }
                if status != 503 {
                    return Some((status, reply));
                }
            }
            None => *seen.lock().unwrap().statuses.entry(0).or_default() += 1,
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

/// One client: boots an instance, then deletes its previous one, until `stop`.
pub(super) fn client(
    index: usize,
    addresses: Vec<String>,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
) {
    let mut previous: Option<String> = None;
    let mut count = 0;
    while !stop.load(Ordering::Relaxed) {
        count += 1;
        let uuid = uuid::Uuid::new_v4().to_string();
        let name = format!("ha-{index}-{count}");
        let body = json!({"uuid": uuid, "name": name, "resource_class": "baremetal"});
        if let Some((status, _)) =
            until_answered(&seen, &addresses, "POST", "/api/v1/instances", &body)
            && (200..300).contains(&status)
        {
            seen.lock().unwrap().booted.insert(uuid.clone(), name);
            if let Some(old) = previous.replace(uuid) {
                let path = format!("/api/v1/instances/{old}");
                // A delete is idempotent: a 404 after a 503 says the first try went through
                // (its commit came before the connection was lost).
                if let Some((status, _)) =
                    until_answered(&seen, &addresses, "DELETE", &path, &Value::Null)
                    && ((200..300).contains(&status) || status == 404)
                {
                    seen.lock().unwrap().deleted.insert(old);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The provider the Placement client allocates from: `CUSTOM_HA`, 1,000,000 units.
pub(super) const PROVIDER: &str = "a0000000-0000-4000-8000-00000000a11c";

pub(super) fn make_provider(address: &str) {
    let steps = [
        (
            "PUT",
            "/placement/resource_classes/CUSTOM_HA".to_owned(),
            Value::Null,
        ),
        (
            "POST",
            "/placement/resource_providers".to_owned(),
            json!({"name": "ha-provider", "uuid": PROVIDER}),
        ),
        (
            "PUT",
            format!("/placement/resource_providers/{PROVIDER}/inventories"),
            json!({"resource_provider_generation": 0,
                   "inventories": {"CUSTOM_HA": {"total": 1_000_000}}}),
        ),
    ];
    for (method, path, body) in steps {
        let (status, reply) = exchange(address, method, &path, &body, PLACEMENT).unwrap();
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {reply}"
        );
    }
}

/// A Placement client: one allocation PUT for a new consumer every 100 ms, retried with the
/// same body after a 503, until `stop`.
pub(super) fn allocator(addresses: Vec<String>, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let consumer = uuid::Uuid::new_v4().to_string();
        let body = json!({
            "allocations": {PROVIDER: {"resources": {"CUSTOM_HA": 1}}},
            "project_id": "ha-project", "user_id": "ha-user",
        });
        let path = format!("/placement/allocations/{consumer}");
        if let Some((204, _)) =
            until_answered_with(&seen, &addresses, "PUT", &path, &body, PLACEMENT)
        {
            seen.lock().unwrap().allocated.insert(consumer);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs the archiver every 2 s (retried after a 503), until `stop`.
pub(super) fn archiver(addresses: Vec<String>, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let body = json!({});
        if let Some((200, run)) =
            until_answered(&seen, &addresses, "POST", "/api/v1/archive", &body)
        {
            let (id, total) = (run["run_id"].as_i64(), run["total"].as_i64());
            seen.lock()
                .unwrap()
                .archived
                .insert(id.expect("run_id"), total.expect("total"));
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Reads the instances every 100 ms and the hosts every 500 ms, until `stop`.
pub(super) fn watcher(address: String, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let status = request(&address, "GET", "/api/v1/instances", &Value::Null)
            .map_or(0, |(status, _)| status);
        seen.lock().unwrap().reads.push((unix_now(), status));
        if round % 5 == 0
            && let Some((200, hosts)) = request(&address, "GET", "/api/v1/hosts", &Value::Null)
        {
            for host in hosts.as_array().into_iter().flatten() {
                if host["state"] == "down" {
                    let name = host["host"].as_str().unwrap_or_default().to_owned();
                    let at = unix_now();
                    seen.lock()
                        .unwrap()
                        .down
                        .insert(format!("{name} at {at:.1}"));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
