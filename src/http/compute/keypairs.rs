//! `/compute/v2.1/os-keypairs`: import, list, show, delete, each for the caller's user (an
//! admin may name another with `user_id`, 2.10). Generating a key pair on the server (Nova
//! before 2.92) is refused: clients generate their own, as Nova requires from 2.92.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::auth::Caller;
use super::common::{self, Version};
use super::error::ComputeError;
use crate::db;
use crate::db::keypairs::{KeyPair, KeyPairImport};
use crate::domain::compute::keypair;
use crate::http::AppState;
use crate::service;

fn brief(version: Version, pair: &KeyPair) -> Value {
    let mut view =
        json!({"name": pair.name, "public_key": pair.public_key, "fingerprint": pair.fingerprint});
    if version.at_least(2) {
        view["type"] = json!(pair.kind);
    }
    view
}

/// The user whose key pairs a request is about: the caller's, or (an admin, 2.10) `user_id`;
/// else Nova's 403 naming the action's rule, `os_compute_api:os-keypairs:{action}`.
fn user_of(
    caller: &Caller,
    version: Version,
    asked: Option<&str>,
    action: &str,
) -> Result<String, ComputeError> {
    match asked {
        Some(user) if version.at_least(10) => {
            if user != caller.user_id && !caller.is_admin() {
                return Err(ComputeError::policy(&format!(
                    "os_compute_api:os-keypairs:{action}"
                )));
            }
            Ok(user.to_owned())
        }
        _ => Ok(caller.user_id.clone()),
    }
}

/// `POST /os-keypairs`: imports `public_key` as `name`; 200 (201 from 2.2).
pub async fn create_keypair(
    state: web::Data<AppState>,
    caller: Caller,
    version: Version,
    body: web::Bytes,
) -> Result<HttpResponse, ComputeError> {
    let pair = common::member(common::object(&body)?, "keypair")?;
    common::only(&pair, &["name", "public_key", "type", "user_id"], "keypair")?;
    let name = pair
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    keypair::check_name(&name, version.at_least(92)).map_err(ComputeError::bad_request)?;
    let Some(public_key) = pair
        .get("public_key")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Err(ComputeError::bad_request(
            "ringmaster does not generate key pairs: send the public key to import as \
             public_key (the openstack client generates one itself from 2.92)",
        ));
    };
    let kind = pair
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ssh")
        .to_owned();
    if kind != "ssh" {
        return Err(ComputeError::bad_request(format!(
            "Keypair data is invalid: ringmaster imports OpenSSH keys (type ssh), not {kind}"
        )));
    }
    let fingerprint = keypair::fingerprint(&public_key).map_err(ComputeError::bad_request)?;
    let user = user_of(
        &caller,
        version,
        pair.get("user_id").and_then(Value::as_str),
        "create",
    )?;
    let now = state.actors.clock.now();
    let pair = service::keypairs::Import {
        name: name.clone(),
        user,
        fingerprint,
        public_key,
        kind,
    };
    let imported = service::keypairs::import(&state.pool, pair, now).await?;
    let created = match imported {
        KeyPairImport::Created(created) => created,
        KeyPairImport::Exists => {
            return Err(ComputeError::conflict(format!(
                "Key pair '{name}' already exists."
            )));
        }
        KeyPairImport::OverQuota => {
            return Err(ComputeError::forbidden(
                "Quota exceeded, too many key pairs.",
            ));
        }
    };
    let mut view = brief(version, &created);
    view["user_id"] = json!(created.user_id);
    let answer = json!({"keypair": view});
    Ok(if version.at_least(2) {
        HttpResponse::Created().json(answer)
    } else {
        HttpResponse::Ok().json(answer)
    })
}

/// `GET /os-keypairs`: `limit` and `marker` from 2.35.
pub async fn list_keypairs(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
) -> Result<HttpResponse, ComputeError> {
    let pairs = common::query_pairs(&request)?;
    let (limit, marker) = common::limit_and_marker(&pairs)?;
    let user = user_of(&caller, version, common::last(&pairs, "user_id"), "index")?;
    let limit = limit.unwrap_or(common::MAX_LIMIT);
    let listed = db::run(&state.pool, move |conn| {
        db::keypairs::list_keypairs(conn, &user, marker.as_deref(), limit)
    })
    .await?;
    let views: Vec<Value> = listed
        .iter()
        .map(|p| json!({"keypair": brief(version, p)}))
        .collect();
    let mut answer = json!({"keypairs": views});
    if let Some(last) = listed.last()
        && version.at_least(35)
        && listed.len() as i64 == limit
    {
        answer["keypairs_links"] = common::next_link(&request, "os-keypairs", &last.name, limit);
    }
    Ok(HttpResponse::Ok().json(answer))
}

async fn found(state: &AppState, user: String, name: String) -> Result<KeyPair, ComputeError> {
    let shown = (name.clone(), user.clone());
    db::run(&state.pool, move |conn| {
        db::keypairs::get_keypair(conn, &user, &name)
    })
    .await?
    .ok_or_else(|| {
        ComputeError::not_found(format!(
            "Keypair {} not found for user {}",
            shown.0, shown.1
        ))
    })
}

/// `GET /os-keypairs/{name}`.
pub async fn show_keypair(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    let pairs = common::query_pairs(&request)?;
    let user = user_of(&caller, version, common::last(&pairs, "user_id"), "show")?;
    let pair = found(&state, user, path.into_inner()).await?;
    let mut view = brief(version, &pair);
    view["user_id"] = json!(pair.user_id);
    view["id"] = json!(pair.id);
    view["created_at"] = json!(
        pair.created_at
            .naive_utc()
            .format("%Y-%m-%dT%H:%M:%S%.6f")
            .to_string()
    );
    view["updated_at"] = Value::Null;
    view["deleted_at"] = Value::Null;
    view["deleted"] = json!(false);
    Ok(HttpResponse::Ok().json(json!({"keypair": view})))
}

/// `DELETE /os-keypairs/{name}`: 202 (204 from 2.2).
pub async fn delete_keypair(
    state: web::Data<AppState>,
    request: HttpRequest,
    caller: Caller,
    version: Version,
    path: web::Path<String>,
) -> Result<HttpResponse, ComputeError> {
    let pairs = common::query_pairs(&request)?;
    let user = user_of(&caller, version, common::last(&pairs, "user_id"), "delete")?;
    let name = path.into_inner();
    let (owner, named) = (user.clone(), name.clone());
    let deleted = db::run(&state.pool, move |conn| {
        db::keypairs::delete_keypair(conn, &owner, &named)
    })
    .await?;
    if !deleted {
        return Err(ComputeError::not_found(format!(
            "Keypair {name} not found for user {user}"
        )));
    }
    Ok(if version.at_least(2) {
        HttpResponse::NoContent().finish()
    } else {
        HttpResponse::Accepted().finish()
    })
}
