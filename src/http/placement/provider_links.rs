//! `/placement/resource_providers/{uuid}/traits` (1.6) and `/aggregates` (1.1; generation
//! from 1.19): read and replace a provider's traits and aggregates.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::common::{invalid, parse_object, path_provider};
use super::error::PlacementError;
use super::middleware::{python_repr, require_json, version_of};
use crate::db;
use crate::db::inventories::InventoryError;
use crate::http::AppState;

fn require(request: &HttpRequest, minor: u16) -> Result<(), PlacementError> {
    if version_of(request).at_least(1, minor) {
        Ok(())
    } else {
        Err(PlacementError::not_found(
            "The resource could not be found.",
        ))
    }
}

fn conflict_or(error: InventoryError) -> PlacementError {
    match error {
        InventoryError::GenerationConflict => PlacementError::conflict(
            "Resource provider's generation already changed. Please update the generation and try again.",
        )
        .with_code("placement.concurrent_update"),
        InventoryError::UnknownClass(message) => PlacementError::bad_request(message),
        InventoryError::InUse { .. } => PlacementError::conflict(error.to_string()),
        InventoryError::Db(db) => db.into(),
    }
}

fn generation_field(object: &Map<String, Value>) -> Result<i64, PlacementError> {
    let value = object
        .get("resource_provider_generation")
        .ok_or_else(|| invalid("'resource_provider_generation' is a required property"))?;
    value
        .as_i64()
        .ok_or_else(|| invalid(format!("{} is not of type 'integer'", python_repr(value))))
}

fn strings(value: &Value, field: &str) -> Result<Vec<String>, PlacementError> {
    let items = value
        .as_array()
        .ok_or_else(|| invalid(format!("{} is not of type 'array'", python_repr(value))))?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(format!("{item} is not of type 'string' in {field}")))
        })
        .collect()
}

/// Lists a provider's traits with its generation.
pub async fn list_traits(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let provider = path_provider(&state, &path).await?;
    let id = provider.id;
    let traits = db::run(&state.pool, move |conn| {
        db::provider_links::provider_traits(conn, id)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .json(json!({"resource_provider_generation": provider.generation, "traits": traits})))
}

/// Replaces a provider's traits (generation-checked).
pub async fn put_traits(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let provider = path_provider(&state, &path).await?;
    require_json(&request)?;
    let object = parse_object(&body)?;
    if let Some(key) = object
        .keys()
        .find(|key| !matches!(key.as_str(), "traits" | "resource_provider_generation"))
    {
        return Err(invalid(format!(
            "Additional properties are not allowed ('{key}' was unexpected)"
        )));
    }
    let names = strings(
        object
            .get("traits")
            .ok_or_else(|| invalid("'traits' is a required property"))?,
        "traits",
    )?;
    let generation = generation_field(&object)?;
    let id = provider.id;
    let written = names.clone();
    // One trip to the database: the names are checked inside the writing transaction.
    let new_generation = db::run(&state.pool, move |conn| {
        let missing = db::provider_links::missing_traits(conn, &written)?;
        if !missing.is_empty() {
            return Ok(Err(PlacementError::bad_request(format!(
                "No such trait(s): {}",
                missing.join(", ")
            ))));
        }
        Ok(diesel::Connection::transaction(conn, |conn| {
            db::provider_links::set_provider_traits(conn, id, Some(generation), &written)
        })
        .map_err(conflict_or))
    })
    .await??;
    let mut sorted = names;
    sorted.sort();
    sorted.dedup();
    Ok(HttpResponse::Ok()
        .json(json!({"resource_provider_generation": new_generation, "traits": sorted})))
}

/// Removes every trait of a provider.
pub async fn delete_traits(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let provider = path_provider(&state, &path).await?;
    let id = provider.id;
    db::run(&state.pool, move |conn| {
        Ok(diesel::Connection::transaction(conn, |conn| {
            db::provider_links::set_provider_traits(conn, id, None, &[])
        }))
    })
    .await?
    .map_err(conflict_or)?;
    Ok(HttpResponse::NoContent().finish())
}

fn aggregates_body(aggregates: &[Uuid], generation: i64, with_generation: bool) -> Value {
    if with_generation {
        json!({"aggregates": aggregates, "resource_provider_generation": generation})
    } else {
        json!({"aggregates": aggregates})
    }
}

/// Lists a provider's aggregates (with its generation from 1.19).
pub async fn list_aggregates(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 1)?;
    let provider = path_provider(&state, &path).await?;
    let id = provider.id;
    let aggregates = db::run(&state.pool, move |conn| {
        db::provider_links::provider_aggregates(conn, id)
    })
    .await?;
    Ok(HttpResponse::Ok().json(aggregates_body(
        &aggregates,
        provider.generation,
        version_of(&request).at_least(1, 19),
    )))
}

/// Replaces a provider's aggregates: a list of uuids before 1.19, then
/// `{aggregates, resource_provider_generation}` (generation-checked).
pub async fn put_aggregates(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 1)?;
    let provider = path_provider(&state, &path).await?;
    let with_generation = version_of(&request).at_least(1, 19);
    require_json(&request)?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|error| PlacementError::bad_request(format!("Malformed JSON: {error}")))?;
    let (list, generation) = if with_generation {
        let object = value
            .as_object()
            .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(&value))))?;
        if let Some(key) = object
            .keys()
            .find(|key| !matches!(key.as_str(), "aggregates" | "resource_provider_generation"))
        {
            return Err(invalid(format!(
                "Additional properties are not allowed ('{key}' was unexpected)"
            )));
        }
        let list = object
            .get("aggregates")
            .ok_or_else(|| invalid("'aggregates' is a required property"))?
            .clone();
        (list, Some(generation_field(object)?))
    } else {
        (value, None)
    };
    let texts = strings(&list, "aggregates")?;
    let mut uuids = Vec::with_capacity(texts.len());
    for text in &texts {
        uuids
            .push(Uuid::parse_str(text).map_err(|_| invalid(format!("'{text}' is not a 'uuid'")))?);
    }
    let mut unique: Vec<Uuid> = Vec::with_capacity(uuids.len());
    for uuid in &uuids {
        if !unique.contains(uuid) {
            unique.push(*uuid);
        }
    }
    if unique.len() != uuids.len() {
        return Err(invalid(format!("{list} has non-unique elements")));
    }
    let id = provider.id;
    let written = unique.clone();
    let new_generation = db::run(&state.pool, move |conn| {
        Ok(diesel::Connection::transaction(conn, |conn| {
            db::provider_links::set_provider_aggregates(conn, id, generation, &written)
        }))
    })
    .await?
    .map_err(conflict_or)?;
    Ok(HttpResponse::Ok().json(aggregates_body(&unique, new_generation, with_generation)))
}
