//! Flavors, their extra specs and the projects a private one is shared with (the Compute API).
//! Flavors are deleted for good, as in Nova's API database; a server keeps the flavor it was
//! booted with as a snapshot on its instance.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use super::DbError;
use super::schema::{flavor_extra_specs, flavor_projects, flavors};
use crate::domain::compute::flavor::{Flavor, FlavorFilter, NewFlavor};

#[derive(Queryable, Selectable)]
#[diesel(table_name = flavors)]
struct FlavorRow {
    id: i64,
    flavorid: String,
    name: String,
    memory_mb: i32,
    vcpus: i32,
    root_gb: i32,
    ephemeral_gb: i32,
    swap: i32,
    rxtx_factor: f64,
    disabled: bool,
    is_public: bool,
    description: Option<String>,
}

impl FlavorRow {
    fn into_flavor(self, extra_specs: BTreeMap<String, String>) -> Flavor {
        Flavor {
            flavorid: self.flavorid,
            name: self.name,
            memory_mb: self.memory_mb,
            vcpus: self.vcpus,
            root_gb: self.root_gb,
            ephemeral_gb: self.ephemeral_gb,
            swap: self.swap,
            rxtx_factor: self.rxtx_factor,
            disabled: self.disabled,
            is_public: self.is_public,
            description: self.description,
            extra_specs,
        }
    }
}

/// Why a flavor write was refused.
#[derive(Debug, thiserror::Error)]
pub enum FlavorError {
    #[error("Flavor {0} could not be found.")]
    NotFound(String),
    #[error("Flavor with name {0} already exists.")]
    NameExists(String),
    #[error("Flavor with ID {0} already exists.")]
    IdExists(String),
    #[error("Flavor access already exists for flavor {0} and project {1} combination.")]
    AccessExists(String, String),
    #[error("Flavor access not found for {0} / {1} combination.")]
    AccessNotFound(String, String),
    #[error("Flavor {0} has no extra specs with key {1}.")]
    SpecNotFound(String, String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for FlavorError {
    fn from(error: diesel::result::Error) -> Self {
        FlavorError::Db(error.into())
    }
}

/// Creates a flavor (a uuid for its id when the client gave none).
pub fn create_flavor(
    conn: &mut PgConnection,
    new: &NewFlavor,
    now: DateTime<Utc>,
) -> Result<Flavor, FlavorError> {
    let flavorid = new
        .flavorid
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let inserted = diesel::insert_into(flavors::table)
        .values((
            flavors::flavorid.eq(&flavorid),
            flavors::name.eq(&new.name),
            flavors::memory_mb.eq(new.memory_mb),
            flavors::vcpus.eq(new.vcpus),
            flavors::root_gb.eq(new.root_gb),
            flavors::ephemeral_gb.eq(new.ephemeral_gb),
            flavors::swap.eq(new.swap),
            flavors::rxtx_factor.eq(new.rxtx_factor),
            flavors::is_public.eq(new.is_public),
            flavors::description.eq(&new.description),
            flavors::created_at.eq(now),
        ))
        .returning(FlavorRow::as_returning())
        .get_result(conn);
    match inserted.map_err(DbError::from) {
        Ok(row) => Ok(row.into_flavor(BTreeMap::new())),
        Err(DbError::UniqueViolation { constraint }) if constraint == "flavors_name_key" => {
            Err(FlavorError::NameExists(new.name.clone()))
        }
        Err(DbError::UniqueViolation { .. }) => Err(FlavorError::IdExists(flavorid)),
        Err(other) => Err(other.into()),
    }
}

fn row_of(conn: &mut PgConnection, flavorid: &str) -> Result<FlavorRow, FlavorError> {
    flavors::table
        .filter(flavors::flavorid.eq(flavorid))
        .select(FlavorRow::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| FlavorError::NotFound(flavorid.to_owned()))
}

fn specs_of(
    conn: &mut PgConnection,
    ids: &[i64],
) -> Result<BTreeMap<i64, BTreeMap<String, String>>, FlavorError> {
    let rows: Vec<(i64, String, String)> = flavor_extra_specs::table
        .filter(flavor_extra_specs::flavor_id.eq_any(ids))
        .select((
            flavor_extra_specs::flavor_id,
            flavor_extra_specs::key,
            flavor_extra_specs::value,
        ))
        .load(conn)?;
    let mut specs: BTreeMap<i64, BTreeMap<String, String>> = BTreeMap::new();
    for (id, key, value) in rows {
        specs.entry(id).or_default().insert(key, value);
    }
    Ok(specs)
}

/// Returns flavor `flavorid` with its extra specs.
pub fn get_flavor(conn: &mut PgConnection, flavorid: &str) -> Result<Flavor, FlavorError> {
    let row = row_of(conn, flavorid)?;
    let mut specs = specs_of(conn, &[row.id])?;
    let own = specs.remove(&row.id).unwrap_or_default();
    Ok(row.into_flavor(own))
}

/// Lists the flavors `filter` selects, in its order, `limit` of them after its marker (a
/// marker that names no flavor is `NotFound`).
pub fn list_flavors(
    conn: &mut PgConnection,
    filter: &FlavorFilter,
) -> Result<Vec<Flavor>, FlavorError> {
    let mut query = flavors::table.into_boxed();
    match (&filter.project, filter.is_public) {
        (Some(project), _) => {
            let shared = flavor_projects::table
                .filter(flavor_projects::project_id.eq(project.clone()))
                .select(flavor_projects::flavor_id);
            query = query
                .filter(flavors::is_public.eq(true).or(flavors::id.eq_any(shared)))
                .filter(flavors::disabled.eq(false));
        }
        (None, Some(public)) => query = query.filter(flavors::is_public.eq(public)),
        (None, None) => {}
    }
    if let Some(min) = filter.min_memory_mb {
        query = query.filter(flavors::memory_mb.ge(min));
    }
    if let Some(min) = filter.min_root_gb {
        query = query.filter(flavors::root_gb.ge(min));
    }
    if let Some(name) = &filter.name {
        query = query.filter(flavors::name.eq(name.clone()));
    }
    let mut rows: Vec<FlavorRow> = query
        .order(flavors::id.asc())
        .select(FlavorRow::as_select())
        .load(conn)?;
    sort(&mut rows, &filter.sort_key, filter.descending);
    if let Some(marker) = &filter.marker {
        let Some(at) = rows.iter().position(|row| &row.flavorid == marker) else {
            return Err(FlavorError::NotFound(marker.clone()));
        };
        rows.drain(..=at);
    }
    if let Some(limit) = filter.limit {
        rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
    let mut specs = specs_of(conn, &ids)?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let own = specs.remove(&row.id).unwrap_or_default();
            row.into_flavor(own)
        })
        .collect())
}

