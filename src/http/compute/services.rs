//! `os-services` and `os-hypervisors` (admin): every compute host is a service of binary
//! `nova-compute`, every compute node a hypervisor of type `ironic` named by its node's uuid.
//! `status: disabled` stops new builds on the host and moves nothing; `forced_down: true` makes
//! the host down now, so the rebalancer moves its nodes, instances included, within one tick.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};
use uuid::Uuid;

use super::auth::Caller;
use super::common::{self, Version};
use super::error::ComputeError;
use crate::db;
use crate::domain::compute::server::{HypervisorRecord, ServiceChange, ServiceRecord};
use crate::http::AppState;
use crate::service::compute_services::{self, Named};

/// The binary every compute host is shown as (ringmaster's own is `ringmaster-compute`).
const NOVA_COMPUTE: &str = "nova-compute";

fn nova_time(at: Option<chrono::DateTime<chrono::Utc>>) -> Value {
    json!(at.map(|at| at.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string()))
}

fn service_view(state: &AppState, version: Version, service: &ServiceRecord) -> Value {
    let up = state
        .actors
        .judge()
        .is_up(&service.host, state.actors.clock.now());
    let mut view = json!({
        "id": if version.at_least(53) { json!(service.uuid) } else { json!(service.id) },
        "binary": NOVA_COMPUTE,
        "host": service.host.name,
        "zone": "nova",
        "status": if service.host.disabled { "disabled" } else { "enabled" },
        "state": if up { "up" } else { "down" },
        "updated_at": nova_time(service.updated_at),
        "disabled_reason": service.host.disabled_reason,
    });
    if version.at_least(11) {
        view["forced_down"] = json!(service.host.forced_down);
    }
    view
}

/// `GET /os-services`: `host` and `binary` filter.
pub async fn list_services(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-services:list")?;
    let pairs = common::query_pairs(&request)?;
    let host = common::last(&pairs, "host").map(str::to_owned);
    if common::last(&pairs, "binary").is_some_and(|binary| binary != NOVA_COMPUTE) {
        return Ok(HttpResponse::Ok().json(json!({"services": []})));
    }
    let services = db::run(&state.pool, move |conn| {
        db::services::list_services(conn, host.as_deref())
    })
    .await?;
    let views: Vec<Value> = services
        .iter()
        .map(|s| service_view(&state, version, s))
        .collect();
    Ok(HttpResponse::Ok().json(json!({"services": views})))
}

/// The change a 2.53 body asks for, refused as Nova refuses it.
fn change_of(body: &serde_json::Map<String, Value>) -> Result<ServiceChange, ComputeError> {
    common::only(body, &["status", "disabled_reason", "forced_down"], "body")?;
    let reason = match body.get("disabled_reason") {
        None => None,
        Some(Value::String(text)) if !text.is_empty() && text.chars().count() <= 255 => {
            Some(text.clone())
        }
        Some(other) => {
            return Err(ComputeError::bad_request(format!(
                "Invalid input for field/attribute disabled_reason. Value: {other}. must be a \
                 string of 1 to 255 characters"
            )));
        }
    };
    let disabled = match body.get("status").map(|s| s.as_str()) {
        None if reason.is_some() => {
            return Err(ComputeError::bad_request(
                "Specifying 'disabled_reason' with status 'enabled' is invalid.",
            ));
        }
        None => None,
        Some(Some("enabled")) if reason.is_some() => {
            return Err(ComputeError::bad_request(
                "Specifying 'disabled_reason' with status 'enabled' is invalid.",
            ));
        }
        Some(Some("enabled")) => Some(None),
        Some(Some("disabled")) => Some(Some(reason.unwrap_or_default())),
        Some(_) => {
            return Err(ComputeError::bad_request(
                "Invalid input for field/attribute status. Value: must be one of ['enabled', \
                 'disabled']",
            ));
        }
    };
    let forced_down = match body.get("forced_down") {
        None => None,
        Some(Value::Bool(flag)) => Some(*flag),
        Some(other) => {
            return Err(ComputeError::bad_request(format!(
                "Invalid input for field/attribute forced_down. Value: {other}. is not of type \
                 'boolean'"
            )));
        }
    };
    if disabled.is_none() && forced_down.is_none() {
        return Err(ComputeError::bad_request(
            "At least one of 'status' or 'forced_down' must be specified in the update body.",
        ));
    }
    Ok(ServiceChange {
        disabled,
        forced_down,
    })
}

