//! A provider's traits and aggregates under concurrent writers: a generation admits one
//! writer, a new aggregate created by many at once links every provider, and errors come in
//! Placement's order with nothing written.

use diesel::RunQueryDsl;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, create_placement_provider, placement_race};

const ADMIN: &str = "admin";

/// Eight writers replace one provider's traits at the same generation, ten rounds: one wins,
/// seven get 409 `placement.concurrent_update`, and the provider holds the winner's set.
#[actix_web::test]
async fn racing_trait_writers_at_one_generation_get_one_winner() {
    let app = TestApp::spawn().await;
    let rp = "5d0c4a8e-7b1f-4c2a-9e3d-6f8a1b2c3d4e";
    create_placement_provider(&app, rp).await;
    let sets = [
        vec!["HW_CPU_X86_AVX2"],
        vec!["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42"],
        vec!["HW_NUMA_ROOT"],
        vec![],
        vec!["HW_CPU_X86_SSE42", "HW_NUMA_ROOT"],
        vec!["MISC_SHARES_VIA_AGGREGATE"],
        vec![
            "HW_CPU_X86_AVX2",
            "HW_NUMA_ROOT",
            "MISC_SHARES_VIA_AGGREGATE",
        ],
        vec!["HW_CPU_X86_SSE42"],
    ];
    let path = format!("/placement/resource_providers/{rp}/traits");
    for round in 0..10i64 {
        let outcomes = placement_race(
            &app,
            sets.iter().map(|set| {
                (
                    path.clone(),
                    json!({"resource_provider_generation": round, "traits": set}),
                )
            }),
            "1.6",
        )
        .await;
        let winners: Vec<usize> = (0..outcomes.len())
            .filter(|index| outcomes[*index].0 == 200)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .filter(|(status, _)| *status != 200)
                .all(|(status, code)| *status == 409 && code == "placement.concurrent_update"),
            "round {round}: {outcomes:?}"
        );
        let (status, _, body) = app
            .placement(Method::GET, &path)
            .version("1.6")
            .token(ADMIN)
            .send()
            .await;
        assert_eq!(status, 200);
        let mut expected = sets[winners[0]].clone();
        expected.sort();
        assert_eq!(
            body,
            json!({"resource_provider_generation": round + 1, "traits": expected}),
            "round {round}"
        );
    }
}

/// Eight providers join one aggregate nobody has created yet, all at once, five rounds: every
/// write succeeds, the aggregate exists once, and it lists all eight providers.
#[actix_web::test]
async fn providers_racing_into_a_new_aggregate_all_join_it() {
    let app = TestApp::spawn().await;
    let providers: Vec<String> = (0..8)
        .map(|index| format!("6e1d5b9f-8c2a-4d3b-8f4e-7a9b2c3d4e{index:02x}"))
        .collect();
    for uuid in &providers {
        create_placement_provider(&app, uuid).await;
    }
    for round in 0..5i64 {
        let aggregate = format!("a66e0000-0000-4000-8000-0000000000{round:02x}");
        let outcomes = placement_race(
            &app,
            providers.iter().map(|uuid| {
                (
                    format!("/placement/resource_providers/{uuid}/aggregates"),
                    json!({"resource_provider_generation": round, "aggregates": [aggregate]}),
                )
            }),
            "1.19",
        )
        .await;
        assert!(
            outcomes.iter().all(|(status, _)| *status == 200),
            "round {round}: {outcomes:?}"
        );
        let (status, _, body) = app
            .placement(
                Method::GET,
                &format!("/placement/resource_providers?member_of={aggregate}"),
            )
            .version("1.19")
            .token(ADMIN)
            .send()
            .await;
        assert_eq!(status, 200);
        let mut members: Vec<&str> = body["resource_providers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|provider| provider["uuid"].as_str().unwrap())
            .collect();
        members.sort_unstable();
        assert_eq!(members, providers, "round {round}");
    }
    let mut conn = app.db.conn();
    let aggregates: i64 = diesel::dsl::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "(SELECT count(*) FROM placement_aggregates)",
    ))
    .get_result(&mut conn)
    .unwrap();
    assert_eq!(aggregates, 5, "each aggregate exists once");
}

/// Errors in Placement's order, nothing written: traits check the body before the provider;
/// aggregates report an unknown provider before a bad body; a stale generation is reported
/// before unknown trait names.
#[actix_web::test]
async fn link_errors_come_in_placements_order_and_write_nothing() {
    let app = TestApp::spawn().await;
    let rp = "7f2e6c0a-9d3b-4e4c-8a5f-8b0c3d4e5f60";
    let unknown = "00000000-0000-4000-8000-00000000dead";
    create_placement_provider(&app, rp).await;
    let put = |path: String, version: &'static str, body: Value| {
        let app = &app;
        async move {
            app.placement(Method::PUT, &path)
                .version(version)
                .token(ADMIN)
                .json(body)
                .send()
                .await
        }
    };
    let traits = |uuid: &str| format!("/placement/resource_providers/{uuid}/traits");
    let aggregates = |uuid: &str| format!("/placement/resource_providers/{uuid}/aggregates");

    let (status, _, body) = put(traits(unknown), "1.6", json!({"traits": []})).await;
    assert_eq!(status, 400, "{body}");
    let (status, _, body) = put(
        traits(unknown),
        "1.6",
        json!({"traits": [], "resource_provider_generation": 0}),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, _, body) = put(aggregates(unknown), "1.19", json!({"aggregates": []})).await;
    assert_eq!(status, 404, "{body}");
    let (status, _, body) = put(
        aggregates(rp),
        "1.19",
        json!({"aggregates": ["not-a-uuid"], "resource_provider_generation": 0}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, _, body) = put(
        traits(rp),
        "1.6",
        json!({"traits": ["CUSTOM_NOPE"], "resource_provider_generation": 7}),
    )
    .await;
    assert_eq!(
        (status, &body["errors"][0]["code"]),
        (409, &json!("placement.concurrent_update")),
        "{body}"
    );
    let (status, _, body) = put(
        traits(rp),
        "1.6",
        json!({"traits": ["HW_NUMA_ROOT", "CUSTOM_NOPE", "CUSTOM_ALSO_NOPE"],
               "resource_provider_generation": 0}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["errors"][0]["detail"],
        "No such trait(s): CUSTOM_ALSO_NOPE, CUSTOM_NOPE"
    );
    let (status, _, body) = app
        .placement(Method::GET, &traits(rp))
        .version("1.6")
        .token(ADMIN)
        .send()
        .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"resource_provider_generation": 0, "traits": []})
        ),
        "nothing written"
    );
}
