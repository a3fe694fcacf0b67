//! Compute hosts as the rest of ringmaster sees them.

use chrono::{DateTime, Utc};

/// The service binary name every ringmaster compute host registers under.
pub const COMPUTE_BINARY: &str = "ringmaster-compute";

/// Describes one compute service (a `ComputeHost`) and its last heartbeat.
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub forced_down: bool,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub report_count: i64,
}