/// Sorts flavors by one of Nova's sort keys (ties by id), as Nova's paginated query does.
fn sort(rows: &mut [FlavorRow], key: &str, descending: bool) {
    use std::cmp::Ordering;
    let compare = |a: &FlavorRow, b: &FlavorRow| -> Ordering {
        let by = match key {
            "name" => a.name.cmp(&b.name),
            "memory_mb" => a.memory_mb.cmp(&b.memory_mb),
            "vcpus" => a.vcpus.cmp(&b.vcpus),
            "root_gb" => a.root_gb.cmp(&b.root_gb),
            "ephemeral_gb" => a.ephemeral_gb.cmp(&b.ephemeral_gb),
            "swap" => a.swap.cmp(&b.swap),
            "rxtx_factor" => a.rxtx_factor.total_cmp(&b.rxtx_factor),
            "disabled" => a.disabled.cmp(&b.disabled),
            "is_public" => a.is_public.cmp(&b.is_public),
            "description" => a.description.cmp(&b.description),
            "flavorid" => a.flavorid.cmp(&b.flavorid),
            _ => Ordering::Equal,
        };
        by.then(a.id.cmp(&b.id))
    };
    rows.sort_by(|a, b| {
        let order = compare(a, b);
        if descending { order.reverse() } else { order }
    });
}

/// Deletes flavor `flavorid`, its extra specs and its access list.
pub fn delete_flavor(conn: &mut PgConnection, flavorid: &str) -> Result<(), FlavorError> {
    let deleted =
        diesel::delete(flavors::table.filter(flavors::flavorid.eq(flavorid))).execute(conn)?;
    if deleted == 0 {
        return Err(FlavorError::NotFound(flavorid.to_owned()));
    }
    Ok(())
}

