//! Boots under the HA guarantees: PCI capacity, unlocked nodes, one process per host name,
//! boots racing moves, a pass with nothing to write, and boots handed to other processes.

use diesel::RunQueryDsl;
use ringmaster::actors::compute_host::DestroyInstance;
use ringmaster::actors::registry::MoveNodes;
use ringmaster::actors::scheduler::BootError;
use ringmaster::db::compute_nodes::NodeMove;
use ringmaster::domain::ring::MoveReason;

use crate::helpers::{TestDb, TestDeployment, boot_at_once, deployment_rows, start_actors};

/// Item 11: a boot asking for k PCI devices is offered only nodes with k free devices.
#[actix_web::test]
async fn a_boot_lands_only_on_a_node_with_enough_free_pci_devices() {
    let d = TestDeployment::start(&["cmp-1"], 2).await;
    let first = d.boot_with_devices("vm-1", 2).await.unwrap();
    let host = d.actors.hosts.get("cmp-1").unwrap();
    host.send(DestroyInstance {
        instance: first.uuid,
        defer_pci_free: true,
    })
    .await
    .unwrap()
    .unwrap();
    // The first node is free in Placement, but its devices are not freed yet.
    let too_many = d.boot_with_devices("vm-x", 3).await;
    assert!(
        matches!(too_many, Err(BootError::NoValidHost { .. })),
        "no node has 3 devices: {too_many:?}"
    );
    let second = d.boot_with_devices("vm-2", 2).await.unwrap();
    assert_eq!(second.vm_state, "active");
    assert_ne!(
        second.node, first.node,
        "not the node whose devices are still held"
    );
    let third = d.boot_with_devices("vm-3", 1).await;
    assert!(
        matches!(third, Err(BootError::NoValidHost { .. })),
        "the first node has no free device yet: {third:?}"
    );
    d.track(&["cmp-1"]).await;
    assert_eq!(
        d.boot_with_devices("vm-3", 1).await.unwrap().node,
        first.node
    );
    d.audit();
}

/// Item 12: a node unlocked in Ironic is schedulable at once, before any tracker pass.
#[actix_web::test]
async fn an_unlocked_node_is_schedulable_at_once() {
    let d = TestDeployment::start(&["cmp-1"], 1).await;
    let node = ringmaster::domain::identity::NodeUuid(d.nodes()[0].uuid);
    d.actors.set_node_lock(node, true).await.unwrap();
    d.track(&["cmp-1"]).await;
    assert!(matches!(
        d.boot("vm-1").await,
        Err(BootError::NoValidHost { .. })
    ));
    d.actors.set_node_lock(node, false).await.unwrap();
    assert_eq!(d.boot("vm-1").await.unwrap().vm_state, "active");
    d.audit();
}

/// Item 13: two processes cannot run the same host name; once the first is gone (its
/// presence connection closed), another may.
#[actix_web::test]
async fn one_host_name_runs_in_one_process_at_a_time() {
    let db = TestDb::new();
    let clock = std::sync::Arc::new(ringmaster::domain::clock::SystemClock::new());
    let first = start_actors(db.pool(), clock.clone()).await;
    let second = start_actors(db.pool(), clock.clone()).await;
    first.hosts.start("cmp-1").await.unwrap();
    let refused = second.hosts.start("cmp-1").await;
    let message = refused
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("host cmp-1 is run by another ringmaster process"),
        "{message}"
    );
    assert!(!second.hosts.is_running("cmp-1"));
    second.hosts.start("cmp-2").await.unwrap();
}

