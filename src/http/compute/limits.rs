//! `GET /limits` and `os-quota-sets` (read): ringmaster keeps no quotas, so every limit on
//! servers, cores and RAM is unlimited (-1), the others Nova's defaults; usage is counted, so
//! quota-aware clients (the `openstack` client's `limits show`, Horizon) work.

use actix_web::{HttpResponse, web};
use serde_json::{Value, json};

use super::auth::Caller;
use super::common::Version;
use super::error::ComputeError;
use crate::db;
use crate::domain::compute::keypair::KEY_PAIRS_PER_USER;
use crate::http::AppState;

/// Nova's default quotas, with servers, cores and RAM unlimited.
fn quota_set(project: &str, version: Version) -> Value {
    let mut quotas = json!({
        "id": project, "instances": -1, "cores": -1, "ram": -1, "key_pairs": KEY_PAIRS_PER_USER,
        "metadata_items": 128, "server_groups": 10, "server_group_members": 10,
    });
    if !version.at_least(57) {
        quotas["injected_files"] = json!(5);
        quotas["injected_file_content_bytes"] = json!(10240);
        quotas["injected_file_path_bytes"] = json!(255);
    }
    if !version.at_least(36) {
        for key in [
            "fixed_ips",
            "floating_ips",
            "security_group_rules",
            "security_groups",
        ] {
            quotas[key] = json!(-1);
        }
    }
    quotas
}

/// `GET /limits`: the caller's project's usage under unlimited quotas.
pub async fn show_limits(
    state: web::Data<AppState>,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    let project = caller.project_id.clone();
    let (servers, cores, ram) = db::run(&state.pool, move |conn| {
        db::servers::project_usage(conn, &project)
    })
    .await?;
    let mut absolute = json!({
        "maxTotalInstances": -1, "maxTotalCores": -1, "maxTotalRAMSize": -1,
        "maxServerMeta": 128, "maxImageMeta": 128, "maxTotalKeypairs": KEY_PAIRS_PER_USER,
        "maxServerGroups": 10, "maxServerGroupMembers": 10,
        "totalInstancesUsed": servers, "totalCoresUsed": cores, "totalRAMUsed": ram,
        "totalServerGroupsUsed": 0,
    });
    if !version.at_least(57) {
        absolute["maxPersonality"] = json!(5);
        absolute["maxPersonalitySize"] = json!(10240);
    }
    if !version.at_least(36) {
        for key in [
            "maxSecurityGroups",
            "maxSecurityGroupRules",
            "maxTotalFloatingIps",
        ] {
            absolute[key] = json!(-1);
        }
        for key in ["totalSecurityGroupsUsed", "totalFloatingIpsUsed"] {
            absolute[key] = json!(0);
        }
    }
    Ok(HttpResponse::Ok().json(json!({"limits": {"rate": [], "absolute": absolute}})))
}

/// `GET /os-quota-sets/{project}` and `…/defaults`: a member reads its own project's, an
/// admin any.
pub async fn show_quotas(
    caller: Caller,
    version: Version,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    let project = path.into_inner();
    if !caller.may_read(&project) {
        return Err(ComputeError::policy("os_compute_api:os-quota-sets:show"));
    }
    Ok(HttpResponse::Ok().json(json!({"quota_set": quota_set(&project, version)})))
}

/// `GET /os-quota-sets/{project}/defaults`.
pub async fn show_default_quotas(version: Version, path: web::Path<String>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"quota_set": quota_set(&path.into_inner(), version)}))
}
