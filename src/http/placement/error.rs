//! Placement's error envelope and codes. Internal failures carry a generic detail; the cause
//! is logged once here.

use super::views::{AuthError, ErrorEntry, Errors};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::db::DbError;
use crate::domain::error::ErrorKind;

/// Placement's generic error code.
pub const UNDEFINED_CODE: &str = "placement.undefined_code";

/// A Placement API error: status, detail and Placement's error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct PlacementError {
    pub status: StatusCode,
    pub detail: String,
    pub code: &'static str,
}

impl PlacementError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> PlacementError {
        PlacementError {
            status,
            detail: detail.into(),
            code: UNDEFINED_CODE,
        }
    }

    pub fn with_code(mut self, code: &'static str) -> PlacementError {
        self.code = code;
        self
    }

    pub fn bad_request(detail: impl Into<String>) -> PlacementError {
        PlacementError::new(StatusCode::BAD_REQUEST, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> PlacementError {
        PlacementError::new(StatusCode::NOT_FOUND, detail)
    }

    pub fn conflict(detail: impl Into<String>) -> PlacementError {
        PlacementError::new(StatusCode::CONFLICT, detail)
    }

    /// Renders the envelope Placement writes. A 401 or 403 also carries keystonemiddleware's
    /// `error` object, which real Placement's 401 has instead: clients reading either (osc-
    /// placement reads `errors[0].detail`) find the message.
    pub fn to_response(&self) -> HttpResponse {
        let title = self.status.canonical_reason().unwrap_or("Error");
        let status = self.status.as_u16();
        let body = Errors {
            errors: [ErrorEntry {
                status,
                title,
                detail: &self.detail,
                code: self.code,
                request_id: crate::http::observe::current_request_id(),
            }],
            error: matches!(status, 401 | 403).then_some(AuthError {
                code: status,
                title,
                message: &self.detail,
            }),
        };
        HttpResponse::build(self.status).json(body)
    }
}

impl ResponseError for PlacementError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        self.to_response()
    }
}

impl From<DbError> for PlacementError {
    fn from(error: DbError) -> Self {
        match error.kind() {
            ErrorKind::Unavailable => {
                log::error!(
                    "placement request {} failed: {error}",
                    crate::http::observe::current_request_id()
                );
                PlacementError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The database is unavailable, try again.",
                )
            }
            // ringmaster's own conflict messages are for users; a constraint's name is not.
            ErrorKind::Conflict => match error {
                DbError::Conflict(message) => PlacementError::conflict(message),
                other => {
                    log::info!(
                        "placement request {} conflicted: {other}",
                        crate::http::observe::current_request_id()
                    );
                    PlacementError::conflict(
                        "The request conflicted with a concurrent change; retry it.",
                    )
                }
            },
            ErrorKind::NotFound => PlacementError::not_found(error.to_string()),
            ErrorKind::Invalid | ErrorKind::Internal => {
                log::error!(
                    "placement request {} failed: {error}",
                    crate::http::observe::current_request_id()
                );
                PlacementError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal error; the server log has the details.",
                )
            }
        }
    }
}

/// Answers a request for a path no Placement route serves: 404 (a path that is served but
/// not for this method gets 405 from its resource, in the envelope, by the middleware).
pub async fn no_route() -> HttpResponse {
    PlacementError::not_found("The resource could not be found.").to_response()
}
