//! `/compute/v2.1/servers`: create (one, or `min_count`..`max_count`), list, detail, show,
//! delete. A server is an instance of ringmaster's scheduler: its flavor's custom resource
//! class and traits pick the node, the one allocation writer claims it, the node's host builds
//! it; the answer (202) comes once the node is claimed, as Nova's comes before the build. A
//! server no node can take is kept in error with Nova's "No valid host" fault, claiming
//! nothing.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::auth::Caller;
use super::common::{self, Version};
use super::error::ComputeError;
use super::server_body::{
    CREATE_PROPERTIES, check_networks, count, image_of, reference, server_request,
};
use super::server_filter::filter;
use super::server_view;
use crate::db;
use crate::domain::boot::Destination;
use crate::domain::compute::flavor::{Scalar, check_name};
use crate::domain::compute::server::ServerRecord;
use crate::domain::identity::InstanceUuid;
use crate::http::AppState;
use crate::service::{
    self,
    servers::{CreateServers, Requester, ServerError},
};

/// `POST /servers`: 202 with the first server, as Nova answers.
pub async fn create_server(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    let body = common::object(&body)?;
    common::only(
        &body,
        &["server", "OS-SCH-HNT:scheduler_hints", "os:scheduler_hints"],
        "body",
    )?;
    let server = common::member(body, "server")?;
    common::only(&server, CREATE_PROPERTIES, "server")?;
    caller.require_member("os_compute_api:servers:create")?;
    super::server_schema::check_fields(&server, version, &caller)?;
    let name =
        check_name("name", &common::scalar(&server, "name")).map_err(ComputeError::bad_request)?;
    let min_count = count(&server, "min_count", 1)?;
    let max_count = count(&server, "max_count", min_count)?;
    if min_count > max_count {
        return Err(ComputeError::bad_request("min_count must be <= max_count"));
    }
    check_networks(&server, version)?;
    let image_ref = image_of(&server)?;
    let Some(flavorid) = reference(&server, "flavorRef") else {
        return Err(ComputeError::bad_request("Invalid flavorRef provided."));
    };
    let flavor = super::flavors::visible_flavor(&state, &caller, flavorid)
        .await
        .map_err(|error| ComputeError::bad_request(error.message))?;
    let image = state
        .images
        .resolve(&request, state.keystone.as_deref(), &image_ref)
        .await?;
    let mut asked = server_request(&server, &flavor, image_ref)?;
    if let Some(image) = image {
        super::images::boot_from(&mut asked, &image)?;
    }
    asked.destination = destination(&server)?;
    let create = CreateServers {
        by: Requester {
            project: caller.project_id.clone(),
            user: caller.user_id.clone(),
        },
        name,
        min_count: u32::try_from(min_count).unwrap_or(1),
        max_count: u32::try_from(max_count).unwrap_or(1),
        request: asked,
        key_name: key_name(&server)?,
    };
    let uuids = service::servers::create(&state.pool, &state.actors, create).await?;
    if common::scalar(&server, "return_reservation_id") == Scalar::Bool(true) {
        return Ok(HttpResponse::Accepted().json(
            json!({"reservation_id": format!("r-{}", &uuids[0].uuid().simple().to_string()[..8])}),
        ));
    }
    let id = uuids[0].to_string();
    Ok(HttpResponse::Accepted().json(json!({"server": {
        "id": id,
        "links": common::links(&request, "servers", &id),
        "OS-DCF:diskConfig": "MANUAL",
        "security_groups": [{"name": "default"}],
        "adminPass": "",
    }})))
}

/// The key pair `key_name` names, for the config drive.
fn key_name(server: &serde_json::Map<String, Value>) -> Result<Option<String>, ComputeError> {
    match server.get("key_name") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => Ok(Some(name.clone())),
        Some(_) => Err(ComputeError::bad_request("Invalid key_name provided.")),
    }
}

