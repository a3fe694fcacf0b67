//! The Placement API's foundation: the version document, microversion negotiation, noauth2
//! authentication, the error envelope, resource classes and traits.

use serde_json::{Value, json};

use crate::helpers::{TestApp, placement_call as call};

#[actix_web::test]
async fn the_version_document_needs_no_token_and_versions_are_negotiated() {
    let app = TestApp::spawn().await;
    let (status, headers, body) =
        call(&app, reqwest::Method::GET, "/placement/", None, None, None).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT",
                             "links": [{"rel": "self", "href": ""}]}]})
    );
    assert_eq!(headers["openstack-api-version"], "placement 1.0");
    assert_eq!(headers["vary"], "openstack-api-version");

    let (_, headers, _) = call(
        &app,
        reqwest::Method::GET,
        "/placement/",
        Some("latest"),
        None,
        None,
    )
    .await;
    assert_eq!(headers["openstack-api-version"], "placement 1.39");
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/",
        Some("1.40"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 406);
    assert_eq!(
        body["errors"][0]["detail"],
        "Unacceptable version header: 1.40"
    );
    assert_eq!(body["errors"][0]["title"], "Not Acceptable");
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/",
        Some("pony.horse"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"][0]["detail"],
        "invalid version string: pony.horse"
    );
}

