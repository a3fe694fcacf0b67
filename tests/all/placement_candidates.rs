//! Placement's allocation candidates for flat providers, the consumer-generation race, and the
//! default policy (project readers, system scope).

use diesel::RunQueryDsl;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, create_placement_provider, placement_race, put_placement_inventory};

const ADMIN: &str = "admin";

/// Creates provider `uuid` with `inventories` and `traits`; returns nothing, asserts success.
async fn provider(app: &TestApp, uuid: &str, inventories: Value, traits: &[&str]) {
    create_placement_provider(app, uuid).await;
    put_placement_inventory(app, uuid, inventories).await;
    if !traits.is_empty() {
        for name in traits.iter().filter(|name| name.starts_with("CUSTOM_")) {
            app.placement(Method::PUT, &format!("/placement/traits/{name}"))
                .version("1.6")
                .token(ADMIN)
                .send()
                .await;
        }
        let (status, _, body) = app
            .placement(
                Method::PUT,
                &format!("/placement/resource_providers/{uuid}/traits"),
            )
            .version("1.6")
            .token(ADMIN)
            .json(json!({"resource_provider_generation": 1, "traits": traits}))
            .send()
            .await;
        assert_eq!(status, 200, "{body}");
    }
}

fn candidate_uuids(body: &Value) -> Vec<String> {
    let mut uuids: Vec<String> = body["allocation_requests"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|request| request["allocations"].as_object().unwrap().keys().cloned())
        .collect();
    uuids.sort();
    uuids
}

const BIG: &str = "c0000000-0000-4000-8000-000000000001";
const SMALL: &str = "c0000000-0000-4000-8000-000000000002";
const GPU: &str = "c0000000-0000-4000-8000-000000000003";

async fn three_hosts(app: &TestApp) {
    provider(
        app,
        BIG,
        json!({"VCPU": {"total": 32}, "MEMORY_MB": {"total": 65536, "max_unit": 16384}}),
        &["HW_CPU_X86_AVX2"],
    )
    .await;
    provider(
        app,
        SMALL,
        json!({"VCPU": {"total": 4}, "MEMORY_MB": {"total": 4096}}),
        &[],
    )
    .await;
    provider(
        app,
        GPU,
        json!({"VCPU": {"total": 16, "allocation_ratio": 2.0}, "MEMORY_MB": {"total": 32768},
               "CUSTOM_GPU": {"total": 1}}),
        &["HW_CPU_X86_AVX2", "CUSTOM_FAST"],
    )
    .await;
}

/// Only providers that alone have room for every requested class are candidates; traits,
/// limits and the summary shape follow the microversion.
/// Candidate queries Placement refuses: (query, microversion, what its detail says).
const BAD_QUERIES: &[(&str, &str, &str)] = &[
    (
        "resources=VCPU:0",
        "1.39",
        "Requested resource VCPU requires amount >= 1. Got: 0.",
    ),
    (
        "resources=CUSTOM_NOPE:1",
        "1.39",
        "Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE.",
    ),
    (
        "required=HW_CPU_X86_AVX2",
        "1.39",
        "There must be at least one resources or resources[$S] parameter.",
    ),
    (
        "resources=VCPU:1&required=CUSTOM_FAST,!CUSTOM_FAST",
        "1.39",
        "Conflicting required and forbidden traits found in the following traits keys: required: (CUSTOM_FAST)",
    ),
    (
        "resources=VCPU:1&limit=0",
        "1.39",
        "Failed validating 'pattern'",
    ),
    (
        "resources1=VCPU:1&resources2=VCPU:1",
        "1.39",
        "\"group_policy\" parameter is required",
    ),
    (
        "resources01=VCPU:1",
        "1.32",
        "'resources01' does not match any of the regexes",
    ),
];

