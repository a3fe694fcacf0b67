//! Pieces every Placement handler uses: the schema-error wording, JSON object bodies, and the
//! provider a path names.

use serde_json::{Map, Value};

use super::error::PlacementError;
use super::middleware::python_repr;
use crate::db;
use crate::db::placement::providers::ProviderRow;
use crate::domain::identity::ProviderUuid;
use crate::http::AppState;

/// A body that breaks Placement's JSON schema: 400 `JSON does not validate: …`.
pub fn invalid(why: impl std::fmt::Display) -> PlacementError {
    PlacementError::bad_request(format!("JSON does not validate: {why}"))
}

/// Parses a JSON object body (400 `Malformed JSON` or a schema error otherwise).
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, PlacementError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| PlacementError::bad_request(format!("Malformed JSON: {error}")))?;
    match value {
        Value::Object(object) => Ok(object),
        other => Err(invalid(format!(
            "{} is not of type 'object'",
            python_repr(&other)
        ))),
    }
}

/// Returns the provider a path names (404 with Placement's words when there is none).
pub async fn path_provider(state: &AppState, uuid: &str) -> Result<ProviderRow, PlacementError> {
    let not_found =
        || PlacementError::not_found(format!("No resource provider with uuid {uuid} found"));
    let parsed = uuid.parse::<ProviderUuid>().map_err(|_| not_found())?;
    db::run(&state.pool, move |conn| {
        db::placement::providers::get_provider(conn, parsed)
    })
    .await?
    .ok_or_else(not_found)
}
