//! Instances as the admin API and the scheduler see them.

use std::fmt;

use super::identity::InstanceUuid;

/// Nova's vm_state of an instance, of those ringmaster's instances go through. In SQL it is
/// the text `as_str` gives, which the `db` layer binds: no statement spells a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VmState {
    /// Being built: claimed, its deploy not yet settled.
    Building,
    Active,
    /// Powered off by its owner (`os-stop`); it keeps its node and its claim.
    Stopped,
    /// Its build or delete failed.
    Error,
    Deleted,
}

impl VmState {
    /// The state as Nova and the `instances.vm_state` column spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            VmState::Building => "building",
            VmState::Active => "active",
            VmState::Stopped => "stopped",
            VmState::Error => "error",
            VmState::Deleted => "deleted",
        }
    }

    /// Reads a state as `as_str` spells it. Any other text (a state ringmaster never
    /// writes) reads as `Error`: an instance in a state it cannot drive is one in error.
    pub fn parse(text: &str) -> VmState {
        match text {
            "building" => VmState::Building,
            "active" => VmState::Active,
            "stopped" => VmState::Stopped,
            "deleted" => VmState::Deleted,
            _ => VmState::Error,
        }
    }
}

impl fmt::Display for VmState {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl PartialEq<str> for VmState {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for VmState {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for VmState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One instance.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Instance {
    pub uuid: InstanceUuid,
    pub name: Option<String>,
    pub host: Option<String>,
    /// The ironic node's uuid.
    pub node: Option<super::identity::NodeUuid>,
    pub resource_class: Option<String>,
    pub vm_state: VmState,
    pub task_state: Option<String>,
    /// Why it is in error, when it is and a fault was recorded.
    pub fault: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::VmState;

    #[test]
    fn every_state_reads_back_as_it_is_written() {
        for state in [
            VmState::Building,
            VmState::Active,
            VmState::Stopped,
            VmState::Error,
            VmState::Deleted,
        ] {
            assert_eq!(VmState::parse(state.as_str()), state);
        }
        assert_eq!(VmState::parse("paused"), VmState::Error);
    }
}
