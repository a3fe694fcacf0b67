//! Flavors: listed, looked up as a project may see them, created (a private one shared with
//! its creator's project), described, deleted; their extra specs and their access lists.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::db::{self, Pool, flavors::FlavorError};
use crate::domain::compute::flavor::{Flavor, FlavorFilter, NewFlavor};

/// The flavors `filter` selects.
pub async fn list(pool: &Pool, filter: FlavorFilter) -> Result<Vec<Flavor>, FlavorError> {
    db::transaction(pool, move |conn| db::flavors::list_flavors(conn, &filter)).await
}

/// Flavor `flavorid` as `project` may see it (`None`: an admin, who sees every one): a private
/// one the project has no access to is not found.
pub async fn visible(
    pool: &Pool,
    project: Option<String>,
    flavorid: String,
) -> Result<Flavor, FlavorError> {
    db::transaction(pool, move |conn| {
        let flavor = db::flavors::get_flavor(conn, &flavorid)?;
        match project {
            Some(project) if !flavor.is_public => {
                let shared = db::flavors::list_access(conn, &flavorid)?;
                if shared.contains(&project) {
                    Ok(flavor)
                } else {
                    Err(FlavorError::NotFound(flavorid))
                }
            }
            _ => Ok(flavor),
        }
    })
    .await
}

/// Creates `new`; a private flavor is shared with the project that created it, as Nova shares it.
pub async fn create(
    pool: &Pool,
    new: NewFlavor,
    creator_project: String,
    now: DateTime<Utc>,
) -> Result<Flavor, FlavorError> {
    db::transaction(pool, move |conn| {
        let created = db::flavors::create_flavor(conn, &new, now)?;
        if !new.is_public {
            db::flavors::add_access(conn, &created.flavorid, &creator_project)?;
        }
        Ok(created)
    })
    .await
}

/// Sets (or clears) flavor `flavorid`'s description.
pub async fn describe(
    pool: &Pool,
    flavorid: String,
    description: Option<String>,
    now: DateTime<Utc>,
) -> Result<Flavor, FlavorError> {
    db::transaction(pool, move |conn| {
        db::flavors::set_description(conn, &flavorid, description.as_deref(), now)
    })
    .await
}

/// Deletes flavor `flavorid`; servers keep the flavor they were booted with.
pub async fn delete(pool: &Pool, flavorid: String) -> Result<(), FlavorError> {
    db::transaction(pool, move |conn| {
        db::flavors::delete_flavor(conn, &flavorid)
    })
    .await
}

/// Adds or replaces the extra specs `specs` of flavor `flavorid`; its specs now.
pub async fn set_specs(
    pool: &Pool,
    flavorid: String,
    specs: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, FlavorError> {
    db::transaction(pool, move |conn| {
        db::flavors::set_extra_specs(conn, &flavorid, &specs)
    })
    .await
}

/// Deletes the extra spec `key` of flavor `flavorid`.
pub async fn delete_spec(pool: &Pool, flavorid: String, key: String) -> Result<(), FlavorError> {
    db::transaction(pool, move |conn| {
        db::flavors::delete_extra_spec(conn, &flavorid, &key)
    })
    .await
}

/// What an access list's change asks: the list itself, or a project added or removed.
#[derive(Debug, Clone)]
pub enum AccessChange {
    Read,
    Add(String),
    Remove(String),
}

/// The projects flavor `flavorid` is shared with after `change`; `None` for a public flavor,
/// which has no access list (and is not changed).
pub async fn access(
    pool: &Pool,
    flavorid: String,
    change: AccessChange,
) -> Result<Option<Vec<String>>, FlavorError> {
    db::transaction(pool, move |conn| {
        let flavor = db::flavors::get_flavor(conn, &flavorid)?;
        if flavor.is_public {
            return Ok(None);
        }
        match change {
            AccessChange::Read => db::flavors::list_access(conn, &flavorid),
            AccessChange::Add(project) => db::flavors::add_access(conn, &flavorid, &project),
            AccessChange::Remove(project) => db::flavors::remove_access(conn, &flavorid, &project),
        }
        .map(Some)
    })
    .await
}
