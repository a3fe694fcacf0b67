//! A server as Nova's view builder shows it at each microversion: every key of Nova's samples,
//! the extended attributes (host, node as `hypervisor_hostname`, …) for admins.

use actix_web::HttpRequest;
use serde_json::{Value, json};
use sha2::Digest;

use super::auth::Caller;
use super::common::{self, Version};
use crate::domain::compute::flavor::{BootedFlavor, FlavorSnapshot};
use crate::domain::compute::server::{ServerRecord, status};

/// Nova's time format of `created`/`updated` (`utils.isotime`).
fn isotime(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Nova's format of `OS-SRV-USG:*` (a naive datetime's `isoformat`).
fn naive(at: chrono::DateTime<chrono::Utc>) -> String {
    at.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// `hostId`: sha224 of project and host, as Nova hides the host from tenants.
fn host_id(server: &ServerRecord) -> String {
    match &server.host {
        Some(host) if !host.is_empty() => {
            let digest = sha2::Sha224::digest(format!("{}{host}", server.project_id).as_bytes());
            digest.iter().map(|b| format!("{b:02x}")).collect()
        }
        _ => String::new(),
    }
}

/// The embedded flavor: a link before 2.47, the flavor as booted from 2.47.
fn flavor(request: &HttpRequest, version: Version, server: &ServerRecord) -> Value {
    // An instance of the admin API: its flavor is its resource class.
    let booted = match &server.flavor {
        Some(BootedFlavor::Snapshot(snapshot)) => snapshot.clone(),
        Some(BootedFlavor::ResourceClass(class)) => FlavorSnapshot {
            original_name: class.clone(),
            ..FlavorSnapshot::default()
        },
        None => FlavorSnapshot::default(),
    };
    if version.at_least(47) {
        json!({
            "vcpus": booted.vcpus,
            "ram": booted.ram,
            "disk": booted.disk,
            "ephemeral": booted.ephemeral,
            "swap": booted.swap,
            "original_name": booted.original_name,
            "extra_specs": booted.extra_specs,
        })
    } else {
        let id = booted.id;
        json!({
            "id": id,
            "links": [{"rel": "bookmark", "href": format!("{}/flavors/{id}", common::base_url(request))}],
        })
    }
}

fn image(request: &HttpRequest, version: Version, server: &ServerRecord) -> Value {
    match server
        .image_ref
        .as_deref()
        .filter(|image| !image.is_empty())
    {
        None => json!(""),
        Some(id) => {
            let mut image = json!({
                "id": id,
                "links": [{"rel": "bookmark", "href": format!("{}/images/{id}", common::base_url(request))}],
            });
            if version.at_least(98) {
                image["properties"] = json!({});
            }
            image
        }
    }
}

/// The short view of `GET /servers`.
pub fn brief(request: &HttpRequest, server: &ServerRecord) -> Value {
    let id = server.uuid.to_string();
    json!({"id": id, "name": server.name, "links": common::links(request, "servers", &id)})
}

/// Its node's addresses (`domain::compute::addresses`), else none.
fn addresses(server: &ServerRecord) -> Value {
    server
        .addresses
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_else(|| json!({}))
}

/// The full view of show and `GET /servers/detail`.
pub fn full(
    request: &HttpRequest,
    version: Version,
    caller: &Caller,
    server: &ServerRecord,
) -> Value {
    let id = server.uuid.to_string();
    let state = status(&server.vm_state, server.task_state.as_deref());
    let mut view = json!({
        "accessIPv4": "", "accessIPv6": "", "addresses": addresses(server),
        "created": isotime(server.created_at),
        "flavor": flavor(request, version, server),
        "hostId": host_id(server),
        "id": id,
        "image": image(request, version, server),
        "links": common::links(request, "servers", &id),
        "metadata": {},
        "name": server.name,
        "status": state,
        "tenant_id": server.project_id,
        "user_id": server.user_id,
        "updated": isotime(server.updated_at.unwrap_or(server.created_at)),
        "OS-DCF:diskConfig": "MANUAL",
        "OS-EXT-AZ:availability_zone": server.availability_zone.clone().unwrap_or_default(),
        "config_drive": server.config_drive.clone().unwrap_or_default(),
        "key_name": server.key_name,
        "OS-SRV-USG:launched_at": server.launched_at.map(naive),
        "OS-SRV-USG:terminated_at": server.terminated_at.map(naive),
        "security_groups": [{"name": "default"}],
        "OS-EXT-STS:task_state": server.task_state,
        "OS-EXT-STS:vm_state": server.vm_state,
        "OS-EXT-STS:power_state": server.power_state,
        "os-extended-volumes:volumes_attached": [],
    });
    if matches!(state, "ERROR" | "DELETED")
        && let Some((message, at)) = &server.fault
    {
        view["fault"] = json!({"code": 500, "created": isotime(*at), "message": message});
    }
    if matches!(state, "ACTIVE" | "BUILD") {
        view["progress"] = json!(0);
    }
    let hostname = crate::domain::compute::server::hostname(&server.name);
    if caller.is_admin() {
        view["OS-EXT-SRV-ATTR:host"] = json!(server.host);
        view["OS-EXT-SRV-ATTR:hypervisor_hostname"] = json!(server.node);
        view["OS-EXT-SRV-ATTR:instance_name"] = json!(format!("instance-{}", &id[..8]));
        if version.at_least(3) {
            view["OS-EXT-SRV-ATTR:hostname"] = json!(hostname);
            view["OS-EXT-SRV-ATTR:kernel_id"] = json!("");
            view["OS-EXT-SRV-ATTR:ramdisk_id"] = json!("");
            view["OS-EXT-SRV-ATTR:launch_index"] = json!(0);
            view["OS-EXT-SRV-ATTR:reservation_id"] = json!(format!("r-{}", &id[..8]));
            view["OS-EXT-SRV-ATTR:root_device_name"] = Value::Null;
            view["OS-EXT-SRV-ATTR:user_data"] = json!(server.user_data);
        }
    } else if version.at_least(90) {
        view["OS-EXT-SRV-ATTR:hostname"] = json!(hostname);
    }
    versioned(&mut view, version, caller, server);
    view
}

/// The keys later microversions add.
fn versioned(view: &mut Value, version: Version, caller: &Caller, server: &ServerRecord) {
    if version.at_least(9) {
        view["locked"] = json!(false);
    }
    if version.at_least(16) && caller.is_admin() && server.host.is_some() {
        view["host_status"] = json!("UP");
    }
    if version.at_least(19) {
        view["description"] = Value::Null;
    }
    if version.at_least(26) {
        view["tags"] = json!([]);
    }
    if version.at_least(63) {
        view["trusted_image_certificates"] = Value::Null;
    }
    if version.at_least(71) {
        view["server_groups"] = json!([]);
    }
    if version.at_least(73) {
        view["locked_reason"] = Value::Null;
    }
    if version.at_least(96) {
        view["pinned_availability_zone"] = json!(server.availability_zone);
    }
    if version.at_least(100) {
        view["scheduler_hints"] = json!({});
    }
}
