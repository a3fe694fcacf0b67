//! The HA guarantees by construction (invariants 11–13 and the rest of issue 12), each shown on
//! real actors and a real database, under concurrency where it matters. The invariants are
//! audited after every step.

use diesel::RunQueryDsl;
use ringmaster::actors::compute_host::DestroyInstance;
use ringmaster::actors::ironic::{DeleteNode, EnrollNodes};
use ringmaster::actors::rebalancer::{GetRing, RebalanceNow};
use ringmaster::actors::registry::{CreateProvider, MoveNodes};
use ringmaster::actors::scheduler::BootError;
use ringmaster::db::compute_nodes::NodeMove;
use ringmaster::db::instances::NewInstance;
use ringmaster::db::ironic::NewIronicNode;
use ringmaster::db::leases::LeaseToken;
use ringmaster::db::placement::allocations::{ConsumerAllocations, replace_allocations};
use ringmaster::domain::ring::MoveReason;
use uuid::Uuid;

use crate::helpers::{TestDb, TestDeployment, quiet_settings};

const THREE: [&str; 3] = ["cmp-1", "cmp-2", "cmp-3"];

fn count(d: &TestDeployment, sql: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(sql)
        .get_result::<Count>(&mut d.db.conn())
        .unwrap()
        .n
}

/// Boots `count` instances at once and returns each outcome.
async fn boot_at_once(
    d: &TestDeployment,
    count: usize,
    pci_devices: u32,
) -> Vec<Result<ringmaster::domain::instance::Instance, BootError>> {
    let boots = (0..count).map(|index| {
        d.actors.scheduler.send(crate::helpers::boot_request(
            &format!("vm-{index}"),
            pci_devices,
        ))
    });
    futures_util::future::join_all(boots)
        .await
        .into_iter()
        .map(|sent| sent.unwrap())
        .collect()
}

/// Item 1: twelve boots at once on twelve free nodes all land, each on its own node, and
/// nothing is ever over capacity; the thirteenth gets a clear 409-class error and leaves
/// nothing behind.
#[actix_web::test]
async fn twelve_concurrent_boots_use_twelve_nodes_and_never_double_book() {
    let d = TestDeployment::start(&THREE, 12).await;
    let outcomes = boot_at_once(&d, 12, 0).await;
    let mut nodes = std::collections::BTreeSet::new();
    for outcome in &outcomes {
        let instance = outcome.as_ref().expect("every boot finds a node");
        assert_eq!(instance.vm_state, "active", "{instance:?}");
        nodes.insert(instance.node.clone().unwrap());
    }
    assert_eq!(nodes.len(), 12, "twelve distinct nodes");
    d.audit();

    let instances_before = count(&d, "SELECT count(*) AS n FROM instances");
    let thirteenth = d.boot("vm-13").await;
    match thirteenth {
        Err(error @ BootError::NoValidHost { .. }) => {
            assert_eq!(error.kind(), ringmaster::domain::error::ErrorKind::Conflict);
            assert!(error.to_string().contains("no free node"), "{error}");
        }
        other => panic!("no node is free: {other:?}"),
    }
    assert_eq!(
        count(&d, "SELECT count(*) AS n FROM instances"),
        instances_before,
        "a refused boot leaves no instance"
    );
    assert_eq!(d.allocations().len(), 12, "and no allocation");
    d.audit();
}