#[actix_web::test]
async fn everything_else_needs_an_admin_token() {
    let app = TestApp::spawn().await;
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_classes",
        Some("1.2"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(body["errors"][0]["code"], "placement.undefined_code");
    assert!(
        body["errors"][0]["request_id"]
            .as_str()
            .unwrap()
            .starts_with("req-")
    );
    let (status, _, _) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_classes",
        Some("1.2"),
        Some("user"),
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, _) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_classes",
        Some("1.2"),
        Some("admin"),
        None,
    )
    .await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn custom_resource_classes_and_traits_come_and_go() {
    let app = TestApp::spawn().await;
    let admin = Some("admin");
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_classes",
        Some("1.2"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["resource_classes"].as_array().unwrap().len(),
        21,
        "the standard classes"
    );
    assert_eq!(
        body["resource_classes"][0],
        json!({"name": "VCPU", "links": [{"rel": "self", "href": "/placement/resource_classes/VCPU"}]})
    );

    let (status, headers, _) = call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_classes",
        Some("1.2"),
        admin,
        Some(json!({"name": "CUSTOM_GOLD"})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        headers["location"],
        app.url("/placement/resource_classes/CUSTOM_GOLD").as_str(),
        "absolute, as webob sends it"
    );
    let (status, _, body) = call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_classes",
        Some("1.2"),
        admin,
        Some(json!({"name": "CUSTOM_GOLD"})),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let (status, _, body) = call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_classes",
        Some("1.2"),
        admin,
        Some(json!({"name": "GOLD"})),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["errors"][0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("JSON does not validate")
    );
    let (status, _, _) = call(
        &app,
        reqwest::Method::PUT,
        "/placement/resource_classes/CUSTOM_GOLD",
        Some("1.7"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 204, "already there");
    let (status, _, _) = call(
        &app,
        reqwest::Method::DELETE,
        "/placement/resource_classes/VCPU",
        Some("1.2"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 400, "standard classes stay");
    let (status, _, _) = call(
        &app,
        reqwest::Method::DELETE,
        "/placement/resource_classes/CUSTOM_GOLD",
        Some("1.2"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _, _) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_classes/CUSTOM_GOLD",
        Some("1.2"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 404);

    let (status, _, _) = call(
        &app,
        reqwest::Method::PUT,
        "/placement/traits/CUSTOM_FAST",
        Some("1.6"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 201);
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/traits?name=startswith:CUSTOM",
        Some("1.6"),
        admin,
        None,
    )
    .await;
    assert_eq!((status, body), (200, json!({"traits": ["CUSTOM_FAST"]})));
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/traits",
        Some("1.6"),
        admin,
        None,
    )
    .await;
    assert_eq!(
        (status, body["traits"].as_array().unwrap().len()),
        (200, 378)
    );
    let (status, _, _) = call(
        &app,
        reqwest::Method::GET,
        "/placement/traits",
        Some("1.5"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 404, "traits arrived in 1.6");
    let (status, _, _) = call(
        &app,
        reqwest::Method::DELETE,
        "/placement/traits/CUSTOM_FAST",
        Some("1.6"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, headers, _) = call(
        &app,
        reqwest::Method::POST,
        "/placement/traits",
        Some("1.6"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 405);
    assert_eq!(headers["allow"], "GET");
}

#[actix_web::test]
async fn resource_providers_form_trees_and_keep_their_names_unique() {
    let app = TestApp::spawn().await;
    let admin = Some("admin");
    let parent = "8d4b0b1e-6a64-4d8b-9b37-6d2f7a5f1a01";
    let child = "8d4b0b1e-6a64-4d8b-9b37-6d2f7a5f1a02";
    let (status, headers, body) = call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_providers",
        Some("1.19"),
        admin,
        Some(json!({"name": "rack-1", "uuid": parent})),
    )
    .await;
    assert_eq!(
        (status, body),
        (201, Value::Null),
        "before 1.20: 201 without a body"
    );
    assert_eq!(
        headers["location"],
        app.url(&format!("/placement/resource_providers/{parent}"))
            .as_str()
    );

    let (status, _, body) = call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_providers",
        Some("1.20"),
        admin,
        Some(json!({"name": "node-1", "uuid": child, "parent_provider_uuid": parent})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["root_provider_uuid"], parent);
    assert_eq!(body["parent_provider_uuid"], parent);
    assert_eq!(body["generation"], 0);

    let (status, _, body) = call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_providers",
        Some("1.20"),
        admin,
        Some(json!({"name": "node-1"})),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(body["errors"][0]["code"], "placement.duplicate_name");
    assert_eq!(
        body["errors"][0]["detail"],
        "Conflicting resource provider name: node-1 already exists."
    );

    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        &format!("/placement/resource_providers?in_tree={child}"),
        Some("1.14"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["resource_providers"].as_array().unwrap().len(), 2);
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_providers?uuid=nope",
        Some("1.14"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["errors"][0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("Invalid query string parameters")
    );

    let (status, _, body) = call(
        &app,
        reqwest::Method::PUT,
        &format!("/placement/resource_providers/{child}"),
        Some("1.36"),
        admin,
        Some(json!({"name": "node-1b", "parent_provider_uuid": null})),
    )
    .await;
    assert_eq!(status, 400, "un-parenting needs 1.37: {body}");
    let (status, _, body) = call(
        &app,
        reqwest::Method::PUT,
        &format!("/placement/resource_providers/{child}"),
        Some("1.37"),
        admin,
        Some(json!({"name": "node-1b", "parent_provider_uuid": null})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["name"].clone(), body["root_provider_uuid"].clone()),
        (json!("node-1b"), json!(child))
    );

    let (status, _, _) = call(
        &app,
        reqwest::Method::PUT,
        &format!("/placement/resource_providers/{child}"),
        Some("1.37"),
        admin,
        Some(json!({"name": "node-1b", "parent_provider_uuid": parent})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, body) = call(
        &app,
        reqwest::Method::DELETE,
        &format!("/placement/resource_providers/{parent}"),
        None,
        admin,
        None,
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(
        body["errors"][0]["code"],
        "placement.resource_provider.cannot_delete_parent"
    );
    for uuid in [child, parent] {
        let (status, _, _) = call(
            &app,
            reqwest::Method::DELETE,
            &format!("/placement/resource_providers/{uuid}"),
            None,
            admin,
            None,
        )
        .await;
        assert_eq!(status, 204);
    }
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_providers",
        None,
        admin,
        None,
    )
    .await;
    assert_eq!((status, body), (200, json!({"resource_providers": []})));
}

#[actix_web::test]
async fn inventories_are_generation_checked_and_validated() {
    let app = TestApp::spawn().await;
    let admin = Some("admin");
    let rp = "5e0c8f38-7d8b-4f38-8f1c-0a1e2d3c4b5a";
    let (status, _, _) = call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_providers",
        Some("1.20"),
        admin,
        Some(json!({"name": "rp", "uuid": rp})),
    )
    .await;
    assert_eq!(status, 200);
    let path = format!("/placement/resource_providers/{rp}/inventories");
    let inventory = json!({"resource_provider_generation": 0,
                           "inventories": {"VCPU": {"total": 8, "max_unit": 4}, "DISK_GB": {"total": 100}}});
    let (status, _, body) = call(
        &app,
        reqwest::Method::PUT,
        &path,
        Some("1.26"),
        admin,
        Some(inventory.clone()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resource_provider_generation"], 1);
    assert_eq!(
        body["inventories"]["VCPU"],
        json!({"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 4, "step_size": 1, "allocation_ratio": 1.0})
    );

    let (status, _, body) = call(
        &app,
        reqwest::Method::PUT,
        &path,
        Some("1.26"),
        admin,
        Some(inventory),
    )
    .await;
    assert_eq!(status, 409, "generation 0 is stale now");
    assert_eq!(body["errors"][0]["code"], "placement.concurrent_update");

    let bad = json!({"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 0}}});
    let (status, _, body) = call(
        &app,
        reqwest::Method::PUT,
        &path,
        Some("1.26"),
        admin,
        Some(bad),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["errors"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("0 is less than the minimum of 1")
    );
    let reserved = json!({"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 4, "reserved": 4}}});
    let (status, _, _) = call(
        &app,
        reqwest::Method::PUT,
        &path,
        Some("1.25"),
        admin,
        Some(reserved.clone()),
    )
    .await;
    assert_eq!(status, 400, "before 1.26 reserved must stay below total");
    let (status, _, _) = call(
        &app,
        reqwest::Method::PUT,
        &path,
        Some("1.26"),
        admin,
        Some(reserved),
    )
    .await;
    assert_eq!(status, 200, "from 1.26 reserved may equal total");

    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        &format!("{path}/DISK_GB"),
        None,
        admin,
        None,
    )
    .await;
    assert_eq!(status, 404, "DISK_GB went with the last PUT: {body}");
    let (status, _, _) = call(
        &app,
        reqwest::Method::DELETE,
        &format!("{path}/VCPU"),
        None,
        admin,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _, body) = call(&app, reqwest::Method::GET, &path, None, admin, None).await;
    assert_eq!((status, body["inventories"].clone()), (200, json!({})));
}

#[actix_web::test]
async fn provider_traits_and_aggregates_are_replaced_whole_and_generation_checked() {
    let app = TestApp::spawn().await;
    let admin = Some("admin");
    let rp = "2a7e6a4e-1c0e-4b8e-9a5e-7c1f0d2b3a4c";
    call(
        &app,
        reqwest::Method::POST,
        "/placement/resource_providers",
        Some("1.20"),
        admin,
        Some(json!({"name": "rp", "uuid": rp})),
    )
    .await;
    let traits = format!("/placement/resource_providers/{rp}/traits");
    let body =
        json!({"traits": ["HW_CPU_X86_AVX2", "CUSTOM_NOPE"], "resource_provider_generation": 0});
    let (status, _, answer) = call(
        &app,
        reqwest::Method::PUT,
        &traits,
        Some("1.6"),
        admin,
        Some(body),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["errors"][0]["detail"],
        "No such trait(s): CUSTOM_NOPE"
    );
    let body = json!({"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 0});
    let (status, _, answer) = call(
        &app,
        reqwest::Method::PUT,
        &traits,
        Some("1.6"),
        admin,
        Some(body.clone()),
    )
    .await;
    assert_eq!(
        (status, answer),
        (
            200,
            json!({"resource_provider_generation": 1, "traits": ["HW_CPU_X86_AVX2"]})
        )
    );
    let (status, _, answer) = call(
        &app,
        reqwest::Method::PUT,
        &traits,
        Some("1.6"),
        admin,
        Some(body),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(answer["errors"][0]["code"], "placement.concurrent_update");

    let aggregates = format!("/placement/resource_providers/{rp}/aggregates");
    let aggregate = "0b8f1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d";
    let (status, _, answer) = call(
        &app,
        reqwest::Method::PUT,
        &aggregates,
        Some("1.1"),
        admin,
        Some(json!([aggregate])),
    )
    .await;
    assert_eq!((status, answer), (200, json!({"aggregates": [aggregate]})));
    let (status, _, answer) = call(
        &app,
        reqwest::Method::PUT,
        &aggregates,
        Some("1.19"),
        admin,
        Some(json!({"aggregates": [], "resource_provider_generation": 1})),
    )
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
    let admin = Some("admin");
    let providers: Vec<String> = (0..10)
        .map(|index| format!("4c1d8e2a-0000-4000-8000-{index:012}"))
        .collect();
    for (index, provider) in providers.iter().enumerate() {
        call(
            &app,
            reqwest::Method::POST,
            "/placement/resource_providers",
            Some("1.20"),
            admin,
            Some(json!({"name": format!("rp-{index}"), "uuid": provider})),
        )
        .await;
        let (status, _, _) = call(
            &app,
            reqwest::Method::PUT,
            &format!("/placement/resource_providers/{provider}/inventories"),
            Some("1.20"),
            admin,
            Some(json!({"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1}}})),
        )
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
    let admin = Some("admin");
    let fast = "6a1b2c3d-0000-4000-8000-000000000001";
    let slow = "6a1b2c3d-0000-4000-8000-000000000002";
    for (name, uuid) in [("fast", fast), ("slow", slow)] {
        call(
            &app,
            reqwest::Method::POST,
            "/placement/resource_providers",
            Some("1.20"),
            admin,
            Some(json!({"name": name, "uuid": uuid})),
        )
        .await;
        call(&app, reqwest::Method::PUT, &format!("/placement/resource_providers/{uuid}/inventories"), Some("1.20"), admin,
             Some(json!({"resource_provider_generation": 0, "inventories": {"VCPU": {"total": if name == "fast" { 8 } else { 2 }}}}))).await;
    }
    call(
        &app,
        reqwest::Method::PUT,
        &format!("/placement/resource_providers/{fast}/traits"),
        Some("1.6"),
        admin,
        Some(json!({"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 1})),
    )
    .await;
    let names = |body: &Value| -> Vec<String> {
        body["resource_providers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|rp| rp["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_providers?required=HW_CPU_X86_AVX2",
        Some("1.18"),
        admin,
        None,
    )
    .await;
    assert_eq!((status, names(&body)), (200, vec!["fast".to_owned()]));
    let (_, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_providers?required=!HW_CPU_X86_AVX2",
        Some("1.22"),
        admin,
        None,
    )
    .await;
    assert_eq!(names(&body), vec!["slow".to_owned()]);
    let (_, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_providers?resources=VCPU:4",
        Some("1.4"),
        admin,
        None,
    )
    .await;
    assert_eq!(names(&body), vec!["fast".to_owned()]);
    let (status, _, body) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_providers?required=BOGUS",
        Some("1.18"),
        admin,
        None,
    )
    .await;
    assert_eq!(
        (status, body["errors"][0]["detail"].clone()),
        (400, json!("No such trait(s): BOGUS."))
    );
    let (status, _, _) = call(
        &app,
        reqwest::Method::GET,
        "/placement/resource_providers?required=X",
        Some("1.17"),
        admin,
        None,
    )
    .await;
    assert_eq!(status, 400, "required arrived in 1.18");
}
