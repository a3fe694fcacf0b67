//! `ApiError` and the one mapping from error kind to HTTP status. Every error body is
//! `{"error": {"code": "...", "message": "..."}}`; a 5xx body carries only a generic message
//! and the cause is logged once, here.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use serde::Serialize;

use crate::db::DbError;
use crate::domain::error::ErrorKind;

/// Says why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    #[error(
        "this request changes state and needs the admin token: send 'Authorization: Bearer TOKEN' or 'X-Auth-Token: TOKEN'"
    )]
    AdminTokenRequired,
    #[error(transparent)]
    Db(#[from] DbError),
    /// An actor's typed error, already classified.
    #[error("{message}")]
    Actor { kind: ErrorKind, message: String },
    /// A request refused before any route saw it (`hygiene`), with its own status.
    #[error("{message}")]
    Refused { status: StatusCode, message: String },
}

impl From<crate::actors::compute_host::HostError> for ApiError {
    fn from(error: crate::actors::compute_host::HostError) -> Self {
        match error {
            // Database failures keep their own envelope, which hides internal text.
            crate::actors::compute_host::HostError::Db(db) => ApiError::Db(db),
            other => ApiError::Actor {
                kind: other.kind(),
                message: other.to_string(),
            },
        }
    }
}

impl From<crate::actors::scheduler::BootError> for ApiError {
    fn from(error: crate::actors::scheduler::BootError) -> Self {
        use crate::actors::scheduler::BootError;
        match error {
            BootError::Db(db) => ApiError::Db(db),
            BootError::Host(host) => ApiError::from(host),
            other => ApiError::Actor {
                kind: other.kind(),
                message: other.to_string(),
            },
        }
    }
}

impl From<actix::MailboxError> for ApiError {
    fn from(error: actix::MailboxError) -> Self {
        ApiError::Actor {
            kind: ErrorKind::Unavailable,
            message: format!("actor unavailable: {error}"),
        }
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    error: Body<'a>,
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'a str,
    message: String,
}

impl ApiError {
    /// Returns the kind of this error; `None` for a missing admin token.
    fn kind(&self) -> Option<ErrorKind> {
        match self {
            ApiError::NotFound(_) => Some(ErrorKind::NotFound),
            ApiError::BadRequest(_) => Some(ErrorKind::Invalid),
            ApiError::AdminTokenRequired => None,
            ApiError::Db(error) => Some(error.kind()),
            ApiError::Actor { kind, .. } => Some(*kind),
            ApiError::Refused { .. } => Some(ErrorKind::Invalid),
        }
    }

    fn code(&self) -> &'static str {
        if let ApiError::Refused { status, .. } = self {
            return match *status {
                StatusCode::UNAUTHORIZED => "unauthorized",
                StatusCode::FORBIDDEN => "forbidden",
                StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
                StatusCode::REQUEST_TIMEOUT => "request_timeout",
                StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
                StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
                StatusCode::SERVICE_UNAVAILABLE => "unavailable",
                _ => "bad_request",
            };
        }
        match self.kind() {
            None => "unauthorized",
            Some(ErrorKind::NotFound) => "not_found",
            Some(ErrorKind::Conflict) => "conflict",
            Some(ErrorKind::Invalid) => "bad_request",
            Some(ErrorKind::Unavailable) => "unavailable",
            Some(ErrorKind::Internal) => "internal",
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        if let ApiError::Refused { status, .. } = self {
            return *status;
        }
        match self.kind() {
            None => StatusCode::UNAUTHORIZED,
            Some(ErrorKind::NotFound) => StatusCode::NOT_FOUND,
            Some(ErrorKind::Conflict) => StatusCode::CONFLICT,
            Some(ErrorKind::Invalid) => StatusCode::BAD_REQUEST,
            Some(ErrorKind::Unavailable) => StatusCode::SERVICE_UNAVAILABLE,
            Some(ErrorKind::Internal) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        let message = if status.is_server_error() && !matches!(self, ApiError::Refused { .. }) {
            log::error!(
                "request {} failed: {self}",
                super::observe::current_request_id()
            );
            match status {
                StatusCode::SERVICE_UNAVAILABLE => {
                    "the database is unavailable, try again".to_owned()
                }
                _ => "internal error; the server log has the details".to_owned(),
            }
        } else {
            self.to_string()
        };
        HttpResponse::build(status).json(Envelope {
            error: Body {
                code: self.code(),
                message,
            },
        })
    }
}

/// Answers a request that matches no route.
pub async fn no_route(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "no route for {} {}",
        request.method(),
        request.path()
    )))
}

/// Answers malformed JSON bodies with the envelope.
pub fn json_config() -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(super::BODY_LIMIT)
        .error_handler(|error, _request: &HttpRequest| {
            ApiError::BadRequest(format!("invalid JSON body: {error}")).into()
        })
}

/// Answers malformed path parameters with the envelope.
pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|error, _request: &HttpRequest| {
        ApiError::BadRequest(format!("invalid path: {error}")).into()
    })
}

/// Answers malformed query strings with the envelope.
pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|error, _request: &HttpRequest| {
        ApiError::BadRequest(format!("invalid query: {error}")).into()
    })
}

/// Puts the framework's bare 405 into an API's envelope (`envelope` gets the request and the
/// `Allow` it names), keeping `Allow`; any other response passes unchanged. Each API's
/// middleware (admin, Placement, Compute) answers its 405s through this.
pub fn rewrap_method_not_allowed(
    response: actix_web::dev::ServiceResponse<actix_web::body::BoxBody>,
    envelope: impl FnOnce(&actix_web::HttpRequest, Option<&str>) -> HttpResponse,
) -> actix_web::dev::ServiceResponse<actix_web::body::BoxBody> {
    if response.status() != StatusCode::METHOD_NOT_ALLOWED {
        return response;
    }
    let allow = response
        .headers()
        .get(actix_web::http::header::ALLOW)
        .cloned();
    let (request, _) = response.into_parts();
    let mut answer = envelope(
        &request,
        allow.as_ref().and_then(|value| value.to_str().ok()),
    );
    if let Some(allow) = allow {
        answer
            .headers_mut()
            .insert(actix_web::http::header::ALLOW, allow);
    }
    actix_web::dev::ServiceResponse::new(request, answer)
}
