//! The filter of `GET /servers` as Nova reads its query for a caller: the caller's project
//! unless an admin asks `all_tenants`, `name` as a regular expression, `status`, `host`,
//! `changes-since`, `deleted`, `ip`/`ip6` (regular expressions on the addresses), `limit` and
//! `marker`.

use uuid::Uuid;

use super::auth::Caller;
use super::common;
use super::error::ComputeError;
use crate::domain::compute::extra_specs::bool_like;
use crate::domain::compute::server::{ServerFilter, vm_states_of_status};

/// The listing's filter, as Nova's `GET /servers` reads its query for this caller.
pub fn filter(pairs: &[(String, String)], caller: &Caller) -> Result<ServerFilter, ComputeError> {
    let (limit, marker) = common::limit_and_marker(pairs)?;
    let all_tenants = common::last(pairs, "all_tenants")
        .is_some_and(|v| v.is_empty() || bool_like(v).unwrap_or(false));
    if all_tenants && !caller.is_admin() {
        return Err(ComputeError::policy(
            "os_compute_api:servers:index:get_all_tenants",
        ));
    }
    let project = match (
        caller.is_admin(),
        all_tenants,
        common::last(pairs, "project_id").or(common::last(pairs, "tenant_id")),
    ) {
        (true, true, asked) => asked.map(str::to_owned),
        _ => Some(caller.project_id.clone()),
    };
    let name = common::last(pairs, "name")
        .map(|pattern| checked_pattern("name", pattern))
        .transpose()?;
    // A status Nova does not know selects nothing.
    let vm_states = common::last(pairs, "status").map(|status| {
        vm_states_of_status(status)
            .map(|s| s.iter().map(|v| (*v).to_owned()).collect())
            .unwrap_or_default()
    });
    let changes_since = common::last(pairs, "changes-since")
        .map(|text| {
            chrono::DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&chrono::Utc))
                .or_else(|_| {
                    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                        .map(|t| t.and_utc())
                })
                .map_err(|_| {
                    ComputeError::bad_request(format!(
                        "Invalid filter field: changes-since. Value: {text}"
                    ))
                })
        })
        .transpose()?;
    let deleted = caller.is_admin()
        && common::last(pairs, "deleted")
            .and_then(bool_like)
            .unwrap_or(false);
    let marker = marker
        .map(|m| {
            Uuid::parse_str(&m)
                .map_err(|_| ComputeError::bad_request(format!("marker [{m}] not found")))
        })
        .transpose()?;
    let ip = match (common::last(pairs, "ip"), common::last(pairs, "ip6")) {
        (Some(pattern), _) => Some((checked_pattern("ip", pattern)?, 4)),
        (None, Some(pattern)) => Some((checked_pattern("ip6", pattern)?, 6)),
        (None, None) => None,
    };
    Ok(ServerFilter {
        project,
        name,
        vm_states,
        host: if caller.is_admin() {
            common::last(pairs, "host").map(str::to_owned)
        } else {
            None
        },
        changes_since,
        include_deleted: changes_since.is_some() || deleted,
        only_deleted: deleted,
        marker,
        ip,
        limit: limit.unwrap_or(1000).min(1000),
    })
}

/// `pattern` if it is a regular expression, else Nova's 400 naming `field`.
fn checked_pattern(field: &str, pattern: &str) -> Result<String, ComputeError> {
    regex::Regex::new(pattern)
        .map(|_| pattern.to_owned())
        .map_err(|_| {
            ComputeError::bad_request(format!("Invalid regular expression for {field}: {pattern}"))
        })
}