/// Boots racing moves: an instance created while its node moves moves with it (the move waits
/// for the claim and sees its instance), so no instance is ever left on a host that does not
/// own its node (invariant 4).
#[actix_web::test]
async fn boots_racing_moves_leave_every_instance_with_its_node() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 8).await;
    let lease = d.lease().await;
    let mover = {
        let registry = d.actors.registry.clone();
        let url = d.db.url().to_owned();
        async move {
            for round in 0..60 {
                let views = ringmaster::db::node_views::list_node_views(
                    &mut diesel::Connection::establish(&url).unwrap(),
                )
                .unwrap();
                let moves: Vec<NodeMove> = views
                    .iter()
                    .map(|view| {
                        let from = view.host.clone().unwrap();
                        NodeMove {
                            node: view.uuid.into(),
                            to: if from == "cmp-1" { "cmp-2" } else { "cmp-1" }.into(),
                            from: from.into(),
                            epoch: ringmaster::domain::identity::OwnerEpoch(
                                view.owner_epoch.unwrap(),
                            ),
                            reason: MoveReason::Manual,
                        }
                    })
                    .collect();
                registry
                    .send(MoveNodes {
                        moves,
                        ring_version: round,
                        lease,
                    })
                    .await
                    .unwrap()
                    .unwrap();
            }
        }
    };
    let booter = async {
        let mut booted = 0;
        for _ in 0..5 {
            for outcome in boot_at_once(&d, 8, 0).await {
                match outcome {
                    Ok(_) => booted += 1,
                    Err(BootError::NoValidHost { .. }) | Err(BootError::Host(_)) => {}
                    Err(other) => panic!("{other}"),
                }
            }
            d.audit();
            diesel::sql_query("UPDATE instances SET vm_state = 'error'")
                .execute(&mut d.db.conn())
                .unwrap();
            diesel::sql_query("DELETE FROM allocations")
                .execute(&mut d.db.conn())
                .unwrap();
            diesel::sql_query(
                "UPDATE ironic_nodes SET instance_uuid = NULL, provision_state = 'available'",
            )
            .execute(&mut d.db.conn())
            .unwrap();
        }
        booted
    };
    let (booted, ()) = futures_util::future::join(booter, mover).await;
    d.audit();
    eprintln!("{booted} of 40 boots landed while the nodes moved");
    // Boots refused while their node moves are allowed; a race where none lands shows nothing.
    assert!(
        booted >= 5,
        "at least one boot a round lands while the nodes move: {booted} of 40"
    );
}

/// Issue 13, item 2: a tracker pass with nothing changed since the last one reads and writes
/// nothing; a change on one node is written for that node alone.
#[actix_web::test]
async fn a_pass_that_finds_nothing_changed_writes_nothing() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 20).await;
    let generations = deployment_rows(
        &d,
        "SELECT sum(generation)::bigint AS n FROM resource_providers",
    );
    // One round finds everything as reported (each host's last pass saw the other's writes
    // as changes); after it, nothing changes: the passes read nothing and write nothing.
    for report in d.track(&["cmp-1", "cmp-2"]).await {
        assert_eq!(report.reported, 0, "{report:?}");
    }
    for report in d.track(&["cmp-1", "cmp-2"]).await {
        assert!(report.skipped, "{report:?}");
        assert_eq!(report.reported, 0, "{report:?}");
    }
    assert_eq!(
        deployment_rows(
            &d,
            "SELECT sum(generation)::bigint AS n FROM resource_providers"
        ),
        generations,
        "no provider was written"
    );
    let node = d.nodes()[0].clone();
    diesel::sql_query("UPDATE ironic_nodes SET maintenance = TRUE WHERE uuid = $1")
        .bind::<diesel::sql_types::Uuid, _>(node.uuid)
        .execute(&mut d.db.conn())
        .unwrap();
    let owner = node.host.clone().unwrap();
    let report = d.track(&[owner.as_str()]).await.remove(0);
    assert!(
        !report.skipped,
        "something changed: the pass compares every node it owns"
    );
    assert_eq!(
        report.reported, 1,
        "only the changed node is written: {report:?}"
    );
    assert!(report.unchanged > 0, "{report:?}");
    assert_eq!(
        deployment_rows(
            &d,
            "SELECT sum(generation)::bigint AS n FROM resource_providers"
        ),
        generations + 1
    );
    d.audit();
}

