//! The admin API's first routes, the JSON error envelope and the static dashboard files.

use diesel::RunQueryDsl;
use ringmaster::http::static_files::STATIC_FILES;
use serde_json::{Value, json};

use crate::helpers::TestApp;

#[actix_web::test]
async fn healthz_and_readyz_answer_ok_while_the_database_answers() {
    let app = TestApp::spawn().await;
    let response = app.get("/healthz").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"status": "ok"})
    );
    let response = app.get("/readyz").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"status": "ready"})
    );
}

/// Liveness stays 200 while the database is gone (the process rides it out within its grace);
/// readiness is 503, without internal details.
#[actix_web::test]
async fn readyz_is_503_without_internal_details_when_the_database_is_gone() {
    let app = TestApp::spawn().await.without_final_audit();
    let name = app.db.name().to_owned();
    let mut admin: diesel::PgConnection =
        diesel::Connection::establish(crate::helpers::scratch_server().admin_url()).unwrap();
    diesel::sql_query(format!("DROP DATABASE {name} WITH (FORCE)"))
        .execute(&mut admin)
        .unwrap();

    assert_eq!(app.get("/healthz").await.status(), 200);
    let response = app.get("/readyz").await;
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"error": {"code": "unavailable", "message": "the database is unavailable, try again"}})
    );
}

#[actix_web::test]
async fn hosts_lists_live_compute_services_only() {
    let app = TestApp::spawn().await;
    assert_eq!(
        app.get("/api/v1/hosts")
            .await
            .json::<Value>()
            .await
            .unwrap(),
        json!([])
    );

    diesel::sql_query(
        "INSERT INTO services (uuid, host, \"binary\", last_seen_up, report_count) VALUES
           (gen_random_uuid(), 'compute-b', 'ringmaster-compute', '2026-01-02T03:04:05Z', 7),
           (gen_random_uuid(), 'compute-a', 'ringmaster-compute', NULL, 0),
           (gen_random_uuid(), 'scheduler-1', 'ringmaster-scheduler', NULL, 0),
           (gen_random_uuid(), 'compute-gone', 'ringmaster-compute', NULL, 0)",
    )
    .execute(&mut app.db.conn())
    .unwrap();
    diesel::sql_query(
        "UPDATE services SET deleted = id, deleted_at = now() WHERE host = 'compute-gone'",
    )
    .execute(&mut app.db.conn())
    .unwrap();

    let response = app.get("/api/v1/hosts").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!([
            {"host": "compute-a", "state": "down", "disabled_reason": null, "last_seen_up": null,
             "report_count": 0, "nodes": 0, "local": false, "version": null,
             "conductor_group": null, "shard": null},
            {"host": "compute-b", "state": "down", "disabled_reason": null,
             "last_seen_up": "2026-01-02T03:04:05Z", "report_count": 7, "nodes": 0, "local": false,
             "version": null, "conductor_group": null, "shard": null},
        ])
    );
}

#[actix_web::test]
async fn an_unknown_route_is_a_json_404() {
    let app = TestApp::spawn().await;
    let response = app
        .client
        .delete(app.url("/api/v1/nothing-here"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"error": {"code": "not_found", "message": "no route for DELETE /api/v1/nothing-here"}})
    );
}

#[actix_web::test]
async fn the_dashboard_is_served_from_the_binary() {
    let app = TestApp::spawn().await;
    let response = app.get("/").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("<title>ringmaster</title>")
    );

    for (name, content_type, bytes) in STATIC_FILES {
        let response = app.get(&format!("/{name}")).await;
        assert_eq!(response.status(), 200, "{name}");
        assert_eq!(response.headers()["content-type"], *content_type, "{name}");
        assert_eq!(response.bytes().await.unwrap().as_ref(), *bytes, "{name}");
    }
    assert_eq!(app.get("/missing.js").await.status(), 404);
}

#[test]
fn every_file_of_the_static_folder_is_compiled_in() {
    let static_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    let mut on_disk: Vec<String> = std::fs::read_dir(static_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut compiled: Vec<String> = STATIC_FILES
        .iter()
        .map(|(name, _, _)| (*name).to_owned())
        .collect();
    compiled.sort();
    assert_eq!(compiled, on_disk);
}
