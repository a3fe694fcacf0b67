//! `/compute/v2.1/servers`: create (one, or `min_count`..`max_count`), list, detail, show,
//! delete. A server is an instance of ringmaster's scheduler: its flavor's custom resource
//! class and traits pick the node, the one allocation writer claims it, the node's host builds
//! it; the answer (202) comes once the node is claimed, as Nova's comes before the build. A
//! server no node can take is kept in error with Nova's "No valid host" fault, claiming
//! nothing.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};
use uuid::Uuid;

use super::auth::Caller;
use super::common::{self, Version};
use super::error::ComputeError;
use super::server_body::{
    CREATE_PROPERTIES, check_networks, count, image_of, reference, server_request,
};
use super::server_filter::filter;
use super::server_view;
use crate::actors::compute_host::DestroyInstance;
use crate::actors::scheduler::{Boot, BootError, BootTogether};
use crate::db;
use crate::domain::boot::{BootRequest, Destination};
use crate::domain::compute::flavor::{Scalar, check_name};
use crate::domain::compute::server::{ServerRecord, names};
use crate::domain::identity::InstanceUuid;
use crate::http::AppState;

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
    with_key(&state, &caller, &server, &mut asked).await?;
    with_destination(&state, &server, &mut asked).await?;
    let uuids: Vec<InstanceUuid> = (0..max_count)
        .map(|_| InstanceUuid(Uuid::new_v4()))
        .collect();
    let named: Vec<(InstanceUuid, String)> = uuids
        .iter()
        .copied()
        .zip(names(&name, u32::try_from(max_count).unwrap_or(1)))
        .collect();
    // The first `min_count` stand or fall together (one transaction claims them all); each
    // one beyond is booted while nodes are free.
    let (together, beyond) = named.split_at(usize::try_from(min_count).unwrap_or(1));
    if !boot_together(&state, &caller, &asked, together).await? {
        for (uuid, name) in &named {
            keep_unplaced(&state, &caller, &asked, *uuid, name.clone()).await?;
        }
    } else {
        for (uuid, name) in beyond {
            if !boot(&state, &caller, &asked, *uuid, name.clone()).await? {
                break;
            }
        }
    }
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
async fn with_key(
    state: &AppState,
    caller: &Caller,
    server: &serde_json::Map<String, Value>,
    asked: &mut BootRequest,
) -> Result<(), ComputeError> {
    match server.get("key_name") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(name)) => {
            let key = super::keypairs::key_for_boot(state, &caller.user_id, name).await?;
            if let Some(server) = &mut asked.server {
                server.key_data = Some(key);
                server.key_name = Some(name.clone());
            }
            Ok(())
        }
        Some(_) => Err(ComputeError::bad_request("Invalid key_name provided.")),
    }
}

/// The host and node an admin asked for (2.74; `check_fields` checked who asks and the
/// fields' types): 400 with Nova's message when either is not there.
async fn with_destination(
    state: &AppState,
    server: &serde_json::Map<String, Value>,
    asked: &mut BootRequest,
) -> Result<(), ComputeError> {
    let asked_for = |key| server.get(key).and_then(Value::as_str).map(str::to_owned);
    let (host, node) = (asked_for("host"), asked_for("hypervisor_hostname"));
    if host.is_none() && node.is_none() {
        return Ok(());
    }
    let not_found = |missing: &str| {
        ComputeError::bad_request(format!("Compute host {missing} could not be found."))
    };
    // A node is named by its uuid: any other name names no node.
    let node = match node {
        Some(name) => Some(
            name.parse()
                .map_err(|_| not_found(host.as_deref().unwrap_or(&name)))?,
        ),
        None => None,
    };
    let find_host = host.clone();
    let missing = db::run(&state.pool, move |conn| {
        db::hosts::missing_destination(conn, find_host.as_deref(), node)
    })
    .await?;
    if let Some(missing) = missing {
        return Err(not_found(&missing));
    }
    asked.destination = Destination { host, node };
    Ok(())
}

