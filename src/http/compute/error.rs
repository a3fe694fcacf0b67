//! The Compute API's error envelope, as Nova's `Fault` writes it: `{"badRequest": {"code":
//! 400, "message": …}}`, the key naming the status (`itemNotFound`, `conflictingRequest`, …,
//! `computeFault` for the rest). Internal failures carry a generic message; the cause is
//! logged once here.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

use crate::db::DbError;
use crate::db::flavors::FlavorError;
use crate::domain::error::ErrorKind;
use crate::service::servers::ServerError;

/// A Compute API error: its status and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ComputeError {
    pub status: StatusCode,
    pub message: String,
}

impl ComputeError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ComputeError {
        ComputeError {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ComputeError {
        ComputeError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> ComputeError {
        ComputeError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn conflict(message: impl Into<String>) -> ComputeError {
        ComputeError::new(StatusCode::CONFLICT, message)
    }

    pub fn forbidden(message: impl Into<String>) -> ComputeError {
        ComputeError::new(StatusCode::FORBIDDEN, message)
    }

    /// Nova's refusal by policy.
    pub fn policy(rule: &str) -> ComputeError {
        ComputeError::forbidden(format!("Policy doesn't allow {rule} to be performed."))
    }

    /// The envelope key Nova gives this status.
    pub fn fault_name(&self) -> &'static str {
        match self.status.as_u16() {
            400 => "badRequest",
            401 => "unauthorized",
            403 => "forbidden",
            404 => "itemNotFound",
            405 => "badMethod",
            409 => "conflictingRequest",
            413 | 429 => "overLimit",
            415 => "badMediaType",
            501 => "notImplemented",
            503 => "serviceUnavailable",
            _ => "computeFault",
        }
    }

    pub fn to_response(&self) -> HttpResponse {
        HttpResponse::build(self.status).json(json!({
            self.fault_name(): {"code": self.status.as_u16(), "message": self.message}
        }))
    }
}

impl ResponseError for ComputeError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        self.to_response()
    }
}

impl From<DbError> for ComputeError {
    fn from(error: DbError) -> Self {
        let request = crate::http::observe::current_request_id();
        if let DbError::InvalidInput(message) = error {
            return ComputeError::bad_request(message);
        }
        match error.kind() {
            ErrorKind::Unavailable => {
                log::error!("compute request {request} failed: {error}");
                ComputeError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The database is unavailable, try again.",
                )
            }
            ErrorKind::Conflict => {
                log::info!("compute request {request} conflicted: {error}");
                ComputeError::conflict("The request conflicted with a concurrent change; retry it.")
            }
            ErrorKind::NotFound => ComputeError::not_found(error.to_string()),
            ErrorKind::Invalid | ErrorKind::Internal => {
                log::error!("compute request {request} failed: {error}");
                ComputeError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Unexpected API Error. The server log has the details.",
                )
            }
        }
    }
}

impl From<FlavorError> for ComputeError {
    fn from(error: FlavorError) -> Self {
        match error {
            FlavorError::Db(error) => error.into(),
            FlavorError::NotFound(_)
            | FlavorError::AccessNotFound(..)
            | FlavorError::SpecNotFound(..) => ComputeError::not_found(error.to_string()),
            FlavorError::NameExists(_)
            | FlavorError::IdExists(_)
            | FlavorError::AccessExists(..) => ComputeError::conflict(error.to_string()),
        }
    }
}

impl From<ServerError> for ComputeError {
    fn from(error: ServerError) -> Self {
        let unavailable =
            |message: &str| ComputeError::new(StatusCode::SERVICE_UNAVAILABLE, message);
        match error {
            ServerError::NoKeyPair(_) => ComputeError::bad_request("Invalid key_name provided."),
            ServerError::NoDestination(missing) => {
                ComputeError::bad_request(format!("Compute host {missing} could not be found."))
            }
            ServerError::SchedulerUnavailable => {
                unavailable("The scheduler is unavailable, try again.")
            }
            ServerError::NotScheduled => {
                unavailable("The server could not be scheduled now; try again.")
            }
            ServerError::HostElsewhere { uuid, host } => unavailable(&format!(
                "the host of server {uuid} does not run in this process; ask the process that \
                 runs {host}"
            )),
            ServerError::HostUnavailable => {
                unavailable("The compute host is unavailable, try again.")
            }
            ServerError::Host { uuid, error } => {
                // A delete racing this one got there first: gone, as Nova answers it then.
                if error.kind() == ErrorKind::NotFound {
                    return ComputeError::not_found(format!("Instance {uuid} could not be found."));
                }
                log::warn!("delete of server {uuid} failed: {error}");
                ComputeError::conflict(format!("Server {uuid} could not be deleted now: {error}"))
            }
            ServerError::Db(error) => error.into(),
        }
    }
}

/// Answers a path no Compute route serves: 404 in the envelope.
pub async fn no_route() -> HttpResponse {
    ComputeError::not_found("The resource could not be found.").to_response()
}
