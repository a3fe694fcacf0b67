//! The resource tracker's compare (Nova's `update_available_resource`, the policy half): given
//! what a pass read about a node its host owns, what must be written. Pure: the actor reads
//! (`db::node_reports::owned_nodes`), asks `PassChanges::add` per node and hands the result to
//! `db::node_reports::write_pass`, which writes it fenced, in one transaction.

use std::collections::HashSet;

use uuid::Uuid;

use super::identity::{InstanceUuid, NodeUuid};
use super::node::{
    ComputeNode, ComputeNodeId, IronicNode, NodeInventory, OwnerEpoch, ProviderUuid, ProvisionState,
};

/// A compute node a host owns, as a tracker pass reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedNode {
    pub compute_node: ComputeNode,
    /// Its Ironic node (`None` once Ironic has deleted it).
    pub ironic: Option<IronicNode>,
    pub has_provider: bool,
    /// Whether its provider holds an allocation.
    pub allocated: bool,
    /// The inventory its provider has now, one record per class.
    pub inventory: Vec<NodeInventory>,
    /// Its provider's traits now, sorted (read only for a real Ironic's nodes).
    pub provider_traits: Vec<String>,
    /// Its live PCI device rows.
    pub devices: i64,
    /// Whether Ironic shows deployed an instance still `building` on it.
    pub build_deployed: bool,
    /// An instance `active` on the node that a real Ironic no longer shows there (torn down
    /// or re-associated behind ringmaster's back), not reported yet: it gets a fault once and
    /// keeps its claim, so its node is not re-used.
    pub instance_gone: Option<InstanceUuid>,
}

impl OwnedNode {
    /// Says whether the provider already has `wanted` as its inventory of that class.
    pub fn reports(&self, wanted: &NodeInventory) -> bool {
        self.inventory.iter().any(|current| current == wanted)
    }
}

/// What a tracker pass found changed on the nodes it owns: only these are written. Each item
/// is keyed by its compute node's id, so that the write keeps only those of nodes still held.
#[derive(Debug, Default, PartialEq)]
pub struct PassChanges {
    /// Every node with a change, at the owner and epoch read (the write is fenced by them).
    pub nodes: Vec<ComputeNode>,
    /// Inventories that differ from the provider's: (compute node, (provider, inventory)).
    pub inventories: Vec<(ComputeNodeId, (ProviderUuid, NodeInventory))>,
    /// Nodes short of their simulated PCI devices: (compute node, compute node).
    pub devices: Vec<(ComputeNodeId, ComputeNodeId)>,
    /// Nodes with a build Ironic finished: (compute node, node name as instances name it).
    pub builds: Vec<(ComputeNodeId, NodeUuid)>,
    /// Simulated nodes back in `enroll`: (compute node, Ironic node).
    pub enrolled: Vec<(ComputeNodeId, Uuid)>,
    /// Providers whose traits differ from their node's: (compute node, (provider, traits)).
    pub traits: Vec<(ComputeNodeId, (ProviderUuid, Vec<String>))>,
    /// Active instances Ironic no longer shows on their node: (compute node, instance).
    pub gone: Vec<(ComputeNodeId, InstanceUuid)>,
    /// Nodes found as they were.
    pub unchanged: usize,
}

impl PassChanges {
    /// Compares one owned node with what Ironic says of it (`ironic`) and keeps what must be
    /// written; `devices` is the number of simulated PCI devices a node has.
    pub fn add(&mut self, node: OwnedNode, mut ironic: IronicNode, devices: u32) {
        let id = node.compute_node.id;
        let mut changed = false;
        // A simulated node enrolled again while its compute node lived: this host manages
        // it, so it makes it available (as a first claim does), keeping its identity. A real
        // Ironic's nodes are its operator's to manage.
        if ironic.simulated && ironic.provision_state == ProvisionState::Enroll {
            self.enrolled.push((id, ironic.uuid));
            ironic.provision_state = ProvisionState::Available;
            changed = true;
        }
        let inventory = ironic.inventory(node.allocated);
        if !node.reports(&inventory) {
            self.inventories
                .push((id, (node.compute_node.provider(), inventory)));
            changed = true;
        }
        if let Some(traits) = ironic.traits.take()
            && traits != node.provider_traits
        {
            self.traits
                .push((id, (node.compute_node.provider(), traits)));
            changed = true;
        }
        if node.devices < i64::from(devices) {
            self.devices.push((id, id));
            changed = true;
        }
        if node.build_deployed {
            self.builds.push((id, node.compute_node.node));
            changed = true;
        }
        if let Some(instance) = node.instance_gone {
            self.gone.push((id, instance));
            changed = true;
        }
        if changed {
            self.nodes.push(node.compute_node);
        } else {
            self.unchanged += 1;
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The (compute node, epoch) pairs the write must hold: the changed nodes and those of
    /// `stale` builds, sorted and once each (the order every fenced write locks in).
    pub fn to_hold(
        &self,
        stale: &[(ComputeNodeId, OwnerEpoch)],
    ) -> Vec<(ComputeNodeId, OwnerEpoch)> {
        let mut to_hold: Vec<(ComputeNodeId, OwnerEpoch)> = self
            .nodes
            .iter()
            .map(|node| (node.id, node.owner_epoch))
            .chain(stale.iter().copied())
            .collect();
        to_hold.sort_unstable();
        to_hold.dedup();
        to_hold
    }

    /// The names of the changed nodes not in `held`: lost to another host since the read.
    pub fn lost(&self, held: &HashSet<ComputeNodeId>) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|node| !held.contains(&node.id))
            .map(|node| node.node.to_string())
            .collect()
    }
}

