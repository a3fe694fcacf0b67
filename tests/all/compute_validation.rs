//! No 500 from what PostgreSQL cannot take, and a create body checked as Nova's request schema
//! checks it (issue 44, item 6): a pattern PostgreSQL's `~` cannot run is 400, not 500; an
//! availability zone too long or not there is 400; each field Nova's schema checks is checked
//! at the asked microversion; a `limit` over the maximum is capped; a body that is not JSON is
//! 415. Nothing refused is written.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, create_bare_metal_flavor, create_server_at, one_host_four_nodes, rows,
};

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

/// A body Nova's schema refuses at a microversion, and what the 400 says.
struct Refused {
    version: &'static str,
    extra: Value,
    says: &'static str,
}

fn no(version: &'static str, extra: Value, says: &'static str) -> Refused {
    Refused {
        version,
        extra,
        says,
    }
}

/// Bodies Nova's schema refuses: fields of the wrong type, length or value, and fields at
/// microversions that do not take them.
fn refused_bodies() -> Vec<Refused> {
    let too_many_tags = (0..51).map(|i| format!("t{i}")).collect::<Vec<_>>();
    let motd = json!([{"path": "/etc/motd", "contents": "aGk="}]);
    vec![
        no(
            "2.92",
            json!({"availability_zone": "z".repeat(100_000)}),
            "is too long",
        ),
        no(
            "2.92",
            json!({"availability_zone": "elsewhere"}),
            "zone is not available",
        ),
        no("2.92", json!({"availability_zone": ""}), "is too short"),
        no(
            "2.18",
            json!({"description": "d"}),
            "'description' was unexpected",
        ),
        no(
            "2.19",
            json!({"description": "d".repeat(256)}),
            "is too long",
        ),
        no(
            "2.89",
            json!({"hostname": "web"}),
            "'hostname' was unexpected",
        ),
        no(
            "2.90",
            json!({"hostname": "a b"}),
            "is not a valid host name",
        ),
        no(
            "2.94",
            json!({"hostname": "web_1.example.org"}),
            "is not a valid host name",
        ),
        no(
            "2.92",
            json!({"block_device_mapping_v2": {"boot_index": 0}}),
            "not of type 'array'",
        ),
        no(
            "2.57",
            json!({"personality": motd}),
            "'personality' was unexpected",
        ),
        no(
            "2.56",
            json!({"personality": "x"}),
            "is not of type 'array'",
        ),
        no("2.52", json!({"tags": too_many_tags}), "more than 50"),
        no("2.52", json!({"tags": ["a/b"]}), "must not contain"),
        no("2.51", json!({"tags": ["a"]}), "'tags' was unexpected"),
        no("2.92", json!({"adminPass": 12}), "is not of type 'string'"),
        no(
            "2.92",
            json!({"security_groups": "default"}),
            "is not of type 'array'",
        ),
        no(
            "2.92",
            json!({"metadata": {"k": 1}}),
            "is not of type 'string'",
        ),
        no("2.73", json!({"host": "cmp-1"}), "'host' was unexpected"),
    ]
}

#[actix_web::test]
async fn create_bodies_are_checked_as_nova_s_schema_checks_them() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let refused = refused_bodies();
    for Refused {
        version,
        extra,
        says,
    } in refused
    {
        let (answered, body) =
            create_server_at(&app, version, "admin", extra.clone(), &flavor).await;
        let shown = extra.to_string().chars().take(80).collect::<String>();
        assert_eq!(answered, 400, "{version} {shown}: {body}");
        assert!(body.to_string().contains(says), "{version} {shown}: {body}");
    }
    let (status, body) =
        create_server_at(&app, "2.74", "alice:p1", json!({"host": "cmp-1"}), &flavor).await;
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
    let (status, body) = create_server_at(&app, "2.90", "alice:p1", taken, &flavor).await;
    assert_eq!(status, 202, "{body}");
    let (status, body) = create_server_at(
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
