//! `/placement/resource_classes` and `/placement/traits`: the standard names and custom
//! `CUSTOM_*` ones, with Placement's microversion gates (resource classes 1.2, PUT 1.7,
//! traits 1.6) and answers.

use super::views::{ResourceClass, ResourceClasses, Traits};
use actix_web::http::header::LOCATION;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::error::PlacementError;
use super::middleware::{python_repr, require_json, version_of};
use crate::db;
use crate::db::placement::names::{NameDelete, NameRow};
use crate::http::AppState;

fn custom_name_ok(name: &str) -> bool {
    crate::domain::placement::is_custom_name(name) && name.len() <= 255
}

fn require(request: &HttpRequest, minor: u16) -> Result<(), PlacementError> {
    if version_of(request).at_least(1, minor) {
        Ok(())
    } else {
        Err(PlacementError::not_found(
            "The resource could not be found.",
        ))
    }
}

/// Where Placement is mounted: links and locations carry it, as upstream's do.
const PREFIX: &str = "/placement";

/// Validates a `{"name": "CUSTOM_…"}` body as Placement's JSON schema does; returns the name.
fn custom_name_body(body: &[u8]) -> Result<String, PlacementError> {
    let invalid =
        |why: String| PlacementError::bad_request(format!("JSON does not validate: {why}"));
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|error| PlacementError::bad_request(format!("Malformed JSON: {error}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(&value))))?;
    if let Some(extra) = object.keys().find(|key| *key != "name") {
        return Err(invalid(format!(
            "Additional properties are not allowed ('{extra}' was unexpected)"
        )));
    }
    let name = object
        .get("name")
        .ok_or_else(|| invalid("'name' is a required property".to_owned()))?;
    let name = name
        .as_str()
        .ok_or_else(|| invalid(format!("{} is not of type 'string'", python_repr(name))))?;
    if name.len() > 255 {
        return Err(invalid(format!(
            "Failed validating 'maxLength': '{name}' is too long"
        )));
    }
    if !custom_name_ok(name) {
        return Err(invalid(format!(
            "'{name}' does not match '^CUSTOM\\_[A-Z0-9_]+$'"
        )));
    }
    Ok(name.to_owned())
}

/// Lists every resource class (1.2+).
pub async fn list_resource_classes(
    request: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 2)?;
    let classes = db::run(&state.pool, db::placement::names::list_resource_classes).await?;
    Ok(HttpResponse::Ok().json(ResourceClasses {
        resource_classes: classes
            .iter()
            .map(|class| ResourceClass::named(&class.name))
            .collect(),
    }))
}

/// Body of `POST /resource_classes`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateResourceClassRequest {
    pub name: String,
}

/// Creates a custom resource class (1.2+): 201 with its location.
pub async fn create_resource_class(
    request: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 2)?;
    require_json(&request)?;
    let parsed = CreateResourceClassRequest {
        name: custom_name_body(&body)?,
    };
    let now = chrono::Utc::now();
    let name = parsed.name.clone();
    let created = db::run(&state.pool, move |conn| {
        db::placement::names::create_resource_class(conn, &name, now)
    })
    .await?;
    if !created {
        return Err(PlacementError::conflict(format!(
            "Conflicting resource class already exists: {}",
            parsed.name
        )));
    }
    Ok(HttpResponse::Created()
        .insert_header((
            LOCATION,
            format!("{PREFIX}/resource_classes/{}", parsed.name),
        ))
        .finish())
}

/// Shows one resource class (1.2+).
pub async fn show_resource_class(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 2)?;
    let name = path.into_inner();
    match find_name(&state, &name, db::placement::names::find_resource_class).await? {
        Some(class) => Ok(HttpResponse::Ok().json(ResourceClass::named(&class.name))),
        None => Err(PlacementError::not_found(format!(
            "No such resource class {name}."
        ))),
    }
}

/// Creates a custom resource class if missing (1.7+): 201 created, 204 already there.
/// Before 1.7 (from 1.2) it renames a custom class: `{"name": "CUSTOM_NEW"}`.
pub async fn put_resource_class(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 2)?;
    let name = path.into_inner();
    if !version_of(&request).at_least(1, 7) {
        return rename_resource_class(&request, &state, name, &body).await;
    }
    if name.len() > 255 {
        return Err(PlacementError::bad_request(format!(
            "JSON does not validate: Failed validating 'maxLength': '{name}' is too long"
        )));
    }
    if !custom_name_ok(&name) {
        return Err(PlacementError::bad_request(format!(
            "Failed validating 'pattern': {name:?} does not match '^CUSTOM\\\\_[A-Z0-9_]+$'"
        )));
    }
    let now = chrono::Utc::now();
    let created_name = name.clone();
    let created = db::run(&state.pool, move |conn| {
        db::placement::names::create_resource_class(conn, &created_name, now)
    })
    .await?;
    let mut response = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::NoContent()
    };
    Ok(response
        .insert_header((LOCATION, format!("{PREFIX}/resource_classes/{name}")))
        .finish())
}

async fn rename_resource_class(
    request: &HttpRequest,
    state: &AppState,
    name: String,
    body: &[u8],
) -> Result<HttpResponse, PlacementError> {
    require_json(request)?;
    let new_name = custom_name_body(body)?;
    if !name.starts_with("CUSTOM_") {
        return Err(PlacementError::bad_request(format!(
            "Cannot update standard resource class {name}"
        )));
    }
    let (lookup, target) = (name.clone(), new_name.clone());
    let renamed = db::run(&state.pool, move |conn| {
        let Some(class) = db::placement::names::find_resource_class(conn, &lookup)? else {
            return Ok(None);
        };
        db::placement::names::rename_resource_class(conn, class.id, &target).map(Some)
    })
    .await;
    match renamed {
        Ok(Some(())) => Ok(HttpResponse::Ok().json(ResourceClass::named(&new_name))),
        Ok(None) => Err(PlacementError::not_found(format!(
            "No such resource class {name}."
        ))),
        Err(db::DbError::UniqueViolation { .. }) => Err(PlacementError::conflict(format!(
            "Resource class already exists: {new_name}"
        ))),
        Err(other) => Err(other.into()),
    }
}

