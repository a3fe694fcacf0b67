//! The admin token check: when a token is configured, every mutating request (anything but
//! GET, HEAD and OPTIONS) must present it as `Authorization: Bearer TOKEN` or `X-Auth-Token`.
//! With Keystone (`--auth-strategy keystone`), the admin API instead takes Keystone tokens:
//! every request needs a valid one (401), a write needs the `admin` role (403), and a Keystone
//! that cannot be asked is 503. Placement's paths are Placement's middleware's.

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
    let keystone = request
        .app_data::<web::Data<crate::http::AppState>>()
        .and_then(|state| state.keystone.clone());
    if let Some(keystone) = keystone
        && request.path().starts_with("/api/")
    {
        if let Err(refused) = keystone_allows(&request, &keystone, is_read).await {
            return Err(refused.into());
        }
        return next.call(request).await;
    }
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

/// Keystone's verdict on an admin API request: a valid token for a read, the `admin` role for
/// a write.
async fn keystone_allows(
    request: &ServiceRequest,
    keystone: &crate::keystone::Keystone,
    is_read: bool,
) -> Result<(), ApiError> {
    let refused = |status: actix_web::http::StatusCode, message: &str| ApiError::Refused {
        status,
        message: message.to_owned(),
    };
    let Some(token) = presented_tokens(request).next() else {
        return Err(refused(
            actix_web::http::StatusCode::UNAUTHORIZED,
            "this request needs a Keystone token: send X-Auth-Token",
        ));
    };
    match keystone.validate(token).await {
        Ok(identity)
            if is_read
                || identity
                    .roles
                    .iter()
                    .any(|role| role.eq_ignore_ascii_case("admin")) =>
        {
            Ok(())
        }
        Ok(_) => Err(refused(
            actix_web::http::StatusCode::FORBIDDEN,
            "this request changes state and needs the admin role",
        )),
        Err(crate::keystone::KeystoneError::Invalid) => Err(refused(
            actix_web::http::StatusCode::UNAUTHORIZED,
            "the token is not valid (unknown, expired or revoked)",
        )),
        Err(crate::keystone::KeystoneError::Unavailable(reason)) => {
            log::warn!("keystone cannot validate a token: {reason}");
            Err(refused(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                "the authentication service is unavailable; try again later",
            ))
        }
    }
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
