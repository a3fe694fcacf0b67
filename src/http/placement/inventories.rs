//! `/placement/resource_providers/{uuid}/inventories[/{class}]`: read, replace, add, update
//! and delete inventory, generation-checked inside the writing transaction.

use actix_web::http::header::LOCATION;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value};

use super::common::{invalid, parse_object, path_provider};
use super::error::PlacementError;
use super::middleware::{python_repr, require_json, version_of};
use super::views::{Inventories, InventoryRecord, OneInventory};
use crate::db;
use crate::db::placement::inventories::{InventoryError, InventoryRow};
use crate::db::placement::providers::ProviderRow;
use crate::domain::identity::ProviderUuid;
use crate::http::AppState;
use crate::service::{self, placement::InventoryWrite};

const MAX_INT: i64 = 2_147_483_647;
const MAX_FLOAT: f64 = 3.402_823_466e38;

fn integer(
    object: &Map<String, Value>,
    field: &str,
    minimum: i64,
    default: Option<i64>,
) -> Result<i32, PlacementError> {
    let value = match object.get(field) {
        None => {
            return default
                .map(|value| value as i32)
                .ok_or_else(|| invalid(format!("'{field}' is a required property")));
        }
        Some(value) => value,
    };
    let number = value
        .as_i64()
        .ok_or_else(|| invalid(format!("{} is not of type 'integer'", python_repr(value))))?;
    if number < minimum {
        return Err(invalid(format!(
            "{number} is less than the minimum of {minimum}\n\nFailed validating 'minimum' in schema['properties']['{field}']"
        )));
    }
    if number > MAX_INT {
        return Err(invalid(format!(
            "{number} is greater than the maximum of {MAX_INT}\n\nFailed validating 'maximum' in schema['properties']['{field}']"
        )));
    }
    Ok(number as i32)
}

/// Validates one inventory record's fields (the caller removes the envelope fields).
fn record(
    object: &Map<String, Value>,
    class: &str,
    extra: &[&str],
) -> Result<InventoryRow, PlacementError> {
    let known = [
        "total",
        "reserved",
        "min_unit",
        "max_unit",
        "step_size",
        "allocation_ratio",
    ];
    if let Some(key) = object
        .keys()
        .find(|key| !known.contains(&key.as_str()) && !extra.contains(&key.as_str()))
    {
        return Err(invalid(format!(
            "Additional properties are not allowed ('{key}' was unexpected)"
        )));
    }
    let allocation_ratio = match object.get("allocation_ratio") {
        None => 1.0,
        Some(value) => {
            let ratio = value.as_f64().ok_or_else(|| {
                invalid(format!("{} is not of type 'number'", python_repr(value)))
            })?;
            if ratio > MAX_FLOAT {
                return Err(invalid(format!(
                    "{ratio} is greater than the maximum of {MAX_FLOAT}\n\nFailed validating 'maximum' in schema['properties']['allocation_ratio']"
                )));
            }
            if ratio <= 0.0 {
                return Err(invalid(format!(
                    "{ratio} is less than or equal to the minimum of 0"
                )));
            }
            ratio
        }
    };
    Ok(InventoryRow {
        resource_class: class.to_owned(),
        total: integer(object, "total", 1, None)?,
        reserved: integer(object, "reserved", 0, Some(0))?,
        min_unit: integer(object, "min_unit", 1, Some(1))?,
        max_unit: integer(object, "max_unit", 1, Some(MAX_INT))?,
        step_size: integer(object, "step_size", 1, Some(1))?,
        allocation_ratio,
    })
}

/// Placement's capacity rule: reserved below total (at most equal from 1.26).
fn check_capacity(
    row: &InventoryRow,
    provider: ProviderUuid,
    reserved_may_equal_total: bool,
    verb: &str,
) -> Result<(), PlacementError> {
    let bad = if reserved_may_equal_total {
        row.reserved > row.total
    } else {
        row.reserved >= row.total
    };
    if bad {
        let rule = if reserved_may_equal_total {
            "greater than"
        } else {
            "greater than or equal to"
        };
        return Err(PlacementError::bad_request(format!(
            "Unable to {verb} inventory for resource provider {provider}: Invalid inventory for '{}' on resource provider '{provider}'. The reserved value is {rule} total.",
            row.resource_class
        )));
    }
    if row.min_unit > row.max_unit {
        return Err(PlacementError::bad_request(format!(
            "Unable to {verb} inventory for resource provider {provider}: Invalid inventory for '{}' on resource provider '{provider}'. min_unit is greater than max_unit.",
            row.resource_class
        )));
    }
    Ok(())
}

