//! `/placement/allocations/{consumer}`, `POST /placement/allocations` (1.13),
//! `/placement/resource_providers/{uuid}/allocations` and `/usages`, and `/placement/usages`
//! (1.9): allocations replaced per consumer in one transaction that checks capacity and
//! consumer generations (1.28+).

use std::collections::BTreeMap;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::common::{invalid, parse_object, path_provider};
use super::error::PlacementError;
use super::middleware::{python_repr, require_json, version_of};
use super::views;
use crate::db;
use crate::db::placement::allocations::{AllocationError, ConsumerAllocations, GenerationCheck};
use crate::domain::identity::{ConsumerUuid, ProviderUuid};
use crate::domain::placement::Microversion;
use crate::http::AppState;
use crate::service;

/// The project and user of consumers written before 1.8 (Placement's incomplete consumer).
const INCOMPLETE: &str = "00000000-0000-0000-0000-000000000000";

/// A schema failure worded as jsonschema words it, naming the failed keyword.
fn failed(why: impl std::fmt::Display, keyword: &str) -> PlacementError {
    invalid(format!("{why}\n\nFailed validating '{keyword}' in schema"))
}

fn consumer_uuid(text: &str) -> Result<ConsumerUuid, PlacementError> {
    text.parse()
        .map_err(|_| PlacementError::bad_request(format!("Malformed consumer_uuid: {text}")))
}

fn resources(value: &Value) -> Result<BTreeMap<String, i64>, PlacementError> {
    let object = value
        .as_object()
        .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(value))))?;
    if object.is_empty() {
        return Err(failed(
            "{} does not have enough properties",
            "minProperties",
        ));
    }
    let mut out = BTreeMap::new();
    for (class, amount) in object {
        if !crate::domain::placement::is_class_or_trait_name(class) {
            return Err(failed(
                format!("'{class}' does not match any of the regexes: '^[A-Z0-9_]+$'"),
                "additionalProperties",
            ));
        }
        let amount = amount
            .as_i64()
            .ok_or_else(|| invalid(format!("{} is not of type 'integer'", python_repr(amount))))?;
        if amount < 1 {
            return Err(failed(
                format!("{amount} is less than the minimum of 1"),
                "minimum",
            ));
        }
        out.insert(class.clone(), amount);
    }
    Ok(out)
}

/// Validates 1.34's `mappings` (request group suffix → provider uuids), which Placement accepts
/// and does not keep.
fn check_mappings(mappings: &Value) -> Result<(), PlacementError> {
    let object = mappings
        .as_object()
        .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(mappings))))?;
    if object.is_empty() {
        return Err(failed(
            "{} does not have enough properties",
            "minProperties",
        ));
    }
    for providers in object.values() {
        let list = providers
            .as_array()
            .ok_or_else(|| invalid(format!("{} is not of type 'array'", python_repr(providers))))?;
        if list.is_empty() {
            return Err(failed("[] is too short", "minItems"));
        }
        for provider in list {
            let valid = provider
                .as_str()
                .is_some_and(|text| Uuid::parse_str(text).is_ok());
            if !valid {
                return Err(invalid(format!(
                    "{} is not a 'uuid'",
                    python_repr(provider)
                )));
            }
        }
    }
    Ok(())
}

/// Parses one consumer's allocation body as Placement's schema for `version` does.
///
/// From 1.12 to 1.27 `PUT` needs at least one provider; `POST` (1.13+) and `PUT` from 1.28
/// may send none, which deletes the consumer's allocations.
pub(super) fn parse_consumer(
    consumer: ConsumerUuid,
    object: &Map<String, Value>,
    version: Microversion,
    may_be_empty: bool,
) -> Result<ConsumerAllocations, PlacementError> {
    check_known_fields(object, version)?;
    if let Some(mappings) = object.get("mappings") {
        check_mappings(mappings)?;
    }
    let allocations = object
        .get("allocations")
        .ok_or_else(|| failed("'allocations' is a required property", "required"))?;
    let by_provider = if version.at_least(1, 12) {
        let empty_allowed = may_be_empty || version.at_least(1, 28);
        allocations_by_provider(allocations, empty_allowed)?
    } else {
        allocations_as_list(allocations)?
    };
    let expected_generation = generation_check(object, version)?;
    let consumer_type = if version.at_least(1, 38) {
        let kind = text_field(object, "consumer_type", version)?;
        if !crate::domain::placement::is_class_or_trait_name(&kind) {
            return Err(failed(
                format!("'{kind}' does not match '^[A-Z0-9_]+$'"),
                "pattern",
            ));
        }
        Some(kind)
    } else {
        None
    };
    Ok(ConsumerAllocations {
        consumer,
        project: text_field(object, "project_id", version)?,
        user: text_field(object, "user_id", version)?,
        expected_generation,
        consumer_type,
        allocations: by_provider,
    })
}

