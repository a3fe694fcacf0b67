//! A flavor's extra specs (`/flavors/{id}/os-extra_specs`, validated as Nova validates them
//! from 2.86) and its access list (`/flavors/{id}/os-flavor-access` and the
//! `addTenantAccess`/`removeTenantAccess` actions).

use std::collections::BTreeMap;

use actix_web::{HttpResponse, web};
use serde_json::{Map, Value, json};

use super::auth::Caller;
use super::common::{self, Version};
use super::error::ComputeError;
use super::flavors::visible_flavor;
use crate::db::flavors::FlavorError;
use crate::domain::compute::extra_specs;

/// Reads specs as Nova's schema takes them (string or number values, keys of its pattern),
/// validating them from 2.86.
fn specs(
    object: Map<String, Value>,
    version: Version,
) -> Result<BTreeMap<String, String>, ComputeError> {
    let mut specs = BTreeMap::new();
    for (key, value) in object {
        extra_specs::check_key(&key).map_err(ComputeError::bad_request)?;
        let value = match value {
            Value::String(text) => text,
            Value::Number(number) => number.to_string(),
            other => {
                return Err(ComputeError::bad_request(format!(
                    "Invalid input for field/attribute {key}. Value: {other}. {other} is not of \
                     type 'string', 'number'"
                )));
            }
        };
        extra_specs::check_value_length(&value).map_err(ComputeError::bad_request)?;
        if version.at_least(86) {
            extra_specs::validate(&key, &value).map_err(ComputeError::bad_request)?;
        }
        specs.insert(key, value);
    }
    Ok(specs)
}

/// `GET /flavors/{id}/os-extra_specs`.
pub async fn list_specs(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    let flavor = visible_flavor(&state, &caller, path.into_inner()).await?;
    Ok(HttpResponse::Ok().json(json!({"extra_specs": flavor.extra_specs})))
}

/// `POST /flavors/{id}/os-extra_specs` (admin): adds or replaces the specs given.
pub async fn create_specs(
    state: web::Data<AppState>,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-flavor-extra-specs:create")?;
    let body = common::object(&body)?;
    common::only(&body, &["extra_specs"], "body")?;
    let given = specs(common::member(body, "extra_specs")?, version)?;
    let flavorid = path.into_inner();
    service::flavors::set_specs(&state.pool, flavorid, given.clone()).await?;
    Ok(HttpResponse::Ok().json(json!({"extra_specs": given})))
}

/// `GET /flavors/{id}/os-extra_specs/{key}`.
pub async fn show_spec(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ComputeError> {
    let (flavorid, key) = path.into_inner();
    let flavor = visible_flavor(&state, &caller, flavorid.clone()).await?;
    match flavor.extra_specs.get(&key) {
        Some(value) => Ok(HttpResponse::Ok().json(json!({ key: value }))),
        None => Err(FlavorError::SpecNotFound(flavorid, key).into()),
    }
}

/// `PUT /flavors/{id}/os-extra_specs/{key}` (admin): the body is `{key: value}`.
pub async fn update_spec(
    state: web::Data<AppState>,
    caller: Caller,
    version: Version,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-flavor-extra-specs:update")?;
    let (flavorid, key) = path.into_inner();
    let body = common::object(&body)?;
    if body.len() != 1 {
        return Err(ComputeError::bad_request(
            "Invalid input for field/attribute body. The body must have exactly one property",
        ));
    }
    let given = specs(body, version)?;
    if !given.contains_key(&key) {
        return Err(ComputeError::bad_request("Request body and URI mismatch"));
    }
    service::flavors::set_specs(&state.pool, flavorid, given.clone()).await?;
    Ok(HttpResponse::Ok().json(given))
}

/// `DELETE /flavors/{id}/os-extra_specs/{key}` (admin).
pub async fn delete_spec(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-flavor-extra-specs:delete")?;
    let (flavorid, key) = path.into_inner();
    service::flavors::delete_spec(&state.pool, flavorid, key).await?;
    Ok(HttpResponse::Ok().finish())
}

fn access_view(flavorid: &str, projects: Vec<String>) -> Value {
    json!({"flavor_access": projects.into_iter()
        .map(|project| json!({"flavor_id": flavorid, "tenant_id": project}))
        .collect::<Vec<_>>()})
}

/// `GET /flavors/{id}/os-flavor-access` (admin): 404 for a public flavor, as Nova.
pub async fn list_access(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-flavor-access")?;
    let flavorid = path.into_inner();
    let projects =
        service::flavors::access(&state.pool, flavorid.clone(), AccessChange::Read).await?;
    match projects {
        Some(projects) => Ok(HttpResponse::Ok().json(access_view(&flavorid, projects))),
        None => Err(ComputeError::not_found(
            "Access list not available for public flavors.",
        )),
    }
}

/// `POST /flavors/{id}/action`: `addTenantAccess` or `removeTenantAccess` (admin).
pub async fn flavor_action(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    let mut body = common::object(&body)?;
    let (action, adding) = if body.contains_key("addTenantAccess") {
        ("addTenantAccess", true)
    } else if body.contains_key("removeTenantAccess") {
        ("removeTenantAccess", false)
    } else {
        return Err(ComputeError::bad_request(
            "There is no such action: the flavor actions are addTenantAccess and \
             removeTenantAccess",
        ));
    };
    let rule = if adding {
        "add_tenant_access"
    } else {
        "remove_tenant_access"
    };
    caller.require_admin(&format!("os_compute_api:os-flavor-access:{rule}"))?;
    let mut single = Map::new();
    if let Some(inner) = body.remove(action) {
        single.insert(action.to_owned(), inner);
    }
    let inner = common::member(single, action)?;
    common::only(&inner, &["tenant"], action)?;
    let project = match inner.get("tenant") {
        Some(Value::String(text)) if !text.is_empty() && text.len() <= 255 => text.clone(),
        _ => {
            return Err(ComputeError::bad_request(format!(
                "Invalid input for field/attribute {action}. 'tenant' must be a project id of \
                 1 to 255 characters"
            )));
        }
    };
    let flavorid = path.into_inner();
    let change = if adding {
        AccessChange::Add(project)
    } else {
        AccessChange::Remove(project)
    };
    let projects = service::flavors::access(&state.pool, flavorid.clone(), change).await?;
    match projects {
        Some(projects) => Ok(HttpResponse::Ok().json(access_view(&flavorid, projects))),
        None => Err(ComputeError::conflict(
            "Can not add access to a public flavor.",
        )),
    }
}

use crate::http::AppState;
use crate::service::{self, flavors::AccessChange};