/// Issue 13, item 8: a process's scheduler places a boot on a host another process runs; the
/// owning process takes it from the database (woken by a notification) and deploys it, under the
/// same fencing and claim rules.
#[actix_web::test]
async fn a_boot_lands_on_a_host_another_process_runs() {
    let d = TestDeployment::start(&["cmp-1"], 0).await;
    let other = start_actors(d.db.pool(), d.clock.clone()).await;
    let remote = other.hosts.start("cmp-2").await.unwrap();
    assert!(
        remote
            .send(ringmaster::actors::compute_host::Heartbeat)
            .await
            .unwrap()
            .unwrap()
    );
    // Only cmp-2 (in the other process) takes nodes.
    ringmaster::db::hosts::drain_host(&mut d.db.conn(), &"cmp-1".into(), d.clock_now()).unwrap();
    d.enroll(2).await;
    d.rebalance().await;
    remote
        .send(ringmaster::actors::compute_host::UpdateAvailableResource)
        .await
        .unwrap()
        .unwrap();

    let booted = d.boot("vm-1").await.unwrap();
    assert_eq!(booted.host.as_deref(), Some("cmp-2"));
    assert_eq!(
        booted.vm_state, "active",
        "the other process deployed it: {booted:?}"
    );
    assert_eq!(
        deployment_rows(&d, "SELECT count(*) AS n FROM spawn_requests"),
        0,
        "the request was taken"
    );
    d.audit();
}

/// Item 8: a boot handed to a host whose process stopped before it took the boot waits, fenced
/// like any boot of that host; when the node moves, its new owner settles the build (error,
/// claim released), the hand-off is dropped and the waiting boot answers with the error.
#[actix_web::test]
async fn a_boot_handed_to_a_stopped_process_is_settled_by_the_nodes_new_owner() {
    let d = TestDeployment::start(&["cmp-1"], 0).await;
    let other = start_actors(d.db.pool(), d.clock.clone()).await;
    let remote = other.hosts.start("cmp-2").await.unwrap();
    d.heartbeat(&["cmp-1"]).await;
    ringmaster::db::hosts::drain_host(&mut d.db.conn(), &"cmp-1".into(), d.clock_now()).unwrap();
    d.enroll(1).await;
    d.rebalance().await;
    let node = d.nodes()[0].clone();
    assert_eq!(node.host.as_deref(), Some("cmp-2"));
    remote
        .send(ringmaster::actors::compute_host::UpdateAvailableResource)
        .await
        .unwrap()
        .unwrap();
    // The other process stops; its host's heartbeat still looks fresh, so the boot lands there.
    assert!(other.hosts.crash("cmp-2"));
    let scheduler = d.actors.scheduler.clone();
    let boot = actix_rt::spawn(async move {
        scheduler
            .send(crate::helpers::boot_request("vm-1", 0))
            .await
    });
    crate::helpers::eventually_async(
        std::time::Duration::from_secs(5),
        "the boot to be handed over (one spawn request)",
        || async {
            (deployment_rows(&d, "SELECT count(*) AS n FROM spawn_requests") == 1).then_some(())
        },
    )
    .await;
    assert!(!boot.is_finished(), "the boot waits for its build");
    d.audit();

    // cmp-2 stays away: its node moves to cmp-1, whose pass settles the build it inherits.
    ringmaster::db::hosts::enable_host(&mut d.db.conn(), &"cmp-1".into(), d.clock_now()).unwrap();
    d.advance(11);
    d.heartbeat(&["cmp-1"]).await;
    d.rebalance().await;
    assert_eq!(d.owner_of(&node.uuid.to_string()).as_deref(), Some("cmp-1"));
    d.track(&["cmp-1"]).await;
    let answered = boot.await.unwrap().unwrap().unwrap();
    assert_eq!(answered.vm_state, "error", "{answered:?}");
    assert!(answered.fault.is_some(), "the error says why");
    assert_eq!(
        deployment_rows(&d, "SELECT count(*) AS n FROM spawn_requests"),
        0,
        "the hand-off of a settled build is dropped"
    );
    assert!(d.allocations().is_empty(), "the claim is released");
    d.audit();
}
