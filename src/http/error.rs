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
    fn code(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not_found",
            ApiError::BadRequest(_) => "bad_request",
            ApiError::AdminTokenRequired => "unauthorized",
            ApiError::Db(error) => match error.kind() {
                ErrorKind::NotFound => "not_found",
                ErrorKind::Conflict => "conflict",
                ErrorKind::Invalid => "bad_request",
                ErrorKind::Unavailable => "unavailable",
                ErrorKind::Internal => "internal",
            },
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::AdminTokenRequired => StatusCode::UNAUTHORIZED,
            ApiError::Db(error) => match error.kind() {
                ErrorKind::NotFound => StatusCode::NOT_FOUND,
                ErrorKind::Conflict => StatusCode::CONFLICT,
                ErrorKind::Invalid => StatusCode::BAD_REQUEST,
                ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
                ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        let message = if status.is_server_error() {
            log::error!("request failed: {self}");
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
    web::JsonConfig::default().error_handler(|error, _request: &HttpRequest| {
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