/// Refuses a field the schema of `version` does not have.
fn check_known_fields(
    object: &Map<String, Value>,
    version: Microversion,
) -> Result<(), PlacementError> {
    let mut known = vec!["allocations"];
    if version.at_least(1, 8) {
        known.extend(["project_id", "user_id"]);
    }
    if version.at_least(1, 28) {
        known.push("consumer_generation");
    }
    if version.at_least(1, 34) {
        known.push("mappings");
    }
    if version.at_least(1, 38) {
        known.push("consumer_type");
    }
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(failed(
            format!("Additional properties are not allowed ('{key}' was unexpected)"),
            "additionalProperties",
        )),
        None => Ok(()),
    }
}

/// From 1.12: `{provider uuid: {"resources": {class: amount}}}`.
fn allocations_by_provider(
    allocations: &Value,
    empty_allowed: bool,
) -> Result<BTreeMap<ProviderUuid, BTreeMap<String, i64>>, PlacementError> {
    let map = allocations.as_object().ok_or_else(|| {
        invalid(format!(
            "{} is not of type 'object'",
            python_repr(allocations)
        ))
    })?;
    if map.is_empty() && !empty_allowed {
        return Err(failed(
            "{} does not have enough properties",
            "minProperties",
        ));
    }
    let mut by_provider = BTreeMap::new();
    for (provider, entry) in map {
        let provider: ProviderUuid = provider
            .parse()
            .map_err(|_| invalid(format!("'{provider}' does not match any of the regexes")))?;
        let entry_resources = entry
            .get("resources")
            .ok_or_else(|| failed("'resources' is a required property", "required"))?;
        by_provider.insert(provider, resources(entry_resources)?);
    }
    Ok(by_provider)
}

/// Before 1.12: `[{"resource_provider": {"uuid": …}, "resources": {class: amount}}, …]`.
fn allocations_as_list(
    allocations: &Value,
) -> Result<BTreeMap<ProviderUuid, BTreeMap<String, i64>>, PlacementError> {
    let list = allocations.as_array().ok_or_else(|| {
        invalid(format!(
            "{} is not of type 'array'",
            python_repr(allocations)
        ))
    })?;
    if list.is_empty() {
        return Err(failed("[] is too short", "minItems"));
    }
    let mut by_provider: BTreeMap<ProviderUuid, BTreeMap<String, i64>> = BTreeMap::new();
    for entry in list {
        let provider = entry
            .get("resource_provider")
            .and_then(|rp| rp.get("uuid"))
            .and_then(Value::as_str)
            .ok_or_else(|| failed("'resource_provider' is a required property", "required"))?;
        let provider: ProviderUuid = provider
            .parse()
            .map_err(|_| invalid(format!("'{provider}' is not a 'uuid'")))?;
        let entry_resources = entry
            .get("resources")
            .ok_or_else(|| failed("'resources' is a required property", "required"))?;
        by_provider
            .entry(provider)
            .or_default()
            .extend(resources(entry_resources)?);
    }
    Ok(by_provider)
}

/// A text field (`project_id`, `user_id`, `consumer_type`): 1 to 255 characters; before 1.8
/// absent, and then Placement's incomplete consumer.
fn text_field(
    object: &Map<String, Value>,
    field: &str,
    version: Microversion,
) -> Result<String, PlacementError> {
    match object.get(field) {
        Some(Value::String(value)) if value.is_empty() => {
            Err(failed("'' is too short", "minLength"))
        }
        Some(Value::String(value)) if value.len() > 255 => {
            Err(failed(format!("'{value}' is too long"), "maxLength"))
        }
        Some(Value::String(value)) => Ok(value.clone()),
        Some(other) => Err(invalid(format!(
            "{} is not of type 'string'",
            python_repr(other)
        ))),
        None if version.at_least(1, 8) => Err(failed(
            format!("'{field}' is a required property"),
            "required",
        )),
        None => Ok(INCOMPLETE.to_owned()),
    }
}

/// From 1.28 the body says which consumer generation it expects (`null`: a new consumer).
fn generation_check(
    object: &Map<String, Value>,
    version: Microversion,
) -> Result<GenerationCheck, PlacementError> {
    if !version.at_least(1, 28) {
        return Ok(GenerationCheck::Skip);
    }
    match object.get("consumer_generation") {
        None => Err(failed(
            "'consumer_generation' is a required property",
            "required",
        )),
        Some(Value::Null) => Ok(GenerationCheck::MustBeNew),
        Some(value) => value.as_i64().map(GenerationCheck::Is).ok_or_else(|| {
            invalid(format!(
                "{} is not of type 'integer', 'null'",
                python_repr(value)
            ))
        }),
    }
}

