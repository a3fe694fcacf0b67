//! `POST /placement/reshaper` (1.30): move inventory and allocations between providers (a
//! parent's VCPU to a new NUMA child, say) atomically. Mappings are accepted from 1.34 and
//! consumer types required from 1.38, as in allocation writes.

use crate::domain::identity::{ConsumerUuid, ProviderUuid};
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

use super::allocations::{allocation_error, parse_consumer};
use super::common::{invalid, parse_object};
use super::error::PlacementError;
use super::inventories::{in_use_text, inventories_of};
use super::middleware::{python_repr, require_json, version_of};
use crate::db;
use crate::db::placement::allocations::AllocationError;
use crate::db::placement::inventories::InventoryError;
use crate::db::placement::reshaper::{ProviderInventory, ReshapeError};
use crate::http::AppState;
use crate::service;

const NOT_FOUND_CODE: &str = "placement.resource_provider.not_found";

fn parse(
    body: &[u8],
    version: crate::domain::placement::Microversion,
) -> Result<
    (
        Vec<ProviderInventory>,
        Vec<db::placement::allocations::ConsumerAllocations>,
    ),
    PlacementError,
> {
    let object = parse_object(body)?;
    if let Some(key) = object
        .keys()
        .find(|key| !matches!(key.as_str(), "inventories" | "allocations"))
    {
        return Err(invalid(format!(
            "Additional properties are not allowed ('{key}' was unexpected)"
        )));
    }
    let section = |name: &str| -> Result<&serde_json::Map<String, Value>, PlacementError> {
        let value = object
            .get(name)
            .ok_or_else(|| invalid(format!("'{name}' is a required property")))?;
        value
            .as_object()
            .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(value))))
    };
    let inventories = section("inventories")?;
    let allocations = section("allocations")?;
    if inventories.is_empty() {
        return Err(invalid("{} does not have enough properties"));
    }
    let may_equal = version.at_least(1, 26);
    let mut wanted = Vec::with_capacity(inventories.len());
    for (key, entry) in inventories {
        let provider: ProviderUuid = key
            .parse()
            .map_err(|_| invalid(format!("'{key}' does not match any of the regexes")))?;
        let entry = entry
            .as_object()
            .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(entry))))?;
        let (generation, rows) = inventories_of(entry, provider, may_equal)?;
        wanted.push(ProviderInventory {
            provider,
            generation,
            rows,
        });
    }
    let mut writes = Vec::with_capacity(allocations.len());
    for (key, entry) in allocations {
        let consumer: ConsumerUuid = key
            .parse()
            .map_err(|_| invalid(format!("'{key}' does not match any of the regexes")))?;
        let entry = entry
            .as_object()
            .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(entry))))?;
        writes.push(parse_consumer(consumer, entry, version, true)?);
    }
    Ok((wanted, writes))
}

fn reshape_error(error: ReshapeError) -> PlacementError {
    match error {
        ReshapeError::ProviderMissing(provider) => PlacementError::bad_request(format!(
            "Resource provider {provider} in inventories not found: No resource provider with uuid {provider} found"
        ))
        .with_code(NOT_FOUND_CODE),
        ReshapeError::Generation {
            provider,
            actual,
            given,
        } => PlacementError::conflict(format!(
            "resource provider generation conflict for provider {provider}: actual: {actual}, given: {given}"
        ))
        .with_code("placement.concurrent_update"),
        ReshapeError::Inventory(
            InventoryError::UnknownClass(class)
            | InventoryError::UnknownInventoryClass { class, .. },
        )
        | ReshapeError::Allocation(AllocationError::UnknownClass(class)) => {
            PlacementError::bad_request(format!(
                "malformed reshaper data: No such resource class {class}."
            ))
        }
        ReshapeError::Inventory(InventoryError::InUse { class, provider }) => {
            PlacementError::conflict(format!(
                "update conflict: {}",
                in_use_text(&class, provider)
            ))
            .with_code("placement.inventory.inuse")
        }
        ReshapeError::Inventory(InventoryError::GenerationConflict) => {
            PlacementError::conflict("update conflict: resource provider generation conflict")
                .with_code("placement.concurrent_update")
        }
        ReshapeError::Allocation(AllocationError::ProviderMissing(provider)) => {
            PlacementError::bad_request(format!(
                "malformed reshaper data: No resource provider with uuid {provider} found"
            ))
            .with_code(NOT_FOUND_CODE)
        }
        ReshapeError::Allocation(other) => allocation_error(other, None),
        ReshapeError::Inventory(InventoryError::Db(db)) | ReshapeError::Db(db) => db.into(),
    }
}

/// Reshapes: 204, or nothing written.
pub async fn reshape(
    request: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    if !version.at_least(1, 30) {
        return Err(PlacementError::not_found(
            "The resource could not be found.",
        ));
    }
    require_json(&request)?;
    let (inventories, writes) = parse(&body, version)?;
    service::placement::reshape(&state.pool, inventories, writes)
        .await
        .map_err(reshape_error)?;
    Ok(HttpResponse::NoContent().finish())
}
