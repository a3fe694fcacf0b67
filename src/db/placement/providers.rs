//! Placement's resource providers: trees (parent and root), create, update (rename, re-parent),
//! delete — each in the caller's transaction, with the rules Placement enforces.

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};

use crate::db::DbError;
use crate::domain::identity::{ConsumerUuid, ProviderId, ProviderUuid};

/// One provider as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct ProviderRow {
    #[diesel(sql_type = BigInt)]
    pub id: ProviderId,
    #[diesel(sql_type = SqlUuid)]
    pub uuid: ProviderUuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = BigInt)]
    pub generation: i64,
    #[diesel(sql_type = SqlUuid)]
    pub root_uuid: ProviderUuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub parent_uuid: Option<ProviderUuid>,
}

const SELECT: &str = "SELECT rp.id, rp.uuid, rp.name::text AS name, rp.generation,
                             COALESCE(root.uuid, rp.uuid) AS root_uuid, parent.uuid AS parent_uuid
                        FROM resource_providers rp
                        LEFT JOIN resource_providers root ON root.id = rp.root_provider_id
                        LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id";

/// Filters of a provider listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFilter {
    pub name: Option<String>,
    pub uuid: Option<ProviderUuid>,
    /// Any provider of the tree this provider is in.
    pub in_tree: Option<ProviderUuid>,
}

/// Lists providers matching `filter`, ordered by id.
pub fn list_providers(
    conn: &mut PgConnection,
    filter: &ProviderFilter,
) -> Result<Vec<ProviderRow>, DbError> {
    Ok(diesel::sql_query(format!(
        "{SELECT}
          WHERE ($1::text IS NULL OR rp.name = $1)
            AND ($2::uuid IS NULL OR rp.uuid = $2)
            AND ($3::uuid IS NULL OR rp.root_provider_id =
                 (SELECT t.root_provider_id FROM resource_providers t WHERE t.uuid = $3))
          ORDER BY rp.id"
    ))
    .bind::<Nullable<Text>, _>(filter.name.as_deref())
    .bind::<Nullable<SqlUuid>, _>(filter.uuid)
    .bind::<Nullable<SqlUuid>, _>(filter.in_tree)
    .load(conn)?)
}

/// Returns provider `uuid`, if it exists.
pub fn get_provider(
    conn: &mut PgConnection,
    uuid: ProviderUuid,
) -> Result<Option<ProviderRow>, DbError> {
    Ok(
        crate::db::cached::query(format!("{SELECT} WHERE rp.uuid = $1"))
            .bind::<SqlUuid, _>(uuid)
            .load::<ProviderRow>(conn)?
            .into_iter()
            .next(),
    )
}

/// Why a provider could not be written (structured; the HTTP layer words it as Placement does).
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider name {0} is taken")]
    DuplicateName(String),
    #[error("provider uuid {0} is taken")]
    DuplicateUuid(ProviderUuid),
    #[error("a provider cannot be its own parent")]
    SelfParent,
    #[error("the parent provider does not exist")]
    ParentMissing,
    #[error("a provider's parent cannot be removed")]
    Unparent,
    #[error("a provider's parent cannot be changed (before 1.37)")]
    Reparent,
    #[error("the new parent is a descendant of the provider")]
    Loop,
    #[error("no provider {0}")]
    NotFound(ProviderUuid),
    #[error("provider {0} has allocations")]
    HasAllocations(ProviderUuid),
    #[error("provider {0} has children")]
    HasChildren(ProviderUuid),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ProviderError {
    fn from(error: diesel::result::Error) -> Self {
        ProviderError::Db(DbError::from(error))
    }
}

