//! Keystone authentication (issue 17) against a real Keystone 30.0.0: no token, an unknown, a
//! revoked and an expired token are 401; a reader cannot write (403) and an admin can, in
//! Placement, the Compute API and the admin API; the caller's `X-Roles` count for nothing; a Keystone that
//! cannot be reached is 503 in Placement's envelope, never an open door.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{RealKeystone, TestApp, eventually_async};

async fn keystone_app(keystone: &RealKeystone, cache: Duration) -> TestApp {
    let settings = keystone.settings(cache);
    TestApp::spawn_configured(move |config| config.keystone = Some(settings)).await
}

/// A Placement request with `token` (none: no header) and optional extra headers.
async fn placement(
    app: &TestApp,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
    roles: Option<&str>,
) -> (u16, Value) {
    let mut request = app
        .client
        .request(method, app.url(path))
        .header("openstack-api-version", "placement 1.38");
    if let Some(token) = token {
        request = request.header("x-auth-token", token);
    }
    if let Some(roles) = roles {
        request = request.header("x-roles", roles);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn admin_api(app: &TestApp, method: Method, path: &str, token: Option<&str>) -> u16 {
    let mut request = app.client.request(method.clone(), app.url(path));
    if let Some(token) = token {
        request = request.header("x-auth-token", token);
    }
    if method == Method::POST {
        request = request.json(&json!({"host": "cmp-1"}));
    }
    request.send().await.unwrap().status().as_u16()
}

#[actix_web::test]
async fn keystone_decides_who_may_read_and_write() {
    let keystone = RealKeystone::start(3600);
    let app = keystone_app(&keystone, Duration::from_secs(1)).await;
    let admin = keystone.login("admin", "admin-secret", "admin").await;
    let reader = keystone.login("reader", "reader-secret", "admin").await;
    let providers = "/placement/resource_providers";

    no_token_or_an_unknown_one_is_401_with_where_to_get_one(&app, &keystone).await;

    // A reader reads the admin API but writes nothing; X-Roles it sends changes nothing.
    let create = json!({"name": "rp-1"});
    for roles in [None, Some("admin"), Some("admin,service")] {
        let (status, _) = placement(
            &app,
            Method::POST,
            providers,
            Some(&reader),
            Some(create.clone()),
            roles,
        )
        .await;
        assert_eq!(status, 403, "reader with X-Roles {roles:?}");
    }
    assert_eq!(
        admin_api(&app, Method::GET, "/api/v1/hosts", Some(&reader)).await,
        200
    );
    assert_eq!(
        admin_api(&app, Method::POST, "/api/v1/hosts", Some(&reader)).await,
        403
    );
    // A member of another project reads nothing of the admin API.
    let demo = keystone.login("demo", "demo-secret", "demo").await;
    assert_eq!(
        admin_api(&app, Method::GET, "/api/v1/hosts", Some(&demo)).await,
        403
    );

    // An admin writes.
    let (status, body) = placement(
        &app,
        Method::POST,
        providers,
        Some(&admin),
        Some(create),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = placement(&app, Method::GET, providers, Some(&admin), None, None).await;
    assert_eq!(status, 200);
    assert_eq!(body["resource_providers"].as_array().unwrap().len(), 1);
    assert_eq!(
        admin_api(&app, Method::POST, "/api/v1/hosts", Some(&admin)).await,
        201
    );

    compute_follows_nova_s_policy(&app, &reader, &demo).await;
    a_revoked_token_is_refused_after_the_cache_lifetime(&app, &keystone).await;
}

/// Compute under Keystone (issue 44, item 5): the token's roles decide, as Nova's defaults do;
/// a reader reads and creates nothing, whatever `X-Roles` it sends; a member passes the policy
/// (and is then told its flavor does not exist).
async fn compute_follows_nova_s_policy(app: &TestApp, reader: &str, member: &str) {
    let server = json!({"server": {"name": "s", "imageRef": crate::helpers::IMAGE,
                                   "flavorRef": "no-such-flavor", "networks": "none"}});
    for roles in ["reader", "admin", "member"] {
        let (status, _, body) = app
            .compute(Method::POST, "/servers")
            .version("2.92")
            .token(reader)
            .roles(roles)
            .json(server.clone())
            .send()
            .await;
        assert_eq!(status, 403, "a reader with X-Roles {roles}: {body}");
        assert_eq!(
            body["forbidden"]["message"],
            "Policy doesn't allow os_compute_api:servers:create to be performed."
        );
    }
    let (status, _, body) = app
        .compute(Method::GET, "/servers")
        .token(reader)
        .send()
        .await;
    assert_eq!(status, 200, "a reader lists: {body}");
    let (status, _, body) = app
        .compute(Method::POST, "/servers")
        .version("2.92")
        .token(member)
        .json(server)
        .send()
        .await;
    assert_eq!(status, 400, "a member passes the policy: {body}");
}

/// No token, an unknown one: 401, in Placement and in the admin API, in both envelopes, with
/// where to get a token; the version document stays open.
async fn no_token_or_an_unknown_one_is_401_with_where_to_get_one(
    app: &TestApp,
    keystone: &RealKeystone,
) {
    let providers = "/placement/resource_providers";
    assert_eq!(
        placement(app, Method::GET, providers, None, None, None)
            .await
            .0,
        401
    );
    let (status, body) = placement(app, Method::GET, providers, Some("nonsense"), None, None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["errors"][0]["status"], 401);
    // Both envelopes: Placement's (osc-placement reads errors[0].detail) and
    // keystonemiddleware's; and where to get a token.
    assert_eq!(body["error"]["code"], 401, "{body}");
    assert_eq!(body["error"]["title"], "Unauthorized", "{body}");
    assert_eq!(
        body["error"]["message"], body["errors"][0]["detail"],
        "{body}"
    );
    let refused = app.client.get(app.url(providers)).send().await.unwrap();
    assert_eq!(
        refused.headers()["www-authenticate"].to_str().unwrap(),
        format!("Keystone uri=\"{}\"", keystone.url)
    );
    assert_eq!(
        admin_api(app, Method::GET, "/api/v1/hosts", None).await,
        401
    );
    assert_eq!(
        admin_api(app, Method::GET, "/api/v1/hosts", Some("nonsense")).await,
        401
    );
    // The version document stays open, as in Placement.
    assert_eq!(
        placement(app, Method::GET, "/placement/", None, None, None)
            .await
            .0,
        200
    );
}

/// A revoked token is refused once the cache lifetime (1 s) has passed.
async fn a_revoked_token_is_refused_after_the_cache_lifetime(
    app: &TestApp,
    keystone: &RealKeystone,
) {
    let providers = "/placement/resource_providers";
    let revoked = keystone.login("admin", "admin-secret", "admin").await;
    assert_eq!(
        placement(app, Method::GET, providers, Some(&revoked), None, None)
            .await
            .0,
        200
    );
    keystone.revoke(&revoked).await;
    eventually_async(
        Duration::from_secs(10),
        "the revoked token refused",
        || async {
            (placement(app, Method::GET, providers, Some(&revoked), None, None)
                .await
                .0
                == 401)
                .then_some(())
        },
    )
    .await;
}

#[actix_web::test]
async fn an_expired_token_is_refused() {
    let keystone = RealKeystone::start(5);
    let app = keystone_app(&keystone, Duration::from_secs(60)).await;
    let admin = keystone.login("admin", "admin-secret", "admin").await;
    let providers = "/placement/resource_providers";
    assert_eq!(
        placement(&app, Method::GET, providers, Some(&admin), None, None)
            .await
            .0,
        200
    );
    // Cached for 60 s, but only until the token itself expires.
    actix_rt::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        placement(&app, Method::GET, providers, Some(&admin), None, None)
            .await
            .0,
        401
    );
}

#[actix_web::test]
async fn an_unreachable_keystone_is_503_never_an_open_door() {
    let settings = ringmaster::keystone::KeystoneSettings {
        url: "http://127.0.0.1:9/v3".to_owned(),
        user: "placement".to_owned(),
        password: "x".to_owned(),
        project: "service".to_owned(),
        user_domain: "Default".to_owned(),
        project_domain: "Default".to_owned(),
        cache_lifetime: Duration::from_secs(30),
        tls: ringmaster::tls::client::ClientTls::system(),
        region: None,
    };
    let app = TestApp::spawn_configured(move |config| config.keystone = Some(settings)).await;
    let (status, body) = placement(
        &app,
        Method::GET,
        "/placement/resource_providers",
        Some("admin"),
        None,
        Some("admin"),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["errors"][0]["status"], 503);
    assert_eq!(
        admin_api(&app, Method::POST, "/api/v1/hosts", Some("admin")).await,
        503
    );
    let hosts: Vec<Value> = app
        .client
        .get(app.url("/api/v1/hosts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap_or_default();
    assert!(hosts.is_empty());
}
