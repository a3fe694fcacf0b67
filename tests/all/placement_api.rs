//! The Placement API's foundation: the version document, microversion negotiation, noauth2
//! authentication, the error envelope, resource classes and traits.

use serde_json::{Value, json};

use crate::helpers::TestApp;

#[actix_web::test]
async fn the_version_document_needs_no_token_and_versions_are_negotiated() {
    let app = TestApp::spawn().await;
    let (status, headers, body) = app
        .placement(reqwest::Method::GET, "/placement/")
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT",
                             "links": [{"rel": "self", "href": ""}]}]})
    );
    assert_eq!(headers["openstack-api-version"], "placement 1.0");
    assert_eq!(headers["vary"], "openstack-api-version");

    let (_, headers, _) = app
        .placement(reqwest::Method::GET, "/placement/")
        .version("latest")
        .send()
        .await;
    assert_eq!(headers["openstack-api-version"], "placement 1.39");
    let (status, _, body) = app
        .placement(reqwest::Method::GET, "/placement/")
        .version("1.40")
        .send()
        .await;
    assert_eq!(status, 406);
    assert_eq!(
        body["errors"][0]["detail"],
        "Unacceptable version header: 1.40"
    );
    assert_eq!(body["errors"][0]["title"], "Not Acceptable");
    let (status, _, body) = app
        .placement(reqwest::Method::GET, "/placement/")
        .version("pony.horse")
        .send()
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"][0]["detail"],
        "invalid version string: pony.horse"
    );
}

#[actix_web::test]
async fn everything_else_needs_an_admin_token() {
    let app = TestApp::spawn().await;
    let (status, _, body) = app
        .placement(reqwest::Method::GET, "/placement/resource_classes")
        .version("1.2")
        .send()
        .await;
    assert_eq!(status, 401);
    assert_eq!(body["errors"][0]["code"], "placement.undefined_code");
    assert!(
        body["errors"][0]["request_id"]
            .as_str()
            .unwrap()
            .starts_with("req-")
    );
    for (token, expected) in [("user", 403), ("admin", 200)] {
        let path = "/placement/resource_classes";
        let status = status_of(&app, reqwest::Method::GET, path, ("1.2", token)).await;
        assert_eq!(status, expected, "{token}");
    }
}

#[actix_web::test]
async fn custom_resource_classes_and_traits_come_and_go() {
    let app = TestApp::spawn().await;
    let (status, _, body) = app
        .placement(reqwest::Method::GET, "/placement/resource_classes")
        .version("1.2")
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["resource_classes"].as_array().unwrap().len(),
        21,
        "the standard classes"
    );
    assert_eq!(
        body["resource_classes"][0],
        json!({"name": "VCPU", "links": [{"rel": "self", "href": "/placement/resource_classes/VCPU"}]})
    );

    let (status, headers, _) = app
        .placement(reqwest::Method::POST, "/placement/resource_classes")
        .version("1.2")
        .token("admin")
        .json(json!({"name": "CUSTOM_GOLD"}))
        .send()
        .await;
    assert_eq!(status, 201);
    assert_eq!(
        headers["location"],
        app.url("/placement/resource_classes/CUSTOM_GOLD").as_str(),
        "absolute, as webob sends it"
    );
    let (status, _, body) = app
        .placement(reqwest::Method::POST, "/placement/resource_classes")
        .version("1.2")
        .token("admin")
        .json(json!({"name": "CUSTOM_GOLD"}))
        .send()
        .await;
    assert_eq!(status, 409, "{body}");
    let (status, _, body) = app
        .placement(reqwest::Method::POST, "/placement/resource_classes")
        .version("1.2")
        .token("admin")
        .json(json!({"name": "GOLD"}))
        .send()
        .await;
    assert_eq!(status, 400);
    assert!(detail(&body).starts_with("JSON does not validate"));
    let status = status_of(
        &app,
        reqwest::Method::PUT,
        "/placement/resource_classes/CUSTOM_GOLD",
        ("1.7", "admin"),
    )
    .await;
    assert_eq!(status, 204, "already there");
    // A standard class stays (400); a custom one goes, and is gone.
    for (method, class, expected) in [
        (reqwest::Method::DELETE, "VCPU", 400),
        (reqwest::Method::DELETE, "CUSTOM_GOLD", 204),
        (reqwest::Method::GET, "CUSTOM_GOLD", 404),
    ] {
        let path = format!("/placement/resource_classes/{class}");
        let status = status_of(&app, method.clone(), &path, ("1.2", "admin")).await;
        assert_eq!(status, expected, "{method} {path}");
    }

    custom_traits_come_and_go(&app).await;
}

async fn custom_traits_come_and_go(app: &TestApp) {
    let status = status_of(
        app,
        reqwest::Method::PUT,
        "/placement/traits/CUSTOM_FAST",
        ("1.6", "admin"),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _, body) = app
        .placement(
            reqwest::Method::GET,
            "/placement/traits?name=startswith:CUSTOM",
        )
        .version("1.6")
        .token("admin")
        .send()
        .await;
    assert_eq!((status, body), (200, json!({"traits": ["CUSTOM_FAST"]})));
    let (status, _, body) = app
        .placement(reqwest::Method::GET, "/placement/traits")
        .version("1.6")
        .token("admin")
        .send()
        .await;
    assert_eq!(
        (status, body["traits"].as_array().unwrap().len()),
        (200, 378)
    );
    let status = status_of(
        app,
        reqwest::Method::GET,
        "/placement/traits",
        ("1.5", "admin"),
    )
    .await;
    assert_eq!(status, 404, "traits arrived in 1.6");
    let status = status_of(
        app,
        reqwest::Method::DELETE,
        "/placement/traits/CUSTOM_FAST",
        ("1.6", "admin"),
    )
    .await;
    assert_eq!(status, 204);
    let (status, headers, _) = app
        .placement(reqwest::Method::POST, "/placement/traits")
        .version("1.6")
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 405);
    assert_eq!(headers["allow"], "GET");
}

