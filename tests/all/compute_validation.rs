//! No 500 from what PostgreSQL cannot take, and a create body checked as Nova's request schema
//! checks it (issue 44, item 6): a pattern PostgreSQL's `~` cannot run is 400, not 500; an
//! availability zone too long or not there is 400; each field Nova's schema checks is checked
//! at the asked microversion; a `limit` over the maximum is capped; a body that is not JSON is
//! 415. Nothing refused is written.

use reqwest::Method;
use serde_json::{Value, json};

use crate::api_admin::one_host_four_nodes;
use crate::compute_flavors::{create_bare_metal_flavor, rows};
use crate::compute_policy::IMAGE;
use crate::helpers::TestApp;

#[actix_web::test]
async fn patterns_postgresql_cannot_run_are_400_and_limits_are_capped() {
    let app = TestApp::spawn().await;
    for query in [
        "name=%5Cp%7BL%7D",
        "ip=(%3FP%3Cx%3E1)",
        "ip6=(%3FP%3Cx%3E1)",
        "name=(",
    ] {
        let (status, _, body) = app
            .compute(Method::GET, &format!("/servers?{query}"))
            .send()
            .await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body["badRequest"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Invalid regular expression for "),
            "{query}: {body}"
        );
    }
    // A pattern PostgreSQL takes and Rust's regex does not (a back reference) is run.
    let (status, _, body) = app
        .compute(Method::GET, "/servers?name=(a)%5C1")
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    for (query, says) in [
        ("sort_key=colour", "is not one of"),
        ("sort_dir=up", "is not one of"),
        ("sort_key=display_name", "by created_at only"),
    ] {
        let (status, _, body) = app
            .compute(Method::GET, &format!("/servers?{query}"))
            .send()
            .await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.to_string().contains(says), "{query}: {body}");
    }
    for path in [
        "/servers?sort_key=created_at&sort_dir=asc",
        "/servers?limit=5000",
        "/servers/detail?limit=99999999999999999999999",
        "/os-keypairs?limit=5000",
        "/flavors?limit=5000",
    ] {
        let (status, _, body) = app.compute(Method::GET, path).version("2.92").send().await;
        assert_eq!(status, 200, "{path}: {body}");
    }
}

async fn create(
    app: &TestApp,
    version: &str,
    token: &str,
    extra: Value,
    flavor: &str,
) -> (u16, Value) {
    let mut server =
        json!({"name": "s", "imageRef": IMAGE, "flavorRef": flavor, "networks": "none"});
    for (key, value) in extra.as_object().unwrap() {
        server[key] = value.clone();
    }
    let (status, _, body) = app
        .compute(Method::POST, "/servers")
        .version(version)
        .token(token)
        .json(json!({"server": server}))
        .send()
        .await;
    (status, body)
}

/// Bodies Nova's schema refuses, at a microversion: the status and what the answer says.
fn refused_bodies() -> Vec<(&'static str, Value, u16, &'static str)> {
    let mut bodies = refused_fields();
    bodies.extend(refused_by_version());
    bodies
}

/// Fields of the wrong type, length or value.
fn refused_fields() -> Vec<(&'static str, Value, u16, &'static str)> {
    vec![
        (
            "2.92",
            json!({"availability_zone": "z".repeat(100_000)}),
            400,
            "is too long",
        ),
        (
            "2.92",
            json!({"availability_zone": "elsewhere"}),
            400,
            "The requested availability zone is not available",
        ),
        (
            "2.92",
            json!({"availability_zone": ""}),
            400,
            "is too short",
        ),
        (
            "2.18",
            json!({"description": "d"}),
            400,
            "'description' was unexpected",
        ),
        (
            "2.19",
            json!({"description": "d".repeat(256)}),
            400,
            "is too long",
        ),
        (
            "2.89",
            json!({"hostname": "web"}),
            400,
            "'hostname' was unexpected",
        ),
        (
            "2.90",
            json!({"hostname": "a b"}),
            400,
            "is not a valid host name",
        ),
        (
            "2.94",
            json!({"hostname": "web_1.example.org"}),
            400,
            "is not a valid host name",
        ),
        (
            "2.92",
            json!({"block_device_mapping_v2": {"boot_index": 0}}),
            400,
            "is not of type 'array'",
        ),
    ]
}

