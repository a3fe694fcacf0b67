//! The Compute API against a real Ironic 39.0.0 and a real Glance 33.0.0 (issue 26): a flavor
//! with a required trait boots a server of a Glance image through `POST /compute/v2.1/servers`
//! onto one of Ironic's nodes with that trait, deployed by Ironic from the image's download
//! URL and checksum; `os-stop`, `os-start` and a reboot drive the node's power in Ironic; a
//! delete tears it down. The invariants are audited after every step.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{RealGlance, RealIronic, THREE_HOSTS, deployment_on, eventually_async};

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHd2L1V8kQ3cY0b0G0b4r0wJ3mHq8m0b2R0b4o5h9T0q ops@example";

async fn call(address: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    call_at(address, "2.100", method, path, body).await
}

async fn call_at(
    address: &str,
    version: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = crate::helpers::json_client()
        .request(method, format!("{address}/compute/v2.1{path}"))
        .header("x-auth-token", "admin")
        .header("openstack-api-version", format!("compute {version}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the Compute API answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[actix_web::test]
async fn a_server_boots_powers_and_goes_through_a_real_ironic() {
    let ironic = RealIronic::start();
    ironic.enroll(2);
    let gold = ironic.enroll_with(2, &["--trait", "CUSTOM_GOLD"]);
    let glance = RealGlance::start();
    let image = glance
        .image(
            json!({"name": "deploy", "visibility": "public"}),
            Some(b"disk image"),
        )
        .await;
    let shown_image = glance.show(&image).await;
    let d = deployment_on(&ironic, &THREE_HOSTS).await;
    let address = d.serve_configured(|config| {
        config.images.glance_url = Some(glance.url.clone());
        config.images.real_ironic = true;
    });

    let flavor = a_gold_flavor_and_a_key(&address).await;
    let (status, created) = call(
        &address,
        Method::POST,
        "/servers",
        Some(json!({"server": {
        "name": "gold-1", "imageRef": image, "flavorRef": flavor,
        "networks": "none", "key_name": "ops", "user_data": "aGVsbG8K"}})),
    )
    .await;
    assert_eq!(status, 202, "{created}");
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    let server = server_in(&address, &id, "ACTIVE").await;
    let node: uuid::Uuid = server["OS-EXT-SRV-ATTR:hypervisor_hostname"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(gold.contains(&node), "{node} has the trait");
    its_address_is_the_nodes(&server);
    ironic_got_what_novas_patcher_sends(
        &ironic,
        node,
        &id,
        (&glance, image.as_str(), &shown_image),
    )
    .await;
    d.audit();

    for (action, status, power) in [
        (json!({"os-stop": null}), "SHUTOFF", "power off"),
        (json!({"os-start": null}), "ACTIVE", "power on"),
        (json!({"reboot": {"type": "SOFT"}}), "ACTIVE", "power on"),
    ] {
        let (code, body) = call(
            &address,
            Method::POST,
            &format!("/servers/{id}/action"),
            Some(action.clone()),
        )
        .await;
        assert_eq!(code, 202, "{action}: {body}");
        let server = server_in(&address, &id, status).await;
        assert_eq!(server["OS-EXT-STS:task_state"], Value::Null, "{action}");
        assert_eq!(ironic.node(node).await["power_state"], power, "{action}");
        d.audit();
    }

    let (code, _) = call(&address, Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_eq!(code, 204);
    let shown = ironic.node(node).await;
    assert_eq!(shown["instance_uuid"], Value::Null);
    d.audit();
}

/// Waits (up to 2 minutes) for server `id` to be in `status`; returns it.
async fn server_in(address: &str, id: &str, status: &str) -> Value {
    eventually_async(
        Duration::from_secs(120),
        &format!("server {status}"),
        || async {
            let (_, body) = call(address, Method::GET, &format!("/servers/{id}"), None).await;
            (body["server"]["status"] == status).then_some(body["server"].clone())
        },
    )
    .await
}

/// Its address is the one the node's network_data gives it (scripts/ironic enroll).
fn its_address_is_the_nodes(server: &Value) {
    let shown_address = &server["addresses"]["baremetal"][0];
    assert!(
        shown_address["addr"]
            .as_str()
            .unwrap_or_default()
            .starts_with("198."),
        "{server}"
    );
    assert_eq!(shown_address["version"], 4);
}

/// A flavor of one gold node (its profile capability at 2.61, before Nova's validation knew
/// none) and a key pair; returns the flavor's id.
async fn a_gold_flavor_and_a_key(address: &str) -> String {
    let (status, flavor) = call(
        address,
        Method::POST,
        "/flavors",
        Some(json!({"flavor": {"name": "bm.gold", "ram": 1024, "vcpus": 1, "disk": 10}})),
    )
    .await;
    assert_eq!(status, 200, "{flavor}");
    let flavor = flavor["flavor"]["id"].as_str().unwrap().to_owned();
    // At 2.61: Nova's validation (2.86) knows no capabilities:profile.
    let (status, _) = call_at(
        address,
        "2.61",
        Method::POST,
        &format!("/flavors/{flavor}/os-extra_specs"),
        Some(
            json!({"extra_specs": {"resources:CUSTOM_BAREMETAL": "1", "resources:VCPU": "0",
            "resources:MEMORY_MB": "0", "resources:DISK_GB": "0", "trait:CUSTOM_GOLD": "required",
            "capabilities:profile": "gold"}}),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        address,
        Method::POST,
        "/os-keypairs",
        Some(json!({"keypair": {"name": "ops", "public_key": KEY}})),
    )
    .await;
    assert_eq!(status, 201);
    flavor
}

/// The node is active with the instance, and its instance_info is what Nova's patcher sends:
/// the flavor's disks, capabilities and traits, project and user, the image Ironic downloads
/// from Glance (checked) and a config drive carrying the key.
async fn ironic_got_what_novas_patcher_sends(
    ironic: &RealIronic,
    node: uuid::Uuid,
    id: &str,
    (glance, image, shown_image): (&RealGlance, &str, &Value),
) {
    let shown = ironic.node(node).await;
    assert_eq!(shown["provision_state"], "active");
    assert_eq!(shown["instance_uuid"], id);
    // What Nova's patcher sends: the flavor's disks, capabilities and traits, project and
    // user; and a config drive carrying the key.
    let info = &shown["instance_info"];
    assert_eq!(info["root_gb"], 10, "{info}");
    // A standalone Ironic downloads the image from Glance without Keystone, checking it.
    assert_eq!(
        info["image_source"],
        format!("{}/v2/images/{image}/file", glance.url)
    );
    assert_eq!(info["image_os_hash_algo"], shown_image["os_hash_algo"]);
    assert_eq!(info["image_os_hash_value"], shown_image["os_hash_value"]);
    assert_eq!(info["swap_mb"], 0);
    assert_eq!(info["project_id"], "admin");
    assert_eq!(info["user_id"], "admin");
    assert_eq!(info["traits"], json!(["CUSTOM_GOLD"]));
    assert_eq!(info["capabilities"], json!({"profile": "gold"}).to_string());
    assert!(
        info.get("configdrive").is_some(),
        "a config drive was built: {info}"
    );
}
