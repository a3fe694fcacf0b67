//! The HA guarantees by construction (invariants 11–13 and the rest of issue 12), each shown on
//! real actors and a real database, under concurrency where it matters. The invariants are
//! audited after every step.

use diesel::RunQueryDsl;
use ringmaster::actors::compute_host::DestroyInstance;
use ringmaster::actors::rebalancer::{GetRing, RebalanceNow};
use ringmaster::actors::registry::MoveNodes;
use ringmaster::actors::scheduler::BootError;
use ringmaster::db::compute_nodes::NodeMove;
use ringmaster::db::leases::LeaseToken;
use ringmaster::domain::ring::MoveReason;
use uuid::Uuid;

use crate::helpers::{
    THREE_HOSTS, TestDeployment, boot_at_once, deployment_rows, leave_a_build, quiet_settings,
    start_actors,
};

/// Item 1: twelve boots at once on twelve free nodes all land, each on its own node, and
/// nothing is ever over capacity; the thirteenth gets a clear 409-class error and leaves
/// nothing behind.
#[actix_web::test]
async fn twelve_concurrent_boots_use_twelve_nodes_and_never_double_book() {
    let d = TestDeployment::start(&THREE_HOSTS, 12).await;
    let outcomes = boot_at_once(&d, 12, 0).await;
    let mut nodes = std::collections::BTreeSet::new();
    for outcome in &outcomes {
        let instance = outcome.as_ref().expect("every boot finds a node");
        assert_eq!(instance.vm_state, "active", "{instance:?}");
        nodes.insert(instance.node.unwrap());
    }
    assert_eq!(nodes.len(), 12, "twelve distinct nodes");
    d.audit();

    let instances_before = deployment_rows(&d, "SELECT count(*) AS n FROM instances");
    let thirteenth = d.boot("vm-13").await;
    match thirteenth {
        Err(error @ BootError::NoValidHost { .. }) => {
            assert_eq!(error.kind(), ringmaster::domain::error::ErrorKind::Conflict);
            assert!(error.to_string().contains("no free node"), "{error}");
        }
        other => panic!("no node is free: {other:?}"),
    }
    assert_eq!(
        deployment_rows(&d, "SELECT count(*) AS n FROM instances"),
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
    let d = TestDeployment::start(&THREE_HOSTS, 9).await;
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
    let d = TestDeployment::start(&THREE_HOSTS, 6).await;
    let old_lease = d.lease().await;
    // A second process on the same database and clock.
    let other = start_actors(d.db.pool(), d.clock.clone()).await;
    let follower = other.rebalancer.send(RebalanceNow).await.unwrap().unwrap();
    assert!(!follower.leader, "one leader while the lease is renewed");

    // The leader freezes: no renewal. One lease later the other process leads.
    d.advance(quiet_settings().rebalancer.lease.num_seconds() + 1);
    d.heartbeat(&THREE_HOSTS).await;
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
    let d = TestDeployment::start(&THREE_HOSTS, 9).await;
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
