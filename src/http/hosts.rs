//! `/api/v1/hosts`: list compute hosts; add, crash, start and drain them.

use std::collections::HashMap;

use actix_web::{HttpResponse, web};

use super::AppState;
use super::dto::{CreateHostRequest, HostResponse};
use super::error::ApiError;
use super::validate;
use crate::actors::compute_host::Heartbeat;
use crate::db;

/// Lists the compute hosts with their state and node count.
pub async fn list_hosts(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let cache = state.node_counts.clone();
    let (hosts, counts, versions) = db::run(&state.pool, move |conn| {
        Ok((
            db::hosts::list_hosts(conn)?,
            cache.get(conn)?,
            db::processes::host_versions(conn)?,
        ))
    })
    .await?;
    let counts: HashMap<String, i64> = counts.into_iter().collect();
    let mut versions: HashMap<String, String> = versions.into_iter().collect();
    let now = state.actors.clock.now();
    let judge = state.actors.judge();
    let local = state.actors.hosts.names();
    let body: Vec<HostResponse> = hosts
        .into_iter()
        .map(|host| HostResponse {
            state: judge.state(&host, now).as_str(),
            nodes: counts.get(&host.name).copied().unwrap_or(0),
            local: local.contains(&host.name),
            last_seen_up: host.last_seen_up,
            disabled_reason: host.disabled_reason,
            report_count: host.report_count,
            version: versions.remove(&host.name),
            conductor_group: host.serves.conductor_group,
            shard: host.serves.shard,
            host: host.name,
        })
        .collect();
    Ok(HttpResponse::Ok().json(body))
}

/// Adds a compute host to this process and starts it.
pub async fn create_host(
    state: web::Data<AppState>,
    body: web::Json<CreateHostRequest>,
) -> Result<HttpResponse, ApiError> {
    validate::host_name(&body.host)?;
    // The reply waits for the host's registration and first heartbeat, so a request that
    // follows (a drain, say) sees it registered.
    state
        .actors
        .hosts
        .start(&body.host)
        .await?
        .send(Heartbeat)
        .await??;
    Ok(HttpResponse::Created().json(serde_json::json!({ "host": body.host })))
}

/// Crashes a host of this process: heartbeats and work stop at once, nothing is cleaned up.
pub async fn crash_host(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let host = path.into_inner();
    if !state.actors.hosts.crash(&host) {
        return Err(ApiError::NotFound(format!(
            "host {host} is not running in this process"
        )));
    }
    Ok(HttpResponse::Accepted().json(serde_json::json!({ "host": host, "action": "crash" })))
}

/// Starts (or restarts) a crashed host in this process; 409 when it is running already. A
/// drained (disabled) host stays disabled until it is enabled.
pub async fn start_host(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let host = path.into_inner();
    validate::host_name(&host)?;
    let known = known_host(&state, &host).await?;
    if !known {
        return Err(ApiError::NotFound(format!("host {host} not found")));
    }
    if state.actors.hosts.is_running(&host) {
        return Err(ApiError::Actor {
            kind: crate::domain::error::ErrorKind::Conflict,
            message: format!("host {host} is already running in this process"),
        });
    }
    state
        .actors
        .hosts
        .start(&host)
        .await?
        .send(Heartbeat)
        .await??;
    Ok(HttpResponse::Accepted().json(serde_json::json!({ "host": host, "action": "start" })))
}

/// Drains a host: it receives no nodes and its nodes move away while it is still up; it stays
/// drained across restarts until it is enabled.
pub async fn drain_host(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    change_host(state, path.into_inner(), "drain").await
}

/// Enables a host again: a drain (or any disable) ends, and it receives nodes.
pub async fn enable_host(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    change_host(state, path.into_inner(), "enable").await
}

/// Drains or enables host `host` (`action`), then has the rebalancer act on it at once.
async fn change_host(
    state: web::Data<AppState>,
    host: String,
    action: &'static str,
) -> Result<HttpResponse, ApiError> {
    let changed = validate::host_name(&host)?;
    let now = state.actors.clock.now();
    db::run(&state.pool, move |conn| match action {
        "drain" => db::hosts::drain_host(conn, &changed, now),
        _ => db::hosts::enable_host(conn, &changed, now),
    })
    .await?;
    state
        .actors
        .rebalancer
        .do_send(crate::actors::rebalancer::RebalanceNow);
    Ok(HttpResponse::Accepted().json(serde_json::json!({ "host": host, "action": action })))
}

async fn known_host(state: &AppState, host: &str) -> Result<bool, ApiError> {
    let host = host.to_owned();
    let hosts = db::run(&state.pool, db::hosts::list_hosts).await?;
    Ok(hosts.iter().any(|known| known.name == host))
}