/// `PUT /os-services/{uuid}` (2.53 and later): status, reason, forced_down.
pub async fn update_service(
    state: web::Data<AppState>,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-services:update")?;
    if !version.at_least(53) {
        return legacy_update(&state, version, &path, &body).await;
    }
    let id = path.into_inner();
    let uuid = Uuid::parse_str(&id)
        .map_err(|_| ComputeError::bad_request(format!("Invalid uuid {id}")))?;
    let change = change_of(&common::object(&body)?)?;
    let now = state.actors.clock.now();
    let updated =
        compute_services::update(&state.pool, &state.actors, Named::Uuid(uuid), change, now);
    let Some(service) = updated.await? else {
        return Err(ComputeError::not_found(format!("Service {id} not found.")));
    };
    Ok(HttpResponse::Ok().json(json!({"service": service_view(&state, version, &service)})))
}

/// The change a pre-2.53 action asks for.
fn legacy_change(
    action: &str,
    body: &serde_json::Map<String, Value>,
    version: Version,
) -> Result<ServiceChange, ComputeError> {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(match action {
        "enable" => ServiceChange {
            disabled: Some(None),
            forced_down: None,
        },
        "disable" => ServiceChange {
            disabled: Some(Some(String::new())),
            forced_down: None,
        },
        "disable-log-reason" => {
            match text("disabled_reason").filter(|r| !r.is_empty() && r.chars().count() <= 255) {
                Some(reason) => ServiceChange {
                    disabled: Some(Some(reason)),
                    forced_down: None,
                },
                None => return Err(ComputeError::bad_request("Missing disabled reason field")),
            }
        }
        "force-down" if version.at_least(11) => match body.get("forced_down") {
            Some(Value::Bool(flag)) => ServiceChange {
                disabled: None,
                forced_down: Some(*flag),
            },
            _ => {
                return Err(ComputeError::bad_request(
                    "Invalid input for field/attribute forced_down",
                ));
            }
        },
        other => return Err(ComputeError::not_found(format!("Unknown action {other}"))),
    })
}

/// `PUT /os-services/{enable,disable,disable-log-reason,force-down}` (before 2.53): the host
/// and binary in the body; answered in that era's short shape.
async fn legacy_update(
    state: &AppState,
    version: Version,
    action: &str,
    body: &[u8],
) -> Result<HttpResponse, ComputeError> {
    let body = common::object(body)?;
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    let (Some(host), Some(binary)) = (text("host"), text("binary")) else {
        return Err(ComputeError::bad_request(
            "Invalid input: 'host' and 'binary' are required properties",
        ));
    };
    let change = legacy_change(action, &body, version)?;
    if binary != NOVA_COMPUTE {
        return Err(ComputeError::not_found(format!(
            "Service {binary} on host {host} not found."
        )));
    }
    let now = state.actors.clock.now();
    let named = Named::Host(host.clone());
    let updated = compute_services::update(&state.pool, &state.actors, named, change, now);
    let Some(service) = updated.await? else {
        return Err(ComputeError::not_found(format!(
            "Compute host {host} could not be found."
        )));
    };
    let mut view = json!({"host": host, "binary": NOVA_COMPUTE});
    if action == "force-down" {
        view["forced_down"] = json!(service.host.forced_down);
    } else {
        view["status"] = json!(if service.host.disabled {
            "disabled"
        } else {
            "enabled"
        });
        if action == "disable-log-reason" {
            view["disabled_reason"] = json!(service.host.disabled_reason);
        }
    }
    Ok(HttpResponse::Ok().json(json!({"service": view})))
}