/// Item 1 under churn: workers boot and delete at once; a boot fails only when every node is
/// taken, never ends in error, and no provider is ever over capacity.
#[actix_web::test]
async fn concurrent_boots_and_deletes_never_fail_while_a_node_is_free() {
    let d = TestDeployment::start(&THREE, 9).await;
    let rounds = (0..24).map(|worker| {
        let scheduler = d.actors.scheduler.clone();
        let hosts = d.actors.hosts.clone();
        async move {
            let mut outcomes = Vec::new();
            for round in 0..3 {
                let booted = scheduler
                    .send(crate::helpers::boot_request(
                        &format!("vm-{worker}-{round}"),
                        0,
                    ))
                    .await
                    .unwrap();
                if let Ok(instance) = &booted {
                    let host = hosts.get(instance.host.as_deref().unwrap()).unwrap();
                    host.send(DestroyInstance {
                        instance: instance.uuid,
                        defer_pci_free: false,
                    })
                    .await
                    .unwrap()
                    .unwrap();
                }
                outcomes.push(booted.map(|instance| instance.vm_state));
            }
            outcomes
        }
    });
    let outcomes: Vec<_> = futures_util::future::join_all(rounds)
        .await
        .into_iter()
        .flatten()
        .collect();
    let active = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Ok(state) if state == "active"))
        .count();
    for outcome in &outcomes {
        match outcome {
            Ok(state) => assert_eq!(state, "active", "a boot never ends in error"),
            Err(BootError::NoValidHost { .. }) => {}
            Err(other) => panic!("unexpected boot failure: {other}"),
        }
    }
    assert!(active >= 9, "at least the nine nodes were used: {active}");
    assert!(
        d.allocations().is_empty(),
        "every delete released its claim"
    );
    d.audit();
}

/// Item 1: the audit reports a provider whose usage exceeds its capacity.
#[actix_web::test]
async fn the_audit_reports_an_over_capacity_provider() {
    let d = TestDeployment::start(&["cmp-1"], 1).await;
    d.boot("vm-1").await.unwrap();
    diesel::sql_query(
        "INSERT INTO consumers (uuid, project_id, user_id, generation)
         SELECT gen_random_uuid(), project_id, user_id, 1 FROM consumers LIMIT 1",
    )
    .execute(&mut d.db.conn())
    .unwrap();
    diesel::sql_query(
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
         SELECT a.resource_provider_id, c.uuid, a.resource_class_id, 1
           FROM allocations a, consumers c WHERE c.uuid <> a.consumer_id",
    )
    .execute(&mut d.db.conn())
    .unwrap();
    let violations = ringmaster::db::audit::check_invariants(&mut d.db.conn()).unwrap();
    assert!(
        violations.iter().any(|v| v.invariant == 11
            && v.message.contains("over capacity")
            && v.message.contains("2 used of 1")),
        "{violations:#?}"
    );
}

/// Item 2: leadership is a lease. A leader that stops renewing (frozen, its connections still
/// open) loses it to another process once it expires; the frozen leader's moves, planned under
/// the old epoch, are refused when it wakes, and it writes nothing.
#[actix_web::test]
async fn a_frozen_leader_loses_its_lease_and_its_late_moves_are_refused() {
    let d = TestDeployment::start(&THREE, 6).await;
    let old_lease = d.lease().await;
    // A second process on the same database and clock.
    let other = ringmaster::actors::spawn_all(d.db.pool(), d.clock.clone(), quiet_settings());
    let follower = other.rebalancer.send(RebalanceNow).await.unwrap().unwrap();
    assert!(!follower.leader, "one leader while the lease is renewed");

    // The leader freezes: no renewal. One lease later the other process leads.
    d.advance(quiet_settings().rebalancer.lease.num_seconds() + 1);
    d.heartbeat(&THREE).await;
    let taken = other.rebalancer.send(RebalanceNow).await.unwrap().unwrap();
    assert!(taken.leader, "the lease was taken over");
    let ring = other.rebalancer.send(GetRing).await.unwrap();
    assert_eq!(ring.lease_epoch, Some(old_lease.epoch + 1));

    // The frozen leader wakes with a move planned under its old epoch: refused.
    let node = d.nodes()[0].clone();
    let refused = d
        .actors
        .registry
        .send(MoveNodes {
            moves: vec![NodeMove {
                node: node.uuid.into(),
                from: node.host.clone().unwrap().into(),
                epoch: ringmaster::domain::identity::OwnerEpoch(node.owner_epoch.unwrap()),
                to: if node.host.as_deref() == Some("cmp-1") {
                    "cmp-2".into()
                } else {
                    "cmp-1".into()
                },
                reason: MoveReason::Manual,
            }],
            ring_version: 1,
            lease: old_lease,
        })
        .await
        .unwrap();
    assert!(
        matches!(refused, Err(ringmaster::db::DbError::LeadershipLost { .. })),
        "{refused:?}"
    );
    assert_eq!(d.nodes()[0].host, node.host, "nothing moved");
    // Its own next tick finds it no longer leads.
    let woke = d
        .actors
        .rebalancer
        .send(RebalanceNow)
        .await
        .unwrap()
        .unwrap();
    assert!(!woke.leader);
    assert!(!d.actors.rebalancer.send(GetRing).await.unwrap().leader);
    d.audit();

    // A forged token (right epoch, wrong holder) writes nothing either.
    let forged = LeaseToken {
        holder: Uuid::new_v4(),
        epoch: old_lease.epoch + 1,
    };
    let refused = d
        .actors
        .registry
        .send(MoveNodes {
            moves: Vec::new(),
            ring_version: 1,
            lease: forged,
        })
        .await
        .unwrap();
    assert!(refused.is_err());
}

