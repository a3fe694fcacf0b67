//! A stand-in Ironic (issue 31): serves Ironic 39's node listing from memory, as many nodes as
//! a test or a benchmark wants — `limit`/`marker` pagination in creation order with the `next`
//! link on a full page, `fields=`, the `conductor_group` and `shard` filters, the
//! `X-OpenStack-Ironic-API-{Minimum-,Maximum-,}Version` headers, `GET /v1/nodes/{uuid}` — and
//! logs every request. Its nodes change only when told (`change`, `hide`). It runs on a thread
//! of its own, with its own actix system, until dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// Ironic 39's API versions.
const MIN_VERSION: &str = "1.1";
const MAX_VERSION: &str = "1.115";
/// Ironic's `[api] max_limit`.
const MAX_LIMIT: usize = 1000;

/// What the stand-in holds: its nodes in creation order, and the requests it was sent.
#[derive(Default)]
pub struct Nodes {
    order: Vec<Uuid>,
    nodes: HashMap<Uuid, Map<String, Value>>,
    hidden: std::collections::HashSet<Uuid>,
    /// Each request's path and query, in order.
    pub requests: Vec<String>,
}

/// A running stand-in.
pub struct StandinIronic {
    pub url: String,
    state: Arc<Mutex<Nodes>>,
    server: actix_web::dev::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StandinIronic {
    /// Starts a stand-in with `count` available fake-hardware nodes of class `baremetal`.
    pub fn start(count: usize) -> StandinIronic {
        let state = Arc::new(Mutex::new(Nodes::default()));
        let shared = state.clone();
        let (sender, receiver) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let system = actix_rt::System::new();
            system.block_on(async move {
                let server = HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::from(shared.clone()))
                        .route("/", web::get().to(root))
                        .route("/v1/nodes", web::get().to(list))
                        .route("/v1/nodes/{uuid}", web::get().to(one))
                })
                .workers(2)
                .disable_signals()
                .bind("127.0.0.1:0")
                .expect("bind a loopback port");
                let address = server.addrs()[0];
                let server = server.run();
                sender
                    .send((format!("http://{address}"), server.handle()))
                    .expect("the test waits");
                let _ = server.await;
            });
        });
        let (url, server) = receiver.recv().expect("the stand-in starts");
        let standin = StandinIronic {
            url,
            state,
            server,
            thread: Some(thread),
        };
        standin.enroll(count, "");
        standin
    }

    fn nodes(&self) -> MutexGuard<'_, Nodes> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enrolls `count` available nodes in conductor group `group`; returns their uuids.
    pub fn enroll(&self, count: usize, group: &str) -> Vec<Uuid> {
        let mut nodes = self.nodes();
        let start = nodes.order.len();
        (start..start + count)
            .map(|n| {
                let uuid = Uuid::new_v4();
                nodes.order.push(uuid);
                nodes.nodes.insert(uuid, node(uuid, n, group));
                uuid
            })
            .collect()
    }

    /// Changes the `count` nodes after the `from`-th (in creation order) as a busy Ironic
    /// would: their power flips.
    pub fn change(&self, from: usize, count: usize) -> Vec<Uuid> {
        let mut nodes = self.nodes();
        let uuids: Vec<Uuid> = nodes.order.iter().skip(from).take(count).copied().collect();
        for uuid in &uuids {
            if let Some(node) = nodes.nodes.get_mut(uuid) {
                let on = node["power_state"] == "power on";
                node.insert(
                    "power_state".to_owned(),
                    json!(if on { "power off" } else { "power on" }),
                );
            }
        }
        uuids
    }

    /// Sets `field` of node `uuid` as Ironic would show it.
    pub fn set(&self, uuid: Uuid, field: &str, value: Value) {
        if let Some(node) = self.nodes().nodes.get_mut(&uuid) {
            node.insert(field.to_owned(), value);
        }
    }

    /// Leaves `uuids` out of every listing from now on (a project-scoped token, a restored
    /// database), or shows them again with `hidden` false.
    pub fn hide(&self, uuids: &[Uuid], hidden: bool) {
        let mut nodes = self.nodes();
        for uuid in uuids {
            if hidden {
                nodes.hidden.insert(*uuid);
            } else {
                nodes.hidden.remove(uuid);
            }
        }
    }

    /// Listings started so far: node-listing requests without a marker.
    pub fn listings(&self) -> usize {
        self.nodes()
            .requests
            .iter()
            .filter(|request| request.starts_with("/v1/nodes?") && !request.contains("marker="))
            .count()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<String> {
        self.nodes().requests.clone()
    }
}

