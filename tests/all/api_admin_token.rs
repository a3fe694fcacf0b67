//! With an admin token configured, every mutating request must carry it; reads need none.

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
async fn reads_need_no_token() {
    let app = TestApp::spawn_with_token(Some(TOKEN)).await;
    assert_eq!(app.get("/api/v1/hosts").await.status(), 200);
    assert_eq!(app.get("/healthz").await.status(), 200);
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
