//! Ironic nodes and their compute nodes as the rest of ringmaster sees them, and how a node's
//! inventory is reported (as Nova's ironic driver does).

use uuid::Uuid;

pub use super::identity::{ComputeNodeId, HostName, NodeUuid, OwnerEpoch, ProviderUuid};

/// The provision states the simulated Ironic knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProvisionState {
    /// Enrolled but not yet handed to a compute host.
    Enroll,
    Available,
    Deploying,
    Active,
    Deleting,
    Error,
}

impl ProvisionState {
    /// Returns Ironic's name of the state.
    pub fn as_str(self) -> &'static str {
        match self {
            ProvisionState::Enroll => "enroll",
            ProvisionState::Available => "available",
            ProvisionState::Deploying => "deploying",
            ProvisionState::Active => "active",
            ProvisionState::Deleting => "deleting",
            ProvisionState::Error => "error",
        }
    }

    /// Parses Ironic's name of a state; unknown names read as `Error`.
    pub fn parse(text: &str) -> ProvisionState {
        match text {
            "enroll" => ProvisionState::Enroll,
            "available" => ProvisionState::Available,
            "deploying" => ProvisionState::Deploying,
            "active" => ProvisionState::Active,
            "deleting" => ProvisionState::Deleting,
            _ => ProvisionState::Error,
        }
    }
}

/// A node of the node source: the simulated Ironic or a real one's listing.
#[derive(Debug, Clone, PartialEq)]
pub struct IronicNode {
    pub uuid: Uuid,
    pub name: Option<String>,
    pub resource_class: String,
    pub provision_state: ProvisionState,
    /// Ironic's power state; `None` while Ironic does not know it.
    pub power_state: Option<String>,
    pub maintenance: bool,
    pub instance_uuid: Option<Uuid>,
    /// The conductor lock: set while a conductor works on the node.
    pub reservation: Option<String>,
    /// The node's traits, which become its provider's; `None` for a simulated node (the
    /// simulator has no traits, so its providers keep the ones given through Placement).
    pub traits: Option<Vec<String>>,
    /// Whether the simulator owns the node (then its owner makes an enrolled node available).
    pub simulated: bool,
}

impl IronicNode {
    /// Says whether an instance uses the node.
    pub fn is_used(&self) -> bool {
        self.instance_uuid.is_some() || self.provision_state == ProvisionState::Active
    }

    /// Says whether the node cannot take an instance now, as Nova's ironic driver judges it:
    /// in maintenance, locked, its power in error, or in a state other than available (a
    /// failed deploy or clean with its `last_error`, `manageable`, `enroll`, cleaning, …).
    pub fn is_unavailable(&self) -> bool {
        self.maintenance
            || self.reservation.is_some()
            || self.power_state.as_deref() == Some(POWER_ERROR)
            || self.provision_state != ProvisionState::Available
    }

    /// Returns the inventory the owning host reports for this node; `allocated` says whether
    /// its provider holds an allocation (a claimed build Ironic has not deployed yet).
    pub fn inventory(&self, allocated: bool) -> NodeInventory {
        let used = allocated || self.is_used();
        NodeInventory {
            resource_class: custom_resource_class(&self.resource_class),
            total: 1,
            // Nova's ironic driver: reserve the unit of an unavailable node nobody uses. A
            // node someone uses keeps its unit for its allocation, so capacity never drops
            // below usage (invariant 11).
            reserved: i32::from(!used && self.is_unavailable()),
        }
    }
}

/// Ironic's power state of a node whose power it cannot manage.
pub const POWER_ERROR: &str = "error";

/// The one-unit inventory of a bare-metal node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInventory {
    pub resource_class: String,
    pub total: i32,
    pub reserved: i32,
}

/// Returns Placement's custom class for an Ironic resource class, as Nova normalizes it:
/// upper case, every character outside A-Z, 0-9 and _ replaced by _, prefixed CUSTOM_.
pub fn custom_resource_class(ironic_class: &str) -> String {
    let normalized: String = ironic_class
        .to_uppercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("CUSTOM_{normalized}")
}

/// A live compute node: the identity of an ironic node in the compute service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputeNode {
    pub id: ComputeNodeId,
    pub uuid: Uuid,
    pub host: HostName,
    /// The ironic node (the compute node's hypervisor_hostname).
    pub node: NodeUuid,
    pub owner_epoch: OwnerEpoch,
}

impl ComputeNode {
    /// Its resource provider, which has its uuid (and keeps it across every move).
    pub fn provider(&self) -> ProviderUuid {
        ProviderUuid(self.uuid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> IronicNode {
        IronicNode {
            uuid: Uuid::nil(),
            name: None,
            resource_class: "baremetal-gold".to_owned(),
            provision_state: ProvisionState::Available,
            power_state: Some("power off".to_owned()),
            maintenance: false,
            instance_uuid: None,
            reservation: None,
            traits: None,
            simulated: true,
        }
    }

    #[test]
    fn resource_classes_are_normalized_as_nova_does() {
        assert_eq!(
            custom_resource_class("baremetal-gold"),
            "CUSTOM_BAREMETAL_GOLD"
        );
        assert_eq!(custom_resource_class("CUSTOM.x y"), "CUSTOM_CUSTOM_X_Y");
    }

    #[test]
    fn an_available_node_reports_one_free_unit() {
        assert_eq!(
            node().inventory(false),
            NodeInventory {
                resource_class: "CUSTOM_BAREMETAL_GOLD".to_owned(),
                total: 1,
                reserved: 0
            }
        );
    }

    #[test]
    fn maintenance_or_a_lock_reserves_the_unit() {
        let in_maintenance = IronicNode {
            maintenance: true,
            ..node()
        };
        let locked = IronicNode {
            reservation: Some("conductor-1".to_owned()),
            ..node()
        };
        let enrolling = IronicNode {
            provision_state: ProvisionState::Enroll,
            ..node()
        };
        let failed = IronicNode {
            provision_state: ProvisionState::parse("deploy failed"),
            ..node()
        };
        let power_lost = IronicNode {
            power_state: Some(POWER_ERROR.to_owned()),
            ..node()
        };
        for unavailable in [in_maintenance, locked, enrolling, failed, power_lost] {
            assert_eq!(unavailable.inventory(false).reserved, 1, "{unavailable:?}");
            assert_eq!(
                unavailable.inventory(true).reserved,
                0,
                "a claimed node keeps its unit for its allocation: {unavailable:?}"
            );
        }
    }

    #[test]
    fn a_used_node_is_not_reserved_its_allocation_holds_it() {
        let used = IronicNode {
            instance_uuid: Some(Uuid::nil()),
            provision_state: ProvisionState::Active,
            reservation: Some("conductor-1".to_owned()),
            ..node()
        };
        assert_eq!(used.inventory(false).reserved, 0);
    }

    #[test]
    fn an_unknown_power_state_does_not_reserve_as_fake_hardware_reports_none() {
        let unknown = IronicNode {
            power_state: None,
            ..node()
        };
        assert_eq!(unknown.inventory(false).reserved, 0);
    }

    #[test]
    fn states_round_trip() {
        for state in [
            ProvisionState::Enroll,
            ProvisionState::Available,
            ProvisionState::Deploying,
            ProvisionState::Active,
            ProvisionState::Deleting,
            ProvisionState::Error,
        ] {
            assert_eq!(ProvisionState::parse(state.as_str()), state);
        }
    }
}
