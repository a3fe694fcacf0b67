//! `/api/v1/nodes`: the nodes with their owners; enroll, delete, lock and unlock (fault
//! injection) in the simulated Ironic — refused with 409 naming the Ironic way when the nodes
//! come from a real Ironic. `/api/v1/node-source`: where the nodes come from.

use actix_web::{HttpResponse, web};
use uuid::Uuid;

use super::AppState;
use super::dto::{
    EnrollNodesRequest, EnrollNodesResponse, ListQuery, NodeResponse, NodeSourceResponse,
};
use super::error::ApiError;
use super::validate;
use crate::actors::ironic::{DeleteNode, EnrollNodes};
use crate::actors::rebalancer::RebalanceNow;
use crate::db;
use crate::db::ironic::NewIronicNode;
use crate::domain::identity::NodeUuid;

/// The most nodes one request may enroll.
const MAX_ENROLL: u32 = 100_000;

/// Lists the nodes with their owners, compute nodes and providers, by uuid: all of them, or
/// those `host`, `state` (provision state), `resource_class` and `search` select, `limit` at
/// a time after `marker` and `offset` (a page says how many there are in all: `X-Total-Count`).
pub async fn list_nodes(
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let (nodes, total) = super::dto::page_of(
        &state.pool,
        query.into_inner(),
        db::node_views::find_node_views,
        db::node_views::count_node_views,
    )
    .await?;
    let now = state.actors.clock.now();
    let cooldown = chrono::Duration::from_std(state.actors.settings.host.build_failure_cooldown)
        .unwrap_or(chrono::Duration::zero());
    let body: Vec<NodeResponse> = nodes
        .into_iter()
        .map(|node| NodeResponse {
            failed_builds: node.failed_builds,
            build_cooldown_until: node
                .build_failed_at
                .and_then(|at| at.checked_add_signed(cooldown))
                .filter(|until| *until > now),
            uuid: node.uuid,
            name: node.name,
            resource_class: node.resource_class,
            host: node.host,
            compute_node_uuid: node.compute_node_uuid,
            resource_provider_uuid: node.resource_provider_uuid,
            owner_epoch: node.owner_epoch,
            instance_uuid: node.instance_uuid,
            provision_state: node.provision_state,
            power_state: node.power_state,
            locked: node.reservation.is_some(),
            maintenance: node.maintenance,
            last_error: node.last_error,
            source: node.source,
        })
        .collect();
    Ok(super::dto::with_total(HttpResponse::Ok(), total).json(body))
}

/// Refuses a change to the simulated Ironic while the nodes come from a real one, naming how
/// to do it there.
fn simulated_only(state: &AppState, how: &str) -> Result<(), ApiError> {
    match state.actors.node_source.driver() {
        None => Ok(()),
        Some(driver) => Err(ApiError::Actor {
            kind: crate::domain::error::ErrorKind::Conflict,
            message: format!(
                "the nodes come from Ironic at {}: {how} there (ringmaster picks the change up \
                 at its next listing)",
                driver.url()
            ),
        }),
    }
}

/// Says where the nodes come from: `simulated`, or `ironic` with its URL, API version and
/// what its last listing did.
pub async fn get_node_source(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(node_source_view(&state.actors.node_source))
}

/// The node source as the admin API and the dashboard show it.
pub fn node_source_view(source: &crate::actors::node_source::NodeSource) -> NodeSourceResponse {
    NodeSourceResponse {
        kind: source.kind(),
        url: source.driver().map(|driver| driver.url().to_owned()),
        api_version: source.driver().and_then(|driver| driver.api_version()),
        listing: source.driver().map(|driver| driver.status()),
    }
}

/// Enrolls `count` new nodes of `resource_class`, or the `nodes` given; the rebalancer then
/// gives them their first owners.
pub async fn enroll_nodes(
    state: web::Data<AppState>,
    body: web::Json<EnrollNodesRequest>,
) -> Result<HttpResponse, ApiError> {
    simulated_only(
        &state,
        "enroll nodes with `openstack baremetal node create` (then `manage` and `provide`)",
    )?;
    let body = body.into_inner();
    let nodes: Vec<NewIronicNode> = match (body.count, body.nodes) {
        (Some(count), None) => {
            if count == 0 || count > MAX_ENROLL {
                return Err(ApiError::BadRequest(format!(
                    "count must be 1 to {MAX_ENROLL}, not {count}"
                )));
            }
            let class = body
                .resource_class
                .unwrap_or_else(|| "baremetal".to_owned());
            validate::resource_class(&class)?;
            (0..count)
                .map(|_| NewIronicNode::enrolling(Uuid::new_v4(), None, &class))
                .collect()
        }
        (None, Some(nodes)) if body.resource_class.is_none() => {
            if nodes.is_empty() || nodes.len() > MAX_ENROLL as usize {
                return Err(ApiError::BadRequest(format!(
                    "nodes must list 1 to {MAX_ENROLL} nodes"
                )));
            }
            let mut new = Vec::with_capacity(nodes.len());
            for node in nodes {
                validate::resource_class(&node.resource_class)?;
                if let Some(name) = &node.name {
                    validate::node_name(name)?;
                }
                new.push(NewIronicNode::enrolling(
                    node.uuid,
                    node.name,
                    &node.resource_class,
                ));
            }
            new
        }
        _ => {
            return Err(ApiError::BadRequest(
                "give either {count, resource_class} or {nodes: [{uuid, resource_class}]}"
                    .to_owned(),
            ));
        }
    };
    let uuids: Vec<Uuid> = nodes.iter().map(|node| node.uuid).collect();
    let enrolled = state.actors.ironic.send(EnrollNodes { nodes }).await??;
    state.actors.rebalancer.do_send(RebalanceNow);
    Ok(HttpResponse::Created().json(EnrollNodesResponse {
        enrolled,
        nodes: uuids,
    }))
}

/// Deletes a node from Ironic; its owner then deletes the compute node (invariant 6).
pub async fn delete_node(
    state: web::Data<AppState>,
    path: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    simulated_only(
        &state,
        "delete nodes with `openstack baremetal node delete`",
    )?;
    state
        .actors
        .ironic
        .send(DeleteNode {
            node: NodeUuid(path.into_inner()),
        })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}

/// Takes the node's conductor lock, so deploys and destroys on it fail.
pub async fn lock_node(
    state: web::Data<AppState>,
    path: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    simulated_only(
        &state,
        "take a node out of service with `openstack baremetal node maintenance set`",
    )?;
    state
        .actors
        .set_node_lock(NodeUuid(path.into_inner()), true)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Releases the node's conductor lock; the node is schedulable at once.
pub async fn unlock_node(
    state: web::Data<AppState>,
    path: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    simulated_only(
        &state,
        "put a node back in service with `openstack baremetal node maintenance unset`",
    )?;
    state
        .actors
        .set_node_lock(NodeUuid(path.into_inner()), false)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
