//! Who may call the admin API and read `/metrics`. With an admin token
//! configured, every admin API request, reads included, must present it as `Authorization:
//! Bearer TOKEN` or `X-Auth-Token` (401); with Keystone (`--auth-strategy keystone`), a token
//! with the `reader` or `admin` role, system-scoped or scoped to the admin project
//! (`--admin-project`), may read, and one with the `admin` role so scoped may write (403 for
//! others, 503 when Keystone cannot be asked). Without either (loopback only) the admin API is
//! open. `/metrics` is open when `metrics_open` says so, else it takes the metrics token or the
//! admin credentials. `/healthz`, `/readyz` and the dashboard's files stay open; Placement and
//! the Compute API authorise in their own middleware.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{Error, web};

use super::credentials::{AdminTokenConfig, admin_role_allows, tokens_in};
use super::error::ApiError;
use crate::config::AdminToken;
use crate::keystone::{Keystone, KeystoneError};

/// What a path is, for access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Area {
    /// `/api/…`: the admin API.
    Admin,
    /// `/api/v1/session`: the login itself.
    Login,
    /// `/metrics`.
    Metrics,
    /// Placement and the Compute API: their own middleware decides.
    OwnPolicy,
    /// Probes and the dashboard's files.
    Open,
}

fn area(path: &str) -> Area {
    let under = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    if path == "/api/v1/session" {
        Area::Login
    } else if under("/api") {
        Area::Admin
    } else if path == "/metrics" {
        Area::Metrics
    } else if under("/placement") || under("/compute") {
        Area::OwnPolicy
    } else {
        Area::Open
    }
}

/// Refuses a request that lacks the credentials its path needs.
pub async fn require_admin_token(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let is_read = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let state = request
        .app_data::<web::Data<crate::http::AppState>>()
        .cloned();
    let keystone = state.as_ref().and_then(|state| state.keystone.clone());
    let expected = request
        .app_data::<web::Data<AdminTokenConfig>>()
        .and_then(|config| config.0.clone());
    let verdict = match area(request.path()) {
        Area::OwnPolicy | Area::Login => Ok(()),
        Area::Open if is_read => Ok(()),
        // A change anywhere but the APIs (there is none to make) still needs the token.
        Area::Open => match expected {
            Some(expected) if !presents(&request, &expected) => Err(ApiError::AdminTokenRequired),
            _ => Ok(()),
        },
        Area::Admin => {
            admin_allows(
                &request,
                expected.as_ref(),
                keystone.as_deref(),
                state.as_ref().map(|state| state.get_ref()),
                is_read,
            )
            .await
        }
        Area::Metrics => {
            let access = state
                .as_ref()
                .map(|state| state.access.clone())
                .unwrap_or_default();
            let metrics_token = access
                .metrics_token
                .as_ref()
                .is_some_and(|token| presents(&request, token));
            if access.metrics_open || metrics_token {
                Ok(())
            } else if expected.is_none() && keystone.is_none() {
                // No admin credentials exist: only the metrics token opens /metrics.
                Err(unauthorized(
                    "/metrics needs the metrics token: send 'Authorization: Bearer TOKEN'",
                ))
            } else {
                admin_allows(
                    &request,
                    expected.as_ref(),
                    keystone.as_deref(),
                    state.as_ref().map(|state| state.get_ref()),
                    true,
                )
                .await
            }
        }
    };
    match verdict {
        Ok(()) => next
            .call(request)
            .await
            .map(ServiceResponse::map_into_left_body),
        // An answer, not an error: the middlewares around it (HSTS) see it.
        Err(refused) => Ok(request
            .into_response(actix_web::ResponseError::error_response(&refused))
            .map_into_right_body()),
    }
}

/// The admin API's verdict: Keystone's when it authenticates callers, else the admin token's,
/// else open.
async fn admin_allows(
    request: &ServiceRequest,
    expected: Option<&AdminToken>,
    keystone: Option<&Keystone>,
    state: Option<&crate::http::AppState>,
    is_read: bool,
) -> Result<(), ApiError> {
    let admin_project = state.map_or("admin", |state| state.access.admin_project.as_str());
    // No token in the headers: the dashboard's session cookie, if it has one.
    let session = presented_tokens(request)
        .next()
        .is_none()
        .then(|| super::session::session_id(request.headers()))
        .flatten()
        .zip(state)
        .and_then(|(id, state)| state.sessions.get(&id));
    if let Some(session) = session {
        if !is_read && !super::session::csrf_matches(request.headers(), &session) {
            return Err(ApiError::Refused {
                status: StatusCode::FORBIDDEN,
                message: "a change made with the session cookie needs the X-CSRF-Token header \
                          (the ringmaster_csrf cookie's value)"
                    .to_owned(),
            });
        }
        return match (&session.credential, keystone) {
            (super::session::Credential::Keystone(token), Some(keystone)) => {
                keystone_verdict(keystone, token, admin_project, is_read).await
            }
            (super::session::Credential::AdminToken, None) if expected.is_some() => Ok(()),
            _ => Err(unauthorized("the session is no longer valid: log in again")),
        };
    }
    if let Some(keystone) = keystone {
        return keystone_allows(request, keystone, admin_project, is_read).await;
    }
    match expected {
        Some(expected) if !presents(request, expected) && is_read => Err(unauthorized(
            "reading the admin API needs the admin token: send 'Authorization: Bearer TOKEN' \
             or 'X-Auth-Token: TOKEN'",
        )),
        Some(expected) if !presents(request, expected) => Err(ApiError::AdminTokenRequired),
        _ => Ok(()),
    }
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::Refused {
        status: StatusCode::UNAUTHORIZED,
        message: message.to_owned(),
    }
}

