//! The dashboard's session (issue 27): a login with the admin token sets an HttpOnly,
//! SameSite=Strict session cookie (Secure only over https) and a CSRF cookie; reads and the
//! event stream go with the cookie alone, a change also needs `X-CSRF-Token`; logout ends the
//! session and its open stream; nothing of the token shows in an answer.

use serde_json::{Value, json};

use crate::helpers::TestApp;

const TOKEN: &str = "s3cret-session-admin-token";

fn set_cookies(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|value| value.to_str().unwrap().to_owned())
        .collect()
}

fn cookie_value(cookies: &[String], name: &str) -> String {
    cookies
        .iter()
        .find_map(|cookie| cookie.strip_prefix(&format!("{name}=")))
        .and_then(|rest| rest.split(';').next())
        .unwrap()
        .to_owned()
}

#[actix_web::test]
async fn a_session_cookie_reads_streams_and_writes_with_its_csrf_token_until_logout() {
    let app = TestApp::spawn_with_token(Some(TOKEN)).await;
    let info: Value = app.get("/api/v1/session").await.json().await.unwrap();
    assert_eq!(info["auth"], "admin-token");
    assert_eq!(info["logged_in"], false);
    let (cookie, csrf) = log_in(&app).await;
    let stream = reads_and_the_stream_take_the_cookie_alone(&app, &cookie).await;
    a_change_needs_the_csrf_token_too(&app, &cookie, &csrf).await;
    logout_ends_the_session_and_its_stream(&app, &cookie, stream).await;
}

/// A wrong token gets no cookie; the right one the session cookie (HttpOnly, SameSite=Strict,
/// not Secure over plain http) and the CSRF cookie the page reads; returns the Cookie header
/// of both and the CSRF token.
async fn log_in(app: &TestApp) -> (String, String) {
    let wrong = app
        .client
        .post(app.url("/api/v1/session"))
        .json(&json!({"token": "wrong"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(
        set_cookies(&wrong).is_empty(),
        "no cookie for a wrong token"
    );

    let login = app
        .client
        .post(app.url("/api/v1/session"))
        .json(&json!({"token": TOKEN}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    let cookies = set_cookies(&login);
    let session_cookie = cookies
        .iter()
        .find(|cookie| cookie.starts_with("ringmaster_session="))
        .unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(session_cookie.contains(attribute), "{session_cookie}");
    }
    assert!(!session_cookie.contains("Secure"), "plain http: not Secure");
    let csrf_cookie = cookies
        .iter()
        .find(|cookie| cookie.starts_with("ringmaster_csrf="))
        .unwrap();
    assert!(
        !csrf_cookie.contains("HttpOnly"),
        "the page reads the CSRF cookie"
    );
    let body: Value = login.json().await.unwrap();
    assert!(
        !body.to_string().contains(TOKEN),
        "the token is not echoed: {body}"
    );
    let session = cookie_value(&cookies, "ringmaster_session");
    let csrf = cookie_value(&cookies, "ringmaster_csrf");
    assert_eq!(body["csrf"], csrf.as_str());
    assert!(!session.contains(TOKEN) && session.len() >= 64);
    let cookie = format!("ringmaster_session={session}; ringmaster_csrf={csrf}");
    (cookie, csrf)
}

/// Reads and the event stream go with the cookie alone; returns the open stream.
async fn reads_and_the_stream_take_the_cookie_alone(
    app: &TestApp,
    cookie: &str,
) -> reqwest::Response {
    let hosts = app
        .client
        .get(app.url("/api/v1/hosts"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(hosts.status(), 200);
    let info: Value = app
        .client
        .get(app.url("/api/v1/session"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["logged_in"], true);
    assert_eq!(info["can_write"], true);
    let stream = app
        .client
        .get(app.url("/api/v1/events"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    stream
}

/// A change: the cookie alone is not enough (a forged cross-site request has no CSRF token).
async fn a_change_needs_the_csrf_token_too(app: &TestApp, cookie: &str, csrf: &str) {
    let create = |csrf: Option<&str>| {
        let mut request = app
            .client
            .post(app.url("/api/v1/hosts"))
            .header("cookie", cookie)
            .json(&json!({"host": "cmp-session"}));
        if let Some(csrf) = csrf {
            request = request.header("x-csrf-token", csrf);
        }
        request.send()
    };
    assert_eq!(create(None).await.unwrap().status(), 403);
    assert_eq!(create(Some("forged")).await.unwrap().status(), 403);
    assert_eq!(create(Some(csrf)).await.unwrap().status(), 201);
}

/// Logout: the session is gone, the open stream ends with session-ended.
async fn logout_ends_the_session_and_its_stream(
    app: &TestApp,
    cookie: &str,
    stream: reqwest::Response,
) {
    let logout = app
        .client
        .delete(app.url("/api/v1/session"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), 204);
    assert!(
        set_cookies(&logout)
            .iter()
            .all(|cookie| cookie.contains("Max-Age=0") || cookie.contains("Expires=")),
        "logout clears the cookies: {:?}",
        set_cookies(&logout)
    );
    let mut body = String::new();
    let mut stream = stream;
    let ended = actix_rt::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            body.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream ends after logout: {body}");
    assert!(body.contains("event: session-ended"), "{body}");
    let after = app
        .client
        .get(app.url("/api/v1/hosts"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(
        after.status(),
        401,
        "the cookie of an ended session reads nothing"
    );
}

/// Without any credentials configured (loopback), the page needs no login and a login is
/// refused as meaningless; over a trusted proxy's https the cookies are Secure.
#[actix_web::test]
async fn no_login_without_credentials_and_secure_cookies_behind_https() {
    let open = TestApp::spawn().await;
    let info: Value = open.get("/api/v1/session").await.json().await.unwrap();
    assert_eq!(
        info,
        json!({"auth": "none", "logged_in": true, "user": null, "roles": [], "can_write": true})
    );
    let login = open
        .client
        .post(open.url("/api/v1/session"))
        .json(&json!({"token": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 409);

    let proxied = TestApp::spawn_configured(|config| {
        config.admin_token = ringmaster::config::AdminToken::new(TOKEN);
        config.access.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let login = proxied
        .client
        .post(proxied.url("/api/v1/session"))
        .header("x-forwarded-proto", "https")
        .json(&json!({"token": TOKEN}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    for cookie in set_cookies(&login) {
        assert!(cookie.contains("; Secure"), "{cookie}");
    }
}
