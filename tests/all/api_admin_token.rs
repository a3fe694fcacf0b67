//! With an admin token configured, every admin API request must carry it, reads too (issue
//! 27); the probes, the dashboard's files and `/metrics` on loopback stay open.

use serde_json::{Value, json};

use crate::helpers::TestApp;

const TOKEN: &str = "s3cret-admin-token";

fn unauthorized() -> Value {
    json!({"error": {"code": "unauthorized", "message": "this request changes state and needs the admin token: send 'Authorization: Bearer TOKEN' or 'X-Auth-Token: TOKEN'"}})
}

#[actix_web::test]
async fn a_mutating_request_without_the_token_is_401() {
    let app = TestApp::spawn_with_token(Some(TOKEN)).await;
    for request in [
        app.client.post(app.url("/api/v1/hosts")),
        app.client.delete(app.url("/api/v1/hosts")),
        app.client
            .post(app.url("/api/v1/hosts"))
            .bearer_auth("wrong"),
        app.client
            .put(app.url("/api/v1/hosts"))
            .header("x-auth-token", "wrong"),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert_eq!(response.json::<Value>().await.unwrap(), unauthorized());
    }
}

#[actix_web::test]
async fn a_mutating_request_with_the_token_gets_through() {
    let app = TestApp::spawn_with_token(Some(TOKEN)).await;
    for request in [
        app.client.post(app.url("/api/v1/hosts")).bearer_auth(TOKEN),
        app.client
            .post(app.url("/api/v1/hosts"))
            .header("x-auth-token", TOKEN),
    ] {
        let response = request
            .json(&json!({"host": "cmp-token"}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            201,
            "past the token check, the host is created"
        );
    }
}

#[actix_web::test]
async fn reads_need_the_token_too_but_probes_and_the_page_do_not() {
    let app = TestApp::spawn_with_token(Some(TOKEN)).await;
    for path in [
        "/api/v1/hosts",
        "/api/v1/nodes",
        "/api/v1/events",
        "/api/v1/audit",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 401, "{path} without a token");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unauthorized", "{path}");
        let wrong = app
            .client
            .get(app.url(path))
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401, "{path} with a wrong token");
    }
    let read = app
        .client
        .get(app.url("/api/v1/hosts"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    for path in ["/healthz", "/readyz", "/", "/app.js", "/metrics"] {
        assert_eq!(app.get(path).await.status(), 200, "{path} stays open");
    }
}

/// `/metrics` off loopback (or with a metrics token): the metrics token or the admin token
/// opens it, nothing else; `--metrics-public` opens it to anyone.
#[actix_web::test]
async fn metrics_take_their_token_when_not_open() {
    let app = TestApp::spawn_configured(|config| {
        config.admin_token = ringmaster::config::AdminToken::new(TOKEN);
        config.access.metrics_open = false;
        config.access.metrics_token = ringmaster::config::AdminToken::new("scrape-token");
    })
    .await;
    assert_eq!(app.get("/metrics").await.status(), 401);
    for (token, status) in [("scrape-token", 200), (TOKEN, 200), ("wrong", 401)] {
        let response = app
            .client
            .get(app.url("/metrics"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "/metrics with {token}");
    }
    let scraper = app
        .client
        .get(app.url("/api/v1/hosts"))
        .bearer_auth("scrape-token")
        .send()
        .await
        .unwrap();
    assert_eq!(
        scraper.status(),
        401,
        "the metrics token reads nothing else"
    );
    let open = TestApp::spawn_configured(|config| {
        config.access.metrics_open = false;
        config.access.metrics_token = ringmaster::config::AdminToken::new("scrape-token");
    })
    .await;
    assert_eq!(
        open.get("/metrics").await.status(),
        401,
        "no admin token: the metrics token only"
    );
    assert_eq!(
        open.get("/api/v1/hosts").await.status(),
        200,
        "no admin token: the admin API is open on loopback"
    );
}

#[actix_web::test]
async fn without_a_configured_token_nothing_is_asked() {
    let app = TestApp::spawn().await;
    let response = app
        .client
        .post(app.url("/api/v1/hosts"))
        .json(&json!({"host": "cmp-open"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
}