/// The boot of one server of the request.
fn boot_of(caller: &Caller, asked: &BootRequest, uuid: InstanceUuid, name: String) -> Boot {
    Boot {
        uuid: Some(uuid),
        name,
        project: caller.project_id.clone(),
        user: caller.user_id.clone(),
        request: asked.clone(),
        answer_when_claimed: true,
    }
}

fn scheduler_unavailable(_: actix::MailboxError) -> ComputeError {
    ComputeError::new(
        actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
        "The scheduler is unavailable, try again.",
    )
}

/// Boots one server; `false` when no node could take it.
async fn boot(
    state: &AppState,
    caller: &Caller,
    asked: &BootRequest,
    uuid: InstanceUuid,
    name: String,
) -> Result<bool, ComputeError> {
    let booted = state
        .actors
        .scheduler
        .send(boot_of(caller, asked, uuid, name))
        .await
        .map_err(scheduler_unavailable)?;
    placed(uuid, booted.map(|_| ()))
}

/// Boots every one of `servers` or none (one when there is one); `false` when the free nodes
/// do not take them all (no claim kept).
async fn boot_together(
    state: &AppState,
    caller: &Caller,
    asked: &BootRequest,
    servers: &[(InstanceUuid, String)],
) -> Result<bool, ComputeError> {
    if let [(uuid, name)] = servers {
        return boot(state, caller, asked, *uuid, name.clone()).await;
    }
    let boots = servers
        .iter()
        .map(|(uuid, name)| boot_of(caller, asked, *uuid, name.clone()))
        .collect();
    let booted = state
        .actors
        .scheduler
        .send(BootTogether { boots })
        .await
        .map_err(scheduler_unavailable)?;
    let first = servers
        .first()
        .map_or(InstanceUuid(Uuid::nil()), |(uuid, _)| *uuid);
    placed(first, booted.map(|_| ()))
}

/// What a boot's answer says of its placement: `true` placed, `false` no valid host.
fn placed(uuid: InstanceUuid, booted: Result<(), BootError>) -> Result<bool, ComputeError> {
    match booted {
        Ok(()) => Ok(true),
        Err(BootError::NoValidHost { .. }) => Ok(false),
        Err(BootError::Db(error)) => Err(error.into()),
        Err(other) => {
            log::warn!("boot of server {uuid} failed: {other}");
            Err(ComputeError::new(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                "The server could not be scheduled now; try again.",
            ))
        }
    }
}

async fn keep_unplaced(
    state: &AppState,
    caller: &Caller,
    asked: &BootRequest,
    uuid: InstanceUuid,
    name: String,
) -> Result<(), ComputeError> {
    let (project, user, asked) = (
        caller.project_id.clone(),
        caller.user_id.clone(),
        asked.server.clone().unwrap_or_default(),
    );
    let now = state.actors.clock.now();
    db::transaction(&state.pool, move |conn| {
        db::servers::create_unplaced(conn, uuid, &name, &project, &user, &asked, now)
    })
    .await
    .map_err(ComputeError::from)
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
    let uuid = server.uuid;
    let now = state.actors.clock.now();
    let unplaced = db::transaction(&state.pool, move |conn| {
        db::servers::delete_unplaced(conn, uuid, now)
    })
    .await?;
    if unplaced {
        return Ok(HttpResponse::NoContent().finish());
    }
    let host = server.host.unwrap_or_default();
    let Some(address) = state.actors.hosts.get(&host) else {
        return Err(ComputeError::new(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the host of server {uuid} does not run in this process; ask the process that runs {host}"
            ),
        ));
    };
    address
        .send(DestroyInstance {
            instance: uuid,
            defer_pci_free: false,
        })
        .await
        .map_err(|_| {
            ComputeError::new(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                "The compute host is unavailable, try again.",
            )
        })?
        .map_err(|error| {
            // A delete racing this one got there first: gone, as Nova answers it then.
            if error.kind() == crate::domain::error::ErrorKind::NotFound {
                return ComputeError::not_found(format!("Instance {uuid} could not be found."));
            }
            log::warn!("delete of server {uuid} failed: {error}");
            ComputeError::conflict(format!("Server {uuid} could not be deleted now: {error}"))
        })?;
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