/// Keystone's verdict on an admin API request: the `reader` (or `admin`) role to read, `admin`
/// to write, either system-scoped or scoped to the admin project.
async fn keystone_allows(
    request: &ServiceRequest,
    keystone: &Keystone,
    admin_project: &str,
    is_read: bool,
) -> Result<(), ApiError> {
    let Some(token) = presented_tokens(request).next() else {
        return Err(unauthorized(
            "this request needs a Keystone token: send X-Auth-Token",
        ));
    };
    keystone_verdict(keystone, token, admin_project, is_read).await
}

/// Keystone's verdict on `token`.
async fn keystone_verdict(
    keystone: &Keystone,
    token: &str,
    admin_project: &str,
    is_read: bool,
) -> Result<(), ApiError> {
    match keystone.validate(token).await {
        Ok(identity) => admin_role_allows(&identity, admin_project, is_read),
        Err(KeystoneError::Invalid) => Err(unauthorized(
            "the token is not valid (unknown, expired or revoked)",
        )),
        Err(KeystoneError::Unavailable(reason)) => {
            log::warn!("keystone cannot validate a token: {reason}");
            Err(ApiError::Refused {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: "the authentication service is unavailable; try again later".to_owned(),
            })
        }
    }
}

fn presents(request: &ServiceRequest, expected: &AdminToken) -> bool {
    presented_tokens(request).any(|token| expected.matches(token))
}

/// Adds `WWW-Authenticate: Keystone uri="…"` to a 401 or 403, as keystonemiddleware does: where
/// a client gets a token.
pub fn ask_for_keystone<B>(response: &mut ServiceResponse<B>, keystone: &Keystone) {
    if !matches!(response.status().as_u16(), 401 | 403) {
        return;
    }
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&format!(
        "Keystone uri=\"{}\"",
        keystone.url()
    )) {
        response
            .headers_mut()
            .insert(actix_web::http::header::WWW_AUTHENTICATE, value);
    }
}

fn presented_tokens(request: &ServiceRequest) -> impl Iterator<Item = &str> {
    tokens_in(request.headers())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keystone::Identity;

    fn identity(project: &str, roles: &[&str], system: bool) -> Identity {
        Identity {
            user_id: "u".to_owned(),
            user_name: "u".to_owned(),
            project_id: format!("{project}-id"),
            project_name: project.to_owned(),
            system_scope: system,
            roles: roles.iter().map(|role| (*role).to_owned()).collect(),
        }
    }

    #[test]
    fn paths_fall_in_their_areas() {
        assert_eq!(area("/api/v1/hosts"), Area::Admin);
        assert_eq!(area("/api"), Area::Admin);
        assert_eq!(area("/apiary.js"), Area::Open);
        assert_eq!(area("/metrics"), Area::Metrics);
        assert_eq!(area("/placement/resource_providers"), Area::OwnPolicy);
        assert_eq!(area("/compute/v2.1/servers"), Area::OwnPolicy);
        assert_eq!(area("/healthz"), Area::Open);
        assert_eq!(area("/app.js"), Area::Open);
    }

    #[test]
    fn readers_and_admins_of_the_admin_project_or_the_system_may_read() {
        let allowed =
            |identity: &Identity, read: bool| admin_role_allows(identity, "admin", read).is_ok();
        let reader = identity("admin", &["reader"], false);
        assert!(allowed(&reader, true));
        assert!(!allowed(&reader, false), "a reader does not write");
        let admin = identity("admin", &["admin", "member", "reader"], false);
        assert!(allowed(&admin, true) && allowed(&admin, false));
        let member_elsewhere = identity("demo", &["member", "reader"], false);
        assert!(
            !allowed(&member_elsewhere, true),
            "another project's member: 403"
        );
        let admin_elsewhere = identity("demo", &["admin"], false);
        assert!(
            !allowed(&admin_elsewhere, false),
            "admin of another project: 403"
        );
        let system_reader = identity("", &["reader"], true);
        assert!(allowed(&system_reader, true) && !allowed(&system_reader, false));
        let by_id = identity("admin", &["reader"], false);
        assert!(
            admin_role_allows(&by_id, "admin-id", true).is_ok(),
            "--admin-project may be an id"
        );
    }
}
