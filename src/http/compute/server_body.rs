//! A `POST /servers` body read as Nova 2.100 reads it: counts, references, networks, user
//! data and config drive, and what the flavor asks of the scheduler.

use serde_json::{Map, Value};
use uuid::Uuid;

use super::common::{self, Version};
use super::error::ComputeError;
use crate::domain::boot::{BootRequest, Destination};
use crate::domain::compute::extra_specs::placement_request;
use crate::domain::compute::flavor::{Flavor, FlavorSnapshot, Scalar};
use crate::domain::compute::server::ServerRequest;

/// The properties of `server` in a create body Nova 2.100 takes; those ringmaster has no use
/// for (networking, volumes, hints) are accepted and ignored, as documented.
pub const CREATE_PROPERTIES: &[&str] = &[
    "name",
    "imageRef",
    "flavorRef",
    "min_count",
    "max_count",
    "return_reservation_id",
    "networks",
    "key_name",
    "user_data",
    "config_drive",
    "availability_zone",
    "metadata",
    "security_groups",
    "block_device_mapping_v2",
    "block_device_mapping",
    "description",
    "hostname",
    "adminPass",
    "accessIPv4",
    "accessIPv6",
    "OS-DCF:diskConfig",
    "tags",
    "trusted_image_certificates",
    "host",
    "hypervisor_hostname",
    "personality",
];

/// The most servers one request creates.
const MAX_COUNT: i64 = 1000;

pub fn count(server: &Map<String, Value>, key: &str, default: i64) -> Result<i64, ComputeError> {
    let value = match common::scalar(server, key) {
        Scalar::Absent => return Ok(default),
        Scalar::Int(number) => number,
        Scalar::Text(text) if text.parse::<i64>().is_ok() => text.parse().unwrap_or(default),
        other => {
            return Err(ComputeError::bad_request(format!(
                "Invalid input for field/attribute {key}. Value: {other:?}. is not of type \
                 'integer', 'string'"
            )));
        }
    };
    if !(1..=MAX_COUNT).contains(&value) {
        return Err(ComputeError::bad_request(format!(
            "Invalid input for field/attribute {key}. Value: {value}. must be from 1 to \
             {MAX_COUNT}"
        )));
    }
    Ok(value)
}

/// The last path segment of a reference (`flavorRef` and `imageRef` may be URLs).
pub fn reference(server: &Map<String, Value>, key: &str) -> Option<String> {
    let text = match server.get(key)? {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        _ => return None,
    };
    let last = text.trim_end_matches('/').rsplit('/').next()?.to_owned();
    (!last.is_empty()).then_some(last)
}

/// The image a create boots: `imageRef`, or the image of the boot device of
/// `block_device_mapping_v2`.
pub fn image_of(server: &Map<String, Value>) -> Result<String, ComputeError> {
    let from_bdm = server
        .get("block_device_mapping_v2")
        .and_then(Value::as_array)
        .and_then(|devices| {
            devices.iter().find(|device| {
                device.get("source_type").and_then(Value::as_str) == Some("image")
                    && device.get("boot_index").and_then(Value::as_i64) == Some(0)
            })
        })
        .and_then(|device| device.get("uuid").and_then(Value::as_str))
        .map(str::to_owned);
    let image = reference(server, "imageRef").or(from_bdm);
    match image {
        Some(image) if Uuid::parse_str(&image).is_ok() => Ok(image),
        _ => Err(ComputeError::bad_request("Invalid imageRef provided.")),
    }
}

/// `networks`: `"none"` and `"auto"` both mean no networking; ringmaster manages none.
pub fn check_networks(server: &Map<String, Value>, version: Version) -> Result<(), ComputeError> {
    match server.get("networks") {
        None => Ok(()),
        Some(Value::String(text)) if (text == "none" || text == "auto") && version.at_least(37) => {
            Ok(())
        }
        Some(Value::Array(list)) if list.is_empty() => Ok(()),
        Some(Value::Array(_)) => Err(ComputeError::bad_request(
            "ringmaster manages no networking: send \"networks\": \"none\" or \"auto\" (2.37 and \
             later), not a list of networks or ports",
        )),
        Some(other) => Err(ComputeError::bad_request(format!(
            "Invalid input for field/attribute networks. Value: {other}. is not valid under \
             any of the given schemas"
        ))),
    }
}

/// What the flavor and the body ask of the scheduler.
pub fn server_request(
    server: &Map<String, Value>,
    flavor: &Flavor,
    image_ref: String,
) -> Result<BootRequest, ComputeError> {
    let asked = placement_request(
        flavor
            .extra_specs
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str())),
    );
    let custom: Vec<&(String, i64)> = asked
        .resources
        .iter()
        .filter(|(class, _)| class.starts_with("CUSTOM_"))
        .collect();
    let placement_class = match custom.as_slice() {
        [(class, 1)] => class.clone(),
        _ => {
            return Err(ComputeError::bad_request(format!(
                "Flavor {} asks for no bare-metal node: it needs exactly one custom resource \
                 class of amount 1 (resources:CUSTOM_<CLASS>=1), as Ironic's flavors do",
                flavor.flavorid
            )));
        }
    };
    let user_data = match server.get("user_data") {
        None | Some(Value::Null) => None,
        Some(Value::String(text))
            if text.len() <= 65535 && crate::domain::text::decode_base64(text).is_some() =>
        {
            Some(text.clone())
        }
        Some(_) => {
            return Err(ComputeError::bad_request(
                "Invalid input for field/attribute user_data. must be base64 of at most 65535 \
                 characters",
            ));
        }
    };
    let config_drive = match common::scalar(server, "config_drive") {
        Scalar::Absent | Scalar::Null => false,
        Scalar::Bool(flag) => flag,
        Scalar::Text(text) if text.is_empty() => false,
        Scalar::Text(text) => crate::domain::compute::extra_specs::bool_like(&text)
            .ok_or_else(|| ComputeError::bad_request("Invalid config_drive provided."))?,
        _ => return Err(ComputeError::bad_request("Invalid config_drive provided.")),
    };
    let recorded = ServerRequest {
        image_ref,
        flavor: FlavorSnapshot::of(flavor),
        key_name: None,
        key_data: None,
        user_data,
        config_drive,
        availability_zone: server
            .get("availability_zone")
            .and_then(Value::as_str)
            .map(str::to_owned),
        image: None,
    };
    Ok(BootRequest {
        placement_class,
        ironic_class: None,
        required_traits: asked.required_traits,
        forbidden_traits: asked.forbidden_traits,
        pci_devices: 0,
        destination: Destination::default(),
        server: Some(recorded),
    })
}
