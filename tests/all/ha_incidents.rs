//! The incidents behind ringmaster's HA core, replayed on real actors, a real database and a
//! manual clock. The invariants of docs/design.md are audited after every step.

use ringmaster::actors::compute_host::{DestroyInstance, HostError, UpdateAvailableResource};
use ringmaster::actors::ironic::{DeleteNode, LockNode};
use ringmaster::actors::registry::DeleteOrphan;
use ringmaster::actors::scheduler::BootError;
use ringmaster::db::compute_nodes::OrphanOutcome;
use ringmaster::domain::ring::MoveReason;
use uuid::Uuid;

use crate::helpers::TestDeployment;

const THREE: [&str; 3] = ["cmp-1", "cmp-2", "cmp-3"];

/// Bug 1714248: a host dies holding nodes, one carrying an instance whose destroy failed on a
/// locked node. After the down time the survivors own every node under the same compute-node
/// and provider uuids, the allocation is intact, nothing answers 409, and every free node can
/// be scheduled.
#[actix_web::test]
async fn bug_1714248_a_dead_hosts_nodes_keep_their_identity_and_stay_schedulable() {
    let d = TestDeployment::start(&THREE, 12).await;
    let identities = d.identities();

    let instance = d.boot("vm-1").await.unwrap();
    assert_eq!(instance.vm_state, "active");
    let dead = instance.host.clone().unwrap();
    let node = instance.node.unwrap().to_string();
    d.audit();

    a_destroy_on_a_locked_node_fails_and_keeps_its_claim(&d, &instance).await;
    let allocations = d.allocations();
    assert_eq!(
        allocations.len(),
        1,
        "the failed destroy keeps the allocation"
    );
    d.audit();

    let dead_nodes = d
        .nodes()
        .iter()
        .filter(|view| view.host.as_deref() == Some(dead.as_str()))
        .count();
    assert!(d.actors.hosts.crash(&dead));
    let survivors: Vec<&str> = THREE.iter().copied().filter(|host| *host != dead).collect();
    d.advance(11);
    d.heartbeat(&survivors).await;
    let report = d.rebalance().await;
    assert_eq!(
        report.moved.len(),
        dead_nodes,
        "exactly the dead host's nodes move"
    );
    assert!(
        report
            .plan
            .iter()
            .all(|a| a.reason == MoveReason::HostDown && a.from.as_deref() == Some(dead.as_str()))
    );
    d.audit();

    for tracker in d.track(&survivors).await {
        assert!(tracker.lost.is_empty() && tracker.orphans_deleted.is_empty());
    }
    d.audit();
    assert_eq!(
        d.identities(),
        identities,
        "compute-node and provider uuids never change"
    );
    assert_eq!(d.allocations(), allocations, "allocations survive the move");
    assert!(
        d.nodes()
            .iter()
            .all(|view| survivors.contains(&view.host.as_deref().unwrap()))
    );
    let owner = d.owner_of(&node).unwrap();
    let mut conn = d.db.conn();
    let instance_now = ringmaster::db::instances::get_instance(&mut conn, instance.uuid).unwrap();
    assert_eq!(
        instance_now.host.as_deref(),
        Some(owner.as_str()),
        "the instance moved with its node"
    );

    every_free_node_is_schedulable(&d, &survivors).await;
}

/// The instance's node is locked in Ironic: its destroy fails, naming the lock.
async fn a_destroy_on_a_locked_node_fails_and_keeps_its_claim(
    d: &TestDeployment,
    instance: &ringmaster::domain::instance::Instance,
) {
    let (dead, node) = (
        instance.host.clone().unwrap(),
        instance.node.unwrap().to_string(),
    );
    let node_uuid: Uuid = node.parse().unwrap();
    d.actors
        .ironic
        .send(LockNode {
            node: ringmaster::domain::identity::NodeUuid(node_uuid),
            locked: true,
        })
        .await
        .unwrap()
        .unwrap();
    let host = d.actors.hosts.get(&dead).unwrap();
    let destroyed = host
        .send(DestroyInstance {
            instance: instance.uuid,
            defer_pci_free: false,
        })
        .await
        .unwrap();
    assert!(
        matches!(destroyed, Err(HostError::Ironic(ref reason)) if reason.contains("locked")),
        "{destroyed:?}"
    );
}

