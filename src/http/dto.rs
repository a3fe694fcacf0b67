//! Request and response bodies of the admin API. Row types never cross HTTP.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::domain::host::Host;

/// Body of `GET /healthz`.
#[derive(Debug, Serialize)]
pub struct HealthResponse {
    pub status: &'static str,
}

/// One compute host in `GET /api/v1/hosts`.
#[derive(Debug, Serialize)]
pub struct HostResponse {
    pub host: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub forced_down: bool,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub report_count: i64,
}

impl From<Host> for HostResponse {
    fn from(host: Host) -> Self {
        HostResponse {
            host: host.name,
            disabled: host.disabled,
            disabled_reason: host.disabled_reason,
            forced_down: host.forced_down,
            last_seen_up: host.last_seen_up,
            report_count: host.report_count,
        }
    }
}
