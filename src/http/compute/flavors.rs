//! `/compute/v2.1/flavors`: list, detail, show, create, update (2.55), delete, as Nova's
//! flavors and flavor-manage APIs answer them at each microversion.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value, json};

use super::auth::Caller;
use super::common::{self, Version};
use super::error::ComputeError;
use crate::db::flavors::FlavorError;
use crate::domain::compute::extra_specs;
use crate::domain::compute::flavor::{Flavor, FlavorFields, FlavorFilter, SORT_KEYS};
use crate::http::AppState;
use crate::service;

/// The short view (`GET /flavors`).
fn brief(request: &HttpRequest, version: Version, flavor: &Flavor) -> Value {
    let mut view = json!({
        "id": flavor.flavorid,
        "name": flavor.name,
        "links": common::links(request, "flavors", &flavor.flavorid),
    });
    if version.at_least(55) {
        view["description"] = json!(flavor.description);
    }
    view
}

/// The full view (`GET /flavors/detail`, show, create).
pub fn full(request: &HttpRequest, version: Version, flavor: &Flavor) -> Value {
    let mut view = json!({
        "id": flavor.flavorid,
        "name": flavor.name,
        "ram": flavor.memory_mb,
        "disk": flavor.root_gb,
        "swap": if flavor.swap == 0 { json!("") } else { json!(flavor.swap) },
        "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
        "OS-FLV-DISABLED:disabled": flavor.disabled,
        "vcpus": flavor.vcpus,
        "os-flavor-access:is_public": flavor.is_public,
        "rxtx_factor": flavor.rxtx_factor,
        "links": common::links(request, "flavors", &flavor.flavorid),
    });
    if version.at_least(55) {
        view["description"] = json!(flavor.description);
    }
    if version.at_least(61) {
        view["extra_specs"] = json!(flavor.extra_specs);
    }
    if version.at_least(75) {
        view["swap"] = json!(flavor.swap);
    }
    view
}

/// The listing's filter from its query, as Nova reads it for this caller.
fn filter(
    pairs: &[(String, String)],
    caller: &Caller,
    version: Version,
) -> Result<FlavorFilter, ComputeError> {
    if version.at_least(75) {
        common::known_parameters(
            pairs,
            &[
                "limit",
                "marker",
                "is_public",
                "minRam",
                "minDisk",
                "sort_key",
                "sort_dir",
            ],
        )?;
    }
    let (limit, marker) = common::limit_and_marker(pairs)?;
    let is_public = if caller.is_admin() {
        match common::last(pairs, "is_public") {
            None => Some(true),
            Some(text) if text.eq_ignore_ascii_case("none") => None,
            Some(text) => Some(extra_specs::bool_like(text).ok_or_else(|| {
                ComputeError::bad_request(format!("Invalid is_public filter [{text}]"))
            })?),
        }
    } else {
        Some(true)
    };
    let number = |key: &str, message: &str| -> Result<Option<i32>, ComputeError> {
        common::last(pairs, key)
            .map(|text| {
                text.trim()
                    .parse::<i32>()
                    .map_err(|_| ComputeError::bad_request(format!("{message} [{text}]")))
            })
            .transpose()
    };
    let sort_key = common::last(pairs, "sort_key").unwrap_or("flavorid");
    if !SORT_KEYS.contains(&sort_key) {
        return Err(ComputeError::bad_request(format!(
            "Invalid input for query parameters sort_key. Value: {sort_key}. '{sort_key}' is \
             not one of {SORT_KEYS:?}"
        )));
    }
    let descending = match common::last(pairs, "sort_dir").unwrap_or("asc") {
        "asc" => false,
        "desc" => true,
        other => {
            return Err(ComputeError::bad_request(format!(
                "Invalid input for query parameters sort_dir. Value: {other}. '{other}' is not \
                 one of ['asc', 'desc']"
            )));
        }
    };
    Ok(FlavorFilter {
        is_public,
        project: (!caller.is_admin()).then(|| caller.project_id.clone()),
        min_memory_mb: number("minRam", "Invalid minRam filter")?,
        min_root_gb: number("minDisk", "Invalid minDisk filter")?,
        name: None,
        marker,
        limit,
        sort_key: sort_key.to_owned(),
        descending,
    })
}

async fn listed(
    state: &AppState,
    request: &HttpRequest,
    caller: &Caller,
    version: Version,
) -> Result<(Vec<Flavor>, Option<i64>), ComputeError> {
    let pairs = common::query_pairs(request)?;
    let filter = filter(&pairs, caller, version)?;
    let limit = filter.limit;
    let flavors =
        service::flavors::list(&state.pool, filter)
            .await
            .map_err(|error| match error {
                FlavorError::NotFound(marker) => {
                    ComputeError::bad_request(format!("marker [{marker}] not found"))
                }
                other => other.into(),
            })?;
    Ok((flavors, limit))
}