/// Every free node is schedulable: the 11 others take an instance each, then no more.
async fn every_free_node_is_schedulable(d: &TestDeployment, survivors: &[&str]) {
    for index in 0..11 {
        let booted = d.boot(&format!("vm-after-{index}")).await.unwrap();
        assert!(survivors.contains(&booted.host.as_deref().unwrap()));
        d.audit();
    }
    assert!(matches!(
        d.boot("one-too-many").await,
        Err(BootError::NoValidHost { .. })
    ));
}

/// Bug 1853009: a host acting on a stale node list tries to delete, as an orphan, a node that
/// another host took over: refused, nothing lost.
#[actix_web::test]
async fn bug_1853009_a_stale_host_cannot_delete_a_node_another_host_took_over() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 6).await;
    let instance = d.boot("vm-1").await.unwrap();
    let stale_host = instance.host.clone().unwrap();
    let other = if stale_host == "cmp-1" {
        "cmp-2"
    } else {
        "cmp-1"
    };
    let node = instance.node.unwrap().to_string();
    let stale_epoch = d
        .nodes()
        .iter()
        .find(|v| v.uuid.to_string() == node)
        .unwrap()
        .owner_epoch
        .unwrap();
    let identities = d.identities();
    let allocations = d.allocations();

    d.advance(11);
    d.heartbeat(&[other]).await;
    d.rebalance().await;
    assert_eq!(d.owner_of(&node).as_deref(), Some(other));
    d.audit();

    let refused = d
        .actors
        .registry
        .send(DeleteOrphan {
            node: node.parse().expect("a node uuid"),
            host: stale_host.clone().into(),
            epoch: ringmaster::domain::identity::OwnerEpoch(stale_epoch),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(refused, OrphanOutcome::NotOwner);
    assert_eq!(
        d.identities(),
        identities,
        "compute node and provider still there"
    );
    assert_eq!(d.allocations(), allocations, "allocations still there");
    d.audit();
}

/// A host that stalls past its fence time stops writing; once declared dead its nodes move;
/// when it comes back its stale writes are rejected, and it rejoins and receives nodes again.
#[actix_web::test]
async fn a_returning_host_is_fenced_then_rejoins() {
    let d = TestDeployment::start(&THREE, 12).await;
    let stale =
        ringmaster::db::node_reports::owned_nodes(&mut d.db.conn(), &"cmp-1".into(), None).unwrap();
    assert!(!stale.is_empty());

    d.advance(8);
    let host = d.actors.hosts.get("cmp-1").unwrap();
    let fenced = host.send(UpdateAvailableResource).await.unwrap();
    assert!(
        matches!(fenced, Err(HostError::Fenced(_))),
        "past its fence time a host writes nothing"
    );

    d.advance(3);
    d.heartbeat(&["cmp-2", "cmp-3"]).await;
    let report = d.rebalance().await;
    assert_eq!(report.moved.len(), stale.len());
    d.audit();

    d.heartbeat(&["cmp-1"]).await;
    for owned in &stale {
        let inventory = owned.ironic.as_ref().unwrap().inventory(false);
        let written = ringmaster::db::node_reports::report_inventory(
            &mut d.db.conn(),
            owned.compute_node.provider(),
            &"cmp-1".into(),
            owned.compute_node.owner_epoch,
            &inventory,
            d.clock_now(),
        )
        .unwrap();
        assert!(!written, "a stale epoch writes nothing");
    }
    let back = d.track(&["cmp-1"]).await.remove(0);
    assert_eq!(back.reported, 0, "it owns nothing now");

    let rejoin = d.rebalance().await;
    assert!(
        !rejoin.moved.is_empty(),
        "the returning host receives nodes again"
    );
    assert!(
        rejoin
            .plan
            .iter()
            .all(|a| a.reason == MoveReason::Join && a.to == "cmp-1")
    );
    d.track(&THREE).await;
    d.audit();
}

/// Draining moves every node of the host away while it is still up, and nothing else.
#[actix_web::test]
async fn draining_a_host_moves_its_nodes_away() {
    let d = TestDeployment::start(&THREE, 12).await;
    let on_drained = d
        .nodes()
        .iter()
        .filter(|v| v.host.as_deref() == Some("cmp-2"))
        .count();
    ringmaster::db::hosts::drain_host(&mut d.db.conn(), &"cmp-2".into(), d.clock_now()).unwrap();
    let report = d.rebalance().await;
    assert_eq!(report.moved.len(), on_drained);
    assert!(report.plan.iter().all(|a| a.reason == MoveReason::Drain));
    assert!(d.nodes().iter().all(|v| v.host.as_deref() != Some("cmp-2")));
    assert!(
        d.rebalance().await.plan.is_empty(),
        "a drained ring is settled"
    );
    d.audit();
}

/// A node deleted from Ironic loses its compute node and provider, unless the provider holds
/// allocations: then both are kept and reported.
#[actix_web::test]
async fn a_node_gone_from_ironic_is_deleted_only_without_allocations() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 4).await;
    let instance = d.boot("vm-1").await.unwrap();
    let busy = instance.node.unwrap().to_string();
    let free = d
        .nodes()
        .into_iter()
        .find(|v| v.uuid.to_string() != busy)
        .unwrap();

    let refused = d
        .actors
        .ironic
        .send(DeleteNode {
            node: busy.parse().unwrap(),
        })
        .await
        .unwrap();
    assert!(
        refused.is_err(),
        "ironic refuses to delete a node carrying an instance"
    );
    d.actors
        .ironic
        .send(DeleteNode {
            node: ringmaster::domain::identity::NodeUuid(free.uuid),
        })
        .await
        .unwrap()
        .unwrap();
    // Ironic loses the busy node too (as if deleted behind Nova's back).
    use diesel::RunQueryDsl;
    diesel::sql_query(format!("DELETE FROM ironic_nodes WHERE uuid = '{busy}'"))
        .execute(&mut d.db.conn())
        .unwrap();

    let reports = d.track(&["cmp-1", "cmp-2"]).await;
    let deleted: Vec<String> = reports
        .iter()
        .flat_map(|r| r.orphans_deleted.clone())
        .collect();
    let kept: Vec<String> = reports
        .iter()
        .flat_map(|r| r.orphans_kept.clone())
        .collect();
    assert_eq!(deleted, vec![free.uuid.to_string()]);
    assert_eq!(kept, vec![busy.clone()]);
    assert_eq!(d.allocations().len(), 1);
    let live = ringmaster::db::compute_nodes::list_compute_nodes(&mut d.db.conn(), None).unwrap();
    assert!(
        live.iter().any(|cn| cn.node.to_string() == busy),
        "the allocated node's compute node is kept"
    );
    assert!(!live.iter().any(|cn| cn.node.uuid() == free.uuid));
    d.audit();
}

/// A provider already named after a node (left by an earlier compute node) is adopted: the
/// node's compute node takes its uuid, and no second provider is ever created.
#[actix_web::test]
async fn a_provider_with_the_nodes_name_is_adopted() {
    let d = TestDeployment::start(&["cmp-1"], 0).await;
    let node = d.enroll(1).await.remove(0);
    let leftover = Uuid::new_v4();
    use diesel::RunQueryDsl;
    diesel::sql_query(format!(
        "INSERT INTO resource_providers (uuid, name) VALUES ('{leftover}', '{node}')"
    ))
    .execute(&mut d.db.conn())
    .unwrap();

    let report = d.rebalance().await;
    assert_eq!(report.claimed.len(), 1);
    assert_eq!(report.claimed[0].uuid, leftover);
    d.track(&["cmp-1"]).await;
    let view = d.nodes().remove(0);
    assert_eq!(view.compute_node_uuid, Some(leftover));
    assert_eq!(view.resource_provider_uuid, Some(leftover));
    d.audit();
}