/// Sets flavor `flavorid`'s description (2.55).
pub fn set_description(
    conn: &mut PgConnection,
    flavorid: &str,
    description: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Flavor, FlavorError> {
    let updated = diesel::update(flavors::table.filter(flavors::flavorid.eq(flavorid)))
        .set((
            flavors::description.eq(description),
            flavors::updated_at.eq(now),
        ))
        .execute(conn)?;
    if updated == 0 {
        return Err(FlavorError::NotFound(flavorid.to_owned()));
    }
    get_flavor(conn, flavorid)
}

/// Adds or replaces extra specs of flavor `flavorid`; returns all of its specs.
pub fn set_extra_specs(
    conn: &mut PgConnection,
    flavorid: &str,
    specs: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, FlavorError> {
    let row = row_of(conn, flavorid)?;
    let values: Vec<_> = specs
        .iter()
        .map(|(key, value)| {
            (
                flavor_extra_specs::flavor_id.eq(row.id),
                flavor_extra_specs::key.eq(key),
                flavor_extra_specs::value.eq(value),
            )
        })
        .collect();
    diesel::insert_into(flavor_extra_specs::table)
        .values(values)
        .on_conflict((flavor_extra_specs::flavor_id, flavor_extra_specs::key))
        .do_update()
        .set(flavor_extra_specs::value.eq(diesel::upsert::excluded(flavor_extra_specs::value)))
        .execute(conn)?;
    Ok(specs_of(conn, &[row.id])?
        .remove(&row.id)
        .unwrap_or_default())
}

/// Deletes extra spec `key` of flavor `flavorid`.
pub fn delete_extra_spec(
    conn: &mut PgConnection,
    flavorid: &str,
    key: &str,
) -> Result<(), FlavorError> {
    let row = row_of(conn, flavorid)?;
    let deleted = diesel::delete(
        flavor_extra_specs::table
            .filter(flavor_extra_specs::flavor_id.eq(row.id))
            .filter(flavor_extra_specs::key.eq(key)),
    )
    .execute(conn)?;
    if deleted == 0 {
        return Err(FlavorError::SpecNotFound(
            flavorid.to_owned(),
            key.to_owned(),
        ));
    }
    Ok(())
}

/// The projects private flavor `flavorid` is shared with.
pub fn list_access(conn: &mut PgConnection, flavorid: &str) -> Result<Vec<String>, FlavorError> {
    let row = row_of(conn, flavorid)?;
    Ok(flavor_projects::table
        .filter(flavor_projects::flavor_id.eq(row.id))
        .order(flavor_projects::project_id.asc())
        .select(flavor_projects::project_id)
        .load(conn)?)
}

/// Shares flavor `flavorid` with `project`; returns the projects it is shared with.
pub fn add_access(
    conn: &mut PgConnection,
    flavorid: &str,
    project: &str,
) -> Result<Vec<String>, FlavorError> {
    let row = row_of(conn, flavorid)?;
    let added = diesel::insert_into(flavor_projects::table)
        .values((
            flavor_projects::flavor_id.eq(row.id),
            flavor_projects::project_id.eq(project),
        ))
        .on_conflict_do_nothing()
        .execute(conn)?;
    if added == 0 {
        return Err(FlavorError::AccessExists(
            flavorid.to_owned(),
            project.to_owned(),
        ));
    }
    list_access(conn, flavorid)
}

/// Stops sharing flavor `flavorid` with `project`; returns the projects it is shared with.
pub fn remove_access(
    conn: &mut PgConnection,
    flavorid: &str,
    project: &str,
) -> Result<Vec<String>, FlavorError> {
    let row = row_of(conn, flavorid)?;
    let removed = diesel::delete(
        flavor_projects::table
            .filter(flavor_projects::flavor_id.eq(row.id))
            .filter(flavor_projects::project_id.eq(project)),
    )
    .execute(conn)?;
    if removed == 0 {
        return Err(FlavorError::AccessNotFound(
            flavorid.to_owned(),
            project.to_owned(),
        ));
    }
    list_access(conn, flavorid)
}

/// Says whether a caller of `project` (not an admin) may use flavor `flavor`: it is public
/// and enabled, or shared with the project.
pub fn may_use(
    conn: &mut PgConnection,
    flavor: &Flavor,
    project: &str,
) -> Result<bool, FlavorError> {
    if flavor.is_public {
        return Ok(!flavor.disabled);
    }
    Ok(list_access(conn, &flavor.flavorid)?
        .iter()
        .any(|shared| shared == project))
}
