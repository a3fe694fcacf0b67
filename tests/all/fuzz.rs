//! A fuzz of the admin and Placement write routes (issue 17): each field of a valid body
//! replaced by values of the wrong type, NUL bytes, huge and negative numbers, empty and
//! over-long strings, and whole bodies that are not objects or not JSON. No answer may be a
//! 5xx, and nothing may be written: the database's rows are counted before and after.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::TestApp;

/// Rows of every table a write could touch, and the providers' generations.
fn snapshot(app: &TestApp) -> Vec<(String, i64)> {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    use diesel::RunQueryDsl;
    let mut conn = app.db.conn();
    [
        "SELECT count(*) AS n FROM services",
        "SELECT count(*) AS n FROM ironic_nodes",
        "SELECT count(*) AS n FROM compute_nodes",
        "SELECT count(*) AS n FROM resource_providers",
        "SELECT COALESCE(sum(generation), 0)::bigint AS n FROM resource_providers",
        "SELECT count(*) AS n FROM inventories",
        "SELECT count(*) AS n FROM allocations",
        "SELECT count(*) AS n FROM consumers",
        "SELECT count(*) AS n FROM instances",
        "SELECT count(*) AS n FROM traits",
        "SELECT count(*) AS n FROM resource_classes",
        "SELECT count(*) AS n FROM resource_provider_traits",
        "SELECT count(*) AS n FROM placement_aggregates",
    ]
    .iter()
    .map(|sql| {
        let count: Count = diesel::sql_query(*sql).get_result(&mut conn).unwrap();
        ((*sql).to_owned(), count.n)
    })
    .collect()
}

/// Values no string field takes.
fn bad_strings() -> Vec<Value> {
    vec![
        Value::Null,
        json!(12),
        json!(true),
        json!([]),
        json!({}),
        json!(""),
        json!("x\u{0}y"),
        json!("\u{0}"),
        json!("x".repeat(70_000)),
    ]
}

/// Values no count, total or generation takes.
fn bad_numbers() -> Vec<Value> {
    vec![
        Value::Null,
        json!("1"),
        json!(true),
        json!([]),
        json!({}),
        json!(-1),
        json!(0.5),
        json!(1e20),
        json!(18_446_744_073_709_551_615u64),
        json!(-9_223_372_036_854_775_807i64),
    ]
}

/// Whole bodies that are not what any route takes.
const GARBAGE: &[&str] = &[
    "[]",
    "\"x\"",
    "42",
    "null",
    "{\"",
    "{}",
    "{\"a\": \"\\u0000\"}",
];

struct Target {
    method: Method,
    path: String,
    body: Value,
    /// JSON pointers of the string fields and of the number fields to replace.
    strings: Vec<&'static str>,
    numbers: Vec<&'static str>,
    /// Fields that may be left out: `null` means "not given" there, which is valid.
    optional: Vec<&'static str>,
}

