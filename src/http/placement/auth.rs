//! Who is calling and what they may do, as Placement's `noauth2` middleware and its policy
//! (`enforce_scope=true`) decide it under the configured profile.
//!
//! The token is `user[:project]`; user `admin` has the role `admin`; `X-Roles` replaces the
//! roles and `X-Project-Id` the project. Every rule is scoped to projects, so a system-scoped
//! request (`OpenStack-System-Scope`) is refused. Legacy (Placement's default): everything
//! needs `admin` or `service`, except `GET /usages`, which a `reader` of the project asked about
//! may also see. Secure RBAC: the same, but the reshaper is for `service` alone. Open: any
//! caller with a token. With an admin token configured, only that token is accepted, and it is
//! an admin.

use actix_web::dev::ServiceRequest;
use actix_web::http::StatusCode;
use actix_web::web;

use super::error::PlacementError;
use crate::domain::placement::PolicyProfile;
use crate::http::credentials::AdminTokenConfig;

/// The caller of one request, from its headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub roles: Vec<String>,
    pub project_id: String,
    pub system_scope: bool,
}

impl Caller {
    /// Reads the caller from a token and the optional role, project and scope headers.
    pub fn from_token(
        token: &str,
        roles: Option<&str>,
        project: Option<&str>,
        system_scope: Option<&str>,
    ) -> Caller {
        let (user, project_from_token) = match token.split_once(':') {
            Some((user, project)) if !project.is_empty() => (user, project),
            Some((user, _)) => (user, user),
            None => (token, token),
        };
        let roles = match roles {
            Some(roles) => roles
                .split(',')
                .map(|role| role.trim().to_owned())
                .filter(|role| !role.is_empty())
                .collect(),
            None if user == "admin" => vec!["admin".to_owned()],
            None => Vec::new(),
        };
        Caller {
            roles,
            project_id: project.unwrap_or(project_from_token).to_owned(),
            system_scope: system_scope.is_some_and(|scope| !scope.is_empty()),
        }
    }

    /// Says whether the caller has role `wanted`.
    pub fn has_role(&self, wanted: &str) -> bool {
        self.roles
            .iter()
            .any(|role| role.eq_ignore_ascii_case(wanted))
    }

    /// `admin_or_service_api`, the rule of nearly every Placement call.
    pub fn is_admin_or_service(&self) -> bool {
        !self.system_scope && (self.has_role("admin") || self.has_role("service"))
    }

    /// `admin_or_project_reader_or_service_api` for the project of `target`.
    pub fn may_read_project(&self, target: Option<&str>) -> bool {
        self.is_admin_or_service()
            || (!self.system_scope
                && self.has_role("reader")
                && target.is_some_and(|project| project == self.project_id))
    }
}

fn header<'a>(request: &'a ServiceRequest, name: &str) -> Option<&'a str> {
    request
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
}

fn unauthorized() -> PlacementError {
    PlacementError::new(
        StatusCode::UNAUTHORIZED,
        "The request you have made requires authentication.",
    )
}

/// 401 without a token (except on the version document), 403 when the policy refuses. With
/// Keystone, `keystone` is the caller Keystone vouched for (or why not: 401, 503), and the
/// caller's own `X-Roles` and `X-Project-Id` count for nothing.
pub fn authorize(
    request: &ServiceRequest,
    profile: PolicyProfile,
    keystone: Option<Result<Caller, PlacementError>>,
) -> Result<(), PlacementError> {
    if matches!(request.path(), "/placement" | "/placement/") {
        return Ok(());
    }
    let caller = match keystone {
        Some(vouched) => vouched?,
        None => {
            let Some(token) = header(request, "x-auth-token").filter(|token| !token.is_empty())
            else {
                return Err(unauthorized());
            };
            let configured = request
                .app_data::<web::Data<AdminTokenConfig>>()
                .and_then(|config| config.0.clone());
            if let Some(expected) = configured {
                return if expected.matches(token) {
                    Ok(())
                } else {
                    Err(unauthorized())
                };
            }
            Caller::from_token(
                token,
                header(request, "x-roles"),
                header(request, "x-project-id"),
                header(request, "openstack-system-scope"),
            )
        }
    };
    if allowed(request, profile, &caller) {
        Ok(())
    } else {
        Err(PlacementError::new(
            StatusCode::FORBIDDEN,
            "Policy does not allow this request to be performed.",
        ))
    }
}

/// The caller Keystone vouches for by the request's token: 401 without a token or with one
/// Keystone does not know, 503 when Keystone cannot be asked.
pub async fn keystone_caller(
    request: &ServiceRequest,
    keystone: &crate::keystone::Keystone,
) -> Result<Caller, PlacementError> {
    let token = header(request, "x-auth-token")
        .filter(|token| !token.is_empty())
        .ok_or_else(unauthorized)?;
    match keystone.validate(token).await {
        Ok(identity) => Ok(Caller {
            roles: identity.roles,
            project_id: identity.project_id,
            system_scope: false,
        }),
        Err(crate::keystone::KeystoneError::Invalid) => Err(unauthorized()),
        Err(crate::keystone::KeystoneError::Unavailable(reason)) => {
            log::warn!("keystone cannot validate a token: {reason}");
            Err(PlacementError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "The authentication service is unavailable; try again later.",
            ))
        }
    }
}

/// Whether the policy of `profile` lets `caller` make this request.
fn allowed(request: &ServiceRequest, profile: PolicyProfile, caller: &Caller) -> bool {
    if caller.system_scope {
        false
    } else if profile == PolicyProfile::Open {
        true
    } else if request.path() == "/placement/reshaper" && profile == PolicyProfile::SecureRbac {
        caller.has_role("service")
    } else if request.path() == "/placement/usages" {
        let project = web::Query::<Vec<(String, String)>>::from_query(request.query_string())
            .ok()
            .and_then(|pairs| {
                pairs
                    .iter()
                    .find(|(key, _)| key == "project_id")
                    .map(|(_, value)| value.clone())
            });
        caller.may_read_project(project.as_deref())
    } else {
        caller.is_admin_or_service()
    }
}

#[cfg(test)]
mod tests {
    use super::Caller;

    #[test]
    fn the_admin_user_is_an_admin_whatever_its_project() {
        assert!(Caller::from_token("admin", None, None, None).is_admin_or_service());
        assert!(Caller::from_token("admin:admin", None, None, None).is_admin_or_service());
        assert!(!Caller::from_token("user", None, None, None).is_admin_or_service());
    }

    #[test]
    fn roles_and_project_headers_replace_the_token_s() {
        let reader = Caller::from_token("user", Some("reader"), Some("p1"), None);
        assert!(!reader.is_admin_or_service());
        assert!(reader.may_read_project(Some("p1")));
        assert!(!reader.may_read_project(Some("p2")));
        assert!(!reader.may_read_project(None));
        let service = Caller::from_token("nova", Some("service"), None, None);
        assert!(service.is_admin_or_service());
    }

    #[test]
    fn system_scope_is_refused_because_every_rule_is_project_scoped() {
        let system_admin =
            Caller::from_token("user", Some("admin,member,reader"), None, Some("all"));
        assert!(!system_admin.is_admin_or_service());
        assert!(!system_admin.may_read_project(Some("user")));
    }
}