/// Creates provider `uuid` named `name`, under `parent` if given: one statement (a root is
/// its own root), the unique constraints telling a duplicate name from a duplicate uuid.
pub fn create_provider(
    conn: &mut PgConnection,
    uuid: ProviderUuid,
    name: &str,
    parent: Option<ProviderUuid>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<ProviderRow, ProviderError> {
    if parent == Some(uuid) {
        return Err(ProviderError::SelfParent);
    }
    #[derive(QueryableByName)]
    struct Inserted {
        #[diesel(sql_type = Nullable<BigInt>)]
        id: Option<i64>,
        #[diesel(sql_type = Nullable<SqlUuid>)]
        root_uuid: Option<ProviderUuid>,
    }
    // One statement: the parent's row and root are read where the new row is written.
    let inserted = crate::db::cached::query(
        "WITH parent AS (
             SELECT p.id, COALESCE(p.root_provider_id, p.id) AS root_id, r.uuid AS root_uuid
               FROM resource_providers p
               JOIN resource_providers r ON r.id = COALESCE(p.root_provider_id, p.id)
              WHERE p.uuid = $3),
         new AS (SELECT nextval('resource_providers_id_seq') AS id),
         inserted AS (
             INSERT INTO resource_providers
                    (id, uuid, name, parent_provider_id, root_provider_id, created_at)
             SELECT new.id, $1, $2, parent.id, COALESCE(parent.root_id, new.id), $4
               FROM new LEFT JOIN parent ON TRUE
              WHERE $3::uuid IS NULL OR parent.id IS NOT NULL
             RETURNING id)
         SELECT (SELECT id FROM inserted) AS id, (SELECT root_uuid FROM parent) AS root_uuid",
    )
    .bind::<SqlUuid, _>(uuid)
    .bind::<Text, _>(name)
    .bind::<Nullable<SqlUuid>, _>(parent)
    .bind::<Timestamptz, _>(now)
    .get_result::<Inserted>(conn)
    .map_err(DbError::from);
    let inserted = match inserted {
        Err(DbError::UniqueViolation { constraint }) if constraint.contains("name") => {
            return Err(ProviderError::DuplicateName(name.to_owned()));
        }
        Err(DbError::UniqueViolation { .. }) => return Err(ProviderError::DuplicateUuid(uuid)),
        other => other?,
    };
    let id = inserted.id.ok_or(ProviderError::ParentMissing)?;
    Ok(ProviderRow {
        id: ProviderId(id),
        uuid,
        name: name.to_owned(),
        generation: 0,
        root_uuid: inserted.root_uuid.unwrap_or(uuid),
        parent_uuid: parent,
    })
}

fn root_id_of(conn: &mut PgConnection, id: ProviderId) -> Result<Option<ProviderId>, DbError> {
    #[derive(QueryableByName)]
    struct Root {
        #[diesel(sql_type = Nullable<BigInt>)]
        root: Option<ProviderId>,
    }
    let root: Root =
        diesel::sql_query("SELECT root_provider_id AS root FROM resource_providers WHERE id = $1")
            .bind::<BigInt, _>(id)
            .get_result(conn)?;
    Ok(root.root.or(Some(id)))
}

/// Renames provider `uuid` and, when `parent` is given, moves it under that parent (`Some(None)`
/// un-parents it). `reparenting_allowed` is microversion 1.37's rule.
pub fn update_provider(
    conn: &mut PgConnection,
    uuid: ProviderUuid,
    name: &str,
    parent: Option<Option<ProviderUuid>>,
    reparenting_allowed: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<ProviderRow, ProviderError> {
    let current = get_provider(conn, uuid)?.ok_or(ProviderError::NotFound(uuid))?;
    if name != current.name
        && list_providers(
            conn,
            &ProviderFilter {
                name: Some(name.to_owned()),
                ..Default::default()
            },
        )?
        .iter()
        .any(|other| other.uuid != uuid)
    {
        return Err(ProviderError::DuplicateName(name.to_owned()));
    }
    if let Some(new_parent) = parent
        && new_parent != current.parent_uuid
    {
        match (current.parent_uuid, new_parent) {
            (Some(_), None) if !reparenting_allowed => return Err(ProviderError::Unparent),
            (Some(_), Some(_)) if !reparenting_allowed => return Err(ProviderError::Reparent),
            _ => {}
        }
        if new_parent == Some(uuid) {
            return Err(ProviderError::Loop);
        }
        let parent_row = match new_parent {
            Some(parent) => Some(get_provider(conn, parent)?.ok_or(ProviderError::ParentMissing)?),
            None => None,
        };
        if let Some(parent_row) = &parent_row
            && is_descendant(conn, parent_row.id, current.id)?
        {
            return Err(ProviderError::Loop);
        }
        let new_root = match &parent_row {
            Some(parent) => root_id_of(conn, parent.id)?.unwrap_or(parent.id),
            None => current.id,
        };
        diesel::sql_query("UPDATE resource_providers SET parent_provider_id = $2 WHERE id = $1")
            .bind::<BigInt, _>(current.id)
            .bind::<Nullable<BigInt>, _>(parent_row.as_ref().map(|parent| parent.id))
            .execute(conn)?;
        // The whole subtree follows its new root.
        diesel::sql_query(
            "WITH RECURSIVE subtree AS (
                 SELECT id FROM resource_providers WHERE id = $1
                 UNION ALL
                 SELECT child.id FROM resource_providers child JOIN subtree ON child.parent_provider_id = subtree.id
             )
             UPDATE resource_providers SET root_provider_id = $2 WHERE id IN (SELECT id FROM subtree)",
        )
        .bind::<BigInt, _>(current.id)
        .bind::<BigInt, _>(new_root)
        .execute(conn)?;
    }
    // As Placement: a rename or re-parent does not bump the generation.
    diesel::sql_query("UPDATE resource_providers SET name = $2, updated_at = $3 WHERE id = $1")
        .bind::<BigInt, _>(current.id)
        .bind::<Text, _>(name)
        .bind::<Timestamptz, _>(now)
        .execute(conn)?;
    get_provider(conn, uuid)?.ok_or(ProviderError::NotFound(uuid))
}

