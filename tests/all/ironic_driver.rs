//! The real-Ironic driver against a stand-in Ironic that holds its node's conductor lock for a
//! while (issue 16): `409 NodeLocked` is tried again with backoff and then succeeds; past the
//! retry limit the deploy fails saying so and no provision request is sent; a host fenced
//! from its node sends Ironic nothing at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use ringmaster::actors::node_source::{DeployRequest, Fence, IronicDriver, SourceError};
use ringmaster::config::IronicSettings;
use ringmaster::domain::identity::InstanceUuid;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::TestDb;

const NODE: &str = "0b6f1c9e-3c55-4b9f-9d35-6f2a0e4c8a11";

/// What the stand-in was asked: node updates and provision requests.
#[derive(Default)]
struct Seen {
    patches: AtomicUsize,
    provisions: AtomicUsize,
}

/// A stand-in Ironic whose node is locked for its first `locked` updates, then deploys at
/// once.
fn locked_ironic(locked: usize) -> (String, Arc<Seen>, actix_web::dev::ServerHandle) {
    let seen = Arc::new(Seen::default());
    let state = seen.clone();
    let server = HttpServer::new(move || {
        let seen = state.clone();
        App::new()
            .app_data(web::Data::from(seen))
            .route(
                "/",
                web::get().to(|| async {
                    HttpResponse::Ok().json(json!({"default_version": {
                        "id": "v1", "version": "1.99", "min_version": "1.1"}}))
                }),
            )
            .route(
                "/v1/nodes/{node}",
                web::patch().to(move |seen: web::Data<Seen>| async move {
                    if seen.patches.fetch_add(1, Ordering::SeqCst) < locked {
                        let fault = json!({"faultcode": "Client", "debuginfo": null,
                            "faultstring": format!("Node {NODE} is locked by host conductor-1, please retry after the current operation is completed.")});
                        return HttpResponse::Conflict()
                            .json(json!({"error_message": fault.to_string()}));
                    }
                    HttpResponse::Ok().json(json!({"uuid": NODE}))
                }),
            )
            .route(
                "/v1/nodes/{node}/validate",
                web::get().to(|| async {
                    HttpResponse::Ok()
                        .json(json!({"deploy": {"result": true}, "power": {"result": true}}))
                }),
            )
            .route(
                "/v1/nodes/{node}/states/provision",
                web::put().to(|seen: web::Data<Seen>| async move {
                    seen.provisions.fetch_add(1, Ordering::SeqCst);
                    HttpResponse::Accepted().finish()
                }),
            )
            .route(
                "/v1/nodes/{node}",
                web::get().to(|| async {
                    HttpResponse::Ok().json(json!({
                        "uuid": NODE, "name": null, "resource_class": "baremetal",
                        "provision_state": "active", "power_state": "power on",
                        "maintenance": false, "last_error": null,
                        "instance_uuid": "5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
                        "reservation": null, "traits": [], "properties": {"local_gb": 100}}))
                }),
            )
    })
    .workers(1)
    .disable_signals()
    .bind("127.0.0.1:0")
    .expect("bind a loopback port");
    let address = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (format!("http://{address}"), seen, handle)
}

fn driver(url: &str, lock_retries: u32, db: &TestDb) -> IronicDriver {
    let mut settings = IronicSettings::new(url);
    settings.poll_interval = Duration::from_millis(20);
    settings.deploy_timeout = Duration::from_secs(10);
    settings.lock_retries = lock_retries;
    IronicDriver::new(
        settings,
        None,
        db.pool(),
        Arc::new(ringmaster::domain::clock::SystemClock::new()),
    )
}

fn request() -> DeployRequest {
    DeployRequest {
        node: NODE.parse().unwrap(),
        instance: "5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9".parse().unwrap(),
        display_name: "vm-1".to_owned(),
        root_gb: 100,
        server: None,
    }
}

fn fence(holds: bool) -> Fence {
    Arc::new(move || Box::pin(async move { holds }))
}

#[actix_web::test]
async fn a_locked_node_is_tried_again_with_backoff_until_its_lock_is_released() {
    let db = TestDb::new();
    let (url, seen, server) = locked_ironic(2);
    let deployed = driver(&url, 3, &db)
        .deploy(&request(), &fence(true))
        .await
        .expect("deployed once the lock is gone");
    assert_eq!(deployed.provision_state, "active");
    assert_eq!(deployed.uuid, NODE.parse::<Uuid>().unwrap());
    assert_eq!(
        seen.patches.load(Ordering::SeqCst),
        3,
        "two refusals, then done"
    );
    assert_eq!(seen.provisions.load(Ordering::SeqCst), 1);
    server.stop(false).await;
}

