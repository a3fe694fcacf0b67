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
    // Patterns are checked where they run, by PostgreSQL (`db::servers::list_servers`).
    let name = common::last(pairs, "name").map(str::to_owned);
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
        (Some(pattern), _) => Some((pattern.to_owned(), 4)),
        (None, Some(pattern)) => Some((pattern.to_owned(), 6)),
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
        oldest_first: oldest_first(pairs)?,
        ip,
        limit: limit.unwrap_or(common::MAX_LIMIT),
    })
}

/// The sort keys Nova's `GET /servers` schema takes.
const SORT_KEYS: &[&str] = &[
    "access_ip_v4",
    "access_ip_v6",
    "auto_disk_config",
    "availability_zone",
    "config_drive",
    "created_at",
    "display_description",
    "display_name",
    "host",
    "hostname",
    "image_ref",
    "instance_type_id",
    "kernel_id",
    "key_name",
    "launch_index",
    "launched_at",
    "locked",
    "locked_by",
    "node",
    "power_state",
    "progress",
    "project_id",
    "ramdisk_id",
    "root_device_name",
    "task_state",
    "terminated_at",
    "updated_at",
    "user_id",
    "uuid",
    "vm_state",
];

/// `sort_key` and `sort_dir` as Nova's schema takes them (400 otherwise); ringmaster orders by
/// `created_at` only, and says so for another key Nova takes.
fn oldest_first(pairs: &[(String, String)]) -> Result<bool, ComputeError> {
    let invalid = |field: &str, value: &str, allowed: &[&str]| {
        ComputeError::bad_request(format!(
            "Invalid input for query parameters {field}. Value: {value}. '{value}' is not one \
             of {allowed:?}"
        ))
    };
    let key = common::last(pairs, "sort_key").unwrap_or("created_at");
    if !SORT_KEYS.contains(&key) {
        return Err(invalid("sort_key", key, SORT_KEYS));
    }
    if key != "created_at" {
        return Err(ComputeError::bad_request(format!(
            "ringmaster lists servers by created_at only, not by sort_key {key}"
        )));
    }
    match common::last(pairs, "sort_dir").unwrap_or("desc") {
        "desc" => Ok(false),
        "asc" => Ok(true),
        other => Err(invalid("sort_dir", other, &["asc", "desc"])),
    }
}
