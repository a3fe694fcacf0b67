//! Placement's resource classes and traits: list, show, create (custom ones only), delete
//! (never a standard one, never one in use), and the reset that empties Placement for tests.

use diesel::prelude::*;
use diesel::sql_types::{Bool, Integer, Nullable, Text, Timestamptz};

use super::DbError;

/// A resource class or a trait.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct NameRow {
    #[diesel(sql_type = Integer)]
    pub id: i32,
    #[diesel(sql_type = Text)]
    pub name: String,
}

/// Lists every resource class, standard ones first, by id.
pub fn list_resource_classes(conn: &mut PgConnection) -> Result<Vec<NameRow>, DbError> {
    Ok(
        diesel::sql_query("SELECT id, name::text AS name FROM resource_classes ORDER BY id")
            .load(conn)?,
    )
}

/// Returns resource class `name`, if it exists.
pub fn find_resource_class(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<NameRow>, DbError> {
    Ok(
        diesel::sql_query("SELECT id, name::text AS name FROM resource_classes WHERE name = $1")
            .bind::<Text, _>(name)
            .load::<NameRow>(conn)?
            .into_iter()
            .next(),
    )
}

/// Creates custom resource class `name`; `false` when it already existed.
pub fn create_resource_class(
    conn: &mut PgConnection,
    name: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, DbError> {
    let created = diesel::sql_query(
        "INSERT INTO resource_classes (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind::<Text, _>(name)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(created == 1)
}

/// Renames resource class `id` to `name` (a unique violation when the name is taken).
pub fn rename_resource_class(conn: &mut PgConnection, id: i32, name: &str) -> Result<(), DbError> {
    diesel::sql_query("UPDATE resource_classes SET name = $2, updated_at = now() WHERE id = $1")
        .bind::<Integer, _>(id)
        .bind::<Text, _>(name)
        .execute(conn)?;
    Ok(())
}

/// Says whether inventories or allocations use resource class `id`.
pub fn resource_class_in_use(conn: &mut PgConnection, id: i32) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct InUse {
        #[diesel(sql_type = Bool)]
        in_use: bool,
    }
    let row: InUse = diesel::sql_query(
        "SELECT EXISTS (SELECT 1 FROM inventories WHERE resource_class_id = $1)
             OR EXISTS (SELECT 1 FROM allocations WHERE resource_class_id = $1) AS in_use",
    )
    .bind::<Integer, _>(id)
    .get_result(conn)?;
    Ok(row.in_use)
}

/// Deletes resource class `id`.
pub fn delete_resource_class(conn: &mut PgConnection, id: i32) -> Result<(), DbError> {
    diesel::sql_query("DELETE FROM resource_classes WHERE id = $1")
        .bind::<Integer, _>(id)
        .execute(conn)?;
    Ok(())
}

/// Lists traits, optionally only those starting with `prefix` or named in `names`, and only
/// those some provider has (`associated = Some(true)`) or none has (`Some(false)`).
pub fn list_traits(
    conn: &mut PgConnection,
    prefix: Option<&str>,
    names: Option<&[String]>,
    associated: Option<bool>,
) -> Result<Vec<String>, DbError> {
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let rows: Vec<Name> = diesel::sql_query(
        "SELECT t.name::text AS name FROM traits t
          WHERE ($1::text IS NULL OR starts_with(t.name, $1))
            AND ($2::text[] IS NULL OR t.name = ANY($2))
            AND ($3::bool IS NULL OR $3 = EXISTS (SELECT 1 FROM resource_provider_traits rpt WHERE rpt.trait_id = t.id))
          ORDER BY t.name",
    )
    .bind::<Nullable<Text>, _>(prefix)
    .bind::<Nullable<diesel::sql_types::Array<Text>>, _>(names)
    .bind::<Nullable<Bool>, _>(associated)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| row.name).collect())
}

/// Returns trait `name`, if it exists.
pub fn find_trait(conn: &mut PgConnection, name: &str) -> Result<Option<NameRow>, DbError> {
    Ok(
        diesel::sql_query("SELECT id, name::text AS name FROM traits WHERE name = $1")
            .bind::<Text, _>(name)
            .load::<NameRow>(conn)?
            .into_iter()
            .next(),
    )
}

/// Creates custom trait `name`; `false` when it already existed.
pub fn create_trait(
    conn: &mut PgConnection,
    name: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, DbError> {
    let created = diesel::sql_query(
        "INSERT INTO traits (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind::<Text, _>(name)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(created == 1)
}

/// Says whether a provider has trait `id`.
pub fn trait_in_use(conn: &mut PgConnection, id: i32) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct InUse {
        #[diesel(sql_type = Bool)]
        in_use: bool,
    }
    let row: InUse = diesel::sql_query(
        "SELECT EXISTS (SELECT 1 FROM resource_provider_traits WHERE trait_id = $1) AS in_use",
    )
    .bind::<Integer, _>(id)
    .get_result(conn)?;
    Ok(row.in_use)
}

/// Deletes trait `id`.
pub fn delete_trait(conn: &mut PgConnection, id: i32) -> Result<(), DbError> {
    diesel::sql_query("DELETE FROM traits WHERE id = $1")
        .bind::<Integer, _>(id)
        .execute(conn)?;
    Ok(())
}

/// Empties Placement as a fresh one is: no providers, inventories, allocations, consumers,
/// projects, users, consumer types, aggregates, custom classes or custom traits; the standard
/// classes and traits stay. The compute side's rows that refer to providers are kept.
pub fn reset_placement(conn: &mut PgConnection) -> Result<(), DbError> {
    diesel::sql_query(
        "TRUNCATE allocations, consumers, consumer_types, projects, users, inventories,
                  resource_provider_traits, resource_provider_aggregates, placement_aggregates,
                  resource_providers",
    )
    .execute(conn)?;
    diesel::sql_query("DELETE FROM resource_classes WHERE name LIKE 'CUSTOM\\_%'").execute(conn)?;
    diesel::sql_query("DELETE FROM traits WHERE name LIKE 'CUSTOM\\_%'").execute(conn)?;
    super::placement::seed_standard_names(conn)
}