/// Placement's wording of a refused allocation write.
pub(super) fn allocation_error(
    error: AllocationError,
    consumer: Option<ConsumerUuid>,
) -> PlacementError {
    let consumer = consumer.map(|uuid| uuid.to_string()).unwrap_or_default();
    match error {
        AllocationError::ProviderMissing(provider) => PlacementError::bad_request(format!(
            "Allocation for resource provider '{provider}' that does not exist."
        )),
        AllocationError::UnknownClass(class) => PlacementError::bad_request(format!(
            "Unable to allocate inventory for consumer {consumer}: No such resource class {class}."
        )),
        AllocationError::ConsumerGeneration { stored, sent } => {
            // "expected" is the stored generation, "got" the sent one, as Placement words it.
            let stored = stored.map_or_else(|| "null".to_owned(), |g| g.to_string());
            let sent = sent.map_or_else(|| "None".to_owned(), |g| g.to_string());
            PlacementError::conflict(format!(
                "consumer generation conflict - expected {stored} but got {sent}"
            ))
            .with_code("placement.concurrent_update")
        }
        AllocationError::ConsumerCreatedConcurrently(uuid) => PlacementError::conflict(format!(
            "Another thread concurrently created a consumer {uuid}. Please retry your update"
        ))
        .with_code("placement.concurrent_update"),
        AllocationError::NoInventory { class, provider } => PlacementError::conflict(format!(
            "Unable to allocate inventory: Inventory for '{class}' on resource provider '{provider}' invalid."
        )),
        AllocationError::Capacity { class, provider } => PlacementError::conflict(format!(
            "Unable to allocate inventory: Unable to create allocation for '{class}' on resource provider '{provider}'. The requested amount would exceed the capacity."
        )),
        AllocationError::Constraint { class, provider } => PlacementError::conflict(format!(
            "Unable to allocate inventory: Unable to create allocation for '{class}' on resource provider '{provider}'. The requested amount would violate inventory constraints."
        )),
        AllocationError::Db(db) => db.into(),
    }
}

async fn write(state: &AppState, writes: Vec<ConsumerAllocations>) -> Result<(), PlacementError> {
    let first = writes.first().map(|write| write.consumer);
    service::placement::replace_allocations(&state.pool, writes)
        .await
        .map_err(|error| allocation_error(error, first))
}

/// Replaces a consumer's allocations: 204.
pub async fn put_allocations(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let consumer = consumer_uuid(&path)?;
    require_json(&request)?;
    let object = parse_object(&body)?;
    let parsed = parse_consumer(consumer, &object, version_of(&request), false)?;
    write(&state, vec![parsed]).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Replaces the allocations of several consumers at once (1.13): 204.
pub async fn post_allocations(
    request: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    if !version.at_least(1, 13) {
        return Err(PlacementError::not_found(
            "The resource could not be found.",
        ));
    }
    require_json(&request)?;
    let object = parse_object(&body)?;
    // Placement's schema: at least one consumer.
    if object.is_empty() {
        return Err(invalid("{} does not have enough properties".to_owned()));
    }
    let mut writes = Vec::with_capacity(object.len());
    for (consumer, entry) in &object {
        let consumer: ConsumerUuid = consumer
            .parse()
            .map_err(|_| invalid(format!("'{consumer}' does not match any of the regexes")))?;
        let entry = entry
            .as_object()
            .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(entry))))?;
        writes.push(parse_consumer(consumer, entry, version, true)?);
    }
    write(&state, writes).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Shows a consumer's allocations in the shape of the microversion.
pub async fn get_allocations(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    let consumer = consumer_uuid(&path)?;
    let (rows, info) = db::run(&state.pool, move |conn| {
        Ok((
            db::placement::allocations::consumer_allocations(conn, consumer)?,
            db::placement::allocations::consumer_info(conn, consumer)?,
        ))
    })
    .await?;
    let mut body = views::ConsumerAllocations::default();
    for row in &rows {
        let held = body.allocations.entry(row.provider).or_default();
        held.generation = row.provider_generation;
        held.resources
            .insert(row.resource_class.clone(), i64::from(row.used));
    }
    if let Some(info) = info
        && !rows.is_empty()
    {
        if version.at_least(1, 12) {
            body.project_id = Some(info.project);
            body.user_id = Some(info.user);
        }
        if version.at_least(1, 28) {
            body.consumer_generation = Some(info.generation);
        }
        if version.at_least(1, 38) {
            body.consumer_type = Some(info.consumer_type.unwrap_or_else(|| "unknown".to_owned()));
        }
    }
    Ok(HttpResponse::Ok().json(body))
}

