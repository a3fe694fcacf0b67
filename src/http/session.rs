//! The dashboard's login. A browser cannot put a token on its event stream, and a
//! token kept where scripts read it can be stolen: the page logs in once (`POST
//! /api/v1/session` with the admin token, a Keystone token, or a Keystone user, password,
//! project and domain, which ringmaster exchanges with Keystone) and gets an `HttpOnly`,
//! `SameSite=Strict` session cookie (`Secure` over https) that authorises its reads and its
//! stream; a change made with the cookie must also carry the session's CSRF token in
//! `X-CSRF-Token` (double submit: the page reads it from the `ringmaster_csrf` cookie).
//! `DELETE /api/v1/session` logs out, and its streams end. A Keystone session lasts as long as
//! its token: one expired or revoked is refused within the token cache's lifetime, the stream
//! included. Sessions live in the memory of the process that made them (behind a load
//! balancer, keep a browser on one process).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::json;
use subtle::ConstantTimeEq as _;

use super::AppState;
use super::credentials::{AdminTokenConfig, admin_role_allows};
use super::error::ApiError;
use crate::keystone::{Credentials, KeystoneError};

/// The session cookie (`HttpOnly`).
pub const COOKIE: &str = "ringmaster_session";
/// The CSRF cookie the page reads and echoes in `X-CSRF-Token`.
pub const CSRF_COOKIE: &str = "ringmaster_csrf";
/// The header a change made with the session cookie carries.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Sessions held at most; beyond, expired ones go, then a login is refused (503).
const LIMIT: usize = 10_000;
/// How long an admin-token session lasts.
const ADMIN_TOKEN_SESSION: Duration = Duration::from_secs(12 * 3600);

/// What a session stands for.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// The configured admin token was given.
    AdminToken,
    /// This Keystone token, checked again as the token cache's lifetime passes.
    Keystone(String),
}

/// One logged-in browser.
#[derive(Clone)]
pub struct Session {
    pub credential: Credential,
    pub csrf: String,
    pub user: String,
    pub roles: Vec<String>,
    pub can_write: bool,
    until: Instant,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Session")
            .field("user", &self.user)
            .field("roles", &self.roles)
            .finish_non_exhaustive()
    }
}

/// The sessions of this process.
#[derive(Default)]
pub struct SessionStore {
    sessions: Mutex<HashMap<String, Session>>,
}

impl SessionStore {
    /// The session `id` names, while it lasts.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        match sessions.get(id) {
            Some(session) if session.until > Instant::now() => Some(session.clone()),
            Some(_) => {
                sessions.remove(id);
                None
            }
            None => None,
        }
    }

    fn create(&self, session: Session) -> Option<String> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions.len() >= LIMIT {
            let now = Instant::now();
            sessions.retain(|_, session| session.until > now);
            if sessions.len() >= LIMIT {
                return None;
            }
        }
        let id = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        sessions.insert(id.clone(), session);
        Some(id)
    }

    fn remove(&self, id: &str) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
            .is_some()
    }
}

/// The id in the request's session cookie, if any.
pub fn session_id(headers: &actix_web::http::header::HeaderMap) -> Option<String> {
    headers
        .get_all(actix_web::http::header::COOKIE)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| Cookie::parse(pair.trim()).ok())
        .find(|cookie| cookie.name() == COOKIE)
        .map(|cookie| cookie.value().to_owned())
}

/// Whether a change made with `session` carries its CSRF token.
pub fn csrf_matches(headers: &actix_web::http::header::HeaderMap, session: &Session) -> bool {
    headers
        .get(CSRF_HEADER)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|sent| bool::from(sent.as_bytes().ct_eq(session.csrf.as_bytes())))
}

/// How callers authenticate, as the page needs to know.
fn mode(state: &AppState, admin_token: &AdminTokenConfig) -> &'static str {
    if state.keystone.is_some() {
        "keystone"
    } else if admin_token.0.is_some() {
        "admin-token"
    } else {
        "none"
    }
}