/// The host and node an admin asked for (2.74; `check_fields` checked who asks and the
/// fields' types). A node is named by its uuid: any other name names no node, and is 400 as
/// Nova answers a host it does not know.
fn destination(server: &serde_json::Map<String, Value>) -> Result<Destination, ComputeError> {
    let asked_for = |key| server.get(key).and_then(Value::as_str).map(str::to_owned);
    let (host, node) = (asked_for("host"), asked_for("hypervisor_hostname"));
    let node = match node {
        Some(name) => Some(name.parse().map_err(|_| {
            ComputeError::from(ServerError::NoDestination(
                host.clone().unwrap_or(name.clone()),
            ))
        })?),
        None => None,
    };
    Ok(Destination { host, node })
}

/// A live server of a project the caller sees: 404 otherwise, as Nova hides others' servers
/// (what the caller may do with it, each route checks).
pub async fn visible_server(
    state: &AppState,
    caller: &Caller,
    uuid: &str,
) -> Result<ServerRecord, ComputeError> {
    let not_found = || ComputeError::not_found(format!("Instance {uuid} could not be found."));
    let parsed: InstanceUuid = uuid.parse().map_err(|_| not_found())?;
    let found = db::run(&state.pool, move |conn| {
        db::servers::get_server(conn, parsed)
    })
    .await?;
    match found {
        Some(server) if caller.sees(&server.project_id) => Ok(server),
        _ => Err(not_found()),
    }
}

/// `GET /servers/{id}`.
pub async fn show_server(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    let server = visible_server(&state, &caller, &path).await?;
    if !caller.may_read(&server.project_id) {
        return Err(ComputeError::policy("os_compute_api:servers:show"));
    }
    Ok(HttpResponse::Ok()
        .json(json!({"server": server_view::full(&request, version, &caller, &server)})))
}

/// `DELETE /servers/{id}`: 204. A server on a node is destroyed by its host (claim freed);
/// one that never got a node is deleted at once.
pub async fn delete_server(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    let server = visible_server(&state, &caller, &path).await?;
    if !caller.may_write(&server.project_id) {
        return Err(ComputeError::policy("os_compute_api:servers:delete"));
    }
    service::servers::delete(&state.pool, &state.actors, server.uuid, server.host).await?;
    Ok(HttpResponse::NoContent().finish())
}

async fn listed(
    state: &AppState,
    request: &HttpRequest,
    caller: &Caller,
) -> Result<(Vec<ServerRecord>, i64), ComputeError> {
    let pairs = common::query_pairs(request)?;
    let filter = filter(&pairs, caller)?;
    let limit = filter.limit;
    let servers = db::run(&state.pool, move |conn| {
        db::servers::list_servers(conn, &filter)
    })
    .await
    .map_err(|error| match error {
        db::DbError::NotFound(message) => ComputeError::bad_request(message),
        other => other.into(),
    })?;
    Ok((servers, limit))
}

fn page(request: &HttpRequest, servers: &[ServerRecord], views: Vec<Value>, limit: i64) -> Value {
    let mut answer = json!({"servers": views});
    if let Some(last) = servers.last()
        && limit > 0
        && servers.len() as i64 == limit
    {
        answer["servers_links"] =
            common::next_link(request, "servers", &last.uuid.to_string(), limit);
    }
    answer
}

/// `GET /servers`.
pub async fn list_servers(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
) -> Result<HttpResponse, ComputeError> {
    caller.require_reader("os_compute_api:servers:index")?;
    let (servers, limit) = listed(&state, &request, &caller).await?;
    let views = servers
        .iter()
        .map(|s| server_view::brief(&request, s))
        .collect();
    Ok(HttpResponse::Ok().json(page(&request, &servers, views, limit)))
}

/// `GET /servers/detail`.
pub async fn list_servers_detail(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    caller.require_reader("os_compute_api:servers:detail")?;
    let (servers, limit) = listed(&state, &request, &caller).await?;
    let views = servers
        .iter()
        .map(|s| server_view::full(&request, version, &caller, s))
        .collect();
    Ok(HttpResponse::Ok().json(page(&request, &servers, views, limit)))
}
