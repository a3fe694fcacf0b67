//! Who calls the Compute API and what Nova's default policy lets them do. Without Keystone, as
//! Nova's `noauth2`: the token is `user[:project]` (the project is the user's name without
//! one), user `admin` is an admin and any other user a `member` (and `reader`) of its project,
//! `X-Roles` replaces the roles; with an admin token configured, only that token is taken and
//! it is an admin. With Keystone, the token's user, project and roles, and nothing the caller
//! says of itself.
//!
//! The rules are Nova's defaults: what belongs to a project is read by its `reader`s and
//! changed by its `member`s (`admin` implies `member`, which implies `reader`, as Keystone's
//! default implied roles have it); an admin reads and changes any project's; a role Nova does
//! not know grants nothing.

use actix_web::dev::ServiceRequest;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};

use super::error::ComputeError;
use crate::http::credentials::AdminTokenConfig;

/// The caller of one Compute request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user_id: String,
    pub project_id: String,
    pub roles: Vec<String>,
}

impl Caller {
    fn has_role(&self, wanted: &str) -> bool {
        self.roles
            .iter()
            .any(|role| role.eq_ignore_ascii_case(wanted))
    }

    /// Nova's `ADMIN`: the `admin` role.
    pub fn is_admin(&self) -> bool {
        self.has_role("admin")
    }

    /// Holds `wanted` or a role that implies it (`admin` → `member` → `reader`).
    fn holds(&self, wanted: &str) -> bool {
        let implying: &[&str] = match wanted {
            "reader" => &["reader", "member", "admin"],
            "member" => &["member", "admin"],
            other => return self.has_role(other),
        };
        implying.iter().any(|role| self.has_role(role))
    }

    /// Is an admin or a caller of `project` with any role: may learn what `project` holds
    /// exists (to anyone else, as to Nova's project-scoped queries, it does not).
    pub fn sees(&self, project: &str) -> bool {
        self.is_admin() || self.project_id == project
    }

    /// May read what belongs to `project` (Nova's `PROJECT_READER_OR_ADMIN`): an admin, or a
    /// reader of that project.
    pub fn may_read(&self, project: &str) -> bool {
        self.is_admin() || (self.project_id == project && self.holds("reader"))
    }

    /// May change what belongs to `project` (`PROJECT_MEMBER_OR_ADMIN`): an admin, or a
    /// member of that project.
    pub fn may_write(&self, project: &str) -> bool {
        self.is_admin() || (self.project_id == project && self.holds("member"))
    }

    /// Refuses a caller that may not read its own project's: Nova's 403 naming `rule`.
    pub fn require_reader(&self, rule: &str) -> Result<(), ComputeError> {
        allowed_or(self.may_read(&self.project_id), rule)
    }

    /// Refuses a caller that may not change its own project's: Nova's 403 naming `rule`.
    pub fn require_member(&self, rule: &str) -> Result<(), ComputeError> {
        allowed_or(self.may_write(&self.project_id), rule)
    }

    /// Refuses a non-admin: Nova's 403 naming the rule.
    pub fn require_admin(&self, rule: &str) -> Result<(), ComputeError> {
        allowed_or(self.is_admin(), rule)
    }
}

/// `Ok` when `allowed`, else Nova's 403 naming `rule`.
fn allowed_or(allowed: bool, rule: &str) -> Result<(), ComputeError> {
    if allowed {
        Ok(())
    } else {
        Err(ComputeError::policy(rule))
    }
}

impl FromRequest for Caller {
    type Error = ComputeError;
    type Future = std::future::Ready<Result<Caller, ComputeError>>;

    fn from_request(request: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(
            request
                .extensions()
                .get::<Caller>()
                .cloned()
                .ok_or_else(unauthorized),
        )
    }
}

fn header<'a>(request: &'a ServiceRequest, name: &str) -> Option<&'a str> {
    request
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .filter(|value| !value.is_empty())
}

pub fn unauthorized() -> ComputeError {
    ComputeError::new(
        StatusCode::UNAUTHORIZED,
        "The request you have made requires authentication.",
    )
}

/// The caller of `request`: 401 without a valid token, 503 when Keystone cannot be asked.
pub async fn authenticate(request: &ServiceRequest) -> Result<Caller, ComputeError> {
    let token = header(request, "x-auth-token").ok_or_else(unauthorized)?;
    let state = request.app_data::<web::Data<crate::http::AppState>>();
    if let Some(keystone) = state.and_then(|state| state.keystone.clone()) {
        return match keystone.validate(token).await {
            Ok(identity) => Ok(Caller {
                user_id: identity.user_id,
                project_id: identity.project_id,
                roles: identity.roles,
            }),
            Err(crate::keystone::KeystoneError::Invalid) => Err(unauthorized()),
            Err(crate::keystone::KeystoneError::Unavailable(reason)) => {
                log::warn!("keystone cannot validate a token: {reason}");
                Err(ComputeError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The authentication service is unavailable; try again later.",
                ))
            }
        };
    }
    let configured = request
        .app_data::<web::Data<AdminTokenConfig>>()
        .and_then(|config| config.0.clone());
    if let Some(expected) = configured {
        return if expected.matches(token) {
            Ok(Caller {
                user_id: "admin".to_owned(),
                project_id: "admin".to_owned(),
                roles: vec!["admin".to_owned()],
            })
        } else {
            Err(unauthorized())
        };
    }
    // noauth2 reads a token as Placement's does (`user[:project]`, `X-Roles`).
    let parsed = crate::http::placement::auth::Caller::from_token(
        token,
        header(request, "x-roles"),
        None,
        None,
    );
    let user = token.split_once(':').map_or(token, |(user, _)| user);
    let roles = if header(request, "x-roles").is_none() && parsed.roles.is_empty() {
        vec!["member".to_owned(), "reader".to_owned()]
    } else {
        parsed.roles
    };
    Ok(Caller {
        user_id: user.to_owned(),
        project_id: parsed.project_id,
        roles,
    })
}
