//! Steps of the HA scenarios on a `TestDeployment`: boots at once, a node moved by hand, a
//! build left behind by a dead spawn, a count read from the database, and a deployment whose
//! nodes come from a real Ironic.

use ringmaster::actors::registry::MoveNodes;
use ringmaster::actors::scheduler::BootError;
use ringmaster::db::compute_nodes::NodeMove;
use ringmaster::db::instances::NewInstance;
use ringmaster::db::placement::allocations::{ConsumerAllocations, replace_allocations};
use ringmaster::domain::identity::{ConsumerUuid, InstanceUuid, ProviderUuid};
use ringmaster::domain::ring::MoveReason;
use uuid::Uuid;

use super::{RealIronic, TestDeployment, test_deployment_config};

/// The three hosts most scenarios run.
pub const THREE_HOSTS: [&str; 3] = ["cmp-1", "cmp-2", "cmp-3"];

/// The one number `sql` selects as `n` in the deployment's database.
pub fn deployment_rows(d: &TestDeployment, sql: &str) -> i64 {
    super::count_in(&mut d.db.conn(), sql)
}

/// Boots `count` instances at once and returns each outcome.
pub async fn boot_at_once(
    d: &TestDeployment,
    count: usize,
    pci_devices: u32,
) -> Vec<Result<ringmaster::domain::instance::Instance, BootError>> {
    let boots = (0..count).map(|index| {
        d.actors
            .scheduler
            .send(super::boot_request(&format!("vm-{index}"), pci_devices))
    });
    futures_util::future::join_all(boots)
        .await
        .into_iter()
        .map(|sent| sent.unwrap())
        .collect()
}

/// A building instance with its allocation, as a spawn that died with its process leaves it.
pub fn leave_a_build(
    d: &TestDeployment,
    node: &ringmaster::db::node_views::NodeView,
) -> InstanceUuid {
    let instance = InstanceUuid(Uuid::new_v4());
    let mut conn = d.db.conn();
    let write = ConsumerAllocations {
        consumer: ConsumerUuid::from(instance),
        project: "project".to_owned(),
        user: "user".to_owned(),
        expected_generation: ringmaster::domain::placement::GenerationCheck::MustBeNew,
        consumer_type: None,
        allocations: [(
            ProviderUuid(node.resource_provider_uuid.unwrap()),
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
        host: node.host.clone().unwrap().into(),
        node: ringmaster::domain::identity::NodeUuid(node.uuid),
        resource_class: "baremetal".to_owned(),
        server: None,
    };
    ringmaster::db::instances::create_instance(&mut conn, &new, d.clock_now()).unwrap();
    instance
}

/// Moves `node` from `from` to `to` as an operator would, at its current epoch.
pub async fn move_node(d: &TestDeployment, node: &str, from: &str, to: &str) {
    let epoch = d
        .nodes()
        .iter()
        .find(|view| view.uuid.to_string() == node)
        .and_then(|view| view.owner_epoch)
        .unwrap();
    let moved = d
        .actors
        .registry
        .send(MoveNodes {
            moves: vec![NodeMove {
                node: node.parse().expect("a node uuid"),
                from: from.into(),
                epoch: ringmaster::domain::identity::OwnerEpoch(epoch),
                to: to.into(),
                reason: MoveReason::Manual,
            }],
            ring_version: 0,
            lease: d.lease().await,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(moved.len(), 1, "the node moved");
}

/// The other of cmp-1 and cmp-2.
pub fn other_than(host: &str) -> &'static str {
    if host == "cmp-1" { "cmp-2" } else { "cmp-1" }
}

/// A deployment of `hosts` whose nodes come from `ironic`, driven by messages: the first
/// passes list Ironic (on demand, as no listing loop runs), the rebalancer gives every node its
/// first owner, and the owners report them.
pub async fn deployment_on(ironic: &RealIronic, hosts: &[&str]) -> TestDeployment {
    let mut config = test_deployment_config(hosts);
    config.ironic = Some(ironic.settings());
    let deployment = TestDeployment::start_with(config).await;
    deployment.track(hosts).await;
    deployment.rebalance().await;
    deployment.track(hosts).await;
    deployment.track(hosts).await;
    deployment.audit();
    deployment
}