fn generation_of(object: &Map<String, Value>) -> Result<i64, PlacementError> {
    let value = object
        .get("resource_provider_generation")
        .ok_or_else(|| invalid("'resource_provider_generation' is a required property"))?;
    value
        .as_i64()
        .ok_or_else(|| invalid(format!("{} is not of type 'integer'", python_repr(value))))
}

/// Placement's words for an inventory that allocations use.
pub(super) fn in_use_text(class: &str, provider: ProviderUuid) -> String {
    format!("Inventory for '{class}' on resource provider '{provider}' in use.")
}

fn inventory_error(error: InventoryError, provider: ProviderUuid, verb: &str) -> PlacementError {
    match error {
        InventoryError::GenerationConflict => PlacementError::conflict(format!(
            "resource provider generation conflict: the generation of resource provider {provider} has changed"
        ))
        .with_code("placement.concurrent_update"),
        InventoryError::UnknownClass(class) => {
            PlacementError::bad_request(format!("No such resource class {class}."))
        }
        InventoryError::UnknownInventoryClass { class, provider } => {
            PlacementError::bad_request(format!(
                "Unknown resource class in inventory for resource provider {provider}: {class}"
            ))
        }
        InventoryError::InUse { class, provider } => PlacementError::conflict(format!(
            "Unable to {verb} inventory for resource provider {provider}: {}",
            in_use_text(&class, provider)
        ))
        .with_code("placement.inventory.inuse"),
        InventoryError::Db(db) => db.into(),
    }
}

/// The provider's inventories and generation as they are now.
async fn inventories_now(
    state: &AppState,
    provider: &ProviderRow,
) -> Result<Inventories, PlacementError> {
    let (id, uuid) = (provider.id, provider.uuid);
    let (rows, current) = db::run(&state.pool, move |conn| {
        Ok((
            db::placement::inventories::list_inventories(conn, id)?,
            db::placement::providers::get_provider(conn, uuid)?,
        ))
    })
    .await?;
    let generation = current.map_or(provider.generation, |current| current.generation);
    Ok(Inventories::of(generation, &rows))
}

/// Shows every inventory record of a provider.
pub async fn list_inventories(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    let provider = path_provider(&state, &path).await?;
    Ok(HttpResponse::Ok().json(inventories_now(&state, &provider).await?))
}

/// Reads a `PUT …/inventories` body: the generation and every record.
fn parse_inventories(
    body: &[u8],
    provider: ProviderUuid,
    may_equal: bool,
) -> Result<(i64, Vec<InventoryRow>), PlacementError> {
    inventories_of(&parse_object(body)?, provider, may_equal)
}

/// Reads one provider's `{"resource_provider_generation", "inventories"}` object (the body of
/// `PUT …/inventories`, and each provider's entry of a reshape).
pub fn inventories_of(
    object: &Map<String, Value>,
    provider: ProviderUuid,
    may_equal: bool,
) -> Result<(i64, Vec<InventoryRow>), PlacementError> {
    if let Some(key) = object
        .keys()
        .find(|key| !matches!(key.as_str(), "resource_provider_generation" | "inventories"))
    {
        return Err(invalid(format!(
            "Additional properties are not allowed ('{key}' was unexpected)"
        )));
    }
    let generation = generation_of(object)?;
    let records = object
        .get("inventories")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("'inventories' is a required property"))?;
    let mut rows = Vec::with_capacity(records.len());
    for (class, fields) in records {
        let fields = fields
            .as_object()
            .ok_or_else(|| invalid(format!("{} is not of type 'object'", python_repr(fields))))?;
        let row = record(fields, class, &[])?;
        check_capacity(&row, provider, may_equal, "update")?;
        rows.push(row);
    }
    Ok((generation, rows))
}

/// Replaces a provider's whole inventory.
pub async fn put_inventories(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let not_found =
        || PlacementError::not_found(format!("No resource provider with uuid {path} found"));
    let provider = path.parse::<ProviderUuid>().map_err(|_| not_found())?;
    let may_equal = version_of(&request).at_least(1, 26);
    let (generation, rows) = match parse_inventories(&body, provider, may_equal) {
        Ok(parsed) => parsed,
        // Placement looks the provider up before it reads the body: a missing one is a 404.
        Err(refusal) => {
            path_provider(&state, &path).await?;
            return Err(refusal);
        }
    };
    let (written, rows) = db::run(&state.pool, move |conn| {
        let written =
            db::placement::inventories::replace_inventories(conn, provider, generation, &rows);
        Ok((written, rows))
    })
    .await?;
    let new_generation = written
        .map_err(|error| inventory_error(error, provider, "update"))?
        .ok_or_else(not_found)?;
    Ok(HttpResponse::Ok().json(Inventories::of(new_generation, &rows)))
}

