//! `/placement/resource_providers/{uuid}/traits` (1.6) and `/aggregates` (1.1; generation
//! from 1.19): read and replace a provider's traits and aggregates.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::common::{invalid, parse_object, path_provider};
use super::error::PlacementError;
use super::middleware::{python_repr, require_json, version_of};
use super::views::{ProviderAggregates, ProviderTraits};
use crate::db;
use crate::db::placement::provider_links::{LinkWrite, provider_aggregates, provider_traits};
use crate::db::placement::providers::ProviderRow;
use crate::domain::identity::{ProviderId, ProviderUuid};
use crate::http::AppState;
use crate::service;

fn require(request: &HttpRequest, minor: u16) -> Result<(), PlacementError> {
    if version_of(request).at_least(1, minor) {
        Ok(())
    } else {
        Err(PlacementError::not_found(
            "The resource could not be found.",
        ))
    }
}

fn generation_conflict() -> PlacementError {
    PlacementError::conflict(
        "Resource provider's generation already changed. Please update the generation and try again.",
    )
    .with_code("placement.concurrent_update")
}

/// The provider of the path (from microversion 1.`minor`) with what `read` reads of it.
async fn provider_with<T: Send + 'static>(
    request: &HttpRequest,
    state: &AppState,
    path: &str,
    minor: u16,
    read: fn(&mut db::Connection, ProviderId) -> Result<T, db::DbError>,
) -> Result<(ProviderRow, T), PlacementError> {
    require(request, minor)?;
    let provider = path_provider(state, path).await?;
    let id = provider.id;
    let found = db::run(&state.pool, move |conn| read(conn, id)).await?;
    Ok((provider, found))
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
    let (provider, traits) = provider_with(&request, &state, &path, 6, provider_traits).await?;
    Ok(HttpResponse::Ok().json(ProviderTraits {
        resource_provider_generation: provider.generation,
        traits: &traits,
    }))
}

/// Replaces a provider's traits (generation-checked), checked in Placement's order: body,
/// provider, generation, trait names; one statement in the database.
pub async fn put_traits(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
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
    let provider = provider_uuid(&path)?;
    let written = names.clone();
    let outcome = db::run(&state.pool, move |conn| {
        db::placement::provider_links::replace_traits(conn, provider, generation, &written)
    })
    .await?;
    let new_generation = written_or(outcome, &path)?;
    let mut sorted = names;
    sorted.sort();
    sorted.dedup();
    Ok(HttpResponse::Ok().json(ProviderTraits {
        resource_provider_generation: new_generation,
        traits: &sorted,
    }))
}

fn no_such_provider(uuid: &str) -> PlacementError {
    PlacementError::not_found(format!("No resource provider with uuid {uuid} found"))
}

fn provider_uuid(text: &str) -> Result<ProviderUuid, PlacementError> {
    text.parse().map_err(|_| no_such_provider(text))
}

/// The new generation of a replacement, or the error Placement answers with.
fn written_or(outcome: LinkWrite, provider: &str) -> Result<i64, PlacementError> {
    match outcome {
        LinkWrite::Written(generation) => Ok(generation),
        LinkWrite::NoSuchProvider => Err(no_such_provider(provider)),
        LinkWrite::GenerationConflict => Err(generation_conflict()),
        LinkWrite::NoSuchTraits(missing) => Err(PlacementError::bad_request(format!(
            "No such trait(s): {}",
            missing.join(", ")
        ))),
    }
}

/// Removes every trait of a provider.
pub async fn delete_traits(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 6)?;
    let provider = path_provider(&state, &path).await?;
    service::placement::clear_traits(&state.pool, provider.id).await?;
    Ok(HttpResponse::NoContent().finish())
}

fn aggregates_body(
    aggregates: &[Uuid],
    generation: i64,
    with_generation: bool,
) -> ProviderAggregates<'_> {
    ProviderAggregates {
        aggregates,
        resource_provider_generation: with_generation.then_some(generation),
    }
}

/// Lists a provider's aggregates (with its generation from 1.19).
pub async fn list_aggregates(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let (provider, aggregates) =
        provider_with(&request, &state, &path, 1, provider_aggregates).await?;
    Ok(HttpResponse::Ok().json(aggregates_body(
        &aggregates,
        provider.generation,
        version_of(&request).at_least(1, 19),
    )))
}

/// Replaces a provider's aggregates: a list of uuids before 1.19, then
/// `{aggregates, resource_provider_generation}` (generation-checked, one statement). As in
/// Placement, an unknown provider is reported before a bad body.
pub async fn put_aggregates(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    require(&request, 1)?;
    let with_generation = version_of(&request).at_least(1, 19);
    require_json(&request)?;
    let (aggregates, generation) = match parse_aggregates(&body, with_generation) {
        Ok(parsed) => parsed,
        Err(bad_body) => {
            path_provider(&state, &path).await?;
            return Err(bad_body);
        }
    };
    let written = aggregates.clone();
    let new_generation = match generation {
        Some(generation) => {
            let provider = provider_uuid(&path)?;
            let outcome = db::run(&state.pool, move |conn| {
                db::placement::provider_links::replace_aggregates(
                    conn, provider, generation, &written,
                )
            })
            .await?;
            written_or(outcome, &path)?
        }
        None => {
            let id = path_provider(&state, &path).await?.id;
            service::placement::set_aggregates(&state.pool, id, written).await?
        }
    };
    Ok(HttpResponse::Ok().json(aggregates_body(
        &aggregates,
        new_generation,
        with_generation,
    )))
}

/// Reads a PUT aggregates body: the unique aggregate uuids, and the generation from 1.19.
fn parse_aggregates(
    body: &[u8],
    with_generation: bool,
) -> Result<(Vec<Uuid>, Option<i64>), PlacementError> {
    let value: Value = serde_json::from_slice(body)
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
    let uuids = texts
        .iter()
        .map(|text| Uuid::parse_str(text).map_err(|_| invalid(format!("'{text}' is not a 'uuid'"))))
        .collect::<Result<Vec<Uuid>, _>>()?;
    let unique: std::collections::HashSet<&Uuid> = uuids.iter().collect();
    if unique.len() != uuids.len() {
        return Err(invalid(format!("{list} has non-unique elements")));
    }
    Ok((uuids, generation))
}