/// Says whether provider `candidate` lies in the subtree of provider `ancestor`.
fn is_descendant(
    conn: &mut PgConnection,
    candidate: ProviderId,
    ancestor: ProviderId,
) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Found {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        found: bool,
    }
    let found: Found = diesel::sql_query(
        "WITH RECURSIVE subtree AS (
             SELECT id FROM resource_providers WHERE id = $2
             UNION ALL
             SELECT child.id FROM resource_providers child JOIN subtree ON child.parent_provider_id = subtree.id
         )
         SELECT EXISTS (SELECT 1 FROM subtree WHERE id = $1) AS found",
    )
    .bind::<BigInt, _>(candidate)
    .bind::<BigInt, _>(ancestor)
    .get_result(conn)?;
    Ok(found.found)
}

/// Deletes provider `uuid` with its inventories, traits and aggregate links; refused while it
/// has allocations or children.
pub fn delete_provider(conn: &mut PgConnection, uuid: ProviderUuid) -> Result<(), ProviderError> {
    let current = get_provider(conn, uuid)?.ok_or(ProviderError::NotFound(uuid))?;
    #[derive(QueryableByName)]
    struct Facts {
        #[diesel(sql_type = BigInt)]
        allocations: i64,
        #[diesel(sql_type = BigInt)]
        children: i64,
    }
    let facts: Facts = diesel::sql_query(
        "SELECT (SELECT count(*) FROM allocations WHERE resource_provider_id = $1) AS allocations,
                (SELECT count(*) FROM resource_providers WHERE parent_provider_id = $1) AS children",
    )
    .bind::<BigInt, _>(current.id)
    .get_result(conn)?;
    if facts.allocations > 0 {
        return Err(ProviderError::HasAllocations(uuid));
    }
    if facts.children > 0 {
        return Err(ProviderError::HasChildren(uuid));
    }
    for table in [
        "inventories",
        "resource_provider_traits",
        "resource_provider_aggregates",
    ] {
        diesel::sql_query(format!(
            "DELETE FROM {table} WHERE resource_provider_id = $1"
        ))
        .bind::<BigInt, _>(current.id)
        .execute(conn)?;
    }
    diesel::sql_query("DELETE FROM resource_providers WHERE id = $1")
        .bind::<BigInt, _>(current.id)
        .execute(conn)?;
    Ok(())
}

/// Bumps the generation of provider `provider_id` if it is still `expected` (any, when
/// `None`); returns the new one, or `None` when it was not at `expected`.
pub fn bump_generation(
    conn: &mut PgConnection,
    provider_id: ProviderId,
    expected: Option<i64>,
) -> Result<Option<i64>, DbError> {
    #[derive(QueryableByName)]
    struct Generation {
        #[diesel(sql_type = BigInt)]
        generation: i64,
    }
    let bumped: Vec<Generation> = crate::db::cached::query(concat!(
        crate::db::placement::bump_generation!("now()"),
        " WHERE rp.id = $1 AND ($2::bigint IS NULL OR rp.generation = $2) RETURNING rp.generation"
    ))
    .bind::<BigInt, _>(provider_id)
    .bind::<diesel::sql_types::Nullable<BigInt>, _>(expected)
    .load(conn)?;
    Ok(bumped.first().map(|row| row.generation))
}