fn hypervisor_view(
    state: &AppState,
    version: Version,
    node: &HypervisorRecord,
    detail: bool,
) -> Value {
    let up = state
        .actors
        .judge()
        .is_up(&node.service.host, state.actors.clock.now());
    let mut view = json!({
        "id": if version.at_least(53) { json!(node.uuid) } else { json!(node.id) },
        "hypervisor_hostname": node.hypervisor_hostname,
        "state": if up { "up" } else { "down" },
        "status": if node.service.host.disabled { "disabled" } else { "enabled" },
    });
    if detail {
        view["host_ip"] = Value::Null;
        view["hypervisor_type"] = json!("ironic");
        view["hypervisor_version"] = json!(1);
        view["service"] = json!({
            "host": node.service.host.name,
            "id": if version.at_least(53) { json!(node.service.uuid) } else { json!(node.service.id) },
            "disabled_reason": node.service.host.disabled_reason,
        });
        if version.at_least(88) {
            view["uptime"] = Value::Null;
        } else {
            for (key, value) in [
                ("vcpus", node.vcpus),
                ("memory_mb", node.memory_mb),
                ("local_gb", node.local_gb),
                ("vcpus_used", node.vcpus_used),
                ("memory_mb_used", node.memory_mb_used),
                ("local_gb_used", node.local_gb_used),
                ("running_vms", node.running_vms),
                ("free_ram_mb", node.memory_mb - node.memory_mb_used),
                ("free_disk_gb", node.local_gb - node.local_gb_used),
                ("disk_available_least", node.local_gb - node.local_gb_used),
                ("current_workload", 0),
            ] {
                view[key] = json!(value);
            }
            view["cpu_info"] = json!("");
        }
    }
    if !node.servers.is_empty() {
        view["servers"] = json!(
            node.servers
                .iter()
                .map(|(uuid, name)| json!({"uuid": uuid, "name": name}))
                .collect::<Vec<_>>()
        );
    }
    view
}

async fn hypervisors(
    state: &AppState,
    request: &HttpRequest,
    caller: &Caller,
    version: Version,
    detail: bool,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-hypervisors:list")?;
    let pairs = common::query_pairs(request)?;
    let (limit, marker) = common::limit_and_marker(&pairs)?;
    let pattern = common::last(&pairs, "hypervisor_hostname_pattern")
        .map(|p| format!("%{}%", p.replace('%', "\\%").replace('_', "\\_")));
    let with_servers = version.at_least(53)
        && common::last(&pairs, "with_servers")
            .and_then(crate::domain::compute::extra_specs::bool_like)
            .unwrap_or(false);
    let wanted = db::services::HypervisorQuery {
        pattern,
        only: None,
        with_servers,
    };
    let mut nodes = db::run(&state.pool, move |conn| {
        db::services::list_hypervisors(conn, &wanted)
    })
    .await?;
    if let Some(marker) = marker {
        let at = nodes
            .iter()
            .position(|n| n.uuid.to_string() == marker || n.id.to_string() == marker)
            .ok_or_else(|| ComputeError::bad_request(format!("marker [{marker}] not found")))?;
        nodes.drain(..=at);
    }
    if let Some(limit) = limit {
        nodes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    let views: Vec<Value> = nodes
        .iter()
        .map(|n| hypervisor_view(state, version, n, detail))
        .collect();
    let mut answer = json!({"hypervisors": views});
    if let (Some(limit), Some(last)) = (limit, nodes.last())
        && limit > 0
        && nodes.len() as i64 == limit
    {
        let path = if detail {
            "os-hypervisors/detail"
        } else {
            "os-hypervisors"
        };
        answer["hypervisors_links"] =
            common::next_link(request, path, &last.uuid.to_string(), limit);
    }
    Ok(HttpResponse::Ok().json(answer))
}

/// `GET /os-hypervisors`.
pub async fn list_hypervisors(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    hypervisors(&state, &request, &caller, version, false).await
}

/// `GET /os-hypervisors/detail`.
pub async fn list_hypervisors_detail(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    hypervisors(&state, &request, &caller, version, true).await
}

/// `GET /os-hypervisors/{id}`.
pub async fn show_hypervisor(
    state: web::Data<AppState>,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-hypervisors:show")?;
    let id = path.into_inner();
    let only = Uuid::parse_str(&id).ok();
    let wanted = db::services::HypervisorQuery {
        pattern: None,
        only,
        with_servers: true,
    };
    let nodes = match only {
        Some(_) => {
            db::run(&state.pool, move |conn| {
                db::services::list_hypervisors(conn, &wanted)
            })
            .await?
        }
        None => Vec::new(),
    };
    let found = nodes.first();
    match found {
        Some(node) => Ok(HttpResponse::Ok()
            .json(json!({"hypervisor": hypervisor_view(&state, version, node, true)}))),
        None => Err(ComputeError::not_found(format!(
            "Hypervisor with ID {id} could not be found."
        ))),
    }
}