/// Removes a consumer's allocations: 204, or 404 when it has none.
pub async fn delete_allocations(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let consumer = consumer_uuid(&path)?;
    let deleted = db::run(&state.pool, move |conn| {
        db::placement::allocations::delete_consumer(conn, consumer)
    })
    .await?;
    if !deleted {
        return Err(PlacementError::not_found(format!(
            "No allocations for consumer '{consumer}'"
        )));
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Shows the allocations against a provider (1.0+), with its generation.
pub async fn provider_allocations(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let provider = path_provider(&state, &path).await?;
    let uuid = provider.uuid;
    let rows = db::run(&state.pool, move |conn| {
        db::placement::allocations::provider_allocations(conn, uuid)
    })
    .await?;
    let mut allocations: BTreeMap<ConsumerUuid, views::HeldByConsumer> = BTreeMap::new();
    for row in &rows {
        allocations
            .entry(row.consumer)
            .or_default()
            .resources
            .insert(row.resource_class.clone(), i64::from(row.used));
    }
    Ok(HttpResponse::Ok().json(views::ProviderAllocations {
        allocations,
        resource_provider_generation: provider.generation,
    }))
}

/// Shows a provider's usage per resource class, with its generation.
pub async fn provider_usages(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let provider = path_provider(&state, &path).await?;
    let uuid = provider.uuid;
    let (usages, inventories) = db::run(&state.pool, move |conn| {
        let id = db::placement::providers::get_provider(conn, uuid)?
            .map(|row| row.id)
            .unwrap_or_default();
        Ok((
            db::placement::allocations::usages(conn, Some(uuid), None, None)?,
            db::placement::inventories::list_inventories(conn, id)?,
        ))
    })
    .await?;
    // Every inventoried class shows, used or not.
    let mut all: BTreeMap<String, i64> = inventories
        .into_iter()
        .map(|row| (row.resource_class, 0))
        .collect();
    all.extend(usages);
    Ok(HttpResponse::Ok().json(views::ProviderUsages {
        usages: all,
        resource_provider_generation: provider.generation,
    }))
}

/// Query of `GET /usages`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsagesQuery {
    pub project_id: Option<String>,
    pub user_id: Option<String>,
    pub consumer_type: Option<String>,
}

/// Checks one `GET /usages` text parameter as the schema does (1 to 255 characters).
fn usage_param(name: &str, value: Option<String>) -> Result<Option<String>, PlacementError> {
    let invalid = |why: String| {
        PlacementError::bad_request(format!("Invalid query string parameters: {why}"))
    };
    match value {
        Some(value) if value.is_empty() => Err(invalid(format!(
            "'' is too short\n\nFailed validating 'minLength' in schema['properties']['{name}']"
        ))),
        Some(value) if value.chars().count() > 255 => Err(invalid(format!(
            "'{value}' is too long\n\nFailed validating 'maxLength' in \
             schema['properties']['{name}']"
        ))),
        other => Ok(other),
    }
}

/// Sums usage over a project (and user), 1.9+; from 1.38 broken down by consumer type, with
/// `consumer_type=` one type, `all` (one group) or `unknown` (consumers without a type).
pub async fn usages(
    request: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<UsagesQuery>,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    if !version.at_least(1, 9) {
        return Err(PlacementError::not_found(
            "The resource could not be found.",
        ));
    }
    let query = query.into_inner();
    let by_type = version.at_least(1, 38);
    if query.consumer_type.is_some() && !by_type {
        return Err(PlacementError::bad_request(
            "Invalid query string parameters: Additional properties are not allowed \
             ('consumer_type' was unexpected)",
        ));
    }
    let project = usage_param("project_id", query.project_id)?.ok_or_else(|| {
        PlacementError::bad_request(
            "Invalid query string parameters: 'project_id' is a required property",
        )
    })?;
    let user = usage_param("user_id", query.user_id)?;
    let consumer_type = usage_param("consumer_type", query.consumer_type)?;
    if let Some(kind) = &consumer_type {
        let known = matches!(kind.as_str(), "all" | "unknown")
            || crate::domain::placement::is_class_or_trait_name(kind);
        if !known {
            return Err(PlacementError::bad_request(format!(
                "Invalid query string parameters: '{kind}' does not match \
                 '^[A-Z0-9_]+$|^all|^unknown$'"
            )));
        }
    }
    if by_type {
        let usages = db::run(&state.pool, move |conn| {
            db::placement::allocations::usages_by_consumer_type(
                conn,
                &project,
                user.as_deref(),
                consumer_type.as_deref(),
            )
        })
        .await?;
        return Ok(HttpResponse::Ok().json(views::Usages { usages }));
    }
    let usages = db::run(&state.pool, move |conn| {
        db::placement::allocations::usages(conn, None, Some(&project), user.as_deref())
    })
    .await?;
    Ok(HttpResponse::Ok().json(views::Usages { usages }))
}