/// Returns the generation of provider `provider_id`.
pub fn generation_of(conn: &mut PgConnection, provider_id: ProviderId) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Generation {
        #[diesel(sql_type = BigInt)]
        generation: i64,
    }
    let row: Generation =
        diesel::sql_query("SELECT generation FROM resource_providers WHERE id = $1")
            .bind::<BigInt, _>(provider_id)
            .get_result(conn)?;
    Ok(row.generation)
}

/// Bumps the generations of providers `ids` and of those holding allocations of the consumers
/// `freed` (as Placement bumps a provider a consumer's allocations leave), writing `now`: one
/// statement. Call while holding the providers (`lock`) or their nodes.
pub fn bump_generations(
    conn: &mut PgConnection,
    ids: &[ProviderId],
    freed: &[ConsumerUuid],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<usize, DbError> {
    if ids.is_empty() && freed.is_empty() {
        return Ok(0);
    }
    Ok(crate::db::cached::query(concat!(
        crate::db::placement::bump_generation!("$3"),
        " WHERE rp.id = ANY($1)
             OR rp.id IN (SELECT resource_provider_id FROM allocations WHERE consumer_id = ANY($2))"
    ))
    .bind::<Array<BigInt>, _>(ids)
    .bind::<Array<SqlUuid>, _>(freed)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?)
}

/// A provider a write touched, by row id (what batch writes return for `bump_generations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName)]
pub struct Touched {
    #[diesel(sql_type = BigInt)]
    pub id: ProviderId,
}

/// A provider held for a write.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct LockedProvider {
    #[diesel(sql_type = BigInt)]
    pub id: ProviderId,
    #[diesel(sql_type = SqlUuid)]
    pub uuid: ProviderUuid,
    #[diesel(sql_type = BigInt)]
    pub generation: i64,
}

/// Locks, for the rest of the transaction, the providers `uuids` and those holding allocations
/// of the consumers `allocated_to`, in id order (so that two writers never deadlock), and
/// returns them: the one provider lock of every write that compares generations first. A uuid
/// with no provider is simply not returned.
pub fn lock(
    conn: &mut PgConnection,
    uuids: &[ProviderUuid],
    allocated_to: &[ConsumerUuid],
) -> Result<Vec<LockedProvider>, DbError> {
    Ok(crate::db::cached::query(
        "SELECT id, uuid, generation FROM resource_providers
          WHERE uuid = ANY($1)
             OR id IN (SELECT resource_provider_id FROM allocations WHERE consumer_id = ANY($2))
          ORDER BY id FOR UPDATE",
    )
    .bind::<Array<SqlUuid>, _>(uuids)
    .bind::<Array<SqlUuid>, _>(allocated_to)
    .load(conn)?)
}

/// Creates each provider (`uuids[i]`, `names[i]`) that does not exist yet, as a root, in one
/// statement; an existing uuid is left as it is (never renamed). A name another provider
/// holds fails the statement (unique): callers check names first.
pub fn create_roots(
    conn: &mut PgConnection,
    uuids: &[ProviderUuid],
    names: &[String],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    if uuids.is_empty() {
        return Ok(());
    }
    // Each new provider is its own root, written with the row: a later `UPDATE … SET
    // root_provider_id` would fire the per-row provider-moved trigger once per provider, all
    // on one counter row (82 s for 100,000 providers).
    crate::db::cached::query(
        "INSERT INTO resource_providers (id, uuid, name, root_provider_id, created_at)
         SELECT s.id, s.uuid, s.name, s.id, $3
           FROM (SELECT nextval('resource_providers_id_seq') AS id, t.uuid, t.name
                   FROM unnest($1::uuid[], $2::text[]) AS t(uuid, name)
                  WHERE NOT EXISTS (SELECT 1 FROM resource_providers rp WHERE rp.uuid = t.uuid)) s",
    )
    .bind::<Array<SqlUuid>, _>(uuids)
    .bind::<Array<Text>, _>(names)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}