impl Drop for StandinIronic {
    fn drop(&mut self) {
        // The stop command is sent at once; its future only waits for the end.
        drop(self.server.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A fake-hardware node as Ironic 39 shows it (the fields ringmaster reads, and a few more).
fn node(uuid: Uuid, n: usize, group: &str) -> Map<String, Value> {
    let value = json!({
        "uuid": uuid,
        "name": format!("standin-{n}"),
        "driver": "fake-hardware",
        "resource_class": "baremetal",
        "provision_state": "available",
        "target_provision_state": null,
        "power_state": "power off",
        "target_power_state": null,
        "maintenance": false,
        "maintenance_reason": null,
        "last_error": null,
        "instance_uuid": null,
        "reservation": null,
        "traits": [],
        "properties": {"cpus": 8, "memory_mb": 16384, "local_gb": 100, "cpu_arch": "x86_64"},
        "conductor_group": group,
        "shard": null,
        "network_data": {},
        "created_at": "2026-12-01T00:00:00+00:00",
        "updated_at": null,
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn versioned(
    mut response: actix_web::HttpResponseBuilder,
    version: &str,
) -> actix_web::HttpResponseBuilder {
    response
        .insert_header(("X-OpenStack-Ironic-API-Minimum-Version", MIN_VERSION))
        .insert_header(("X-OpenStack-Ironic-API-Maximum-Version", MAX_VERSION))
        .insert_header(("X-OpenStack-Ironic-API-Version", version.to_owned()));
    response
}

fn asked_version(request: &HttpRequest) -> String {
    request
        .headers()
        .get("X-OpenStack-Ironic-API-Version")
        .and_then(|value| value.to_str().ok())
        .unwrap_or(MIN_VERSION)
        .to_owned()
}

fn log<'a>(state: &'a web::Data<Mutex<Nodes>>, request: &HttpRequest) -> MutexGuard<'a, Nodes> {
    let mut nodes = state.lock().unwrap_or_else(PoisonError::into_inner);
    nodes.requests.push(request.uri().to_string());
    nodes
}

async fn root(state: web::Data<Mutex<Nodes>>, request: HttpRequest) -> HttpResponse {
    drop(log(&state, &request));
    versioned(HttpResponse::Ok(), MIN_VERSION).json(json!({
        "name": "OpenStack Ironic API",
        "default_version": {"id": "v1", "status": "CURRENT", "min_version": MIN_VERSION,
                            "version": MAX_VERSION, "links": []}}))
}

async fn list(
    state: web::Data<Mutex<Nodes>>,
    request: HttpRequest,
    query: web::Query<Vec<(String, String)>>,
) -> HttpResponse {
    let version = asked_version(&request);
    let param = |name: &str| {
        query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let limit = param("limit")
        .and_then(|limit| limit.parse::<usize>().ok())
        .unwrap_or(MAX_LIMIT)
        .clamp(1, MAX_LIMIT);
    let fields: Option<Vec<String>> =
        param("fields").map(|fields| fields.split(',').map(str::to_owned).collect());
    let (group, shard) = (param("conductor_group"), param("shard"));
    let nodes = log(&state, &request);
    let start = match param("marker").map(|marker| marker.parse::<Uuid>()) {
        None => 0,
        Some(Ok(marker)) => match nodes.order.iter().position(|uuid| *uuid == marker) {
            Some(at) => at + 1,
            None => {
                return versioned(HttpResponse::NotFound(), &version).json(json!({
                    "error_message": format!("Marker {marker} could not be found.")}));
            }
        },
        Some(Err(_)) => {
            return versioned(HttpResponse::BadRequest(), &version)
                .json(json!({"error_message": "Invalid marker"}));
        }
    };
    let page: Vec<Value> = nodes.order[start..]
        .iter()
        .filter(|uuid| !nodes.hidden.contains(uuid))
        .filter_map(|uuid| nodes.nodes.get(uuid))
        .filter(|node| {
            group
                .as_ref()
                .is_none_or(|group| node["conductor_group"] == **group)
        })
        .filter(|node| shard.as_ref().is_none_or(|shard| node["shard"] == **shard))
        .take(limit)
        .map(|node| select(node, fields.as_deref()))
        .collect();
    let mut body = json!({"nodes": page});
    if page.len() == limit
        && let Some(last) = page.last()
    {
        let mut next: Vec<(String, String)> = query
            .iter()
            .filter(|(key, _)| key != "marker")
            .cloned()
            .collect();
        next.push((
            "marker".to_owned(),
            last["uuid"].as_str().unwrap_or("").to_owned(),
        ));
        let encoded = serde_urlencoded::to_string(&next).unwrap_or_default();
        let host = request.connection_info().host().to_owned();
        body["next"] = json!(format!("http://{host}/v1/nodes?{encoded}"));
    }
    versioned(HttpResponse::Ok(), &version).json(body)
}

async fn one(
    state: web::Data<Mutex<Nodes>>,
    request: HttpRequest,
    path: web::Path<Uuid>,
    query: web::Query<Vec<(String, String)>>,
) -> HttpResponse {
    let version = asked_version(&request);
    let fields: Option<Vec<String>> = query
        .iter()
        .find(|(key, _)| key == "fields")
        .map(|(_, fields)| fields.split(',').map(str::to_owned).collect());
    let nodes = log(&state, &request);
    match nodes.nodes.get(&path.into_inner()) {
        Some(node) => versioned(HttpResponse::Ok(), &version).json(select(node, fields.as_deref())),
        None => versioned(HttpResponse::NotFound(), &version)
            .json(json!({"error_message": "Node could not be found."})),
    }
}

/// `node` with only `fields` (all of them without), as `fields=` asks.
fn select(node: &Map<String, Value>, fields: Option<&[String]>) -> Value {
    match fields {
        None => Value::Object(node.clone()),
        Some(fields) => Value::Object(
            fields
                .iter()
                .filter_map(|field| node.get(field).map(|value| (field.clone(), value.clone())))
                .collect(),
        ),
    }
}
