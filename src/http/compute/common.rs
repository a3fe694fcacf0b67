//! What the Compute handlers share: the negotiated version, the body read as JSON with Nova's
//! 400s, query pairs, and links as Nova builds them.

use actix_web::{FromRequest, HttpMessage, HttpRequest};
use serde_json::{Map, Value, json};

use super::error::ComputeError;
use crate::domain::compute::flavor::Scalar;
use crate::domain::compute::version::ComputeVersion;

/// The request's microversion, as the middleware negotiated it.
#[derive(Debug, Clone, Copy)]
pub struct Version(pub ComputeVersion);

impl Version {
    pub fn at_least(self, minor: u32) -> bool {
        self.0.at_least(minor)
    }
}

impl FromRequest for Version {
    type Error = ComputeError;
    type Future = std::future::Ready<Result<Version, ComputeError>>;

    fn from_request(request: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(Ok(Version(
            request
                .extensions()
                .get::<ComputeVersion>()
                .copied()
                .unwrap_or(ComputeVersion::MIN),
        )))
    }
}

/// Reads a request body: a JSON object, else Nova's 400.
pub fn object(body: &[u8]) -> Result<Map<String, Value>, ComputeError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ComputeError::bad_request(
            "Invalid input for field/attribute body. The request body must be a JSON object.",
        )),
        Err(_) => Err(ComputeError::bad_request("Malformed request body")),
    }
}

/// The object under `key` of a body (`{"flavor": {...}}`), else Nova's 400 naming it.
pub fn member(mut body: Map<String, Value>, key: &str) -> Result<Map<String, Value>, ComputeError> {
    match body.remove(key) {
        Some(Value::Object(inner)) => Ok(inner),
        Some(_) => Err(ComputeError::bad_request(format!(
            "Invalid input for field/attribute {key}. Value: {key} is not of type 'object'"
        ))),
        None => Err(ComputeError::bad_request(format!(
            "Invalid input for field/attribute {key}. '{key}' is a required property"
        ))),
    }
}

/// Refuses properties a schema does not name (`additionalProperties: false`).
pub fn only(
    object: &Map<String, Value>,
    allowed: &[&str],
    field: &str,
) -> Result<(), ComputeError> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(extra) => Err(ComputeError::bad_request(format!(
            "Invalid input for field/attribute {field}. Additional properties are not allowed \
             ('{extra}' was unexpected)"
        ))),
        None => Ok(()),
    }
}

/// One field of a body as a `Scalar`.
pub fn scalar(object: &Map<String, Value>, key: &str) -> Scalar {
    match object.get(key) {
        None => Scalar::Absent,
        Some(Value::Null) => Scalar::Null,
        Some(Value::Bool(flag)) => Scalar::Bool(*flag),
        Some(Value::Number(number)) => match number.as_i64() {
            Some(integer) => Scalar::Int(integer),
            None => Scalar::Float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Some(Value::String(text)) => Scalar::Text(text.clone()),
        Some(_) => Scalar::Other,
    }
}

/// The query string's pairs, in order (a malformed one is Nova's 400).
pub fn query_pairs(request: &HttpRequest) -> Result<Vec<(String, String)>, ComputeError> {
    serde_urlencoded::from_str(request.query_string())
        .map_err(|_| ComputeError::bad_request("Invalid query string"))
}

/// The last value of `key` in `pairs` (Nova reads the last of repeated parameters).
pub fn last<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.as_str())
}

/// Refuses query parameters a listing does not take (from the microversion Nova stops
/// ignoring them).
pub fn known_parameters(pairs: &[(String, String)], known: &[&str]) -> Result<(), ComputeError> {
    match pairs.iter().find(|(key, _)| !known.contains(&key.as_str())) {
        Some((extra, _)) => Err(ComputeError::bad_request(format!(
            "Invalid input for query parameters {extra}. Value: {extra}. Additional properties \
             are not allowed ('{extra}' was unexpected)"
        ))),
        None => Ok(()),
    }
}

/// Nova's `max_limit`: the most items one page holds, whatever `limit` asks.
pub const MAX_LIMIT: i64 = 1000;

/// `limit` and `marker` as Nova reads them: a limit is a non-negative integer, capped at
/// [`MAX_LIMIT`].
pub fn limit_and_marker(
    pairs: &[(String, String)],
) -> Result<(Option<i64>, Option<String>), ComputeError> {
    let limit = match last(pairs, "limit") {
        None => None,
        // Any run of digits, as Nova's schema takes it.
        Some(text) => Some(
            (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                .then(|| text.parse::<i64>().unwrap_or(MAX_LIMIT).min(MAX_LIMIT))
                .ok_or_else(|| {
                    ComputeError::bad_request(format!(
                        "Invalid input for query parameters limit. Value: {text}. '{text}' does \
                         not match '^[0-9]*$'"
                    ))
                })?,
        ),
    };
    Ok((limit, last(pairs, "marker").map(str::to_owned)))
}

/// The Compute API's base URL as the client reached it: `http://host/compute`.
pub fn base_url(request: &HttpRequest) -> String {
    format!("{}/compute", crate::http::transport::origin(request))
}

/// Nova's `self` and `bookmark` links of resource `id` of `collection`.
pub fn links(request: &HttpRequest, collection: &str, id: &str) -> Value {
    let base = base_url(request);
    json!([
        {"rel": "self", "href": format!("{base}/v2.1/{collection}/{id}")},
        {"rel": "bookmark", "href": format!("{base}/{collection}/{id}")},
    ])
}

/// The `next` link of a page that filled its limit.
pub fn next_link(request: &HttpRequest, collection: &str, marker: &str, limit: i64) -> Value {
    json!([{
        "rel": "next",
        "href": format!("{}/v2.1/{collection}?limit={limit}&marker={marker}", base_url(request)),
    }])
}