#[actix_web::test]
async fn candidates_are_the_flat_providers_with_room_and_the_right_traits() {
    let app = TestApp::spawn().await;
    app.placement(Method::PUT, "/placement/resource_classes/CUSTOM_GPU")
        .version("1.7")
        .token(ADMIN)
        .send()
        .await;
    three_hosts(&app).await;
    let get = |query: &'static str, version: &'static str| candidates(&app, query, version);

    let (status, _, body) = get("resources=VCPU:8,MEMORY_MB:8192", "1.39").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        candidate_uuids(&body),
        vec![BIG.to_owned(), GPU.to_owned()],
        "SMALL lacks room"
    );
    let summary = &body["provider_summaries"][GPU];
    assert_eq!(
        summary["resources"]["VCPU"],
        json!({"capacity": 32, "used": 0}),
        "ratio 2.0"
    );
    assert_eq!(
        summary["resources"]["CUSTOM_GPU"],
        json!({"capacity": 1, "used": 0}),
        "1.27: every class"
    );
    assert_eq!(summary["root_provider_uuid"], json!(GPU));
    assert_eq!(summary["parent_provider_uuid"], Value::Null);
    assert_eq!(
        body["allocation_requests"][0]["mappings"],
        json!({"": [BIG]})
    );

    let (_, _, body) = get("resources=MEMORY_MB:20000", "1.39").await;
    assert_eq!(
        candidate_uuids(&body),
        vec![GPU.to_owned()],
        "BIG's max_unit is 16384"
    );

    let (_, _, body) = get(
        "resources=VCPU:1&required=HW_CPU_X86_AVX2,!CUSTOM_FAST",
        "1.39",
    )
    .await;
    assert_eq!(candidate_uuids(&body), vec![BIG.to_owned()]);
    let (_, _, body) = get(
        "resources=VCPU:1&required=in:CUSTOM_FAST,CUSTOM_NOPE",
        "1.39",
    )
    .await;
    assert_eq!(
        body["errors"][0]["detail"],
        json!("No such trait(s): CUSTOM_NOPE.")
    );
    let (_, _, body) = get("resources=VCPU:1&limit=2", "1.39").await;
    assert_eq!(body["allocation_requests"].as_array().unwrap().len(), 2);
    assert_eq!(body["provider_summaries"].as_object().unwrap().len(), 2);

    at_1_10_and_with_bad_queries(&app).await;
}

/// The candidates of `query` at microversion `version`, as an admin asks.
async fn candidates(
    app: &TestApp,
    query: &str,
    version: &str,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let path = format!("/placement/allocation_candidates?{query}");
    app.placement(Method::GET, &path)
        .version(version)
        .token(ADMIN)
        .send()
        .await
}

/// 1.10: a list of allocations and only the requested classes in the summaries; refused
/// queries name their fault; before 1.10 there are no candidates.
async fn at_1_10_and_with_bad_queries(app: &TestApp) {
    let get = |query: &'static str, version: &'static str| candidates(app, query, version);
    let (status, _, body) = get("resources=CUSTOM_GPU:1", "1.10").await;
    assert_eq!(status, 200);
    assert_eq!(
        body["allocation_requests"],
        json!([{"allocations": [{"resource_provider": {"uuid": GPU}, "resources": {"CUSTOM_GPU": 1}}]}])
    );
    assert_eq!(
        body["provider_summaries"][GPU],
        json!({"resources": {"CUSTOM_GPU": {"capacity": 1, "used": 0}}})
    );

    for (query, version, detail) in BAD_QUERIES {
        let (status, _, body) = get(query, version).await;
        assert_eq!(status, 400, "{query}: {body}");
        let text = body["errors"][0]["detail"].as_str().unwrap();
        assert!(text.contains(detail), "{query}: {text}");
    }
    let (status, _, _) = get("resources=VCPU:1", "1.9").await;
    assert_eq!(status, 404, "allocation candidates start at 1.10");
}