/// The rest, fields at microversions that do not take them among them.
fn refused_by_version() -> Vec<(&'static str, Value, u16, &'static str)> {
    vec![
        (
            "2.57",
            json!({"personality": [{"path": "/etc/motd", "contents": "aGk="}]}),
            400,
            "'personality' was unexpected",
        ),
        (
            "2.56",
            json!({"personality": "x"}),
            400,
            "is not of type 'array'",
        ),
        (
            "2.52",
            json!({"tags": (0..51).map(|i| format!("t{i}")).collect::<Vec<_>>()}),
            400,
            "more than 50",
        ),
        ("2.52", json!({"tags": ["a/b"]}), 400, "must not contain"),
        ("2.51", json!({"tags": ["a"]}), 400, "'tags' was unexpected"),
        (
            "2.92",
            json!({"adminPass": 12}),
            400,
            "is not of type 'string'",
        ),
        (
            "2.92",
            json!({"security_groups": "default"}),
            400,
            "is not of type 'array'",
        ),
        (
            "2.92",
            json!({"metadata": {"k": 1}}),
            400,
            "is not of type 'string'",
        ),
        (
            "2.73",
            json!({"host": "cmp-1"}),
            400,
            "'host' was unexpected",
        ),
    ]
}

#[actix_web::test]
async fn create_bodies_are_checked_as_nova_s_schema_checks_them() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let refused = refused_bodies();
    for (version, extra, status, says) in refused {
        let (answered, body) = create(&app, version, "admin", extra.clone(), &flavor).await;
        let shown = extra.to_string().chars().take(80).collect::<String>();
        assert_eq!(answered, status, "{version} {shown}: {body}");
        assert!(body.to_string().contains(says), "{version} {shown}: {body}");
    }
    let (status, body) = create(&app, "2.74", "alice:p1", json!({"host": "cmp-1"}), &flavor).await;
    assert_eq!(status, 403, "a requested host is for admins: {body}");
    assert_eq!(
        rows(&app, "SELECT count(*) FROM instances"),
        0,
        "nothing written"
    );

    // What Nova's schema takes passes.
    let taken = json!({"availability_zone": "nova", "description": "d", "hostname": "web-1",
                       "tags": ["a", "b"], "adminPass": "secret", "metadata": {"k": "v"},
                       "security_groups": [{"name": "default"}], "block_device_mapping_v2": []});
    let (status, body) = create(&app, "2.90", "alice:p1", taken, &flavor).await;
    assert_eq!(status, 202, "{body}");
    let (status, body) = create(
        &app,
        "2.94",
        "alice:p1",
        json!({"hostname": "web.example.org"}),
        &flavor,
    )
    .await;
    assert_eq!(status, 202, "a fully qualified host name from 2.94: {body}");
}

#[actix_web::test]
async fn a_compute_body_that_is_not_json_is_415() {
    let app = TestApp::spawn().await;
    for (method, path) in [
        (Method::POST, "/compute/v2.1/servers"),
        (Method::POST, "/compute/v2.1/os-keypairs"),
        (Method::PUT, "/compute/v2.1/flavors/x"),
    ] {
        let response = app
            .client
            .request(method.clone(), app.url(path))
            .header("x-auth-token", "admin")
            .header("content-type", "text/plain")
            .body("{\"keypair\": {}}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 415, "{method} {path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["badMediaType"]["message"], "Unsupported Content-Type");
    }
    // A JSON body without a token is 401: the caller is known before its body is read.
    let response = app
        .client
        .post(app.url("/compute/v2.1/os-keypairs"))
        .header("content-type", "application/json; charset=UTF-8")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(rows(&app, "SELECT count(*) FROM key_pairs"), 0);
}
