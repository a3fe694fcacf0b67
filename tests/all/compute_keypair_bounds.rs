//! Key pairs are parsed and bounded (issue 44, item 4): a key must parse as a real public key
//! of the type it names, a line longer than a real key is refused, a body longer than Nova's
//! request limit is refused before it is held, and a user holds at most 100 key pairs, racing
//! imports included. Nothing refused is written.

use futures_util::future::join_all;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{KEY, TestApp, rows};

/// `ssh-ed25519` over 8 bytes of key data (a real key has 32).
const SHORT_ED25519: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAACAAAAAAAAAAA";

fn rsa_of_zeros(base64_length: usize) -> String {
    format!("ssh-rsa AAAAB3NzaC1yc2E{} x@y", "A".repeat(base64_length))
}

#[actix_web::test]
async fn junk_and_oversized_keys_are_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let cases = [
        (
            SHORT_ED25519.to_owned(),
            400,
            "failed to generate fingerprint",
        ),
        (rsa_of_zeros(400), 400, "Keypair data is invalid"),
        (rsa_of_zeros(20_000), 400, "at most 16384 are taken"),
        (rsa_of_zeros(15_000_000), 413, "over 114688 bytes"),
    ];
    for (key, status, says) in cases {
        let length = key.len();
        let (answered, _, body) = app
            .compute(Method::POST, "/os-keypairs")
            .version("2.92")
            .token("alice:p1")
            .json(json!({"keypair": {"name": "junk", "public_key": key}}))
            .send()
            .await;
        assert_eq!(answered, status, "a key of {length} bytes: {body}");
        assert!(
            body.to_string().contains(says),
            "a key of {length} bytes says {says}: {body}"
        );
    }
    assert_eq!(rows(&app, "SELECT count(*) FROM key_pairs"), 0);
}

async fn import(app: &TestApp, name: String) -> (u16, serde_json::Value) {
    let (status, _, body) = app
        .compute(Method::POST, "/os-keypairs")
        .version("2.92")
        .token("alice:p1")
        .json(json!({"keypair": {"name": name, "public_key": KEY}}))
        .send()
        .await;
    (status, body)
}

#[actix_web::test]
async fn a_user_holds_at_most_one_hundred_key_pairs_even_when_imports_race() {
    let app = TestApp::spawn().await;
    for index in 0..90 {
        let (status, body) = import(&app, format!("k{index}")).await;
        assert_eq!(status, 201, "{body}");
    }
    // 20 imports at once with 10 places left: 10 are taken, 10 refused.
    let raced = join_all((90..110).map(|index| import(&app, format!("k{index}")))).await;
    let taken = raced.iter().filter(|(status, _)| *status == 201).count();
    let refused: Vec<_> = raced.iter().filter(|(status, _)| *status == 403).collect();
    assert_eq!(taken, 10, "{raced:?}");
    assert_eq!(refused.len(), 10, "{raced:?}");
    assert_eq!(
        refused[0].1["forbidden"]["message"],
        "Quota exceeded, too many key pairs."
    );
    assert_eq!(
        rows(
            &app,
            "SELECT count(*) FROM key_pairs WHERE user_id = 'alice'"
        ),
        100
    );

    let (status, body) = import(&app, "one-more".to_owned()).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["forbidden"]["message"],
        "Quota exceeded, too many key pairs."
    );
    let (status, _, _) = app
        .compute(Method::POST, "/os-keypairs")
        .version("2.92")
        .token("bob:p1")
        .json(json!({"keypair": {"name": "k0", "public_key": KEY}}))
        .send()
        .await;
    assert_eq!(status, 201, "the quota is per user");

    // A deleted key pair frees its place.
    let (status, _, _) = app
        .compute(Method::DELETE, "/os-keypairs/k0")
        .version("2.92")
        .token("alice:p1")
        .send()
        .await;
    assert_eq!(status, 204);
    let (status, body) = import(&app, "one-more".to_owned()).await;
    assert_eq!(status, 201, "{body}");
}