/// `GET /api/v1/session`: how to log in, and who is logged in.
pub async fn get_session(
    state: web::Data<AppState>,
    admin_token: web::Data<AdminTokenConfig>,
    request: HttpRequest,
) -> HttpResponse {
    let mode = mode(&state, &admin_token);
    if mode == "none" {
        return HttpResponse::Ok().json(json!({
            "auth": mode, "logged_in": true, "user": null, "roles": [], "can_write": true,
        }));
    }
    let mut session = None;
    if let Some(id) = session_id(request.headers()) {
        let recheck = Recheck::Session(id.clone());
        if recheck.still_allowed(&state).await {
            session = state.sessions.get(&id);
        } else {
            state.sessions.remove(&id);
        }
    }
    HttpResponse::Ok().json(match session {
        Some(session) => json!({
            "auth": mode, "logged_in": true, "user": session.user,
            "roles": session.roles, "can_write": session.can_write,
        }),
        None => {
            json!({"auth": mode, "logged_in": false, "user": null, "roles": [], "can_write": false})
        }
    })
}

/// What a login sends: a token, or Keystone credentials.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    token: Option<String>,
    user: Option<String>,
    password: Option<String>,
    project: Option<String>,
    domain: Option<String>,
}

fn refused(status: StatusCode, message: &str) -> ApiError {
    ApiError::Refused {
        status,
        message: message.to_owned(),
    }
}

/// `POST /api/v1/session`: logs in; sets the session and CSRF cookies.
pub async fn create_session(
    state: web::Data<AppState>,
    admin_token: web::Data<AdminTokenConfig>,
    request: HttpRequest,
    login: web::Json<Login>,
) -> Result<HttpResponse, ApiError> {
    let login = login.into_inner();
    let session = match (&state.keystone, &admin_token.0) {
        (Some(keystone), _) => keystone_session(&state, keystone, &login).await?,
        (None, Some(expected)) => {
            let given = login.token.as_deref().ok_or_else(|| {
                ApiError::BadRequest("log in with the admin token: {\"token\": …}".to_owned())
            })?;
            if !expected.matches(given) {
                return Err(refused(
                    StatusCode::UNAUTHORIZED,
                    "that is not the admin token",
                ));
            }
            Session {
                credential: Credential::AdminToken,
                csrf: uuid::Uuid::new_v4().simple().to_string(),
                user: "admin".to_owned(),
                roles: vec!["admin".to_owned()],
                can_write: true,
                until: Instant::now() + ADMIN_TOKEN_SESSION,
            }
        }
        (None, None) => {
            return Err(refused(
                StatusCode::CONFLICT,
                "this server asks for no login (no admin token, no Keystone)",
            ));
        }
    };
    let body = json!({
        "user": session.user, "roles": session.roles, "can_write": session.can_write,
        "csrf": session.csrf,
    });
    let csrf = session.csrf.clone();
    let id = state.sessions.create(session).ok_or_else(|| {
        refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many sessions are open; try again later",
        )
    })?;
    let secure = super::transport::is_secure(&request);
    Ok(HttpResponse::Ok()
        .cookie(cookie(COOKIE, id, true, secure))
        .cookie(cookie(CSRF_COOKIE, csrf, false, secure))
        .json(body))
}

/// A session for a Keystone token, or for the token Keystone gives `login`'s credentials;
/// only for a caller who may read the admin API.
async fn keystone_session(
    state: &AppState,
    keystone: &crate::keystone::Keystone,
    login: &Login,
) -> Result<Session, ApiError> {
    let token = match (&login.token, &login.user, &login.password) {
        (Some(token), None, None) => token.clone(),
        (None, Some(user), Some(password)) => {
            let domain = login.domain.as_deref().unwrap_or("Default");
            let project = login
                .project
                .as_deref()
                .unwrap_or(&state.access.admin_project);
            let credentials = Credentials {
                user,
                password,
                user_domain: domain,
                project,
                project_domain: domain,
            };
            keystone
                .login(&credentials)
                .await
                .map_err(keystone_refusal)?
                .0
        }
        _ => {
            return Err(ApiError::BadRequest(
                "log in with a Keystone token, or with user, password, project and \
                 domain"
                    .to_owned(),
            ));
        }
    };
    let identity = keystone.validate(&token).await.map_err(keystone_refusal)?;
    let project = &state.access.admin_project;
    admin_role_allows(&identity, project, true)?;
    Ok(Session {
        can_write: admin_role_allows(&identity, project, false).is_ok(),
        credential: Credential::Keystone(token),
        csrf: uuid::Uuid::new_v4().simple().to_string(),
        user: identity.user_name.clone(),
        roles: identity.roles.clone(),
        // Keystone says when the token ends: each request checks it (cached).
        until: Instant::now() + ADMIN_TOKEN_SESSION,
    })
}

