//! What Nova's request schema checks in a `POST /servers` body beyond what ringmaster uses,
//! at the asked microversion: the fields it stores or ignores must still be what Nova takes
//! (400 naming the field otherwise), and a field is refused before the microversion that
//! added it (`description` 2.19, `tags` 2.52, `trusted_image_certificates` 2.63, `host` and
//! `hypervisor_hostname` 2.74, `hostname` 2.90) or after the one that removed it
//! (`personality` 2.57).

use serde_json::{Map, Value};

use super::auth::Caller;
use super::common::Version;
use super::error::ComputeError;

/// The only availability zone: Nova's `default_availability_zone`, where every host is.
pub const AVAILABILITY_ZONE: &str = "nova";

/// The most tags a server carries (Nova's `MAX_TAGS`).
const MAX_TAGS: usize = 50;

fn invalid(field: &str, value: &Value, why: &str) -> ComputeError {
    let mut shown = value.to_string();
    if shown.len() > 80 {
        let cut = (0..=80)
            .rev()
            .find(|at| shown.is_char_boundary(*at))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push('…');
    }
    ComputeError::bad_request(format!(
        "Invalid input for field/attribute {field}. Value: {shown}. {why}"
    ))
}

fn unexpected(key: &str) -> ComputeError {
    ComputeError::bad_request(format!(
        "Invalid input for field/attribute server. Additional properties are not allowed \
         ('{key}' was unexpected)"
    ))
}

/// A string of at most `max` characters (at least `min`).
fn text(field: &str, value: &Value, min: usize, max: usize) -> Result<(), ComputeError> {
    let Some(text) = value.as_str() else {
        return Err(invalid(field, value, "is not of type 'string'"));
    };
    let length = text.chars().count();
    if length < min {
        return Err(invalid(field, value, "is too short"));
    }
    if length > max {
        return Err(invalid(field, value, "is too long"));
    }
    Ok(())
}

/// A list whose every item `item` takes.
fn list(
    field: &str,
    value: &Value,
    item: impl Fn(&Value) -> Result<(), ComputeError>,
) -> Result<(), ComputeError> {
    let Some(items) = value.as_array() else {
        return Err(invalid(field, value, "is not of type 'array'"));
    };
    items.iter().try_for_each(item)
}

fn object_with_name(field: &str, value: &Value) -> Result<(), ComputeError> {
    match value.get("name") {
        Some(name) if value.is_object() => text(&format!("{field}.name"), name, 1, 255),
        _ => Err(invalid(field, value, "is not an object with a 'name'")),
    }
}

/// A host name as 2.90 takes it (letters, digits, `-`, `.` and `_`), or from 2.94 a fully
/// qualified one (labels of 1 to 63 letters, digits and `-`, not at either end).
fn hostname(value: &Value, fqdn: bool) -> Result<(), ComputeError> {
    text("hostname", value, 1, 255)?;
    let name = value.as_str().unwrap_or_default();
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    let ok = if fqdn {
        name.strip_suffix('.')
            .unwrap_or(name)
            .split('.')
            .all(label_ok)
    } else {
        name.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    };
    if ok {
        Ok(())
    } else {
        Err(invalid("hostname", value, "is not a valid host name"))
    }
}

fn tag(value: &Value) -> Result<(), ComputeError> {
    text("tags", value, 1, 60)?;
    if value
        .as_str()
        .is_some_and(|t| t.contains('/') || t.contains(','))
    {
        return Err(invalid("tags", value, "must not contain '/' or ','"));
    }
    Ok(())
}

fn metadata(value: &Value) -> Result<(), ComputeError> {
    let Some(items) = value.as_object() else {
        return Err(invalid("metadata", value, "is not of type 'object'"));
    };
    for (key, item) in items {
        if key.is_empty() || key.chars().count() > 255 {
            return Err(invalid(
                "metadata",
                value,
                "has a key of 0 or over 255 characters",
            ));
        }
        text(&format!("metadata.{key}"), item, 0, 255)?;
    }
    Ok(())
}

/// The availability zone asked: the one there is, else Nova's 400.
fn availability_zone(value: &Value) -> Result<(), ComputeError> {
    if value.is_null() {
        return Ok(());
    }
    text("availability_zone", value, 1, 255)?;
    let zone = value.as_str().unwrap_or_default();
    if zone.contains(':') {
        return Err(ComputeError::bad_request(
            "ringmaster does not place a server on a host named in availability_zone \
             ('zone:host:node'); boot without one",
        ));
    }
    if zone != AVAILABILITY_ZONE {
        return Err(ComputeError::bad_request(
            "The requested availability zone is not available",
        ));
    }
    Ok(())
}

/// Checks each field of `server` Nova's schema checks at `version` and ringmaster does not
/// read elsewhere.
pub fn check_fields(
    server: &Map<String, Value>,
    version: Version,
    caller: &Caller,
) -> Result<(), ComputeError> {
    for (key, since) in [
        ("description", 19),
        ("tags", 52),
        ("trusted_image_certificates", 63),
        ("host", 74),
        ("hypervisor_hostname", 74),
        ("hostname", 90),
    ] {
        if server.contains_key(key) && !version.at_least(since) {
            return Err(unexpected(key));
        }
    }
    if server.contains_key("personality") && version.at_least(57) {
        return Err(unexpected("personality"));
    }
    for (key, value) in server {
        match key.as_str() {
            "description" if !value.is_null() => text(key, value, 0, 255)?,
            "hostname" => hostname(value, version.at_least(94))?,
            "adminPass" => text(key, value, 0, usize::MAX)?,
            "availability_zone" => availability_zone(value)?,
            "metadata" => metadata(value)?,
            "block_device_mapping_v2" | "block_device_mapping" => list(key, value, |item| {
                item.is_object()
                    .then_some(())
                    .ok_or_else(|| invalid(key, item, "is not of type 'object'"))
            })?,
            "security_groups" => list(key, value, |item| object_with_name(key, item))?,
            "personality" => list(key, value, |item| {
                match (item.get("path"), item.get("contents")) {
                    (Some(path), Some(contents)) => {
                        text("personality.path", path, 0, 255)?;
                        text("personality.contents", contents, 0, usize::MAX)
                    }
                    _ => Err(invalid(key, item, "needs 'path' and 'contents'")),
                }
            })?,
            "tags" => {
                list(key, value, tag)?;
                if value.as_array().is_some_and(|tags| tags.len() > MAX_TAGS) {
                    return Err(invalid(key, value, "has more than 50 items"));
                }
            }
            "host" | "hypervisor_hostname" => {
                caller.require_admin("compute:servers:create:requested_destination")?;
                text(key, value, 1, 255)?;
            }
            _ => {}
        }
    }
    Ok(())
}