/// Item 4: the scheduler offers only nodes of hosts that are up and not fenced.
#[actix_web::test]
async fn boots_never_land_on_a_fenced_host() {
    let d = TestDeployment::start(&THREE, 9).await;
    d.advance(8);
    d.heartbeat(&["cmp-2", "cmp-3"]).await;
    let outcomes = boot_at_once(&d, 6, 0).await;
    for outcome in outcomes {
        let instance = outcome.unwrap();
        assert_eq!(instance.vm_state, "active");
        assert_ne!(instance.host.as_deref(), Some("cmp-1"), "cmp-1 is fenced");
    }
    let none_left = d.boot("vm-7").await;
    assert!(
        matches!(none_left, Err(BootError::NoValidHost { .. })),
        "cmp-1's nodes are not offered: {none_left:?}"
    );
    d.audit();
}

/// A building instance with its allocation, as a spawn that died with its process leaves it.
fn leave_a_build(d: &TestDeployment, node: &ringmaster::db::node_views::NodeView) -> Uuid {
    let instance = Uuid::new_v4();
    let mut conn = d.db.conn();
    let write = ConsumerAllocations {
        consumer: instance,
        project: "project".to_owned(),
        user: "user".to_owned(),
        expected_generation: ringmaster::domain::placement::GenerationCheck::MustBeNew,
        consumer_type: None,
        allocations: [(
            node.resource_provider_uuid.unwrap(),
            [("CUSTOM_BAREMETAL".to_owned(), 1)].into(),
        )]
        .into(),
    };
    replace_allocations(&mut conn, &[write]).unwrap();
    let new = NewInstance {
        uuid: instance,
        name: "left-behind".to_owned(),
        project_id: "project".to_owned(),
        user_id: "user".to_owned(),
        host: node.host.clone().unwrap(),
        node: node.uuid.to_string(),
        resource_class: "baremetal".to_owned(),
    };
    ringmaster::db::instances::create_instance(&mut conn, &new, d.clock_now()).unwrap();
    instance
}