#[actix_web::test]
async fn a_node_locked_past_the_retry_limit_fails_clearly_and_is_not_provisioned() {
    let db = TestDb::new();
    let (url, seen, server) = locked_ironic(100);
    let failed = driver(&url, 2, &db)
        .deploy(&request(), &fence(true))
        .await
        .expect_err("the node stays locked");
    let text = failed.to_string();
    assert!(
        text.contains("stayed locked by a conductor through 3 tries") && text.contains(NODE),
        "{text}"
    );
    assert_eq!(seen.patches.load(Ordering::SeqCst), 3);
    assert_eq!(seen.provisions.load(Ordering::SeqCst), 0);
    server.stop(false).await;
}

#[actix_web::test]
async fn a_host_fenced_from_its_node_sends_ironic_nothing_for_it() {
    let db = TestDb::new();
    let (url, seen, server) = locked_ironic(0);
    let driver = driver(&url, 3, &db);
    let refused = driver
        .deploy(&request(), &fence(false))
        .await
        .expect_err("fenced");
    assert!(matches!(refused, SourceError::Fenced(_)), "{refused:?}");
    let refused = driver
        .destroy(request().node, request().instance.uuid(), &fence(false))
        .await
        .expect_err("fenced");
    assert!(matches!(refused, SourceError::Fenced(_)), "{refused:?}");
    assert_eq!(seen.patches.load(Ordering::SeqCst), 0);
    assert_eq!(seen.provisions.load(Ordering::SeqCst), 0);
    server.stop(false).await;
}

fn listed(uuid: Uuid, state: &str) -> ringmaster::domain::mirror::ListedNode {
    ringmaster::domain::mirror::ListedNode {
        addresses: None,
        conductor_group: String::new(),
        shard: None,
        uuid,
        name: None,
        resource_class: "baremetal".to_owned(),
        provision_state: state.to_owned(),
        power_state: None,
        maintenance: false,
        last_error: None,
        instance_uuid: None,
        reservation: None,
        traits: vec!["CUSTOM_GOLD".to_owned()],
        cpus: 8,
        memory_mb: 16_384,
        local_gb: 100,
    }
}

/// The mirror: a listing writes its nodes; one taken before a deploy read the node again does
/// not undo that newer read; the simulator refuses to touch a mirrored node.
#[test]
fn a_listing_never_undoes_a_newer_read_and_the_simulator_leaves_mirrored_nodes_alone() {
    use ringmaster::db::ironic_mirror::{apply, mirrored_nodes, refresh_node};
    use ringmaster::domain::mirror::MirrorChanges;
    let db = TestDb::new();
    let mut conn = db.conn();
    let node = Uuid::new_v4();
    let t = |seconds: i64| chrono::DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap();
    let listing = |state: &str| MirrorChanges {
        upserts: vec![listed(node, state)],
        removals: Vec::new(),
    };
    let all = ringmaster::domain::selection::NodeSelection::default();
    apply(&mut conn, &listing("available"), &all, t(0), Some(t(0))).unwrap();
    assert_eq!(
        mirrored_nodes(&mut conn).unwrap(),
        [listed(node, "available")]
    );

    // A deploy reads the node active at t(10); a listing started at t(5) still saw it
    // available: the newer read stays. A listing started after it applies.
    refresh_node(&mut conn, &listed(node, "active"), t(10)).unwrap();
    apply(&mut conn, &listing("available"), &all, t(12), Some(t(5))).unwrap();
    assert_eq!(
        mirrored_nodes(&mut conn).unwrap()[0].provision_state,
        "active"
    );
    apply(
        &mut conn,
        &listing("deploy failed"),
        &all,
        t(20),
        Some(t(15)),
    )
    .unwrap();
    assert_eq!(
        mirrored_nodes(&mut conn).unwrap()[0].provision_state,
        "deploy failed"
    );

    let refused =
        ringmaster::db::ironic::deploy(&mut conn, node, InstanceUuid(Uuid::new_v4()), t(30))
            .expect_err("a mirrored node is Ironic's");
    assert!(
        refused.to_string().contains("comes from a real Ironic"),
        "{refused}"
    );
    let refused = ringmaster::db::ironic::delete_node(&mut conn, node).expect_err("Ironic's");
    assert!(refused.to_string().contains("--ironic-url"), "{refused}");
    assert_eq!(mirrored_nodes(&mut conn).unwrap().len(), 1);
}
