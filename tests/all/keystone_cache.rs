//! The Keystone token cache (issue 50): a burst of requests with one new token is one
//! validation at Keystone, a refused or ended token is never believed from the cache, and a
//! flood of distinct tokens leaves the cache at its bound holding the recent ones. Against a
//! stand-in Keystone that counts the validations it is asked for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use chrono::Utc;
use futures_util::{StreamExt, stream};
use ringmaster::keystone::{CACHE_LIMIT, Keystone, KeystoneError, KeystoneSettings};
use serde_json::json;

/// How many validations the stand-in answered, per token.
type Counts = Arc<Mutex<HashMap<String, usize>>>;

/// A token's answer: one holding `bad-` is unknown (404), `ended-…` ended a minute ago, any other is
/// valid for an hour; `slow-…` is answered after 300 ms, so that concurrent requests overlap.
async fn validate(
    request: HttpRequest,
    counts: web::Data<Mutex<HashMap<String, usize>>>,
) -> HttpResponse {
    let token = request
        .headers()
        .get("x-subject-token")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    *counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(token.clone())
        .or_default() += 1;
    if token.starts_with("slow-") {
        actix_rt::time::sleep(Duration::from_millis(300)).await;
    }
    if token.contains("bad-") {
        return HttpResponse::NotFound().finish();
    }
    let minutes = if token.starts_with("ended-") { -1 } else { 60 };
    HttpResponse::Ok().json(token_body(&token, minutes))
}

fn token_body(user: &str, minutes: i64) -> serde_json::Value {
    let expires_at = Utc::now() + chrono::Duration::minutes(minutes);
    json!({"token": {
        "expires_at": expires_at.to_rfc3339(),
        "user": {"id": user, "name": user},
        "project": {"id": "p1", "name": "demo"},
        "roles": [{"id": "r1", "name": "member"}]}})
}

async fn login() -> HttpResponse {
    HttpResponse::Created()
        .insert_header(("x-subject-token", "service-token"))
        .json(token_body("placement", 60))
}

/// Starts the stand-in on this test's runtime; returns its URL and its counts.
fn standin() -> (String, Counts) {
    let counts: Counts = Arc::default();
    let shared = counts.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::from(shared.clone()))
            .route("/v3/auth/tokens", web::post().to(login))
            .route("/v3/auth/tokens", web::get().to(validate))
    })
    .workers(2)
    .disable_signals()
    .bind("127.0.0.1:0")
    .unwrap();
    let url = format!("http://{}/v3", server.addrs()[0]);
    actix_rt::spawn(server.run());
    (url, counts)
}

fn keystone(url: &str) -> Keystone {
    Keystone::new(KeystoneSettings {
        url: url.to_owned(),
        user: "placement".to_owned(),
        password: "placement-secret".to_owned(),
        project: "service".to_owned(),
        user_domain: "Default".to_owned(),
        project_domain: "Default".to_owned(),
        cache_lifetime: Duration::from_secs(300),
        tls: ringmaster::tls::client::ClientTls::load(Default::default()).unwrap(),
        region: None,
    })
    .unwrap()
}

/// How many times Keystone was asked to validate `token`.
fn validations(counts: &Counts, token: &str) -> usize {
    let counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
    counts.get(token).copied().unwrap_or(0)
}

#[actix_web::test]
async fn fifty_concurrent_requests_with_one_new_token_are_one_validation() {
    let (url, counts) = standin();
    let keystone = keystone(&url);
    let answers =
        futures_util::future::join_all((0..50).map(|_| keystone.validate("slow-new"))).await;
    assert!(
        answers
            .iter()
            .all(|answer| answer.as_ref().is_ok_and(|who| who.user_id == "slow-new"))
    );
    assert_eq!(
        validations(&counts, "slow-new"),
        1,
        "one validation for 50 requests"
    );
    // And the cache answers the next ones.
    keystone.validate("slow-new").await.unwrap();
    assert_eq!(validations(&counts, "slow-new"), 1);

    // A refused token is refused to every waiter, and not cached: asked again, Keystone is asked.
    let refusals =
        futures_util::future::join_all((0..20).map(|_| keystone.validate("slow-bad-x"))).await;
    assert!(
        refusals
            .iter()
            .all(|answer| *answer == Err(KeystoneError::Invalid))
    );
    assert_eq!(validations(&counts, "slow-bad-x"), 1);
    assert_eq!(
        keystone.validate("bad-y").await,
        Err(KeystoneError::Invalid)
    );
    assert_eq!(
        keystone.validate("bad-y").await,
        Err(KeystoneError::Invalid)
    );
    assert_eq!(
        validations(&counts, "bad-y"),
        2,
        "a refusal is never cached"
    );

    // A token that has already ended is believed no longer than it lives: not at all.
    keystone.validate("ended-z").await.unwrap();
    keystone.validate("ended-z").await.unwrap();
    assert_eq!(
        validations(&counts, "ended-z"),
        2,
        "an ended token is not cached"
    );
}

#[actix_web::test]
async fn twenty_thousand_tokens_leave_the_cache_at_its_bound_with_the_recent_ones() {
    let (url, counts) = standin();
    let keystone = keystone(&url);
    let total = 2 * CACHE_LIMIT as usize;
    let tokens: Vec<String> = (0..total).map(|n| format!("token-{n:05}")).collect();
    stream::iter(&tokens)
        .for_each_concurrent(32, |token| {
            let keystone = &keystone;
            async move {
                keystone.validate(token).await.unwrap();
            }
        })
        .await;
    let held = keystone.cached_tokens().await;
    assert!(
        (CACHE_LIMIT * 9 / 10..=CACHE_LIMIT).contains(&held),
        "the cache holds {held} tokens, its bound is {CACHE_LIMIT}: never more, nor emptied"
    );
    // The most recent 1,000 are still believed without asking Keystone again.
    for token in &tokens[total - 1000..] {
        keystone.validate(token).await.unwrap();
        assert_eq!(validations(&counts, token), 1, "{token} was asked again");
    }
    // The oldest left.
    keystone.validate(&tokens[0]).await.unwrap();
    assert_eq!(
        validations(&counts, &tokens[0]),
        2,
        "the least recent token left the cache"
    );
}