/// Item 4: a build with no progress within the build timeout ends in error with its claim
/// released, by its node's owner; before that, the audit reports it.
#[actix_web::test]
async fn a_build_past_the_timeout_ends_in_error_and_releases_its_claim() {
    let d = TestDeployment::start(&["cmp-1"], 2).await;
    let node = d.nodes()[0].clone();
    let instance = leave_a_build(&d, &node);
    d.audit();

    d.advance(601);
    d.heartbeat(&["cmp-1"]).await;
    let clock = d.actors.settings.audit_clock(d.clock_now());
    let violations = ringmaster::db::audit::check_invariants_at(&mut d.db.conn(), clock).unwrap();
    assert!(
        violations
            .iter()
            .any(|v| v.invariant == 12 && v.message.contains(&instance.to_string())),
        "the audit reports the stale build: {violations:#?}"
    );
    let report = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(report.builds_failed, vec![instance]);
    let settled = ringmaster::db::instances::get_instance(&mut d.db.conn(), instance).unwrap();
    assert_eq!(settled.vm_state, "error");
    assert!(d.allocations().is_empty(), "the claim is released");
    assert!(
        ringmaster::db::instances::latest_fault(&mut d.db.conn(), instance)
            .unwrap()
            .unwrap()
            .contains("no progress")
    );
    d.audit();
    // The node is free again.
    assert_eq!(d.boot("vm-2").await.unwrap().vm_state, "active");
}

/// Item 4: a host that starts again (in a new process, or after a crash) settles the builds
/// left on its nodes at its first pass, without waiting for the timeout.
#[actix_web::test]
async fn a_restarted_host_settles_the_builds_it_left() {
    let d = TestDeployment::start(&["cmp-1"], 2).await;
    let node = d.nodes()[0].clone();
    let instance = leave_a_build(&d, &node);
    d.advance(1);
    assert!(d.actors.hosts.crash("cmp-1"));
    actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    d.actors.hosts.start("cmp-1").await.unwrap();
    d.heartbeat(&["cmp-1"]).await;
    let report = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(report.builds_failed, vec![instance]);
    assert!(d.allocations().is_empty());
    d.audit();
}

/// Item 4: a build whose deploy fails after its claim ends in error, its claim released.
#[actix_web::test]
async fn a_build_that_fails_after_its_claim_releases_it() {
    let d = TestDeployment::start(&["cmp-1"], 1).await;
    // The node goes into maintenance between the claim and the deploy: Ironic refuses it.
    diesel::connection::SimpleConnection::batch_execute(
        &mut d.db.conn(),
        "CREATE FUNCTION break_deploy() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             UPDATE ironic_nodes SET maintenance = TRUE WHERE uuid::text = NEW.node;
             RETURN NEW;
         END $$;
         CREATE TRIGGER break_deploy AFTER INSERT ON instances
             FOR EACH ROW EXECUTE FUNCTION break_deploy();",
    )
    .unwrap();
    let instance = d.boot("vm-1").await.unwrap();
    assert_eq!(instance.vm_state, "error", "{instance:?}");
    assert!(
        instance
            .fault
            .as_deref()
            .unwrap_or("")
            .contains("maintenance"),
        "{instance:?}"
    );
    assert!(d.allocations().is_empty(), "the claim is released");
    d.audit();
}

/// Item 5: a provider create whose uuid another provider holds under another name is refused
/// and renames nothing.
#[actix_web::test]
async fn a_provider_create_colliding_on_uuid_renames_nothing() {
    let d = TestDeployment::start(&["cmp-1"], 2).await;
    let victim = d.nodes()[0].clone();
    let provider = victim.resource_provider_uuid.unwrap();
    let refused = d
        .actors
        .registry
        .send(CreateProvider {
            uuid: provider,
            name: "another-name".to_owned(),
        })
        .await
        .unwrap();
    match refused {
        Err(ringmaster::db::DbError::Conflict(message)) => {
            assert!(message.contains("refusing to rename"), "{message}")
        }
        other => panic!("a uuid collision is refused: {other:?}"),
    }
    let names: Vec<String> = d
        .nodes()
        .iter()
        .map(|node| node.resource_provider_uuid.unwrap().to_string())
        .collect();
    assert!(names.contains(&provider.to_string()));
    d.audit();
}