/// Adds one class's inventory: 201 with its location; 409 when the class already has one.
pub async fn create_inventory(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let provider = path_provider(&state, &path).await?;
    require_json(&request)?;
    let object = parse_object(&body)?;
    let class = object
        .get("resource_class")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("'resource_class' is a required property"))?
        .to_owned();
    let row = record(
        &object,
        &class,
        &["resource_class", "resource_provider_generation"],
    )?;
    // POST may leave the generation out; then it is not compared.
    let generation = object
        .get("resource_provider_generation")
        .and_then(Value::as_i64);
    check_capacity(
        &row,
        provider.uuid,
        version_of(&request).at_least(1, 26),
        "create",
    )?;
    let write = InventoryWrite::Create { generation };
    let created = service::placement::write_inventory(&state.pool, provider.id, row.clone(), write)
        .await
        .map_err(|error| inventory_error(error, provider.uuid, "create"))?;
    if !created {
        return Err(PlacementError::conflict(format!(
            "Update conflict: Inventory for '{class}' on resource provider '{}' already exists.",
            provider.uuid
        )));
    }
    let body = OneInventory {
        record: InventoryRecord::from(&row),
        resource_provider_generation: inventories_now(&state, &provider)
            .await?
            .resource_provider_generation,
    };
    // The middleware makes it absolute, as webob does.
    let location = format!(
        "/placement/resource_providers/{}/inventories/{class}",
        provider.uuid
    );
    Ok(HttpResponse::Created()
        .insert_header((LOCATION, location))
        .json(body))
}

/// Shows one class's inventory.
pub async fn show_inventory(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, PlacementError> {
    let (uuid, class) = path.into_inner();
    let provider = path_provider(&state, &uuid).await?;
    let mut all = inventories_now(&state, &provider).await?;
    match all.inventories.remove(&class) {
        Some(record) => Ok(HttpResponse::Ok().json(OneInventory {
            record,
            resource_provider_generation: all.resource_provider_generation,
        })),
        None => Err(PlacementError::not_found(format!(
            "No inventory of class {class} for {}",
            provider.uuid
        ))),
    }
}

/// Updates one class's inventory.
pub async fn put_inventory(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, PlacementError> {
    let (uuid, class) = path.into_inner();
    let provider = path_provider(&state, &uuid).await?;
    require_json(&request)?;
    let object = parse_object(&body)?;
    let generation = generation_of(&object)?;
    let row = record(&object, &class, &["resource_provider_generation"])?;
    check_capacity(
        &row,
        provider.uuid,
        version_of(&request).at_least(1, 26),
        "update",
    )?;
    let write = InventoryWrite::Replace { generation };
    let found = service::placement::write_inventory(&state.pool, provider.id, row.clone(), write)
        .await
        .map_err(|error| inventory_error(error, provider.uuid, "update"))?;
    if !found {
        return Err(PlacementError::bad_request(format!(
            "No inventory record with resource class for resource provider {}: {class}",
            provider.uuid
        )));
    }
    let all = inventories_now(&state, &provider).await?;
    Ok(HttpResponse::Ok().json(OneInventory {
        record: InventoryRecord::from(&row),
        resource_provider_generation: all.resource_provider_generation,
    }))
}

/// Deletes one class's inventory (409 while allocations use it).
pub async fn delete_inventory(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, PlacementError> {
    let (uuid, class) = path.into_inner();
    let provider = path_provider(&state, &uuid).await?;
    let key = (provider.id, provider.uuid);
    let deleted = service::placement::delete_inventory(&state.pool, key, class.clone())
        .await
        .map_err(|error| inventory_error(error, provider.uuid, "delete"))?;
    if deleted {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(PlacementError::not_found(format!(
            "No inventory of class {class} found for delete"
        )))
    }
}

/// Deletes a provider's whole inventory (1.5+; 409 while allocations use any of it).
pub async fn delete_inventories(
    request: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, PlacementError> {
    if !version_of(&request).at_least(1, 5) {
        return Err(PlacementError::new(
            actix_web::http::StatusCode::METHOD_NOT_ALLOWED,
            "The method specified is not allowed for this resource.",
        ));
    }
    let provider = path_provider(&state, &path).await?;
    let (uuid, generation) = (provider.uuid, provider.generation);
    db::run(&state.pool, move |conn| {
        Ok(db::placement::inventories::replace_inventories(
            conn,
            uuid,
            generation,
            &[],
        ))
    })
    .await?
    .map_err(|error| inventory_error(error, provider.uuid, "delete"))?
    .ok_or_else(|| {
        PlacementError::not_found(format!("No resource provider with uuid {path} found"))
    })?;
    Ok(HttpResponse::NoContent().finish())
}
