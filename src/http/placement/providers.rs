//! `/placement/resource_providers`: list (by name, uuid, in_tree), create, show, update
//! (rename, re-parent) and delete, with Placement's shapes per microversion.

use actix_web::http::header::LOCATION;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::common::invalid;
use super::error::PlacementError;
use super::middleware::{python_repr, require_json, version_of};
use super::views::{Provider, Providers};
use crate::db;
use crate::db::placement::providers::{ProviderError, ProviderFilter, ProviderRow};
use crate::domain::identity::ProviderUuid;
use crate::domain::placement::Microversion;
use crate::domain::placement_filter::ProviderRules;
use crate::http::AppState;
use crate::service;

const PREFIX: &str = "/placement";

/// A provider body, validated as Placement's schema for `version` does.
struct ProviderBody {
    name: String,
    uuid: Option<ProviderUuid>,
    parent: Option<Option<ProviderUuid>>,
}

fn parse_body(
    body: &[u8],
    version: Microversion,
    allow_uuid: bool,
) -> Result<ProviderBody, PlacementError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| PlacementError::bad_request(format!("Malformed JSON: {error}")))?;
    let object: &Map<String, Value> = value
        .as_object()
        .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(&value))))?;
    let mut allowed = vec!["name"];
    if allow_uuid {
        allowed.push("uuid");
    }
    if version.at_least(1, 14) {
        allowed.push("parent_provider_uuid");
    }
    if let Some(extra) = object.keys().find(|key| !allowed.contains(&key.as_str())) {
        return Err(invalid(format!(
            "Additional properties are not allowed ('{extra}' was unexpected)"
        )));
    }
    let name = object
        .get("name")
        .ok_or_else(|| invalid("'name' is a required property"))?;
    let name = name
        .as_str()
        .ok_or_else(|| invalid(format!("{} is not of type 'string'", python_repr(name))))?;
    if name.len() > 200 {
        return Err(invalid(format!(
            "Failed validating 'maxLength': '{name}' is too long"
        )));
    }
    if name.is_empty() {
        return Err(invalid(format!(
            "Failed validating 'minLength': '{name}' is too short"
        )));
    }
    let uuid_of = |field: &str| -> Result<Option<ProviderUuid>, PlacementError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => text.parse::<ProviderUuid>().map(Some).map_err(|_| {
                invalid(format!(
                    "Failed validating 'format': '{text}' is not a 'uuid'"
                ))
            }),
            Some(other) => Err(invalid(format!(
                "{} is not of type 'string'",
                python_repr(other)
            ))),
        }
    };
    let parent = if object.contains_key("parent_provider_uuid") {
        Some(uuid_of("parent_provider_uuid")?)
    } else {
        None
    };
    Ok(ProviderBody {
        name: name.to_owned(),
        uuid: uuid_of("uuid")?,
        parent,
    })
}

/// Placement's wording of a refused provider write.
fn provider_error(
    error: ProviderError,
    action: &str,
    name: &str,
    uuid: ProviderUuid,
) -> PlacementError {
    let invalid = |reason: &str| {
        PlacementError::bad_request(format!(
            "Unable to {action} resource provider \"{name}\", {uuid}: {reason}"
        ))
    };
    match error {
        ProviderError::DuplicateName(taken) => PlacementError::conflict(format!(
            "Conflicting resource provider name: {taken} already exists."
        ))
        .with_code("placement.duplicate_name"),
        ProviderError::DuplicateUuid(taken) => PlacementError::conflict(format!(
            "Conflicting resource provider uuid: {taken} already exists."
        )),
        ProviderError::NotFound(missing) => {
            PlacementError::not_found(format!("No resource provider with uuid {missing} found"))
        }
        ProviderError::HasAllocations(busy) => PlacementError::conflict(format!(
            "Unable to delete resource provider {busy}: Resource provider has allocations."
        ))
        .with_code("placement.resource_provider.inuse"),
        ProviderError::HasChildren(parent) => PlacementError::conflict(format!(
            "Unable to delete parent resource provider {parent}: It has child resource providers."
        ))
        .with_code("placement.resource_provider.cannot_delete_parent"),
        ProviderError::SelfParent => invalid(
            "parent provider UUID cannot be same as UUID. Please set parent provider UUID to None if there is no parent.",
        ),
        ProviderError::ParentMissing => invalid("parent provider UUID does not exist."),
        ProviderError::Unparent => invalid("un-parenting a provider is not currently allowed."),
        ProviderError::Reparent => invalid("re-parenting a provider is not currently allowed."),
        ProviderError::Loop => invalid("creating loop in the provider tree is not allowed."),
        ProviderError::Db(db) => db.into(),
    }
}

