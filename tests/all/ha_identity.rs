//! A node keeps its identity through everything a deployment does to it: a provider create
//! that collides, an archived compute node, a re-enrollment, a drain across a crash.

use ringmaster::actors::ironic::{DeleteNode, EnrollNodes};
use ringmaster::actors::registry::CreateProvider;
use ringmaster::db::ironic::NewIronicNode;

use crate::helpers::{THREE_HOSTS, TestDeployment, deployment_rows};

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
            uuid: ringmaster::domain::identity::ProviderUuid(provider),
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
    let gone = ringmaster::domain::identity::NodeUuid(d.nodes()[0].uuid);
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
        deployment_rows(
            &d,
            "SELECT count(*) AS n FROM compute_nodes WHERE deleted <> 0"
        ),
        0
    );
    d.actors
        .ironic
        .send(EnrollNodes {
            nodes: vec![NewIronicNode::enrolling(gone.uuid(), None, "baremetal")],
        })
        .await
        .unwrap()
        .unwrap();
    d.rebalance().await;
    d.track(&["cmp-1"]).await;
    let back = d
        .nodes()
        .into_iter()
        .find(|node| node.uuid == gone.uuid())
        .unwrap();
    assert_eq!(
        back.compute_node_uuid,
        Some(gone.uuid()),
        "the same compute-node uuid"
    );
    assert_eq!(
        back.resource_provider_uuid,
        Some(gone.uuid()),
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
    let node = ringmaster::domain::identity::NodeUuid(d.nodes()[0].uuid);
    d.actors
        .ironic
        .send(DeleteNode { node })
        .await
        .unwrap()
        .unwrap();
    d.actors
        .ironic
        .send(EnrollNodes {
            nodes: vec![NewIronicNode::enrolling(node.uuid(), None, "baremetal")],
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
    let d = TestDeployment::start(&THREE_HOSTS, 6).await;
    ringmaster::db::hosts::drain_host(&mut d.db.conn(), &"cmp-2".into(), d.clock_now()).unwrap();
    d.rebalance().await;
    assert!(d.actors.hosts.crash("cmp-2"));
    actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    d.actors.hosts.start("cmp-2").await.unwrap();
    d.heartbeat(&THREE_HOSTS).await;
    let hosts = ringmaster::db::hosts::list_hosts(&mut d.db.conn()).unwrap();
    let drained = hosts.iter().find(|host| host.name == "cmp-2").unwrap();
    assert!(drained.is_draining(), "still draining after a restart");
    d.rebalance().await;
    assert_eq!(d.owner_count("cmp-2"), 0, "it receives nothing");

    ringmaster::db::hosts::enable_host(&mut d.db.conn(), &"cmp-2".into(), d.clock_now()).unwrap();
    let rejoined = d.rebalance().await;
    assert!(rejoined.moved.iter().any(|node| node.host == "cmp-2"));
    d.audit();
}