/// Deletes a custom resource class (1.2+): never a standard one, never one in use.
pub async fn delete_resource_class(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 2)?;
    let name = path.into_inner();
    let refusals = Refusals {
        missing: format!("No such resource class {name}."),
        standard: format!(
            "Error in delete resource class: Cannot delete standard resource class {name}: "
        ),
        in_use: format!(
            "Error in delete resource class: Cannot delete resource class {name}. Class is in use in inventory."
        ),
    };
    delete_name(
        &state,
        name,
        db::placement::names::delete_resource_class,
        refusals,
    )
    .await
}

/// Looks resource class or trait `name` up with `find`.
async fn find_name(
    state: &AppState,
    name: &str,
    find: fn(&mut db::Connection, &str) -> Result<Option<NameRow>, db::DbError>,
) -> Result<Option<NameRow>, PlacementError> {
    let name = name.to_owned();
    Ok(db::run(&state.pool, move |conn| find(conn, &name)).await?)
}

/// Placement's words for a refused delete of a resource class or a trait.
struct Refusals {
    missing: String,
    standard: String,
    in_use: String,
}

/// Deletes resource class or trait `name` with `delete` (one guarded statement): 204, or 404,
/// 400 (a standard one) or 409 (in use) in Placement's words.
async fn delete_name(
    state: &AppState,
    name: String,
    delete: fn(&mut db::Connection, &str) -> Result<NameDelete, db::DbError>,
    refusals: Refusals,
) -> Result<HttpResponse, PlacementError> {
    let outcome = db::run(&state.pool, move |conn| delete(conn, &name)).await?;
    match outcome {
        NameDelete::Deleted => Ok(HttpResponse::NoContent().finish()),
        NameDelete::NoSuchName => Err(PlacementError::not_found(refusals.missing)),
        NameDelete::Standard => Err(PlacementError::bad_request(refusals.standard)),
        NameDelete::InUse => Err(PlacementError::conflict(refusals.in_use)),
    }
}

/// Query of `GET /traits`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraitsQuery {
    pub name: Option<String>,
    pub associated: Option<String>,
}

/// Lists traits (1.6+), filtered by `name=startswith:P` or `name=in:A,B`, and `associated`.
pub async fn list_traits(
    request: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<TraitsQuery>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let query = query.into_inner();
    let (prefix, names) = match query.name.as_deref() {
        None => (None, None),
        Some(filter) => match (
            filter.strip_prefix("startswith:"),
            filter.strip_prefix("in:"),
        ) {
            (Some(prefix), _) => (Some(prefix.to_owned()), None),
            (_, Some(list)) => (
                None,
                Some(list.split(',').map(str::to_owned).collect::<Vec<_>>()),
            ),
            _ => {
                return Err(PlacementError::bad_request(format!(
                    "Badly formatted name parameter. Expected name query string parameter in form: \
                     ?name=[in|startswith]:[name1,name2|prefix]. Got: \"{filter}\""
                )));
            }
        },
    };
    let associated = match query.associated.as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => {
            return Err(PlacementError::bad_request(
                "The query parameter \"associated\" only accepts \"true\" or \"false\"",
            ));
        }
    };
    let traits = db::run(&state.pool, move |conn| {
        db::placement::names::list_traits(conn, prefix.as_deref(), names.as_deref(), associated)
    })
    .await?;
    Ok(HttpResponse::Ok().json(Traits { traits: &traits }))
}

/// 204 when the trait exists (1.6+).
pub async fn show_trait(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let name = path.into_inner();
    match find_name(&state, &name, db::placement::names::find_trait).await? {
        Some(_) => Ok(HttpResponse::NoContent().finish()),
        None => Err(PlacementError::not_found(format!(
            "No such trait(s): {name}."
        ))),
    }
}

/// Creates a custom trait if missing (1.6+): 201 created, 204 already there.
pub async fn put_trait(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let name = path.into_inner();
    if !custom_name_ok(&name) {
        return Err(PlacementError::bad_request(format!(
            "The trait is invalid. A valid trait must be no longer than 255 characters, start with \
             the prefix \"CUSTOM_\" and use following characters: \"A\"-\"Z\", \"0\"-\"9\" and \"_\": {name}"
        )));
    }
    let now = chrono::Utc::now();
    let created_name = name.clone();
    let created = db::run(&state.pool, move |conn| {
        db::placement::names::create_trait(conn, &created_name, now)
    })
    .await?;
    let location = (LOCATION, format!("{PREFIX}/traits/{name}"));
    if created {
        Ok(HttpResponse::Created().insert_header(location).finish())
    } else {
        Ok(HttpResponse::NoContent().insert_header(location).finish())
    }
}

/// Deletes a custom trait (1.6+): never a standard one, never one a provider has.
pub async fn delete_trait(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let name = path.into_inner();
    let refusals = Refusals {
        missing: format!("No such trait(s): {name}."),
        standard: format!("Cannot delete standard trait {name}."),
        in_use: format!("The trait {name} is in use by a resource provider."),
    };
    delete_name(&state, name, db::placement::names::delete_trait, refusals).await
}
