//! Requests written byte by byte on a socket of their own, for what an HTTP client would not
//! send (a forged Host, a broken header).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use super::TestApp;

/// Sends `head` (request line and headers, without the blank line) and `body` over a socket
/// of its own, off the test's runtime (the server's actors run on it); returns the status, the
/// headers (lower-cased) and the body.
pub async fn raw(app: &TestApp, head: &str, body: &str) -> (u16, String, String) {
    let (address, head, body) = (
        app.address.trim_start_matches("http://").to_owned(),
        head.to_owned(),
        body.to_owned(),
    );
    actix_web::rt::task::spawn_blocking(move || raw_blocking(&address, &head, &body))
        .await
        .unwrap()
}

fn raw_blocking(address: &str, head: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (headers, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = headers.split(' ').nth(1).unwrap().parse().unwrap();
    (status, headers.to_lowercase(), body.to_owned())
}

/// A test app with host cmp-3 started through the API.
pub async fn app_with_host() -> TestApp {
    let app = TestApp::spawn().await;
    let created = app
        .client
        .post(app.url("/api/v1/hosts"))
        .json(&json!({"host": "cmp-3"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    app
}
