//! Servers as the Compute API shows them: the status Nova derives from vm_state and
//! task_state, the power state's number, and the names of a multiple create.

/// What a server booted through the Compute API records with its instance, beyond the node
/// it asked for (`domain::boot::BootRequest` carries both).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerRequest {
    pub image_ref: String,
    /// The flavor as booted (Nova's embedded flavor view), kept with the instance.
    pub flavor: super::flavor::FlavorSnapshot,
    pub key_name: Option<String>,
    /// The key pair's public key, for the config drive.
    pub key_data: Option<String>,
    pub user_data: Option<String>,
    pub config_drive: bool,
    pub availability_zone: Option<String>,
    /// What the deploy asks Ironic for of the image (JSON: `ImageSource::to_json`), when an
    /// image service resolved it.
    pub image: Option<String>,
}

impl ServerRequest {
    /// The flavor's snapshot as the instance stores it (JSON).
    pub fn stored_flavor(&self) -> String {
        serde_json::to_string(&self.flavor).unwrap_or_default()
    }
}

/// A server as the Compute API shows it: its instance row and what hangs off it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRecord {
    pub uuid: super::super::identity::InstanceUuid,
    pub name: String,
    pub project_id: String,
    pub user_id: String,
    pub host: Option<String>,
    pub node: Option<super::super::identity::NodeUuid>,
    pub vm_state: String,
    pub task_state: Option<String>,
    pub power_state: i32,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
    pub launched_at: Option<chrono::DateTime<chrono::Utc>>,
    pub terminated_at: Option<chrono::DateTime<chrono::Utc>>,
    pub image_ref: Option<String>,
    pub key_name: Option<String>,
    pub key_data: Option<String>,
    pub user_data: Option<String>,
    pub config_drive: Option<String>,
    pub availability_zone: Option<String>,
    /// The flavor as booted, or the resource class of an admin-API boot.
    pub flavor: Option<super::flavor::BootedFlavor>,
    /// What the deploy asks Ironic for of the image (JSON), when an image service resolved it.
    pub image: Option<String>,
    /// Its node's addresses (JSON: Nova's `addresses`), when the node has any.
    pub addresses: Option<String>,
    /// The latest fault of a server in error: its message and when.
    pub fault: Option<(String, chrono::DateTime<chrono::Utc>)>,
}

/// Which servers a listing shows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerFilter {
    /// Only this project's (a caller who is not an admin, or an admin without
    /// `all_tenants`).
    pub project: Option<String>,
    /// A regular expression the name must match (PostgreSQL's `~`, as Nova's `REGEXP`).
    pub name: Option<String>,
    pub vm_states: Option<Vec<String>>,
    pub host: Option<String>,
    pub changes_since: Option<chrono::DateTime<chrono::Utc>>,
    /// Deleted ones too (`changes-since`, or `deleted=true` for admins).
    pub include_deleted: bool,
    /// Only deleted ones.
    pub only_deleted: bool,
    /// After this server, newest first (oldest first when `oldest_first`).
    pub marker: Option<uuid::Uuid>,
    /// `sort_key=created_at&sort_dir=asc`.
    pub oldest_first: bool,
    /// A regular expression one of its addresses of this IP version (4 or 6) must match.
    pub ip: Option<(String, i32)>,
    pub limit: i64,
}

/// A compute service (one compute host) as `os-services` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceRecord {
    pub id: i64,
    pub uuid: uuid::Uuid,
    pub host: crate::domain::host::Host,
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A change `PUT /os-services/{id}` asks for: each part optional.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceChange {
    /// `Some(Some(reason))`: disable (reason may be empty); `Some(None)`: enable.
    pub disabled: Option<Option<String>>,
    pub forced_down: Option<bool>,
}

/// A compute node as `os-hypervisors` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct HypervisorRecord {
    pub id: i64,
    pub uuid: uuid::Uuid,
    /// The Ironic node's uuid.
    pub hypervisor_hostname: String,
    pub service: ServiceRecord,
    pub vcpus: i32,
    pub memory_mb: i32,
    pub local_gb: i32,
    pub vcpus_used: i32,
    pub memory_mb_used: i32,
    pub local_gb_used: i32,
    pub running_vms: i32,
    /// The servers on it (uuid, name).
    pub servers: Vec<(uuid::Uuid, String)>,
}

/// A power action on a server's node, as Nova's ironic driver asks Ironic for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerAction {
    /// `os-stop`: a soft power off, a hard one if the soft one did not finish in time.
    Stop,
    /// `os-start`.
    Start,
    /// `reboot` SOFT (a soft reboot, hard if the soft one fails) or HARD.
    Reboot { hard: bool },
}

