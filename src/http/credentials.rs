//! The credentials a request presents and what they allow, shared by the admin API's
//! authorization (`admin_token`), the dashboard's login (`session`) and the Compute API's
//! callers: the configured admin token, the tokens in a request's headers, and whether a
//! Keystone identity may read or write the admin API.

use actix_web::http::StatusCode;

use super::error::ApiError;
use crate::config::AdminToken;
use crate::keystone::Identity;

/// The configured token, as app data.
#[derive(Debug, Clone)]
pub struct AdminTokenConfig(pub Option<AdminToken>);

/// Whether `identity` may read (or write) the admin API.
pub fn admin_role_allows(
    identity: &Identity,
    admin_project: &str,
    is_read: bool,
) -> Result<(), ApiError> {
    let in_scope = identity.system_scope
        || identity.project_name == admin_project
        || identity.project_id == admin_project;
    let role = if is_read {
        identity.has_role("reader") || identity.has_role("admin")
    } else {
        identity.has_role("admin")
    };
    if in_scope && role {
        return Ok(());
    }
    let needed = if is_read {
        "the reader or admin role"
    } else {
        "the admin role"
    };
    Err(ApiError::Refused {
        status: StatusCode::FORBIDDEN,
        message: format!(
            "this request needs {needed}, system-scoped or in project {admin_project}"
        ),
    })
}

/// The tokens a request presents, in the order they count: `Authorization: Bearer`, then
/// `X-Auth-Token`.
pub fn tokens_in(headers: &actix_web::http::header::HeaderMap) -> impl Iterator<Item = &str> {
    let bearer = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    let auth_token = headers
        .get("x-auth-token")
        .and_then(|value| value.to_str().ok());
    bearer.into_iter().chain(auth_token)
}
