//! The admin token check: when a token is configured, every mutating request (anything but
//! GET, HEAD and OPTIONS) must present it as `Authorization: Bearer TOKEN` or `X-Auth-Token`.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{Error, web};

use super::error::ApiError;
use crate::config::AdminToken;

/// The configured token, as app data.
#[derive(Debug, Clone)]
pub struct AdminTokenConfig(pub Option<AdminToken>);

/// Rejects a mutating request that does not carry the configured admin token.
pub async fn require_admin_token(
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let is_read = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let expected = request
        .app_data::<web::Data<AdminTokenConfig>>()
        .and_then(|config| config.0.clone());
    if let (false, Some(expected)) = (is_read, expected)
        && !presented_tokens(&request).any(|token| expected.matches(token))
    {
        return Err(ApiError::AdminTokenRequired.into());
    }
    next.call(request).await
}

fn presented_tokens(request: &ServiceRequest) -> impl Iterator<Item = &str> {
    let headers = request.headers();
    let bearer = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    let auth_token = headers
        .get("x-auth-token")
        .and_then(|value| value.to_str().ok());
    bearer.into_iter().chain(auth_token)
}