#[actix_web::test]
async fn resource_providers_form_trees_and_keep_their_names_unique() {
    let app = TestApp::spawn().await;
    let parent = "8d4b0b1e-6a64-4d8b-9b37-6d2f7a5f1a01";
    let child = "8d4b0b1e-6a64-4d8b-9b37-6d2f7a5f1a02";
    let (status, headers, body) = app
        .placement(reqwest::Method::POST, "/placement/resource_providers")
        .version("1.19")
        .token("admin")
        .json(json!({"name": "rack-1", "uuid": parent}))
        .send()
        .await;
    assert_eq!(
        (status, body),
        (201, Value::Null),
        "before 1.20: 201 without a body"
    );
    assert_eq!(
        headers["location"],
        app.url(&format!("/placement/resource_providers/{parent}"))
            .as_str()
    );

    let (status, _, body) = app
        .placement(reqwest::Method::POST, "/placement/resource_providers")
        .version("1.20")
        .token("admin")
        .json(json!({"name": "node-1", "uuid": child, "parent_provider_uuid": parent}))
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["root_provider_uuid"], parent);
    assert_eq!(body["parent_provider_uuid"], parent);
    assert_eq!(body["generation"], 0);

    let (status, _, body) = app
        .placement(reqwest::Method::POST, "/placement/resource_providers")
        .version("1.20")
        .token("admin")
        .json(json!({"name": "node-1"}))
        .send()
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["errors"][0]["code"], "placement.duplicate_name");
    assert_eq!(
        body["errors"][0]["detail"],
        "Conflicting resource provider name: node-1 already exists."
    );

    a_tree_is_listed_and_a_child_moves_out_and_back(&app, (parent, child)).await;
    a_parent_goes_only_after_its_children(&app, (parent, child)).await;
}

/// `in_tree` lists the tree; a bad uuid filter is 400; the child leaves its parent (1.37 only)
/// and comes back.
async fn a_tree_is_listed_and_a_child_moves_out_and_back(
    app: &TestApp,
    (parent, child): (&str, &str),
) {
    let (status, _, body) = app
        .placement(
            reqwest::Method::GET,
            &format!("/placement/resource_providers?in_tree={child}"),
        )
        .version("1.14")
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["resource_providers"].as_array().unwrap().len(), 2);
    let (status, _, body) = app
        .placement(
            reqwest::Method::GET,
            "/placement/resource_providers?uuid=nope",
        )
        .version("1.14")
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 400);
    assert!(detail(&body).starts_with("Invalid query string parameters"));

    let (status, _, body) = app
        .placement(
            reqwest::Method::PUT,
            &format!("/placement/resource_providers/{child}"),
        )
        .version("1.36")
        .token("admin")
        .json(json!({"name": "node-1b", "parent_provider_uuid": null}))
        .send()
        .await;
    assert_eq!(status, 400, "un-parenting needs 1.37: {body}");
    let (status, _, body) = app
        .placement(
            reqwest::Method::PUT,
            &format!("/placement/resource_providers/{child}"),
        )
        .version("1.37")
        .token("admin")
        .json(json!({"name": "node-1b", "parent_provider_uuid": null}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["name"].clone(), body["root_provider_uuid"].clone()),
        (json!("node-1b"), json!(child))
    );

    let (status, _, _) = app
        .placement(
            reqwest::Method::PUT,
            &format!("/placement/resource_providers/{child}"),
        )
        .version("1.37")
        .token("admin")
        .json(json!({"name": "node-1b", "parent_provider_uuid": parent}))
        .send()
        .await;
    assert_eq!(status, 200);
}

/// A parent with a child is not deleted (409); child first, then the parent.
async fn a_parent_goes_only_after_its_children(app: &TestApp, (parent, child): (&str, &str)) {
    let (status, _, body) = app
        .placement(
            reqwest::Method::DELETE,
            &format!("/placement/resource_providers/{parent}"),
        )
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        body["errors"][0]["code"],
        "placement.resource_provider.cannot_delete_parent"
    );
    for uuid in [child, parent] {
        let (status, _, _) = app
            .placement(
                reqwest::Method::DELETE,
                &format!("/placement/resource_providers/{uuid}"),
            )
            .token("admin")
            .send()
            .await;
        assert_eq!(status, 204);
    }
    let (status, _, body) = app
        .placement(reqwest::Method::GET, "/placement/resource_providers")
        .token("admin")
        .send()
        .await;
    assert_eq!((status, body), (200, json!({"resource_providers": []})));
}

/// The status Placement answers `method path` sent at microversion `version` with `token`.
async fn status_of(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    (version, token): (&str, &str),
) -> u16 {
    app.placement(method, path)
        .version(version)
        .token(token)
        .send()
        .await
        .0
}

/// The `detail` of the first error of a Placement error body.
fn detail(body: &Value) -> &str {
    body["errors"][0]["detail"].as_str().unwrap_or_default()
}
