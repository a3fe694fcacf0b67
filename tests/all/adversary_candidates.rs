//! `GET /placement/allocation_candidates` as an adversary asks it (issue 25, item 1): the
//! issue's request (6 granular groups on a root with 10 children) answered at once, whatever
//! the limit; the candidate cap, the generation strategy and sampling; a bound on the groups; a
//! deadline answered 503 in Placement's envelope.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, put_placement_inventory};
use ringmaster::config::CandidateSettings;
use ringmaster::domain::candidates::Strategy;

const ADMIN: &str = "admin";

/// Creates root `root` (a uuid ending in `r`) with `children` children of 1000 VCPU each.
async fn wide_tree(app: &TestApp, r: u32, children: u32) {
    let root = format!("a0000000-0000-4000-8000-{r:06}000000");
    let create = |uuid: String, parent: Option<String>| {
        app.placement(Method::POST, "/placement/resource_providers")
            .version("1.20")
            .token(ADMIN)
            .json(
                json!({"name": format!("rp-{uuid}"), "uuid": uuid, "parent_provider_uuid": parent}),
            )
            .send()
    };
    let (status, _, body) = create(root.clone(), None).await;
    assert_eq!(status, 200, "{body}");
    for child in 1..=children {
        let uuid = format!("a0000000-0000-4000-8000-{r:06}{child:06}");
        let (status, _, body) = create(uuid.clone(), Some(root.clone())).await;
        assert_eq!(status, 200, "{body}");
        put_placement_inventory(app, &uuid, json!({"VCPU": {"total": 1000}})).await;
    }
}

/// The query of `groups` granular groups of one VCPU each, then `more`.
fn granular(groups: usize, more: &str) -> String {
    let mut query: Vec<String> = (1..=groups)
        .map(|n| format!("resources{n}=VCPU:1"))
        .collect();
    query.push(more.to_owned());
    format!("/placement/allocation_candidates?{}", query.join("&"))
}

async fn candidates(app: &TestApp, path: &str) -> (u16, Value) {
    let (status, _, body) = app
        .placement(Method::GET, path)
        .version("1.36")
        .token(ADMIN)
        .send()
        .await;
    (status, body)
}

fn roots(body: &Value) -> Vec<String> {
    body["allocation_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|request| {
            let provider = request["allocations"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap();
            body["provider_summaries"][provider]["root_provider_uuid"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[actix_web::test]
async fn six_groups_on_ten_children_are_answered_within_the_cap() {
    let app = TestApp::spawn().await;
    wide_tree(&app, 1, 10).await;
    // The request: 10^6 combinations; one answered.
    let (status, body) = candidates(&app, &granular(6, "group_policy=none&limit=1")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["allocation_requests"].as_array().unwrap().len(), 1);
    assert_eq!(body["provider_summaries"].as_object().unwrap().len(), 11);
    // Without a limit: the default cap of 1000.
    let (status, body) = candidates(&app, &granular(6, "group_policy=none")).await;
    assert_eq!(status, 200);
    assert_eq!(body["allocation_requests"].as_array().unwrap().len(), 1000);
    let metrics = app.get("/metrics").await.text().await.unwrap();
    let truncated = metrics
        .lines()
        .find(|line| line.starts_with("ringmaster_placement_candidates_truncated_total{reason="))
        .unwrap();
    assert!(!truncated.ends_with(" 0"), "{truncated}");
    // Ten groups, isolated, on ten children: 10! answers exist; the cap stops it.
    let (status, body) = candidates(&app, &granular(10, "group_policy=isolate")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["allocation_requests"].as_array().unwrap().len(), 1000);
    // Eleven isolated groups on ten children: none, found out without 10^11 tries.
    let (status, body) = candidates(&app, &granular(11, "group_policy=isolate")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["allocation_requests"], json!([]));
}

#[actix_web::test]
async fn more_than_32_groups_are_refused_naming_the_bound() {
    let app = TestApp::spawn().await;
    wide_tree(&app, 1, 2).await;
    let (status, _) = candidates(&app, &granular(31, "group_policy=none&limit=1")).await;
    assert_eq!(
        status, 200,
        "31 granular groups and the unsuffixed one are fine"
    );
    let (status, body) = candidates(&app, &granular(33, "group_policy=none&limit=1")).await;
    assert_eq!(status, 400, "{body}");
    let detail = body["errors"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("at most 32"), "{detail}");
}

#[actix_web::test]
async fn a_request_past_its_deadline_is_503_in_placements_envelope() {
    let app = TestApp::spawn_configured(|config| {
        config.placement.candidates = CandidateSettings {
            cap: None,
            timeout: std::time::Duration::from_millis(1),
            ..CandidateSettings::default()
        };
    })
    .await;
    wide_tree(&app, 1, 12).await;
    // 12 isolated groups on 12 children, without a cap: 12! answers to make.
    let (status, body) = candidates(&app, &granular(12, "group_policy=isolate")).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["errors"][0]["status"], 503);
    let detail = body["errors"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("could not be computed within 1ms"),
        "{detail}"
    );
    // The process answers as before.
    let (status, _) = candidates(&app, &granular(2, "group_policy=none&limit=1")).await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn breadth_first_and_sampling_spread_the_answers_over_the_trees() {
    let breadth = TestApp::spawn_configured(|config| {
        config.placement.candidates = CandidateSettings {
            cap: Some(4),
            strategy: Strategy::BreadthFirst,
            ..CandidateSettings::default()
        };
    })
    .await;
    for root in 1..=4 {
        wide_tree(&breadth, root, 3).await;
    }
    let (status, body) = candidates(&breadth, &granular(2, "group_policy=none")).await;
    assert_eq!(status, 200, "{body}");
    let mut seen = roots(&body);
    seen.dedup();
    assert_eq!(seen.len(), 4, "one candidate of each root: {seen:?}");

    let sampled = TestApp::spawn_configured(|config| {
        config.placement.candidates = CandidateSettings {
            randomize: true,
            ..CandidateSettings::default()
        };
    })
    .await;
    wide_tree(&sampled, 1, 10).await;
    let mut answers = std::collections::BTreeSet::new();
    for _ in 0..5 {
        let (status, body) = candidates(&sampled, &granular(2, "group_policy=none&limit=3")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["allocation_requests"].as_array().unwrap().len(), 3);
        answers.insert(body["allocation_requests"].to_string());
    }
    assert!(
        answers.len() > 1,
        "five schedulers asking got the same answer"
    );
}
