//! Placement's resource providers at work: inventories generation-checked and validated,
//! traits and aggregates replaced whole, concurrent claims that never oversubscribe, and
//! provider lists filtered by traits and free resources.

use serde_json::{Value, json};

use crate::helpers::TestApp;

#[actix_web::test]
async fn inventories_are_generation_checked_and_validated() {
    let app = TestApp::spawn().await;
    let rp = "5e0c8f38-7d8b-4f38-8f1c-0a1e2d3c4b5a";
    let (status, _, _) = app
        .placement(reqwest::Method::POST, "/placement/resource_providers")
        .version("1.20")
        .token("admin")
        .json(json!({"name": "rp", "uuid": rp}))
        .send()
        .await;
    assert_eq!(status, 200);
    let path = format!("/placement/resource_providers/{rp}/inventories");
    let inventory = json!({"resource_provider_generation": 0,
                           "inventories": {"VCPU": {"total": 8, "max_unit": 4}, "DISK_GB": {"total": 100}}});
    let (status, body) = put_inventory(&app, &path, "1.26", inventory.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resource_provider_generation"], 1);
    assert_eq!(
        body["inventories"]["VCPU"],
        json!({"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 4, "step_size": 1, "allocation_ratio": 1.0})
    );

    let (status, body) = put_inventory(&app, &path, "1.26", inventory).await;
    assert_eq!(status, 409, "generation 0 is stale now");
    assert_eq!(body["errors"][0]["code"], "placement.concurrent_update");

    let bad = json!({"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 0}}});
    let (status, body) = put_inventory(&app, &path, "1.26", bad).await;
    assert_eq!(status, 400);
    assert!(
        body["errors"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("0 is less than the minimum of 1")
    );
    let reserved = json!({"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 4, "reserved": 4}}});
    let (status, _) = put_inventory(&app, &path, "1.25", reserved.clone()).await;
    assert_eq!(status, 400, "before 1.26 reserved must stay below total");
    let (status, _) = put_inventory(&app, &path, "1.26", reserved).await;
    assert_eq!(status, 200, "from 1.26 reserved may equal total");

    let (status, _, body) = app
        .placement(reqwest::Method::GET, &format!("{path}/DISK_GB"))
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 404, "DISK_GB went with the last PUT: {body}");
    let (status, _, _) = app
        .placement(reqwest::Method::DELETE, &format!("{path}/VCPU"))
        .token("admin")
        .send()
        .await;
    assert_eq!(status, 204);
    let (status, _, body) = app
        .placement(reqwest::Method::GET, &path)
        .token("admin")
        .send()
        .await;
    assert_eq!((status, body["inventories"].clone()), (200, json!({})));
}

#[actix_web::test]
async fn provider_traits_and_aggregates_are_replaced_whole_and_generation_checked() {
    let app = TestApp::spawn().await;
    let rp = "2a7e6a4e-1c0e-4b8e-9a5e-7c1f0d2b3a4c";
    app.placement(reqwest::Method::POST, "/placement/resource_providers")
        .version("1.20")
        .token("admin")
        .json(json!({"name": "rp", "uuid": rp}))
        .send()
        .await;
    let traits = format!("/placement/resource_providers/{rp}/traits");
    let body =
        json!({"traits": ["HW_CPU_X86_AVX2", "CUSTOM_NOPE"], "resource_provider_generation": 0});
    let (status, _, answer) = app
        .placement(reqwest::Method::PUT, &traits)
        .version("1.6")
        .token("admin")
        .json(body)
        .send()
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["errors"][0]["detail"],
        "No such trait(s): CUSTOM_NOPE"
    );
    let body = json!({"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 0});
    let (status, _, answer) = app
        .placement(reqwest::Method::PUT, &traits)
        .version("1.6")
        .token("admin")
        .json(body.clone())
        .send()
        .await;
    assert_eq!(
        (status, answer),
        (
            200,
            json!({"resource_provider_generation": 1, "traits": ["HW_CPU_X86_AVX2"]})
        )
    );
    let (status, _, answer) = app
        .placement(reqwest::Method::PUT, &traits)
        .version("1.6")
        .token("admin")
        .json(body)
        .send()
        .await;
    assert_eq!(status, 409);
    assert_eq!(answer["errors"][0]["code"], "placement.concurrent_update");

    let aggregates = format!("/placement/resource_providers/{rp}/aggregates");
    let aggregate = "0b8f1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d";
    let (status, _, answer) = app
        .placement(reqwest::Method::PUT, &aggregates)
        .version("1.1")
        .token("admin")
        .json(json!([aggregate]))
        .send()
        .await;
    assert_eq!((status, answer), (200, json!({"aggregates": [aggregate]})));
    let (status, _, answer) = app
        .placement(reqwest::Method::PUT, &aggregates)
        .version("1.19")
        .token("admin")
        .json(json!({"aggregates": [], "resource_provider_generation": 1}))
        .send()
        .await;
    assert_eq!(
        (status, answer),
        (
            200,
            json!({"aggregates": [], "resource_provider_generation": 2})
        )
    );
}

/// Many clients race for the last unit of capacity-1 providers: each provider is allocated
/// exactly once, every loser gets a 409, and no allocation is left without its consumer.
#[actix_web::test]
async fn concurrent_claims_never_oversubscribe_and_never_orphan_an_allocation() {
    let app = TestApp::spawn().await;
    let providers: Vec<String> = (0..10)
        .map(|index| format!("4c1d8e2a-0000-4000-8000-{index:012}"))
        .collect();
    for (index, provider) in providers.iter().enumerate() {
        app.placement(reqwest::Method::POST, "/placement/resource_providers")
            .version("1.20")
            .token("admin")
            .json(json!({"name": format!("rp-{index}"), "uuid": provider}))
            .send()
            .await;
        let (status, _, _) = app
            .placement(
                reqwest::Method::PUT,
                &format!("/placement/resource_providers/{provider}/inventories"),
            )
            .version("1.20")
            .token("admin")
            .json(json!({"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1}}}))
            .send()
            .await;
        assert_eq!(status, 200);
    }
    let mut claims = Vec::new();
    for racer in 0..8 {
        for provider in &providers {
            let consumer = uuid::Uuid::new_v4();
            let body = json!({"allocations": {provider.clone(): {"resources": {"VCPU": 1}}},
                              "project_id": "p", "user_id": "u", "consumer_generation": null});
            let request = app
                .client
                .put(app.url(&format!("/placement/allocations/{consumer}")))
                .header("x-auth-token", "admin")
                .header("openstack-api-version", "placement 1.28")
                .json(&body);
            claims.push(async move { (racer, request.send().await.unwrap().status().as_u16()) });
        }
    }
    let results = futures_util::future::join_all(claims).await;
    let won = results.iter().filter(|(_, status)| *status == 204).count();
    let lost = results.iter().filter(|(_, status)| *status == 409).count();
    assert_eq!(
        (won, lost),
        (10, 70),
        "one winner per provider: {results:?}"
    );

    let mut conn = app.db.conn();
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    use diesel::RunQueryDsl;
    let over: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM (SELECT resource_provider_id FROM allocations GROUP BY resource_provider_id
                                     HAVING sum(used) > 1) o",
    )
    .get_result(&mut conn)
    .unwrap();
    assert_eq!(over.n, 0, "no provider oversubscribed");
    let orphans: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM allocations a WHERE NOT EXISTS (SELECT 1 FROM consumers c WHERE c.uuid = a.consumer_id)",
    )
    .get_result(&mut conn)
    .unwrap();
    assert_eq!(orphans.n, 0);
    let consumers: Count = diesel::sql_query("SELECT count(*) AS n FROM consumers")
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(consumers.n, 10, "losers leave no consumer behind");
}

#[actix_web::test]
async fn provider_lists_filter_by_required_traits_and_free_resources() {
    let app = TestApp::spawn().await;
    let fast = "6a1b2c3d-0000-4000-8000-000000000001";
    let slow = "6a1b2c3d-0000-4000-8000-000000000002";
    for (name, uuid) in [("fast", fast), ("slow", slow)] {
        app.placement(reqwest::Method::POST, "/placement/resource_providers")
            .version("1.20")
            .token("admin")
            .json(json!({"name": name, "uuid": uuid}))
            .send()
            .await;
        app.placement(reqwest::Method::PUT, &format!("/placement/resource_providers/{uuid}/inventories")).version("1.20").token("admin").json(json!({"resource_provider_generation": 0, "inventories": {"VCPU": {"total": if name == "fast" { 8 } else { 2 }}}})).send().await;
    }
    app.placement(
        reqwest::Method::PUT,
        &format!("/placement/resource_providers/{fast}/traits"),
    )
    .version("1.6")
    .token("admin")
    .json(json!({"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 1}))
    .send()
    .await;
    let names = |body: &Value| -> Vec<String> {
        body["resource_providers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|rp| rp["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, body) = admin_get(
        &app,
        "/placement/resource_providers?required=HW_CPU_X86_AVX2",
        "1.18",
    )
    .await;
    assert_eq!((status, names(&body)), (200, vec!["fast".to_owned()]));
    let (_, body) = admin_get(
        &app,
        "/placement/resource_providers?required=!HW_CPU_X86_AVX2",
        "1.22",
    )
    .await;
    assert_eq!(names(&body), vec!["slow".to_owned()]);
    let (_, body) = admin_get(
        &app,
        "/placement/resource_providers?resources=VCPU:4",
        "1.4",
    )
    .await;
    assert_eq!(names(&body), vec!["fast".to_owned()]);
    let (status, body) =
        admin_get(&app, "/placement/resource_providers?required=BOGUS", "1.18").await;
    assert_eq!(
        (status, body["errors"][0]["detail"].clone()),
        (400, json!("No such trait(s): BOGUS."))
    );
    let (status, _) = admin_get(&app, "/placement/resource_providers?required=X", "1.17").await;
    assert_eq!(status, 400, "required arrived in 1.18");
}

/// An admin's GET of `path` at microversion `version`: (status, body).
async fn admin_get(app: &TestApp, path: &str, version: &str) -> (u16, Value) {
    let (status, _, body) = app
        .placement(reqwest::Method::GET, path)
        .version(version)
        .token("admin")
        .send()
        .await;
    (status, body)
}

/// An admin's PUT of inventories `body` to `path` at microversion `version`: (status, body).
async fn put_inventory(app: &TestApp, path: &str, version: &str, body: Value) -> (u16, Value) {
    let request = app
        .placement(reqwest::Method::PUT, path)
        .version(version)
        .token("admin");
    let (status, _, answer) = request.json(body).send().await;
    (status, answer)
}
