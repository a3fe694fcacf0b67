//! Instances as the admin API and the scheduler see them.

use uuid::Uuid;

/// Nova's vm_state of an instance being built.
pub const BUILDING: &str = "building";
/// Nova's vm_state of a running instance.
pub const ACTIVE: &str = "active";
/// Nova's vm_state of an instance whose build or delete failed.
pub const ERROR: &str = "error";
/// Nova's vm_state of a deleted instance.
pub const DELETED: &str = "deleted";

/// One instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub uuid: Uuid,
    pub name: Option<String>,
    pub host: Option<String>,
    /// The ironic node's uuid.
    pub node: Option<String>,
    pub resource_class: Option<String>,
    pub vm_state: String,
    pub task_state: Option<String>,
    /// Why it is in error, when it is and a fault was recorded.
    pub fault: Option<String>,
}
