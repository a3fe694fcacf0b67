//! A server's image through a real Glance 33.0.0 (issue 26, `--glance-url`): an active image
//! boots; an unknown or queued image, and an image service that is down, are refused before
//! anything is claimed; an image's required trait is scheduled on like a flavor's.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    RealGlance, TestApp, create_bare_metal_flavor, create_server, one_host_four_nodes, rows,
    wait_for_status,
};

/// The create body of a server of `flavor` booting `image`.
fn server_body(image: &str, flavor: &str) -> Value {
    json!({"server": {"name": "img", "imageRef": image, "flavorRef": flavor, "networks": "none"}})
}

/// Instances and allocations, which a refused create must leave as they were.
fn claimed(app: &TestApp) -> (i64, i64) {
    (
        rows(app, "SELECT count(*) FROM instances"),
        rows(app, "SELECT count(*) FROM allocations"),
    )
}

#[actix_web::test]
async fn images_are_resolved_through_glance_before_any_claim() {
    let glance = RealGlance::start();
    let url = glance.url.clone();
    let app = TestApp::spawn_configured(|config| config.images.glance_url = Some(url)).await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let active = glance
        .image(
            json!({"name": "active", "visibility": "public"}),
            Some(b"disk"),
        )
        .await;
    let queued = glance.image(json!({"name": "queued"}), None).await;
    let needs_raid = glance
        .image(
            json!({"name": "raid", "trait:CUSTOM_RAID": "required"}),
            Some(b"disk"),
        )
        .await;

    for (image, message) in [
        (
            "0b0d0f0e-1111-4222-8333-444455556666",
            "Can not find requested image 0b0d0f0e-1111-4222-8333-444455556666",
        ),
        (queued.as_str(), "is not active (its status is queued)"),
    ] {
        let before = claimed(&app);
        let (status, body) = create_server(&app, "admin", server_body(image, &flavor)).await;
        assert_eq!(status, 400, "{body}");
        let said = body["badRequest"]["message"].as_str().unwrap_or_default();
        assert!(said.contains(message), "{said}");
        assert_eq!(claimed(&app), before, "nothing written for {image}");
    }

    let (status, body) = create_server(&app, "admin", server_body(&active, &flavor)).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    let server = wait_for_status(&app, "admin", &id, "ACTIVE").await;
    assert_eq!(server["image"]["id"], active.as_str());
    let kept = rows(
        &app,
        &format!(
            "SELECT count(*) FROM instance_extra WHERE instance_uuid = '{id}' \
             AND image::jsonb->>'image_source' = '{active}'"
        ),
    );
    assert_eq!(kept, 1, "the resolved image is kept for the deploy");

    // No node has CUSTOM_RAID: the image's required trait makes it No valid host.
    let (status, body) = create_server(&app, "admin", server_body(&needs_raid, &flavor)).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    let server = wait_for_status(&app, "admin", &id, "ERROR").await;
    assert!(
        server["fault"]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("No valid host was found"),
        "{server}"
    );

    // The image service goes away: 503 in Nova's envelope, nothing claimed, nothing leaked.
    glance.stop();
    let before = claimed(&app);
    let (status, _, body) = app
        .compute(Method::POST, "/servers")
        .version("2.37")
        .json(server_body(&active, &flavor))
        .send()
        .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        body["serviceUnavailable"]["message"],
        "The image service is not available now."
    );
    assert_eq!(claimed(&app), before);
}