fn bad_query(detail: impl std::fmt::Display) -> PlacementError {
    PlacementError::bad_request(format!("Invalid query string parameters: {detail}"))
}

/// Lists providers, filtered by `name`, `uuid`, `member_of` (1.3), `resources` (1.4),
/// `in_tree` (1.14) and `required` (1.18; forbidden traits 1.22, `in:` 1.39).
pub async fn list_providers(
    request: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    let (filter, rules) = provider_query(request.query_string(), version)?;
    let cache = state.candidates.clone();
    let listed = db::run(&state.pool, move |conn| {
        let providers = db::placement::providers::list_providers(conn, &filter)?;
        if rules.is_empty() {
            return Ok(Ok(providers));
        }
        // The facts the rules look at are those allocation candidates read: the kept snapshot.
        let snapshot = db::placement::candidates::snapshot(conn, &cache)?;
        Ok(admitted(providers, &rules, &snapshot))
    })
    .await??;
    Ok(HttpResponse::Ok().json(Providers {
        resource_providers: listed
            .iter()
            .map(|provider| Provider::at(provider, version))
            .collect(),
    }))
}

/// Reads the query of `GET /resource_providers` for `version`: the filter the database
/// applies, and the rules on inventories, traits and aggregates.
fn provider_query(
    query: &str,
    version: Microversion,
) -> Result<(ProviderFilter, ProviderRules), PlacementError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|error| bad_query(format!("malformed query string: {error}")))?;
    let mut filter = ProviderFilter::default();
    let mut rules = ProviderRules::default();
    let (mut required, mut member_of) = (Vec::new(), Vec::new());
    for (key, value) in &pairs {
        let bad_uuid = || bad_query(format!("'{value}' is not a 'uuid'"));
        match key.as_str() {
            "name" => filter.name = Some(value.clone()),
            "uuid" => filter.uuid = Some(value.parse::<ProviderUuid>().map_err(|_| bad_uuid())?),
            "in_tree" if version.at_least(1, 14) => {
                filter.in_tree = Some(value.parse::<ProviderUuid>().map_err(|_| bad_uuid())?)
            }
            "member_of" if version.at_least(1, 3) => member_of.push(value.as_str()),
            "resources" if version.at_least(1, 4) => rules
                .parse_resources(value)
                .map_err(PlacementError::bad_request)?,
            "required" if version.at_least(1, 18) => required.push(value.as_str()),
            _ => {
                return Err(bad_query(format!(
                    "Additional properties are not allowed ('{key}' was unexpected)"
                )));
            }
        }
    }
    rules
        .parse_member_of(&member_of, version)
        .and_then(|()| rules.parse_required(&required, version))
        .map_err(PlacementError::bad_request)?;
    Ok((filter, rules))
}

