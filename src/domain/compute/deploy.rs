//! What a deploy of a Compute API server sends Ironic beyond the image and root disk, as
//! Nova's ironic driver does it (`nova/virt/ironic/patcher.py`, and the config drive Ironic
//! builds from JSON since API 1.56): the flavor's swap and ephemeral disks, its
//! `capabilities:*` specs, its required traits, the project and user, and a config drive with
//! the server's key and user data. Pure.

use serde_json::{Map, Value, json};

use super::extra_specs::placement_request;
use super::flavor::FlavorSnapshot;
use super::server::ServerRecord;

/// The `instance_info` of a Compute API server beyond the image and root disk (Nova's
/// `nova/virt/ironic/patcher.py`), and its config drive.
#[derive(Debug, Clone, Default)]
pub struct ServerDeploy {
    pub swap_mb: i32,
    pub ephemeral_gb: i32,
    /// The flavor's `capabilities:*` specs, by name.
    pub capabilities: serde_json::Map<String, serde_json::Value>,
    /// The flavor's required traits.
    pub traits: Vec<String>,
    pub project_id: String,
    pub user_id: String,
    /// The config drive for Ironic to build (API 1.56): `meta_data` with the instance and its
    /// key, and `user_data`; `None` when the server asked for none and has no key or data.
    pub configdrive: Option<serde_json::Value>,
    /// `instance_info` fields of the image resolved through the image service
    /// (`image_source`, and a URL's checksum), replacing the deployment's default image.
    pub image: Map<String, Value>,
}

/// The deploy of `server`, booted with `flavor` (its snapshot: Nova's embedded flavor).
pub fn server_deploy(server: &ServerRecord, flavor: &FlavorSnapshot) -> ServerDeploy {
    let specs: Vec<(String, String)> = flavor
        .extra_specs
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let capabilities: Map<String, Value> = specs
        .iter()
        .filter_map(|(key, value)| {
            Some((key.strip_prefix("capabilities:")?.to_owned(), json!(value)))
        })
        .collect();
    let mut image: Map<String, Value> = server
        .image
        .as_deref()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|doc| doc.as_object().cloned())
        .unwrap_or_default();
    let image_traits = image.remove("traits_required");
    let mut traits =
        placement_request(specs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).required_traits;
    // The image's required traits too, as Nova's patcher sends them.
    for name in image_traits.iter().filter_map(Value::as_array).flatten() {
        if let Some(name) = name.as_str()
            && !traits.iter().any(|known| known == name)
        {
            traits.push(name.to_owned());
        }
    }
    ServerDeploy {
        swap_mb: flavor.swap,
        ephemeral_gb: flavor.ephemeral,
        capabilities,
        traits,
        project_id: server.project_id.clone(),
        user_id: server.user_id.clone(),
        configdrive: configdrive(server),
        image,
    }
}

/// The config drive of `server`: asked for (`config_drive`), or carrying a key or user data
/// (without networking nothing else brings them to the machine).
fn configdrive(server: &ServerRecord) -> Option<Value> {
    let asked = server.config_drive.as_deref() == Some("True");
    if !asked && server.key_data.is_none() && server.user_data.is_none() {
        return None;
    }
    let mut meta = json!({
        "uuid": server.uuid,
        "name": server.name,
        "hostname": super::server::hostname(&server.name),
        "launch_index": 0,
        "availability_zone": server.availability_zone.clone().unwrap_or_else(|| "nova".to_owned()),
        "project_id": server.project_id,
        "meta": {},
        "devices": [],
    });
    if let (Some(name), Some(key)) = (&server.key_name, &server.key_data) {
        meta["public_keys"] = json!({ name: key });
        meta["keys"] = json!([{"name": name, "type": "ssh", "data": key}]);
    }
    let mut drive = json!({ "meta_data": meta });
    if let Some(data) = server
        .user_data
        .as_deref()
        .and_then(crate::domain::text::decode_base64)
    {
        drive["user_data"] = json!(String::from_utf8_lossy(&data));
    }
    Some(drive)
}