/// The items of the compute nodes in `held`, from (compute node, item) pairs.
pub fn held_only<T: Clone>(items: &[(ComputeNodeId, T)], held: &HashSet<ComputeNodeId>) -> Vec<T> {
    items
        .iter()
        .filter(|(id, _)| held.contains(id))
        .map(|(_, item)| item.clone())
        .collect()
}

/// What the writing transaction of a tracker pass did.
#[derive(Debug, Default, PartialEq)]
pub struct PassWrites {
    /// Nodes whose inventory was written.
    pub reported: usize,
    /// Changed nodes another host owns now: nothing of theirs was written.
    pub lost: Vec<String>,
    /// Builds Ironic finished, now active.
    pub finished: Vec<InstanceUuid>,
    /// Stale builds ended in error.
    pub failed: Vec<InstanceUuid>,
    /// Simulated nodes made available again.
    pub made_available: Vec<String>,
    /// Instances reported gone from their node.
    pub gone: Vec<InstanceUuid>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::node::{HostName, NodeUuid};

    fn ironic(state: ProvisionState, simulated: bool) -> IronicNode {
        IronicNode {
            uuid: Uuid::from_u128(7),
            name: None,
            resource_class: "baremetal".into(),
            provision_state: state,
            maintenance: false,
            instance_uuid: None,
            reservation: None,
            power_state: None,
            traits: (!simulated).then(|| vec!["CUSTOM_GOLD".to_owned()]),
            simulated,
        }
    }

    /// A node whose provider reports what `ironic` gives it, with `devices` devices.
    fn owned(ironic: &IronicNode, devices: i64) -> OwnedNode {
        OwnedNode {
            compute_node: ComputeNode {
                id: ComputeNodeId(3),
                uuid: Uuid::from_u128(9),
                host: HostName::from("cmp-1"),
                node: NodeUuid::from(ironic.uuid),
                owner_epoch: OwnerEpoch(2),
            },
            ironic: Some(ironic.clone()),
            has_provider: true,
            allocated: false,
            inventory: vec![ironic.inventory(false)],
            provider_traits: ironic.traits.clone().unwrap_or_default(),
            devices,
            build_deployed: false,
            instance_gone: None,
        }
    }

    #[test]
    fn a_node_as_it_was_is_unchanged_and_nothing_is_written() {
        let node = ironic(ProvisionState::Available, false);
        let mut changes = PassChanges::default();
        changes.add(owned(&node, 2), node, 2);
        assert!(changes.is_empty());
        assert_eq!(changes.unchanged, 1);
    }

    #[test]
    fn an_allocated_provider_with_a_free_inventory_is_rewritten_as_used() {
        // In maintenance: its unit is reserved unless someone holds it.
        let mut node = ironic(ProvisionState::Available, true);
        node.maintenance = true;
        let mut read = owned(&node, 0);
        read.allocated = true;
        let mut changes = PassChanges::default();
        changes.add(read, node.clone(), 0);
        assert_eq!(changes.inventories.len(), 1);
        assert_ne!(node.inventory(true), node.inventory(false));
        assert_eq!(changes.inventories[0].1.1, node.inventory(true));
        assert_eq!(changes.nodes.len(), 1);
    }

    #[test]
    fn a_simulated_node_back_in_enroll_is_made_available_but_a_real_one_is_not() {
        let simulated = ironic(ProvisionState::Enroll, true);
        let mut changes = PassChanges::default();
        changes.add(owned(&simulated, 0), simulated.clone(), 0);
        assert_eq!(changes.enrolled, vec![(ComputeNodeId(3), simulated.uuid)]);
        let real = ironic(ProvisionState::Enroll, false);
        let mut changes = PassChanges::default();
        changes.add(owned(&real, 0), real, 0);
        assert!(changes.enrolled.is_empty());
    }

    #[test]
    fn traits_devices_builds_and_gone_instances_each_mark_the_node_changed() {
        let node = ironic(ProvisionState::Active, false);
        let mut read = owned(&node, 0);
        read.provider_traits = vec![];
        read.build_deployed = true;
        read.instance_gone = Some(InstanceUuid(Uuid::from_u128(5)));
        let mut changes = PassChanges::default();
        changes.add(read, node, 1);
        assert_eq!(changes.traits.len(), 1);
        assert_eq!(changes.devices, vec![(ComputeNodeId(3), ComputeNodeId(3))]);
        assert_eq!(changes.builds.len(), 1);
        assert_eq!(
            changes.gone,
            vec![(ComputeNodeId(3), InstanceUuid(Uuid::from_u128(5)))]
        );
        assert_eq!(changes.nodes.len(), 1, "one node, however many changes");
    }

    #[test]
    fn the_write_holds_changed_and_stale_nodes_once_each_in_id_order_and_names_the_lost() {
        let node = ironic(ProvisionState::Available, true);
        let mut changes = PassChanges::default();
        changes.add(owned(&node, 0), node, 1);
        let hold = changes.to_hold(&[
            (ComputeNodeId(5), OwnerEpoch(1)),
            (ComputeNodeId(3), OwnerEpoch(2)),
        ]);
        assert_eq!(
            hold,
            vec![
                (ComputeNodeId(3), OwnerEpoch(2)),
                (ComputeNodeId(5), OwnerEpoch(1))
            ]
        );
        assert_eq!(
            changes.lost(&HashSet::from([ComputeNodeId(5)])),
            vec![node_name(&changes)]
        );
        assert!(changes.lost(&HashSet::from([ComputeNodeId(3)])).is_empty());
        assert!(held_only(&changes.devices, &HashSet::from([ComputeNodeId(5)])).is_empty());
    }

    fn node_name(changes: &PassChanges) -> String {
        changes.nodes[0].node.to_string()
    }
}