/// Item 6: a node's compute node and provider carry the Ironic node's uuid, and a node that
/// returns after its compute node was archived gets the same identity back.
#[actix_web::test]
async fn a_node_keeps_its_identity_even_after_its_compute_node_was_archived() {
    let d = TestDeployment::start(&["cmp-1"], 2).await;
    for node in d.nodes() {
        assert_eq!(node.compute_node_uuid, Some(node.uuid), "1:1:1 by uuid");
        assert_eq!(node.resource_provider_uuid, Some(node.uuid));
    }
    let gone = d.nodes()[0].uuid;
    d.actors
        .ironic
        .send(DeleteNode { node: gone })
        .await
        .unwrap()
        .unwrap();
    let report = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(report.orphans_deleted, vec![gone.to_string()]);
    let archived = d
        .actors
        .archiver
        .send(ringmaster::actors::archiver::ArchiveOnce {
            request: ringmaster::actors::archiver::ArchiveRequest {
                options: ringmaster::db::archive::ArchiveOptions {
                    max_rows: 1000,
                    before: None,
                    task_log: false,
                    until_complete: true,
                    sleep: std::time::Duration::ZERO,
                },
                purge: false,
            },
        })
        .await
        .unwrap()
        .unwrap();
    assert!(
        archived
            .summary
            .tables
            .get("compute_nodes")
            .copied()
            .unwrap_or(0)
            >= 1,
        "{archived:?}"
    );
    assert_eq!(
        count(
            &d,
            "SELECT count(*) AS n FROM compute_nodes WHERE deleted <> 0"
        ),
        0
    );
    d.actors
        .ironic
        .send(EnrollNodes {
            nodes: vec![NewIronicNode::enrolling(gone, None, "baremetal")],
        })
        .await
        .unwrap()
        .unwrap();
    d.rebalance().await;
    d.track(&["cmp-1"]).await;
    let back = d
        .nodes()
        .into_iter()
        .find(|node| node.uuid == gone)
        .unwrap();
    assert_eq!(
        back.compute_node_uuid,
        Some(gone),
        "the same compute-node uuid"
    );
    assert_eq!(
        back.resource_provider_uuid,
        Some(gone),
        "the same provider uuid"
    );
    d.audit();
}

