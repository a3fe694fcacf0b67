//! `GET /os-aggregates` (admin): ringmaster keeps no host aggregates, so the list is empty;
//! clients that read it (the `openstack` client's `hypervisor show`) work.

use actix_web::HttpResponse;
use serde_json::json;

use super::auth::Caller;
use super::error::ComputeError;

/// `GET /os-aggregates`: none.
pub async fn list_aggregates(caller: Caller) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-aggregates:index")?;
    Ok(HttpResponse::Ok().json(json!({"aggregates": []})))
}
