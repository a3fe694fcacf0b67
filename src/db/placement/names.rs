//! Placement's resource classes and traits: list, show, create (custom ones only), delete
//! (never a standard one, never one in use), and the reset that empties Placement for tests.

use diesel::prelude::*;
use diesel::sql_types::{Bool, Integer, Nullable, Text, Timestamptz};

use crate::db::DbError;

/// Makes sure the standard resource classes (with their fixed ids) and traits exist, as an
/// empty Placement has them. Idempotent.
pub fn seed_standard_names(conn: &mut PgConnection) -> Result<(), DbError> {
    let classes: Vec<&str> = crate::domain::placement::standard_resource_classes().collect();
    let traits: Vec<&str> = crate::domain::placement::standard_traits().collect();
    diesel::sql_query(
        "INSERT INTO resource_classes (id, name)
         SELECT (ordinality - 1)::int, name FROM unnest($1::text[]) WITH ORDINALITY AS t(name, ordinality)
         ON CONFLICT DO NOTHING",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(&classes)
    .execute(conn)?;
    diesel::sql_query(
        "INSERT INTO traits (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(&traits)
    .execute(conn)?;
    Ok(())
}

/// Creates the resource classes of `names` that do not exist yet: one statement whatever
/// their number (the tracker's batch form of `create_resource_class`, for names it derived).
pub fn ensure_resource_classes(conn: &mut PgConnection, names: &[&str]) -> Result<(), DbError> {
    if names.is_empty() {
        return Ok(());
    }
    crate::db::cached::query(
        "INSERT INTO resource_classes (name)
         SELECT DISTINCT name FROM unnest($1::text[]) AS t(name)
          WHERE NOT EXISTS (SELECT 1 FROM resource_classes rc WHERE rc.name = t.name)
         ON CONFLICT (name) DO NOTHING",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(names)
    .execute(conn)?;
    Ok(())
}

/// Creates the traits of `names` that do not exist yet: one statement whatever their number.
pub fn ensure_traits(
    conn: &mut PgConnection,
    names: &[&str],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    if names.is_empty() {
        return Ok(());
    }
    crate::db::cached::query(
        "INSERT INTO traits (name, created_at)
         SELECT DISTINCT name, $2 FROM unnest($1::text[]) AS t(name)
          WHERE NOT EXISTS (SELECT 1 FROM traits x WHERE x.name = t.name)
         ON CONFLICT (name) DO NOTHING",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(names)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

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
    find_name(conn, "resource_classes", name)
}

/// Creates custom resource class `name`; `false` when it already existed.
pub fn create_resource_class(
    conn: &mut PgConnection,
    name: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, DbError> {
    create_name(conn, "resource_classes", name, now)
}

/// The row named `name` of `table` (`resource_classes` or `traits`), if there is one.
fn find_name(
    conn: &mut PgConnection,
    table: &'static str,
    name: &str,
) -> Result<Option<NameRow>, DbError> {
    Ok(diesel::sql_query(format!(
        "SELECT id, name::text AS name FROM {table} WHERE name = $1"
    ))
    .bind::<Text, _>(name)
    .load::<NameRow>(conn)?
    .into_iter()
    .next())
}

/// Inserts `name` into `table` (`resource_classes` or `traits`); `false` when it was there.
fn create_name(
    conn: &mut PgConnection,
    table: &'static str,
    name: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, DbError> {
    let created = diesel::sql_query(format!(
        "INSERT INTO {table} (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"
    ))
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

/// What deleting a resource class or a trait by name did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameDelete {
    Deleted,
    NoSuchName,
    /// Not a `CUSTOM_` one: the standard names are never deleted.
    Standard,
    /// An inventory or allocation has the class, a provider has the trait.
    InUse,
}

/// Deletes custom resource class `name` unless inventories or allocations use it, in one
/// guarded statement: a use committed meanwhile is `InUse`, never a failure.
pub fn delete_resource_class(conn: &mut PgConnection, name: &str) -> Result<NameDelete, DbError> {
    delete_name(
        conn,
        name,
        "WITH target AS (SELECT id FROM resource_classes WHERE name = $1 FOR UPDATE),
              used AS (SELECT EXISTS (SELECT 1 FROM inventories
                                       WHERE resource_class_id IN (SELECT id FROM target))
                           OR EXISTS (SELECT 1 FROM allocations
                                       WHERE resource_class_id IN (SELECT id FROM target))
                              AS in_use),
              gone AS (DELETE FROM resource_classes
                        WHERE id IN (SELECT id FROM target) AND $2 AND NOT (SELECT in_use FROM used)
                        RETURNING id)
         SELECT EXISTS (SELECT 1 FROM target) AS found, (SELECT in_use FROM used) AS in_use,
                EXISTS (SELECT 1 FROM gone) AS deleted",
    )
}

/// Deletes custom trait `name` unless a provider has it, in one guarded statement.
pub fn delete_trait(conn: &mut PgConnection, name: &str) -> Result<NameDelete, DbError> {
    delete_name(
        conn,
        name,
        "WITH target AS (SELECT id FROM traits WHERE name = $1 FOR UPDATE),
              used AS (SELECT EXISTS (SELECT 1 FROM resource_provider_traits
                                       WHERE trait_id IN (SELECT id FROM target)) AS in_use),
              gone AS (DELETE FROM traits
                        WHERE id IN (SELECT id FROM target) AND $2 AND NOT (SELECT in_use FROM used)
                        RETURNING id)
         SELECT EXISTS (SELECT 1 FROM target) AS found, (SELECT in_use FROM used) AS in_use,
                EXISTS (SELECT 1 FROM gone) AS deleted",
    )
}

/// Runs one of the guarded deletes above: `$1` the name, `$2` whether it is a custom one. A
/// use committed after the statement's snapshot (so not seen by `used`) makes the delete's
/// foreign key check fail: that is `InUse` too.
fn delete_name(conn: &mut PgConnection, name: &str, sql: &str) -> Result<NameDelete, DbError> {
    #[derive(QueryableByName)]
    struct Outcome {
        #[diesel(sql_type = Bool)]
        found: bool,
        #[diesel(sql_type = Nullable<Bool>)]
        in_use: Option<bool>,
        #[diesel(sql_type = Bool)]
        deleted: bool,
    }
    let custom = name.starts_with("CUSTOM_");
    let outcome: Outcome = match diesel::sql_query(sql)
        .bind::<Text, _>(name)
        .bind::<Bool, _>(custom)
        .get_result(conn)
    {
        Ok(outcome) => outcome,
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::ForeignKeyViolation,
            _,
        )) => return Ok(NameDelete::InUse),
        Err(error) => return Err(error.into()),
    };
    Ok(if outcome.deleted {
        NameDelete::Deleted
    } else if !outcome.found {
        NameDelete::NoSuchName
    } else if !custom {
        NameDelete::Standard
    } else if outcome.in_use == Some(true) {
        NameDelete::InUse
    } else {
        // Found, custom and unused, yet not deleted: gone meanwhile.
        NameDelete::NoSuchName
    })
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
    find_name(conn, "traits", name)
}

/// Creates custom trait `name`; `false` when it already existed.
pub fn create_trait(
    conn: &mut PgConnection,
    name: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, DbError> {
    create_name(conn, "traits", name, now)
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
    seed_standard_names(conn)
}
