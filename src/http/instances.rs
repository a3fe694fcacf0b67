//! `/api/v1/instances`: boot onto a free node, list, delete.

use actix_web::{HttpResponse, web};

use super::AppState;
use super::dto::{BootRequest, InstanceResponse, ListQuery};
use super::error::ApiError;
use super::validate;
use crate::actors::scheduler::{Boot, BootError};
use crate::db;
use crate::domain::boot;
use crate::domain::error::ErrorKind;
use crate::domain::identity::InstanceUuid;
use crate::domain::instance::Instance;
use crate::service::{self, servers::ServerError};

/// The project and user of instances booted from the admin API.
const ADMIN_PROJECT: &str = "ringmaster-admin";

fn response(instance: Instance) -> InstanceResponse {
    InstanceResponse {
        uuid: instance.uuid,
        name: instance.name,
        host: instance.host,
        node: instance.node.map(|node| node.to_string()),
        vm_state: instance.vm_state.to_string(),
        fault: instance.fault,
        project: None,
        image: None,
        flavor: None,
    }
}

/// The response of `instance` with its project, image and flavor.
async fn one_with_origin(
    state: &AppState,
    instance: Instance,
) -> Result<InstanceResponse, ApiError> {
    let fallback = response(instance.clone());
    Ok(with_origins(state, vec![instance])
        .await?
        .into_iter()
        .next()
        .unwrap_or(fallback))
}

/// The responses of `instances`, each with its project, image and flavor (one query).
async fn with_origins(
    state: &AppState,
    instances: Vec<Instance>,
) -> Result<Vec<InstanceResponse>, ApiError> {
    let uuids: Vec<InstanceUuid> = instances.iter().map(|instance| instance.uuid).collect();
    let mut origins = db::run(&state.pool, move |conn| db::servers::origins(conn, &uuids)).await?;
    Ok(instances
        .into_iter()
        .map(|instance| {
            let origin = origins.remove(&instance.uuid);
            let mut shown = response(instance);
            if let Some((project, image, flavor)) = origin {
                (shown.project, shown.image, shown.flavor) = (Some(project), image, flavor);
            }
            shown
        })
        .collect())
}

/// Boots an instance onto a free node of `resource_class`: 201 with it. With a client-chosen
/// `uuid` a boot is idempotent (invariant 14 of docs/design.md): while an instance of that uuid exists
/// (deleted included, until archived) the request answers it, 200, and books nothing; one whose
/// name or resource class differs is 409. A 503 means the outcome is unknown: a retry with the
/// same uuid tells.
pub async fn create_instance(
    state: web::Data<AppState>,
    body: web::Json<BootRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    if body.name.is_empty() || body.name.len() > 255 {
        return Err(ApiError::BadRequest(
            "name must have 1 to 255 characters".to_owned(),
        ));
    }
    validate::resource_class(&body.resource_class)?;
    let per_node = state.actors.settings.host.pci_devices_per_node;
    if body.pci_devices > per_node {
        return Err(ApiError::BadRequest(format!(
            "pci_devices must be at most {per_node}: each node has {per_node}, not {}",
            body.pci_devices
        )));
    }
    if let Some(uuid) = body.uuid
        && let Some(existing) = existing(&state, uuid, &body).await?
    {
        return Ok(existing);
    }
    let boot = Boot {
        uuid: body.uuid,
        name: body.name.clone(),
        project: ADMIN_PROJECT.to_owned(),
        user: ADMIN_PROJECT.to_owned(),
        request: boot::BootRequest::of_class(&body.resource_class, body.pci_devices),
        answer_when_claimed: false,
    };
    let booted = service::servers::boot(&state.actors, boot).await;
    match booted {
        Ok(instance) => Ok(HttpResponse::Created().json(one_with_origin(&state, instance).await?)),
        // Another request with this uuid got there first.
        Err(BootError::Exists(uuid)) => match existing(&state, uuid, &body).await? {
            Some(answer) => Ok(answer),
            None => Err(ApiError::Actor {
                kind: ErrorKind::Conflict,
                message: format!(
                    "uuid {uuid} is taken by a Placement consumer that is not an instance: \
                     choose another"
                ),
            }),
        },
        Err(other) => Err(other.into()),
    }
}

/// The answer to a boot whose uuid `uuid` names an existing instance: 200 with it when the
/// request asks for the same (a retry), 409 when not; `None` when there is no such instance.
async fn existing(
    state: &AppState,
    uuid: InstanceUuid,
    body: &BootRequest,
) -> Result<Option<HttpResponse>, ApiError> {
    let found = db::run(&state.pool, move |conn| {
        db::instances::find_any_instance(conn, uuid)
    })
    .await?;
    let Some(instance) = found else {
        return Ok(None);
    };
    let same = instance.name.as_deref() == Some(body.name.as_str())
        && instance.resource_class.as_deref() == Some(body.resource_class.as_str());
    if !same {
        return Err(ApiError::Actor {
            kind: ErrorKind::Conflict,
            message: format!(
                "instance {uuid} exists with name {:?} and resource class {:?}: a retry must \
                 send the same, another boot another uuid",
                instance.name.unwrap_or_default(),
                instance.resource_class.unwrap_or_default()
            ),
        });
    }
    Ok(Some(
        HttpResponse::Ok().json(one_with_origin(state, instance).await?),
    ))
}

/// Returns instance `uuid` (deleted included, until archived): 404 when there is none.
pub async fn get_instance(
    state: web::Data<AppState>,
    path: web::Path<InstanceUuid>,
) -> Result<HttpResponse, ApiError> {
    let uuid = path.into_inner();
    let found = db::run(&state.pool, move |conn| {
        db::instances::find_any_instance(conn, uuid)
    })
    .await?;
    match found {
        Some(instance) => Ok(HttpResponse::Ok().json(one_with_origin(&state, instance).await?)),
        None => Err(ApiError::NotFound(format!("no instance {uuid}"))),
    }
}

/// Lists the live instances by uuid: all of them, or those `host`, `state` (vm_state),
/// `resource_class` and `search` select, `limit` at a time after `marker` and `offset` (a page
/// says how many there are in all: `X-Total-Count`).
pub async fn list_instances(
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let (instances, total) = super::dto::page_of(
        &state.pool,
        query.into_inner(),
        db::instances::find_instances,
        db::instances::count_instances,
    )
    .await?;
    let shown = with_origins(&state, instances).await?;
    Ok(super::dto::with_total(HttpResponse::Ok(), total).json(shown))
}

/// Deletes an instance through its host (destroy, free the allocation, soft-delete).
pub async fn delete_instance(
    state: web::Data<AppState>,
    path: web::Path<InstanceUuid>,
) -> Result<HttpResponse, ApiError> {
    let uuid = path.into_inner();
    let instance = db::run(&state.pool, move |conn| {
        db::instances::get_instance(conn, uuid)
    })
    .await?;
    let host = instance.host.unwrap_or_default();
    service::servers::destroy(&state.actors, uuid, host)
        .await
        .map_err(|error| match error {
            ServerError::HostElsewhere { uuid, host } => ApiError::Actor {
                kind: ErrorKind::Unavailable,
                message: format!("host {host} of instance {uuid} is not running in this process"),
            },
            ServerError::Host { error, .. } => error.into(),
            other => ApiError::Actor {
                kind: ErrorKind::Unavailable,
                message: other.to_string(),
            },
        })?;
    Ok(HttpResponse::NoContent().finish())
}