fn page(request: &HttpRequest, flavors: &[Flavor], views: Vec<Value>, limit: Option<i64>) -> Value {
    let mut answer = json!({"flavors": views});
    if let (Some(limit), Some(last)) = (limit, flavors.last())
        && limit > 0
        && flavors.len() as i64 == limit
    {
        answer["flavors_links"] = common::next_link(request, "flavors", &last.flavorid, limit);
    }
    answer
}

/// `GET /flavors`.
pub async fn list_flavors(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    let (flavors, limit) = listed(&state, &request, &caller, version).await?;
    let views = flavors
        .iter()
        .map(|f| brief(&request, version, f))
        .collect();
    Ok(HttpResponse::Ok().json(page(&request, &flavors, views, limit)))
}

/// `GET /flavors/detail`.
pub async fn list_flavors_detail(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    let (flavors, limit) = listed(&state, &request, &caller, version).await?;
    let views = flavors.iter().map(|f| full(&request, version, f)).collect();
    Ok(HttpResponse::Ok().json(page(&request, &flavors, views, limit)))
}

/// Flavor `flavorid` as `caller` may see it: a private one it has no access to is 404.
pub async fn visible_flavor(
    state: &AppState,
    caller: &Caller,
    flavorid: String,
) -> Result<Flavor, ComputeError> {
    let project = (!caller.is_admin()).then(|| caller.project_id.clone());
    Ok(service::flavors::visible(&state.pool, project, flavorid).await?)
}

/// `GET /flavors/{id}`.
pub async fn show_flavor(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    let flavor = visible_flavor(&state, &caller, path.into_inner()).await?;
    Ok(HttpResponse::Ok().json(json!({"flavor": full(&request, version, &flavor)})))
}

fn fields(flavor: &Map<String, Value>) -> FlavorFields {
    FlavorFields {
        name: common::scalar(flavor, "name"),
        id: common::scalar(flavor, "id"),
        ram: common::scalar(flavor, "ram"),
        vcpus: common::scalar(flavor, "vcpus"),
        disk: common::scalar(flavor, "disk"),
        ephemeral: common::scalar(flavor, "OS-FLV-EXT-DATA:ephemeral"),
        swap: common::scalar(flavor, "swap"),
        rxtx_factor: common::scalar(flavor, "rxtx_factor"),
        is_public: common::scalar(flavor, "os-flavor-access:is_public"),
        description: common::scalar(flavor, "description"),
    }
}

/// `POST /flavors` (admin): 200 with the flavor, as Nova answers.
pub async fn create_flavor(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-flavor-manage:create")?;
    let flavor = common::member(common::object(&body)?, "flavor")?;
    let mut allowed = vec![
        "name",
        "id",
        "ram",
        "vcpus",
        "disk",
        "OS-FLV-EXT-DATA:ephemeral",
        "swap",
        "rxtx_factor",
        "os-flavor-access:is_public",
    ];
    if version.at_least(55) {
        allowed.push("description");
    }
    common::only(&flavor, &allowed, "flavor")?;
    for required in ["name", "ram", "vcpus", "disk"] {
        if !flavor.contains_key(required) {
            return Err(ComputeError::bad_request(format!(
                "Invalid input for field/attribute flavor. Value: {}. '{required}' is a \
                 required property",
                Value::Object(flavor.clone())
            )));
        }
    }
    let new = fields(&flavor)
        .check(version.at_least(55))
        .map_err(ComputeError::bad_request)?;
    let now = chrono::Utc::now();
    let created =
        service::flavors::create(&state.pool, new, caller.project_id.clone(), now).await?;
    Ok(HttpResponse::Ok().json(json!({"flavor": full(&request, version, &created)})))
}

/// `PUT /flavors/{id}` (2.55, admin): sets the description.
pub async fn update_flavor(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    if !version.at_least(55) {
        return Err(ComputeError::new(
            actix_web::http::StatusCode::METHOD_NOT_ALLOWED,
            "The method specified is not allowed for this resource.",
        ));
    }
    caller.require_admin("os_compute_api:os-flavor-manage:update")?;
    let flavor = common::member(common::object(&body)?, "flavor")?;
    common::only(&flavor, &["description"], "flavor")?;
    let description = match flavor.get("description") {
        Some(Value::Null) => None,
        Some(Value::String(text)) if text.chars().count() <= 65535 => Some(text.clone()),
        Some(other) => {
            return Err(ComputeError::bad_request(format!(
                "Invalid input for field/attribute description. Value: {other}. must be a \
                 string of at most 65535 characters or null"
            )));
        }
        None => {
            return Err(ComputeError::bad_request(
                "Invalid input for field/attribute flavor. 'description' is a required property",
            ));
        }
    };
    let flavorid = path.into_inner();
    let now = chrono::Utc::now();
    let updated = service::flavors::describe(&state.pool, flavorid, description, now).await?;
    Ok(HttpResponse::Ok().json(json!({"flavor": full(&request, version, &updated)})))
}

/// `DELETE /flavors/{id}` (admin): 202. Servers keep the flavor they were booted with.
pub async fn delete_flavor(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-flavor-manage:delete")?;
    let flavorid = path.into_inner();
    service::flavors::delete(&state.pool, flavorid).await?;
    Ok(HttpResponse::Accepted().finish())
}
