//! `POST /servers/{id}/action`: `os-stop`, `os-start` and `reboot` (`SOFT` or `HARD`), through
//! the node's power in Ironic, as Nova's ironic driver does them. The action's task_state is
//! set (409 when the server's state does not allow it, as Nova's `check_instance_state`), the
//! answer is 202, and the node's host does the rest; its vm_state and power state follow.

use actix_web::{HttpResponse, web};
use serde_json::Value;

use super::auth::Caller;
use super::common;
use super::error::ComputeError;
use crate::domain::compute::server::PowerAction;
use crate::http::AppState;
use crate::service::{self, server_power::PowerError};

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
    let begun = service::server_power::begin(&state.pool, &state.actors, server.uuid, host, action);
    begun.await.map_err(|error| match error {
        PowerError::HostElsewhere(host) => ComputeError::conflict(format!(
            "Cannot '{}' instance {} now: its host {host:?} does not run in this process",
            action.name(),
            server.uuid
        )),
        PowerError::NotNow(reason) => ComputeError::conflict(reason),
        PowerError::Db(error) => error.into(),
    })?;
    Ok(HttpResponse::Accepted().finish())
}