impl PowerAction {
    /// The vm_states the action may start from (Nova's `check_instance_state`).
    pub fn allowed_from(self) -> &'static [&'static str] {
        match self {
            PowerAction::Stop => &["active", "error"],
            PowerAction::Start => &["stopped"],
            PowerAction::Reboot { hard: false } => &["active"],
            PowerAction::Reboot { hard: true } => &["active", "stopped", "error"],
        }
    }

    /// Nova's task_state while the action runs.
    pub fn task_state(self) -> &'static str {
        match self {
            PowerAction::Stop => "powering-off",
            PowerAction::Start => "powering-on",
            PowerAction::Reboot { hard: false } => "rebooting",
            PowerAction::Reboot { hard: true } => "rebooting_hard",
        }
    }

    /// The vm_state and power state the server has after it.
    pub fn outcome(self) -> (&'static str, i32) {
        match self {
            PowerAction::Stop => ("stopped", power_state::SHUTDOWN),
            _ => ("active", power_state::RUNNING),
        }
    }

    /// Nova's name of the action in its 409 (`Cannot 'stop' instance …`).
    pub fn name(self) -> &'static str {
        match self {
            PowerAction::Stop => "stop",
            PowerAction::Start => "start",
            PowerAction::Reboot { .. } => "reboot",
        }
    }

    /// Ironic's power targets, first the one to try, then the fallback when it fails.
    pub fn ironic_targets(self) -> (&'static str, Option<&'static str>) {
        match self {
            PowerAction::Stop => ("soft power off", Some("power off")),
            PowerAction::Start => ("power on", None),
            PowerAction::Reboot { hard: false } => ("soft rebooting", Some("rebooting")),
            PowerAction::Reboot { hard: true } => ("rebooting", None),
        }
    }
}

/// Nova's `status` of a server with `vm_state` and `task_state` (`nova/api/openstack/common.py`
/// `_STATE_MAP`, of the states ringmaster's servers go through).
pub fn status(vm_state: &str, task_state: Option<&str>) -> &'static str {
    match (vm_state, task_state) {
        ("active", Some("rebooting" | "reboot_pending" | "reboot_started")) => "REBOOT",
        ("active", Some("rebooting_hard" | "reboot_pending_hard" | "reboot_started_hard")) => {
            "HARD_REBOOT"
        }
        ("active" | "stopped", Some("deleting")) => "DELETED",
        ("active", _) => "ACTIVE",
        ("building", _) => "BUILD",
        ("stopped", _) => "SHUTOFF",
        ("deleted", _) => "DELETED",
        ("soft-delete", _) => "SOFT_DELETED",
        _ => "ERROR",
    }
}

/// The vm_states a `status` filter of `GET /servers` selects (`None` for a status Nova does
/// not know: the answer is empty).
pub fn vm_states_of_status(status: &str) -> Option<&'static [&'static str]> {
    match status.to_ascii_uppercase().as_str() {
        "ACTIVE" | "REBOOT" | "HARD_REBOOT" => Some(&["active"]),
        "BUILD" => Some(&["building"]),
        "SHUTOFF" => Some(&["stopped"]),
        "ERROR" => Some(&["error"]),
        "DELETED" => Some(&["deleted"]),
        _ => None,
    }
}

/// Nova's power state numbers (`nova/compute/power_state.py`).
pub mod power_state {
    pub const NOSTATE: i32 = 0;
    pub const RUNNING: i32 = 1;
    pub const SHUTDOWN: i32 = 4;
}

/// The names of `count` servers created by one request named `name`: the name itself for
/// one, `NAME-1` … `NAME-count` for more (Nova's `multi_instance_display_name_template`).
pub fn names(name: &str, count: u32) -> Vec<String> {
    if count <= 1 {
        return vec![name.to_owned()];
    }
    (1..=count).map(|index| format!("{name}-{index}")).collect()
}

/// Nova's hostname of a server named `name` (`utils.sanitize_hostname`): lower case, what
/// is not a letter, digit, `-` or `.` dropped, spaces and underscores as `-`, at most 63.
pub fn hostname(name: &str) -> String {
    let cleaned: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c == ' ' || c == '_' { '-' } else { c })
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
        .collect();
    let trimmed = cleaned.trim_matches(|c| c == '-' || c == '.');
    let short: String = trimmed.chars().take(63).collect();
    if short.is_empty() {
        "server".to_owned()
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_nova_s_state_map() {
        assert_eq!(status("building", Some("spawning")), "BUILD");
        assert_eq!(status("active", None), "ACTIVE");
        assert_eq!(status("active", Some("rebooting")), "REBOOT");
        assert_eq!(status("active", Some("rebooting_hard")), "HARD_REBOOT");
        assert_eq!(status("stopped", None), "SHUTOFF");
        assert_eq!(status("error", None), "ERROR");
        assert_eq!(status("deleted", None), "DELETED");
        assert_eq!(status("something else", None), "ERROR");
        assert_eq!(vm_states_of_status("active"), Some(&["active"][..]));
        assert_eq!(vm_states_of_status("MIGRATING"), None);
    }

    #[test]
    fn several_servers_are_numbered_from_one() {
        assert_eq!(names("web", 1), vec!["web"]);
        assert_eq!(names("web", 3), vec!["web-1", "web-2", "web-3"]);
    }

    #[test]
    fn hostnames_are_sanitized_as_nova_does() {
        assert_eq!(hostname("Web Server_1"), "web-server-1");
        assert_eq!(hostname("--x.."), "x");
        assert_eq!(hostname("!!!"), "server");
    }
}