/// The providers `rules` admit, judged on `snapshot`; 400 for a trait or class that does not
/// exist. A provider the snapshot lacks was created since and has no inventory, traits or
/// aggregates yet.
fn admitted(
    providers: Vec<ProviderRow>,
    rules: &ProviderRules,
    snapshot: &db::placement::candidates::PlacementSnapshot,
) -> Result<Vec<ProviderRow>, PlacementError> {
    let mut missing: Vec<String> = rules
        .trait_names()
        .into_iter()
        .filter(|name| !snapshot.traits.contains_key(name))
        .collect();
    if !missing.is_empty() {
        missing.sort();
        missing.dedup();
        return Err(PlacementError::bad_request(format!(
            "No such trait(s): {}.",
            missing.join(", ")
        )));
    }
    if let Some((class, _)) = rules
        .resources
        .iter()
        .find(|(class, _)| !snapshot.classes.contains(class))
    {
        return Err(PlacementError::bad_request(format!(
            "Invalid resource class in resources parameter: No such resource class {class}."
        )));
    }
    let none = crate::domain::placement_filter::ProviderFacts::default();
    Ok(providers
        .into_iter()
        .filter(|provider| {
            let facts = snapshot
                .by_uuid
                .get(&provider.uuid.uuid())
                .map_or(&none, |index| &snapshot.providers[*index].facts);
            rules.admits(facts)
        })
        .collect())
}

/// Creates a provider: 201 with a Location before 1.20, 200 with the provider from 1.20.
pub async fn create_provider(
    request: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    require_json(&request)?;
    let parsed = parse_body(&body, version, true)?;
    let uuid = parsed.uuid.unwrap_or_else(|| ProviderUuid(Uuid::new_v4()));
    let (name, parent, now) = (
        parsed.name.clone(),
        parsed.parent.flatten(),
        chrono::Utc::now(),
    );
    let created = db::run(&state.pool, move |conn| {
        Ok(db::placement::providers::create_provider(
            conn, uuid, &name, parent, now,
        ))
    })
    .await?
    .map_err(|error| provider_error(error, "create", &parsed.name, parent.unwrap_or(uuid)))?;
    let location = (
        LOCATION,
        format!("{PREFIX}/resource_providers/{}", created.uuid),
    );
    if version.at_least(1, 20) {
        Ok(HttpResponse::Ok()
            .insert_header(location)
            .json(Provider::at(&created, version)))
    } else {
        Ok(HttpResponse::Created().insert_header(location).finish())
    }
}

fn path_uuid(text: &str) -> Result<ProviderUuid, PlacementError> {
    text.parse::<ProviderUuid>().map_err(|_| {
        PlacementError::not_found(format!("No resource provider with uuid {text} found"))
    })
}

/// Shows one provider.
pub async fn show_provider(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    let uuid = path_uuid(&path)?;
    match db::run(&state.pool, move |conn| {
        db::placement::providers::get_provider(conn, uuid)
    })
    .await?
    {
        Some(provider) => Ok(HttpResponse::Ok().json(Provider::at(&provider, version))),
        None => Err(PlacementError::not_found(format!(
            "No resource provider with uuid {uuid} found"
        ))),
    }
}

/// Renames a provider and (1.14+) sets its parent; re-parenting and un-parenting from 1.37.
pub async fn update_provider(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    let uuid = path_uuid(&path)?;
    require_json(&request)?;
    let parsed = parse_body(&body, version, false)?;
    let (name, parent) = (parsed.name.clone(), parsed.parent);
    let reparenting = version.at_least(1, 37);
    let updated = service::placement::update_provider(&state.pool, uuid, name, parent, reparenting)
        .await
        .map_err(|error| provider_error(error, "update", &parsed.name, uuid))?;
    Ok(HttpResponse::Ok().json(Provider::at(&updated, version)))
}

/// Deletes a provider that has neither allocations nor children.
pub async fn delete_provider(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let uuid = path_uuid(&path)?;
    service::placement::delete_provider(&state.pool, uuid)
        .await
        .map_err(|error| match error {
            ProviderError::NotFound(_) => PlacementError::not_found(format!(
                "No resource provider with uuid {uuid} found for delete"
            )),
            other => provider_error(other, "delete", "", uuid),
        })?;
    Ok(HttpResponse::NoContent().finish())
}