/// Candidates are read from a kept snapshot; every committed write — through the API or
/// straight into the database by another process — shows in the next answer.
#[actix_web::test]
async fn candidates_see_every_committed_write_at_once() {
    let app = TestApp::spawn().await;
    app.placement(Method::PUT, "/placement/resource_classes/CUSTOM_GPU")
        .version("1.7")
        .token(ADMIN)
        .send()
        .await;
    three_hosts(&app).await;
    let gpus = || async {
        let (_, _, body) = app
            .placement(
                Method::GET,
                "/placement/allocation_candidates?resources=CUSTOM_GPU:1",
            )
            .version("1.39")
            .token(ADMIN)
            .send()
            .await;
        candidate_uuids(&body)
    };
    assert_eq!(gpus().await, vec![GPU.to_owned()]);
    assert_eq!(
        gpus().await,
        vec![GPU.to_owned()],
        "served again from the snapshot"
    );

    let consumer = "c0000000-0000-4000-8000-00000000c001";
    let (status, _, body) = app
        .placement(Method::PUT, &format!("/placement/allocations/{consumer}"))
        .version("1.39")
        .token(ADMIN)
        .json(
            json!({"allocations": {GPU: {"resources": {"CUSTOM_GPU": 1}}},
                    "project_id": "p", "user_id": "u", "consumer_generation": null,
                    "consumer_type": "INSTANCE"}),
        )
        .send()
        .await;
    assert_eq!(status, 204, "{body}");
    assert!(gpus().await.is_empty(), "the only GPU is taken");

    // Another process frees it behind this one's back.
    let mut conn = app.db.conn();
    diesel::sql_query(format!(
        "DELETE FROM allocations WHERE consumer_id = '{consumer}'"
    ))
    .execute(&mut conn)
    .unwrap();
    assert_eq!(
        gpus().await,
        vec![GPU.to_owned()],
        "a direct database write is seen too"
    );

    diesel::sql_query(format!(
        "UPDATE inventories SET reserved = 1 FROM resource_providers rp
          WHERE rp.id = inventories.resource_provider_id AND rp.uuid = '{GPU}'
            AND inventories.resource_class_id = (SELECT id FROM resource_classes WHERE name = 'CUSTOM_GPU')"
    ))
    .execute(&mut conn)
    .unwrap();
    assert!(gpus().await.is_empty(), "the GPU is now reserved");
}

/// Many clients create the same new consumer at once with `consumer_generation: null`, for 20
/// consumers: each time one wins, every other gets 409 `placement.concurrent_update` (never a
/// constraint's name), and one consumer row holds one allocation.
#[actix_web::test]
async fn racing_creators_of_one_consumer_get_one_winner() {
    let app = TestApp::spawn().await;
    provider(&app, BIG, json!({"VCPU": {"total": 64}}), &[]).await;
    for round in 0..20 {
        let consumer = format!("c0000000-0000-4000-8000-0000000c{round:04}");
        let claims = (0..8).map(|_| {
            (
                format!("/placement/allocations/{consumer}"),
                json!({"allocations": {BIG: {"resources": {"VCPU": 1}}},
                       "project_id": "p", "user_id": "u", "consumer_generation": null,
                       "consumer_type": "INSTANCE"}),
            )
        });
        let outcomes = placement_race(&app, claims, "1.39").await;
        let won = outcomes.iter().filter(|(status, _)| *status == 204).count();
        assert_eq!(won, 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .filter(|(status, _)| *status != 204)
                .all(|(status, code)| *status == 409 && code == "placement.concurrent_update"),
            "round {round}: {outcomes:?}"
        );
        let (status, _, body) = app
            .placement(Method::GET, &format!("/placement/allocations/{consumer}"))
            .version("1.39")
            .token(ADMIN)
            .send()
            .await;
        assert_eq!(status, 200);
        assert_eq!(body["allocations"][BIG]["resources"], json!({"VCPU": 1}));
        assert_eq!(body["consumer_generation"], json!(1));
    }
    let (_, _, usages) = app
        .placement(
            Method::GET,
            &format!("/placement/resource_providers/{BIG}/usages"),
        )
        .version("1.39")
        .token(ADMIN)
        .send()
        .await;
    assert_eq!(
        usages["usages"]["VCPU"],
        json!(20),
        "one allocation per consumer"
    );
}

