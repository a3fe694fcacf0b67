//! Secrets stay secret (issue 27, point 7): no password, token, session id or CSRF token in any
//! log line at any level, nor in any answer.

use std::time::Duration;

use serde_json::json;

/// Issue 27, point 7: a whole scenario at `RUST_LOG=trace` — Keystone logins (the service
/// user's, a dashboard login with a password, a wrong password), a session used for reads,
/// a stream and a change, Placement and Compute calls with a token, a logout — and no line of
/// the log holds any of the secrets involved, nor does any answer.
#[actix_web::test]
async fn no_secret_reaches_the_log_even_at_trace() {
    use crate::helpers::{RealKeystone, TempDir, TestDb, start_serve};
    let keystone = RealKeystone::start(3600);
    let db = TestDb::new();
    let dir = TempDir::new("secrets");
    let password_file = dir.path.join("keystone-password");
    std::fs::write(&password_file, "placement-secret\n").unwrap();
    let password_file = password_file.display().to_string();
    let (mut serve, address) = start_serve(
        db.url(),
        &[
            "--auth-strategy",
            "keystone",
            "--keystone-url",
            &keystone.url,
            "--keystone-password-file",
            &password_file,
            "--hosts",
            "cmp-1",
        ],
        "trace",
    );
    let base = format!("http://{address}");
    let client = crate::helpers::json_client();
    let admin_token = keystone.login("admin", "admin-secret", "admin").await;
    let mut secrets = vec![
        "placement-secret".to_owned(),
        "admin-secret".to_owned(),
        "wrong-secret".to_owned(),
        admin_token.clone(),
    ];
    let mut answers = String::new();

    let (cookie, csrf) = log_in_with_a_password(&client, &base, &mut secrets, &mut answers).await;
    let mut stream = read_stream_and_change_with_the_session(&client, &base, &cookie, &csrf).await;
    placement_and_compute_with_a_token(&client, &base, &admin_token, &mut answers).await;
    secrets.push("not-a-token-but-secret-looking".to_owned());
    let logout = client
        .delete(format!("{base}/api/v1/session"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), 204);
    while let Ok(Ok(Some(_))) =
        actix_rt::time::timeout(Duration::from_secs(5), stream.chunk()).await
    {}
    serve.interrupt();
    let (_, stderr) = serve.wait_exit(Duration::from_secs(30));
    assert!(
        stderr.len() > 100,
        "trace logs a lot: {} lines",
        stderr.len()
    );
    for secret in &secrets {
        let leaked: Vec<&String> = stderr
            .iter()
            .filter(|line| line.contains(secret.as_str()))
            .collect();
        assert!(leaked.is_empty(), "a secret is in the log: {leaked:#?}");
        assert!(
            !answers.contains(secret.as_str()),
            "a secret is in an answer: {answers}"
        );
    }
}

/// A wrong password (refused), then a dashboard login with the right one; the session's cookie
/// values join the secrets. Returns the Cookie header and the CSRF token.
async fn log_in_with_a_password(
    client: &reqwest::Client,
    base: &str,
    secrets: &mut Vec<String>,
    answers: &mut String,
) -> (String, String) {
    let refused = client
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"user": "admin", "password": "wrong-secret", "project": "admin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    answers.push_str(&refused.text().await.unwrap());
    let login = client
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"user": "admin", "password": "admin-secret", "project": "admin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    let cookies: Vec<String> = login
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|value| {
            value
                .to_str()
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    let body: serde_json::Value = login.json().await.unwrap();
    let csrf = body["csrf"].as_str().unwrap().to_owned();
    let cookie = cookies.join("; ");
    for pair in &cookies {
        secrets.push(pair.split_once('=').unwrap().1.to_owned());
    }
    (cookie, csrf)
}

/// A read, the event stream (returned, open) and a change, with the session cookie.
async fn read_stream_and_change_with_the_session(
    client: &reqwest::Client,
    base: &str,
    cookie: &str,
    csrf: &str,
) -> reqwest::Response {
    let read = client
        .get(format!("{base}/api/v1/hosts"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let stream = client
        .get(format!("{base}/api/v1/events"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let write = client
        .post(format!("{base}/api/v1/hosts"))
        .header("cookie", cookie)
        .header("x-csrf-token", csrf)
        .json(&json!({"host": "cmp-2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), 201);
    stream
}

/// Placement, Compute and the admin API with a Keystone token, and Placement with a bad one.
async fn placement_and_compute_with_a_token(
    client: &reqwest::Client,
    base: &str,
    admin_token: &str,
    answers: &mut String,
) {
    for path in [
        "/placement/resource_providers",
        "/compute/v2.1/servers",
        "/api/v1/nodes",
    ] {
        let answer = client
            .get(format!("{base}{path}"))
            .header("x-auth-token", admin_token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        answers.push_str(&answer.text().await.unwrap());
    }
    let bad = client
        .get(format!("{base}/placement/resource_providers"))
        .header("x-auth-token", "not-a-token-but-secret-looking")
        .send()
        .await
        .unwrap();
    answers.push_str(&bad.text().await.unwrap());
}