/// `DELETE /api/v1/session`: logs out; the session's streams end.
pub async fn delete_session(state: web::Data<AppState>, request: HttpRequest) -> HttpResponse {
    if let Some(id) = session_id(request.headers()) {
        state.sessions.remove(&id);
    }
    let secure = super::transport::is_secure(&request);
    let mut response = HttpResponse::NoContent().finish();
    for (name, http_only) in [(COOKIE, true), (CSRF_COOKIE, false)] {
        let mut gone = cookie(name, String::new(), http_only, secure);
        gone.make_removal();
        let _ = response.add_cookie(&gone);
    }
    response
}

fn cookie(name: &'static str, value: String, http_only: bool, secure: bool) -> Cookie<'static> {
    Cookie::build(name, value)
        .path("/")
        .http_only(http_only)
        .same_site(SameSite::Strict)
        .secure(secure)
        .finish()
}

fn keystone_refusal(error: KeystoneError) -> ApiError {
    match error {
        KeystoneError::Invalid => refused(
            StatusCode::UNAUTHORIZED,
            "Keystone refused the login: check the user, password, project and domain",
        ),
        KeystoneError::Unavailable(reason) => {
            log::warn!("keystone cannot log a user in: {reason}");
            refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "the authentication service is unavailable; try again later",
            )
        }
    }
}

/// What an open event stream checks again: that its session still stands, and that its
/// Keystone token is still valid.
#[derive(Clone)]
pub enum Recheck {
    Session(String),
    Token(String),
}

impl Recheck {
    /// What to check again for the stream `request` opens (nothing for the admin token sent
    /// as a header, or an open server).
    pub fn of(request: &HttpRequest, state: &AppState) -> Option<Recheck> {
        // The token the access check took: the same one is checked again.
        let header_token = super::credentials::tokens_in(request.headers())
            .next()
            .map(str::to_owned);
        match header_token {
            Some(token) if state.keystone.is_some() => Some(Recheck::Token(token)),
            Some(_) => None,
            None => session_id(request.headers()).map(Recheck::Session),
        }
    }

    /// Whether the stream may go on: false once its session ended or its token is refused
    /// (a Keystone that cannot be asked ends nothing).
    pub async fn still_allowed(&self, state: &AppState) -> bool {
        let token = match self {
            Recheck::Session(id) => match state.sessions.get(id) {
                None => return false,
                Some(Session {
                    credential: Credential::Keystone(token),
                    ..
                }) => token,
                Some(_) => return true,
            },
            Recheck::Token(token) => token.clone(),
        };
        match &state.keystone {
            Some(keystone) => {
                !matches!(keystone.validate(&token).await, Err(KeystoneError::Invalid))
            }
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session {
            credential: Credential::AdminToken,
            csrf: "c".repeat(32),
            user: "admin".to_owned(),
            roles: vec![],
            can_write: true,
            until: Instant::now() + Duration::from_secs(60),
        }
    }

    #[test]
    fn sessions_are_found_by_id_until_removed() {
        let store = SessionStore::default();
        let id = store.create(session()).unwrap();
        assert_eq!(id.len(), 64);
        assert!(store.get(&id).is_some());
        assert!(store.get("nope").is_none());
        assert!(store.remove(&id));
        assert!(store.get(&id).is_none());
    }

    #[test]
    fn the_cookie_and_the_csrf_header_are_read() {
        let mut headers = actix_web::http::header::HeaderMap::new();
        headers.insert(
            actix_web::http::header::COOKIE,
            "other=1; ringmaster_session=abc; ringmaster_csrf=x"
                .parse()
                .unwrap(),
        );
        assert_eq!(session_id(&headers).as_deref(), Some("abc"));
        let session = session();
        assert!(!csrf_matches(&headers, &session));
        headers.insert(
            actix_web::http::header::HeaderName::from_static(CSRF_HEADER),
            session.csrf.parse().unwrap(),
        );
        assert!(csrf_matches(&headers, &session));
    }
}