/// The default policy: admin or service for everything, a project reader for its own usages,
/// nothing for a system-scoped token.
#[actix_web::test]
async fn readers_see_their_project_usages_and_nothing_else() {
    let app = TestApp::spawn().await;
    let as_caller = |path: &str, roles: &str, project: Option<&str>, scope: Option<&str>| {
        let mut request = app
            .client
            .get(app.url(path))
            .header("x-auth-token", "someone")
            .header("x-roles", roles)
            .header("openstack-api-version", "placement 1.39");
        if let Some(project) = project {
            request = request.header("x-project-id", project);
        }
        if let Some(scope) = scope {
            request = request.header("openstack-system-scope", scope);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(
        as_caller(
            "/placement/usages?project_id=p1",
            "reader",
            Some("p1"),
            None
        )
        .await,
        200
    );
    assert_eq!(
        as_caller(
            "/placement/usages?project_id=p2",
            "reader",
            Some("p1"),
            None
        )
        .await,
        403
    );
    assert_eq!(
        as_caller("/placement/resource_providers", "reader", Some("p1"), None).await,
        403
    );
    assert_eq!(
        as_caller("/placement/resource_providers", "service", None, None).await,
        200
    );
    assert_eq!(
        as_caller("/placement/resource_providers", "admin", None, Some("all")).await,
        403
    );
    let (status, _, _) = app
        .placement(Method::GET, "/placement/resource_providers")
        .token("admin:admin")
        .send()
        .await;
    assert_eq!(status, 200, "user admin of project admin is an admin");
}

/// The secure-RBAC profile keeps the reshaper for services; the open profile lets any caller
/// in; CORS answers preflights only for the allowed origin and headers.
#[actix_web::test]
async fn policy_profiles_and_cors_follow_the_settings() {
    use ringmaster::config::PlacementSettings;
    use ringmaster::domain::placement::PolicyProfile;
    let reshape = |app: &TestApp, roles: &'static str| {
        app.client
            .post(app.url("/placement/reshaper"))
            .header("x-auth-token", "someone")
            .header("x-roles", roles)
            .header("openstack-api-version", "placement 1.30")
            .json(&json!({"inventories": {}, "allocations": {}}))
            .send()
    };
    let secure = TestApp::spawn_with(
        None,
        PlacementSettings {
            policy: PolicyProfile::SecureRbac,
            ..PlacementSettings::default()
        },
    )
    .await;
    assert_eq!(reshape(&secure, "admin").await.unwrap().status(), 403);
    assert_eq!(
        reshape(&secure, "service").await.unwrap().status(),
        400,
        "allowed, then refused for its empty inventories"
    );
    let legacy = TestApp::spawn().await;
    assert_eq!(reshape(&legacy, "admin").await.unwrap().status(), 400);

    let open = TestApp::spawn_with(
        None,
        PlacementSettings {
            policy: PolicyProfile::Open,
            ..PlacementSettings::default()
        },
    )
    .await;
    let (status, _, _) = open
        .placement(Method::GET, "/placement/resource_providers")
        .token("anyone")
        .send()
        .await;
    assert_eq!(status, 200);
    let (status, _, _) = open
        .placement(Method::GET, "/placement/resource_providers")
        .send()
        .await;
    assert_eq!(status, 401, "a token is still required");

    a_configured_origin_gets_cors_headers().await;
    let plain = legacy
        .client
        .get(legacy.url("/placement/"))
        .header("origin", "http://valid.example.com")
        .send()
        .await
        .unwrap();
    assert!(
        !plain.headers().contains_key("access-control-allow-origin"),
        "no CORS unless configured"
    );
}

/// With CORS configured, the allowed origin's preflight gets the CORS headers; another origin's
/// none.
async fn a_configured_origin_gets_cors_headers() {
    use ringmaster::config::PlacementSettings;
    let cors = TestApp::spawn_with(
        None,
        PlacementSettings {
            cors_origins: vec!["http://valid.example.com".to_owned()],
            cors_headers: vec!["openstack-api-version".to_owned()],
            ..PlacementSettings::default()
        },
    )
    .await;
    let preflight = |origin: &'static str| {
        cors.client
            .request(Method::OPTIONS, cors.url("/placement/"))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "openstack-api-version")
            .send()
    };
    let good = preflight("http://valid.example.com").await.unwrap();
    assert_eq!(good.status(), 200);
    assert_eq!(
        good.headers()["access-control-allow-origin"],
        "http://valid.example.com"
    );
    assert_eq!(
        good.headers()["access-control-allow-headers"],
        "openstack-api-version"
    );
    let bad = preflight("http://invalid.example.com").await.unwrap();
    assert_eq!(bad.status(), 200);
    assert!(!bad.headers().contains_key("access-control-allow-origin"));
}
