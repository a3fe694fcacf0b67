//! What a boot asks for, in one shape for the Compute API, the admin API and message scripts,
//! and the scheduling policy that reads it: which hosts may take the boot, and which nodes of
//! theirs (the node condition itself is one query, `db::free_nodes`).
//!
//! The checks still to come on this path (server groups, quotas) belong here, beside the
//! request they read.

use chrono::{DateTime, Utc};

use super::compute::server::ServerRequest;
use super::host::{Host, HostState};
use super::identity::NodeUuid;
use super::node::custom_resource_class;
use super::rebalance::HostJudge;

/// One boot's request: the node it needs, and what its instance records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootRequest {
    /// The Placement class the node's provider gives one unit of (`CUSTOM_BAREMETAL`).
    pub placement_class: String,
    /// The node's own Ironic class (`baremetal`), when the boot asks by it (the admin API, a
    /// script); a Compute API boot takes any node whose class normalizes to `placement_class`.
    pub ironic_class: Option<String>,
    /// Traits the node's provider must have, and must not (the flavor's and the image's).
    pub required_traits: Vec<String>,
    pub forbidden_traits: Vec<String>,
    /// PCI devices that must be free on the node, claimed before the deploy.
    pub pci_devices: u32,
    /// Where an admin asked the boot be placed (Nova's 2.74 `host`, `hypervisor_hostname`),
    /// known to exist: there or nowhere.
    pub destination: Destination,
    /// What a Compute API server records with its instance (image, flavor snapshot, key,
    /// user data, config drive); `None` for a boot of the admin API or a script.
    pub server: Option<ServerRequest>,
}

/// A requested host and node; either may be absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Destination {
    pub host: Option<String>,
    /// The node (Nova's `hypervisor_hostname`).
    pub node: Option<NodeUuid>,
}

impl BootRequest {
    /// A boot of one node of Ironic class `ironic_class` with `pci_devices` free PCI devices
    /// (the admin API's and scripts' boot): no traits, no destination, no server record.
    pub fn of_class(ironic_class: &str, pci_devices: u32) -> BootRequest {
        BootRequest {
            placement_class: custom_resource_class(ironic_class),
            ironic_class: Some(ironic_class.to_owned()),
            required_traits: Vec::new(),
            forbidden_traits: Vec::new(),
            pci_devices,
            destination: Destination::default(),
            server: None,
        }
    }

    /// The class a refusal names: the Ironic class asked for, else the Placement class.
    pub fn class_name(&self) -> &str {
        self.ironic_class
            .as_deref()
            .unwrap_or(&self.placement_class)
    }

    /// The hosts this boot may land on, of the deployment's `hosts` judged at `now`: the
    /// schedulable ones, only the requested host when an admin asked for one.
    pub fn hosts(&self, hosts: Vec<Host>, judge: &HostJudge, now: DateTime<Utc>) -> Vec<String> {
        let mut up = schedulable_hosts(hosts, judge, now);
        if let Some(only) = &self.destination.host {
            up.retain(|name| name == only);
        }
        up
    }
}

/// The hosts a boot may land on, whichever process runs them: those up, not fenced (their
/// lease holds) and not disabled.
pub fn schedulable_hosts(hosts: Vec<Host>, judge: &HostJudge, now: DateTime<Utc>) -> Vec<String> {
    hosts
        .into_iter()
        .filter(|host| judge.state(host, now) == HostState::Up)
        .map(|host| host.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_by_class_asks_for_its_custom_class_and_names_the_ironic_one() {
        let request = BootRequest::of_class("baremetal-gpu", 2);
        assert_eq!(request.placement_class, "CUSTOM_BAREMETAL_GPU");
        assert_eq!(request.class_name(), "baremetal-gpu");
        assert_eq!(request.pci_devices, 2);
        assert!(request.server.is_none());
    }
}
