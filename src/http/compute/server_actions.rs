//! `POST /servers/{id}/action`: `os-stop`, `os-start` and `reboot` (`SOFT` or `HARD`), through
//! the node's power in Ironic, as Nova's ironic driver does them. The action's task_state is
//! set (409 when the server's state does not allow it, as Nova's `check_instance_state`), the
//! answer is 202, and the node's host does the rest; its vm_state and power state follow.

use actix_web::{HttpResponse, web};
use serde_json::Value;

use super::auth::Caller;
use super::common;
use super::error::ComputeError;
use crate::actors::compute_host::PowerServer;
use crate::db;
use crate::domain::compute::server::PowerAction;
use crate::http::AppState;

/// The action a body asks for.
fn action_of(body: &serde_json::Map<String, Value>) -> Result<PowerAction, ComputeError> {
    let mut keys = body.keys();
    let (Some(key), None) = (keys.next(), keys.next()) else {
        return Err(ComputeError::bad_request(
            "The action body must name exactly one action",
        ));
    };
    match key.as_str() {
        "os-stop" => Ok(PowerAction::Stop),
        "os-start" => Ok(PowerAction::Start),
        "reboot" => {
            let kind = body["reboot"]
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("");
            match kind.to_ascii_uppercase().as_str() {
                "SOFT" => Ok(PowerAction::Reboot { hard: false }),
                "HARD" => Ok(PowerAction::Reboot { hard: true }),
                _ => Err(ComputeError::bad_request(format!(
                    "Invalid input for field/attribute type. Value: {kind}. '{kind}' is not \
                     one of ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft']"
                ))),
            }
        }
        other => Err(ComputeError::bad_request(format!(
            "There is no such action: {other} (ringmaster serves os-stop, os-start and reboot)"
        ))),
    }
}

/// `POST /servers/{id}/action`.
pub async fn server_action(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    let action = action_of(&common::object(&body)?)?;
    let server = super::servers::visible_server(&state, &caller, &path).await?;
    if !caller.may_write(&server.project_id) {
        return Err(ComputeError::policy(&format!(
            "os_compute_api:servers:{}",
            action.name()
        )));
    }
    let host = server.host.clone().unwrap_or_default();
    let Some(address) = state.actors.hosts.get(&host) else {
        return Err(ComputeError::conflict(format!(
            "Cannot '{}' instance {} now: its host {host:?} does not run in this process",
            action.name(),
            server.uuid
        )));
    };
    let (uuid, now) = (server.uuid, state.actors.clock.now());
    db::transaction(&state.pool, move |conn| {
        db::servers::begin_power(conn, uuid, action, now)
    })
    .await?
    .map_err(ComputeError::conflict)?;
    let pool = state.pool.clone();
    actix::spawn(async move {
        let done = address
            .send(PowerServer {
                instance: uuid,
                action,
            })
            .await;
        if let Err(lost) = done {
            log::warn!("{} of server {uuid} was not done: {lost}", action.name());
            let now = chrono::Utc::now();
            let cleared = db::transaction(&pool, move |conn| {
                db::servers::end_power(conn, uuid, None, now)
            })
            .await;
            if let Err(error) = cleared {
                log::warn!(
                    "server {uuid}: its task_state stays until its host's next pass: {error}"
                );
            }
        }
    });
    Ok(HttpResponse::Accepted().finish())
}