/// Item 7: a node deleted from Ironic and enrolled again (same uuid) while its compute node
/// lives becomes available with its old identity, and schedulable.
#[actix_web::test]
async fn a_re_enrolled_node_becomes_available_with_its_old_identity() {
    let d = TestDeployment::start(&["cmp-1"], 1).await;
    // The refresh the first claim queued runs first: no pass runs between the delete and the
    // enroll below.
    d.track(&["cmp-1"]).await;
    let before = d.identities();
    let node = d.nodes()[0].uuid;
    d.actors
        .ironic
        .send(DeleteNode { node })
        .await
        .unwrap()
        .unwrap();
    d.actors
        .ironic
        .send(EnrollNodes {
            nodes: vec![NewIronicNode::enrolling(node, None, "baremetal")],
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.nodes()[0].provision_state, "enroll");
    let report = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(
        report.nodes_made_available,
        vec![node.to_string()],
        "{report:?}"
    );
    assert_eq!(d.nodes()[0].provision_state, "available");
    assert_eq!(d.identities(), before, "its old identity");
    assert_eq!(d.boot("vm-1").await.unwrap().vm_state, "active");
    d.audit();
}

/// Item 10: a drained host stays drained when it crashes and starts again, until enabled.
#[actix_web::test]
async fn a_drain_outlives_a_crash_and_a_start_until_the_host_is_enabled() {
    let d = TestDeployment::start(&THREE, 6).await;
    ringmaster::db::hosts::drain_host(&mut d.db.conn(), "cmp-2", d.clock_now()).unwrap();
    d.rebalance().await;
    assert!(d.actors.hosts.crash("cmp-2"));
    actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    d.actors.hosts.start("cmp-2").await.unwrap();
    d.heartbeat(&THREE).await;
    let hosts = ringmaster::db::hosts::list_hosts(&mut d.db.conn()).unwrap();
    let drained = hosts.iter().find(|host| host.name == "cmp-2").unwrap();
    assert!(drained.is_draining(), "still draining after a restart");
    d.rebalance().await;
    assert_eq!(d.owner_count("cmp-2"), 0, "it receives nothing");

    ringmaster::db::hosts::enable_host(&mut d.db.conn(), "cmp-2", d.clock_now()).unwrap();
    let rejoined = d.rebalance().await;
    assert!(rejoined.moved.iter().any(|node| node.host == "cmp-2"));
    d.audit();
}

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
    let node = d.nodes()[0].uuid;
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
    let first = ringmaster::actors::spawn_all(db.pool(), clock.clone(), quiet_settings());
    let second = ringmaster::actors::spawn_all(db.pool(), clock.clone(), quiet_settings());
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

/// Helpers only this file needs.
impl TestDeployment {
    fn owner_count(&self, host: &str) -> usize {
        self.nodes()
            .iter()
            .filter(|node| node.host.as_deref() == Some(host))
            .count()
    }
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
        for _ in 0..5 {
            for outcome in boot_at_once(&d, 8, 0).await {
                match outcome {
                    Ok(_) | Err(BootError::NoValidHost { .. }) | Err(BootError::Host(_)) => {}
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
    };
    futures_util::future::join(booter, mover).await;
    d.audit();
}

/// Issue 13, item 2: a tracker pass with nothing changed since the last one reads and writes
/// nothing; a change on one node is written for that node alone.
#[actix_web::test]
async fn a_pass_that_finds_nothing_changed_writes_nothing() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 20).await;
    let generations = count(
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
        count(
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
        count(
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
    let other = ringmaster::actors::spawn_all(d.db.pool(), d.clock.clone(), quiet_settings());
    let remote = other.hosts.start("cmp-2").await.unwrap();
    assert!(
        remote
            .send(ringmaster::actors::compute_host::Heartbeat)
            .await
            .unwrap()
            .unwrap()
    );
    // Only cmp-2 (in the other process) takes nodes.
    ringmaster::db::hosts::drain_host(&mut d.db.conn(), "cmp-1", d.clock_now()).unwrap();
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
        count(&d, "SELECT count(*) AS n FROM spawn_requests"),
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
    let other = ringmaster::actors::spawn_all(d.db.pool(), d.clock.clone(), quiet_settings());
    let remote = other.hosts.start("cmp-2").await.unwrap();
    d.heartbeat(&["cmp-1"]).await;
    ringmaster::db::hosts::drain_host(&mut d.db.conn(), "cmp-1", d.clock_now()).unwrap();
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
    for _ in 0..100 {
        if count(&d, "SELECT count(*) AS n FROM spawn_requests") == 1 {
            break;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        count(&d, "SELECT count(*) AS n FROM spawn_requests"),
        1,
        "the boot is handed over"
    );
    assert!(!boot.is_finished(), "the boot waits for its build");
    d.audit();

    // cmp-2 stays away: its node moves to cmp-1, whose pass settles the build it inherits.
    ringmaster::db::hosts::enable_host(&mut d.db.conn(), "cmp-1", d.clock_now()).unwrap();
    d.advance(11);
    d.heartbeat(&["cmp-1"]).await;
    d.rebalance().await;
    assert_eq!(d.owner_of(&node.uuid.to_string()).as_deref(), Some("cmp-1"));
    d.track(&["cmp-1"]).await;
    let answered = boot.await.unwrap().unwrap().unwrap();
    assert_eq!(answered.vm_state, "error", "{answered:?}");
    assert!(answered.fault.is_some(), "the error says why");
    assert_eq!(
        count(&d, "SELECT count(*) AS n FROM spawn_requests"),
        0,
        "the hand-off of a settled build is dropped"
    );
    assert!(d.allocations().is_empty(), "the claim is released");
    d.audit();
}
