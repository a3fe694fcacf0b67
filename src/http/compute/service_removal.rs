//! `DELETE /os-services/{id}` (admin): as Nova, refused (409) while instances are on the host.
//! Where ringmaster differs: the compute nodes of a deleted service are not deleted with it;
//! they keep their uuids, providers and allocations and move to live hosts at the next
//! rebalance (a process still running the host stops running it at its next heartbeat).

use actix_web::{HttpResponse, web};
use uuid::Uuid;

use super::auth::Caller;
use super::common::Version;
use super::error::ComputeError;
use crate::db::services::{ServiceDeletion, ServiceId};
use crate::http::AppState;
use crate::service;

/// `DELETE /os-services/{id}`: by uuid from 2.53, by integer id before.
pub async fn delete_service(
    state: web::Data<AppState>,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    caller.require_admin("os_compute_api:os-services:delete")?;
    let id = path.into_inner();
    let service = if version.at_least(53) {
        ServiceId::Uuid(
            Uuid::parse_str(&id)
                .map_err(|_| ComputeError::bad_request(format!("Invalid uuid {id}")))?,
        )
    } else {
        ServiceId::Id(id.parse::<i64>().map_err(|_| {
            ComputeError::bad_request("Invalid input received: id must be an integer")
        })?)
    };
    let now = state.actors.clock.now();
    let outcome =
        service::compute_services::delete(&state.pool, &state.actors, service, now).await?;
    match outcome {
        ServiceDeletion::NotFound => {
            Err(ComputeError::not_found(format!("Service {id} not found.")))
        }
        ServiceDeletion::HostingInstances => Err(ComputeError::conflict(
            "Unable to delete compute service that is hosting instances. Migrate or delete the \
             instances first.",
        )),
        ServiceDeletion::Deleted => Ok(HttpResponse::NoContent().finish()),
    }
}