async fn send(app: &TestApp, target: &Target, body: String) -> u16 {
    app.client
        .request(target.method.clone(), app.url(&target.path))
        .header("x-auth-token", "admin")
        .header("openstack-api-version", "placement 1.38")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[actix_web::test]
async fn malformed_bodies_get_no_5xx_and_write_nothing() {
    let app = TestApp::spawn().await;
    let provider = a_provider_with_an_inventory(&app).await;
    let targets = targets(provider);
    let before = snapshot(&app);
    let mut sent = 0;
    for target in &targets {
        sent += every_mutation_of(&app, target, provider).await;
    }
    assert!(sent > 150, "{sent} requests");
    assert_eq!(snapshot(&app), before, "nothing written");
}

/// Something to aim at: a provider with an inventory.
async fn a_provider_with_an_inventory(app: &TestApp) -> uuid::Uuid {
    let provider = uuid::Uuid::new_v4();
    let (status, _, _) = app
        .placement(Method::POST, "/placement/resource_providers")
        .version("1.38")
        .token("admin")
        .json(json!({"name": "rp-1", "uuid": provider}))
        .send()
        .await;
    assert!(status == 200 || status == 201, "{status}");
    let (status, _, _) = app
        .placement(
            Method::PUT,
            &format!("/placement/resource_providers/{provider}/inventories"),
        )
        .version("1.38")
        .token("admin")
        .json(json!({"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}))
        .send()
        .await;
    assert_eq!(status, 200);
    provider
}

/// The requests the fuzzer mutates, each with the fields it mutates.
fn targets(provider: uuid::Uuid) -> Vec<Target> {
    let consumer = uuid::Uuid::new_v4();
    vec![
        Target {
            method: Method::POST,
            path: "/api/v1/hosts".into(),
            body: json!({"host": "cmp-9"}),
            strings: vec!["/host"],
            numbers: vec![],
            optional: vec![],
        },
        Target {
            method: Method::POST,
            path: "/api/v1/nodes".into(),
            body: json!({"count": 2, "resource_class": "baremetal"}),
            strings: vec!["/resource_class"],
            numbers: vec!["/count"],
            optional: vec!["/resource_class"],
        },
        Target {
            method: Method::POST,
            path: "/api/v1/nodes".into(),
            body: json!({"nodes": [{"uuid": uuid::Uuid::new_v4(), "name": "n-1",
                                    "resource_class": "baremetal"}]}),
            strings: vec!["/nodes/0/uuid", "/nodes/0/name", "/nodes/0/resource_class"],
            numbers: vec![],
            optional: vec!["/nodes/0/name"],
        },
        Target {
            method: Method::POST,
            path: "/api/v1/instances".into(),
            body: json!({"name": "vm", "resource_class": "baremetal", "pci_devices": 0}),
            strings: vec!["/name", "/resource_class"],
            numbers: vec!["/pci_devices"],
            optional: vec![],
        },
        Target {
            method: Method::POST,
            path: "/placement/resource_providers".into(),
            body: json!({"name": "rp-2"}),
            strings: vec!["/name"],
            numbers: vec![],
            optional: vec![],
        },
        Target {
            method: Method::POST,
            path: "/placement/resource_classes".into(),
            body: json!({"name": "CUSTOM_FUZZ"}),
            strings: vec!["/name"],
            numbers: vec![],
            optional: vec![],
        },
        Target {
            method: Method::PUT,
            path: format!("/placement/resource_providers/{provider}/inventories"),
            body: json!({"resource_provider_generation": 1,
                         "inventories": {"VCPU": {"total": 16}}}),
            strings: vec![],
            numbers: vec!["/resource_provider_generation", "/inventories/VCPU/total"],
            optional: vec![],
        },
        Target {
            method: Method::PUT,
            path: format!("/placement/allocations/{consumer}"),
            body: json!({"allocations": {provider.to_string(): {"resources": {"VCPU": 1}}},
                         "project_id": "p", "user_id": "u", "consumer_generation": null,
                         "consumer_type": "INSTANCE"}),
            strings: vec!["/project_id", "/user_id", "/consumer_type"],
            numbers: vec!["/allocations/PROVIDER/resources/VCPU"],
            optional: vec![],
        },
    ]
}

/// Sends every mutation of `target`'s body and the garbage bodies; each must be a 4xx. Returns
/// how many were sent.
async fn every_mutation_of(app: &TestApp, target: &Target, provider: uuid::Uuid) -> usize {
    let mut sent = 0;
    let mutations = target
        .strings
        .iter()
        .flat_map(|field| bad_strings().into_iter().map(move |value| (*field, value)))
        .chain(
            target
                .numbers
                .iter()
                .flat_map(|field| bad_numbers().into_iter().map(move |value| (*field, value))),
        );
    for (field, value) in mutations {
        if value.is_null() && target.optional.contains(&field) {
            continue;
        }
        let field = field.replace("PROVIDER", &provider.to_string());
        let mut body = target.body.clone();
        *body.pointer_mut(&field).expect("the field exists") = value.clone();
        let status = send(app, target, body.to_string()).await;
        assert!(
            (400..500).contains(&status),
            "{} {} with {field} = {}: {status}",
            target.method,
            target.path,
            value.to_string().chars().take(60).collect::<String>()
        );
        sent += 1;
    }
    for garbage in GARBAGE {
        let status = send(app, target, (*garbage).to_owned()).await;
        assert!(
            (400..500).contains(&status),
            "{} {} with {garbage}: {status}",
            target.method,
            target.path
        );
        sent += 1;
    }
    sent
}
