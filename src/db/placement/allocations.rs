//! Placement allocations: every consumer's allocations are replaced in one transaction that
//! locks the providers involved (in id order, so concurrent writers never deadlock), compares
//! consumer generations, and checks capacity — (total − reserved) × allocation_ratio, min_unit,
//! max_unit, step_size — against usage inside that same transaction. A consumer row exists
//! exactly while it has allocations.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Double, Integer, Nullable, Text, Uuid as SqlUuid};
use uuid::Uuid;

use crate::db::DbError;
pub use crate::domain::placement::GenerationCheck;

/// What one consumer asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerAllocations {
    pub consumer: Uuid,
    pub project: String,
    pub user: String,
    pub expected_generation: GenerationCheck,
    pub consumer_type: Option<String>,
    /// Provider → resource class → amount.
    pub allocations: BTreeMap<Uuid, BTreeMap<String, i64>>,
}

/// Why allocations were refused (structured; the HTTP layer words it as Placement does).
#[derive(Debug, thiserror::Error)]
pub enum AllocationError {
    #[error("resource provider {0} not found")]
    ProviderMissing(Uuid),
    #[error("no resource class {0}")]
    UnknownClass(String),
    #[error("provider {provider} has no inventory of {class}")]
    NoInventory { class: String, provider: Uuid },
    #[error("{class} on provider {provider} would exceed its capacity")]
    Capacity { class: String, provider: Uuid },
    #[error("{class} on provider {provider} would violate min_unit, max_unit or step_size")]
    Constraint { class: String, provider: Uuid },
    /// `stored`: the consumer's generation (`None`: no such consumer); `sent`: the one the
    /// write expected.
    #[error("consumer generation conflict: stored {stored:?}, expected {sent:?}")]
    ConsumerGeneration {
        stored: Option<i64>,
        sent: Option<i64>,
    },
    #[error("consumer {0} was created concurrently")]
    ConsumerCreatedConcurrently(Uuid),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for AllocationError {
    fn from(error: diesel::result::Error) -> Self {
        AllocationError::Db(DbError::from(error))
    }
}

/// The one consumer deleter: deletes every allocation of `consumer` and the consumer row, in
/// one statement that locks the consumer first (as writers do); `false` when it had no
/// allocations. Provider generations are the caller's: a replace that empties a consumer has
/// bumped them already (`lock_providers`), Placement's `DELETE` bumps none.
pub fn delete_consumer(conn: &mut PgConnection, consumer: Uuid) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let deleted: Count = crate::db::cached::query(
        "WITH consumer AS (SELECT uuid FROM consumers WHERE uuid = $1 FOR UPDATE),
              gone AS (DELETE FROM allocations
                        WHERE consumer_id IN (SELECT uuid FROM consumer) RETURNING 1),
              dropped AS (DELETE FROM consumers WHERE uuid IN (SELECT uuid FROM consumer))
         SELECT count(*) AS n FROM gone",
    )
    .bind::<SqlUuid, _>(consumer)
    .get_result(conn)?;
    Ok(deleted.n > 0)
}

/// A consumer as the clearing statement finds it, with the ids of its project, user and type
/// names when those exist.
#[derive(QueryableByName)]
struct ConsumerState {
    #[diesel(sql_type = Nullable<BigInt>)]
    generation: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    project_id: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    user_id: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    type_id: Option<i64>,
}

/// Replaces the allocations of every consumer of `writes`, all or nothing (run it in a
/// transaction). Every provider touched is locked in id order first, so concurrent writers on a
/// provider take turns and each sees the usage the others committed; per consumer it then takes
/// three statements: clear (and check its generation), write the consumer, and write the
/// allocations while checking capacity.
pub fn replace_allocations(
    conn: &mut PgConnection,
    writes: &[ConsumerAllocations],
) -> Result<(), AllocationError> {
    let provider_ids = lock_providers(conn, writes)?;
    for write in writes {
        let existing = clear_consumer(conn, write)?;
        if !write.expected_generation.accepts(existing.generation) {
            return Err(AllocationError::ConsumerGeneration {
                stored: existing.generation,
                sent: write.expected_generation.expected(),
            });
        }
        let empty = write.allocations.values().all(BTreeMap::is_empty);
        if empty {
            delete_consumer(conn, write.consumer)?;
            continue;
        }
        let names = name_ids(conn, write, &existing)?;
        let mut rows = AllocationRows::default();
        for (provider, resources) in &write.allocations {
            let provider_id = provider_ids
                .get(provider)
                .copied()
                .ok_or(AllocationError::ProviderMissing(*provider))?;
            for (class, amount) in resources {
                let amount = i32::try_from(*amount).map_err(|_| AllocationError::Capacity {
                    class: class.clone(),
                    provider: *provider,
                })?;
                rows.push(provider_id, *provider, class, amount);
            }
        }
        write_and_check(
            conn,
            write.consumer,
            existing.generation.is_some(),
            names,
            &rows,
        )?;
    }
    Ok(())
}

#[derive(QueryableByName)]
struct ProviderLock {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    uuid: Uuid,
}

/// Locks every provider the writes touch (asked for, or holding the consumers' current
/// allocations) in id order and bumps, as Placement, the generation of those allocated against
/// and of those a consumer written with no allocations at all is freed from (not those other
/// consumers only move away from). The consumers are read by later statements, whose snapshots are
/// taken after these locks are held, so they see what a writer that held them committed.
fn lock_providers(
    conn: &mut PgConnection,
    writes: &[ConsumerAllocations],
) -> Result<BTreeMap<Uuid, i64>, AllocationError> {
    let consumers: Vec<Uuid> = writes.iter().map(|write| write.consumer).collect();
    let requested: Vec<Uuid> = writes
        .iter()
        .flat_map(|write| write.allocations.keys().copied())
        .collect();
    let emptied: Vec<Uuid> = writes
        .iter()
        .filter(|write| write.allocations.values().all(BTreeMap::is_empty))
        .map(|write| write.consumer)
        .collect();
    let locked: Vec<ProviderLock> = crate::db::cached::query(
        "WITH locked AS (
             SELECT id, uuid FROM resource_providers
              WHERE uuid = ANY($1)
                 OR id IN (SELECT resource_provider_id FROM allocations WHERE consumer_id = ANY($2))
              ORDER BY id FOR UPDATE),
         bumped AS (
             UPDATE resource_providers rp SET generation = rp.generation + 1, updated_at = now()
               FROM locked
              WHERE rp.id = locked.id
                AND (locked.uuid = ANY($1)
                     OR locked.id IN (SELECT resource_provider_id FROM allocations
                                       WHERE consumer_id = ANY($3))))
         SELECT id, uuid FROM locked",
    )
    .bind::<Array<SqlUuid>, _>(&requested)
    .bind::<Array<SqlUuid>, _>(&consumers)
    .bind::<Array<SqlUuid>, _>(&emptied)
    .load(conn)?;
    let provider_ids: BTreeMap<Uuid, i64> = locked.iter().map(|row| (row.uuid, row.id)).collect();
    if let Some(missing) = requested
        .iter()
        .find(|uuid| !provider_ids.contains_key(uuid))
    {
        return Err(AllocationError::ProviderMissing(*missing));
    }
    Ok(provider_ids)
}

/// Locks a consumer and clears its allocations; returns what it found.
fn clear_consumer(
    conn: &mut PgConnection,
    write: &ConsumerAllocations,
) -> Result<ConsumerState, AllocationError> {
    Ok(crate::db::cached::query(
        "WITH consumer AS (SELECT generation FROM consumers WHERE uuid = $1 FOR UPDATE),
              -- Reads `consumer`, so the consumer is locked before its allocations.
              cleared AS (DELETE FROM allocations
                           WHERE consumer_id = $1 AND (SELECT count(*) FROM consumer) >= 0)
         SELECT (SELECT generation FROM consumer) AS generation,
                (SELECT id FROM projects WHERE external_id = $2)::bigint AS project_id,
                (SELECT id FROM users WHERE external_id = $3)::bigint AS user_id,
                (SELECT id FROM consumer_types WHERE name = $4)::bigint AS type_id",
    )
    .bind::<SqlUuid, _>(write.consumer)
    .bind::<Text, _>(&write.project)
    .bind::<Text, _>(&write.user)
    .bind::<Nullable<Text>, _>(write.consumer_type.as_deref())
    .get_result(conn)?)
}

/// The ids of a write's project, user and consumer type (none when it names no type). The
/// locking statement looked them up; only a first sight writes one (a write that would
/// otherwise lock a shared row in every transaction).
fn name_ids(
    conn: &mut PgConnection,
    write: &ConsumerAllocations,
    existing: &ConsumerState,
) -> Result<(i64, i64, Option<i64>), DbError> {
    let project = match existing.project_id {
        Some(id) => id,
        None => ensure_named(conn, "projects", "external_id", &write.project)?,
    };
    let user = match existing.user_id {
        Some(id) => id,
        None => ensure_named(conn, "users", "external_id", &write.user)?,
    };
    let kind = match (&write.consumer_type, existing.type_id) {
        (Some(_), Some(id)) => Some(id),
        (Some(name), None) => Some(ensure_named(conn, "consumer_types", "name", name)?),
        (None, _) => None,
    };
    Ok((project, user, kind))
}

/// Returns the id of the row of `table` whose `column` is `value`, creating it if missing.
fn ensure_named(
    conn: &mut PgConnection,
    table: &str,
    column: &str,
    value: &str,
) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }
    let row: Id = diesel::sql_query(format!(
        "INSERT INTO {table} ({column}) VALUES ($1) ON CONFLICT ({column})
         DO UPDATE SET {column} = EXCLUDED.{column} RETURNING id::bigint AS id"
    ))
    .bind::<Text, _>(value)
    .get_result(conn)?;
    Ok(row.id)
}

/// The allocations of one consumer, as columns for one statement.
#[derive(Debug, Default)]
struct AllocationRows {
    provider_ids: Vec<i64>,
    providers: Vec<Uuid>,
    classes: Vec<String>,
    amounts: Vec<i32>,
}

impl AllocationRows {
    fn push(&mut self, provider_id: i64, provider: Uuid, class: &str, amount: i32) {
        self.provider_ids.push(provider_id);
        self.providers.push(provider);
        self.classes.push(class.to_owned());
        self.amounts.push(amount);
    }
}

/// Writes one consumer's allocations and checks, in the same statement, that each class is
/// known and has inventory on its provider, that each amount meets min_unit, max_unit and
/// step_size, and that usage (what the statement sees committed or written earlier in this
/// transaction, plus the amount) stays within (total − reserved) × allocation_ratio. Refuses at
/// the first failure, in the order of `rows`.
fn write_and_check(
    conn: &mut PgConnection,
    consumer: Uuid,
    exists: bool,
    names: (i64, i64, Option<i64>),
    rows: &AllocationRows,
) -> Result<(), AllocationError> {
    // The consumer is written by the same statement: updated when it exists, inserted when
    // not — where a racing request that created it first makes the insert fail.
    let consumer_sql = if exists {
        "consumer_written AS (
             UPDATE consumers SET project_id = $5, user_id = $6, generation = generation + 1,
                    updated_at = now(), consumer_type_id = COALESCE($7::int, consumer_type_id)
              WHERE uuid = $1)"
    } else {
        "consumer_written AS (
             INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type_id)
             VALUES ($1, $5, $6, 1, $7::int))"
    };
    let (project, user, kind) = names;
    let checked: Result<Vec<Capacity>, DbError> = crate::db::cached::query(format!(
        "WITH {consumer_sql},
         wanted AS (
             SELECT t.p, t.n, t.ord, rc.id AS class_id
               FROM unnest($2::bigint[], $3::text[], $4::int[]) WITH ORDINALITY AS t(p, name, n, ord)
               LEFT JOIN resource_classes rc ON rc.name = t.name),
         written AS (
             INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
             SELECT p, $1, class_id, n FROM wanted WHERE class_id IS NOT NULL)
         SELECT w.ord, w.class_id, ((i.total - i.reserved) * i.allocation_ratio)::float8 AS capacity,
                i.min_unit, i.max_unit, i.step_size,
                w.n + (SELECT COALESCE(sum(a.used), 0) FROM allocations a
                        WHERE a.resource_provider_id = w.p AND a.resource_class_id = w.class_id)::bigint AS used
           FROM wanted w
           LEFT JOIN inventories i ON i.resource_provider_id = w.p AND i.resource_class_id = w.class_id
          ORDER BY w.ord"
    ))
    .bind::<SqlUuid, _>(consumer)
    .bind::<Array<BigInt>, _>(&rows.provider_ids)
    .bind::<Array<Text>, _>(&rows.classes)
    .bind::<Array<Integer>, _>(&rows.amounts)
    .bind::<BigInt, _>(project)
    .bind::<BigInt, _>(user)
    .bind::<Nullable<BigInt>, _>(kind)
    .load(conn)
    .map_err(DbError::from);
    let checked = match checked {
        // Another request wrote this consumer after this one read it (a new consumer both
        // saw missing): the consumer's row or its allocations already exist.
        Err(DbError::UniqueViolation { constraint })
            if constraint.starts_with("consumers") || constraint.starts_with("allocations") =>
        {
            return Err(AllocationError::ConsumerCreatedConcurrently(consumer));
        }
        other => other?,
    };
    checked
        .iter()
        .try_for_each(|row| refusal(row, rows).map_or(Ok(()), Err))
}

/// What `write_and_check` read back for one wanted allocation (in the order of the rows).
#[derive(QueryableByName)]
struct Capacity {
    #[diesel(sql_type = BigInt)]
    ord: i64,
    #[diesel(sql_type = Nullable<Integer>)]
    class_id: Option<i32>,
    #[diesel(sql_type = Nullable<Double>)]
    capacity: Option<f64>,
    #[diesel(sql_type = BigInt)]
    used: i64,
    #[diesel(sql_type = Nullable<Integer>)]
    min_unit: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    max_unit: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    step_size: Option<i32>,
}

/// Why the allocation `row` reads back is refused, if it is: an unknown class, no inventory,
/// an amount outside min_unit, max_unit and step_size, or usage beyond capacity.
fn refusal(row: &Capacity, rows: &AllocationRows) -> Option<AllocationError> {
    let index = usize::try_from(row.ord - 1).ok()?;
    let provider = rows.providers.get(index).copied()?;
    let class = rows.classes.get(index).cloned()?;
    let amount = rows.amounts.get(index).copied()?;
    if row.class_id.is_none() {
        return Some(AllocationError::UnknownClass(class));
    }
    let (Some(capacity), Some(min_unit), Some(max_unit), Some(step_size)) =
        (row.capacity, row.min_unit, row.max_unit, row.step_size)
    else {
        return Some(AllocationError::NoInventory { class, provider });
    };
    if amount < min_unit || amount > max_unit || amount % step_size.max(1) != 0 {
        return Some(AllocationError::Constraint { class, provider });
    }
    if row.used as f64 > capacity {
        return Some(AllocationError::Capacity { class, provider });
    }
    None
}

/// One allocation row, as the read APIs show them.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct AllocationRow {
    #[diesel(sql_type = SqlUuid)]
    pub consumer: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub provider: Uuid,
    #[diesel(sql_type = BigInt)]
    pub provider_generation: i64,
    #[diesel(sql_type = Text)]
    pub resource_class: String,
    #[diesel(sql_type = Integer)]
    pub used: i32,
}

const ROWS: &str =
    "SELECT a.consumer_id AS consumer, rp.uuid AS provider, rp.generation AS provider_generation,
                           rc.name::text AS resource_class, a.used
                      FROM allocations a
                      JOIN resource_providers rp ON rp.id = a.resource_provider_id
                      JOIN resource_classes rc ON rc.id = a.resource_class_id";

/// Lists the allocations of consumer `consumer`.
pub fn consumer_allocations(
    conn: &mut PgConnection,
    consumer: Uuid,
) -> Result<Vec<AllocationRow>, DbError> {
    Ok(diesel::sql_query(format!(
        "{ROWS} WHERE a.consumer_id = $1 ORDER BY rp.uuid, rc.name"
    ))
    .bind::<SqlUuid, _>(consumer)
    .load(conn)?)
}

/// Lists the allocations against provider `provider`.
pub fn provider_allocations(
    conn: &mut PgConnection,
    provider: Uuid,
) -> Result<Vec<AllocationRow>, DbError> {
    Ok(diesel::sql_query(format!(
        "{ROWS} WHERE rp.uuid = $1 ORDER BY a.consumer_id, rc.name"
    ))
    .bind::<SqlUuid, _>(provider)
    .load(conn)?)
}

/// The consumer's project, user, generation and type, if it exists.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct ConsumerInfo {
    #[diesel(sql_type = Text)]
    pub project: String,
    #[diesel(sql_type = Text)]
    pub user: String,
    #[diesel(sql_type = BigInt)]
    pub generation: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub consumer_type: Option<String>,
}

/// Returns consumer `consumer`'s facts, if it exists.
pub fn consumer_info(
    conn: &mut PgConnection,
    consumer: Uuid,
) -> Result<Option<ConsumerInfo>, DbError> {
    Ok(diesel::sql_query(
        "SELECT p.external_id::text AS project, u.external_id::text AS user, c.generation,
                t.name::text AS consumer_type
           FROM consumers c JOIN projects p ON p.id = c.project_id JOIN users u ON u.id = c.user_id
           LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
          WHERE c.uuid = $1",
    )
    .bind::<SqlUuid, _>(consumer)
    .load::<ConsumerInfo>(conn)?
    .into_iter()
    .next())
}

/// Sums usage per resource class, over a provider or a project (and user).
pub fn usages(
    conn: &mut PgConnection,
    provider: Option<Uuid>,
    project: Option<&str>,
    user: Option<&str>,
) -> Result<BTreeMap<String, i64>, DbError> {
    #[derive(QueryableByName)]
    struct Usage {
        #[diesel(sql_type = Text)]
        class: String,
        #[diesel(sql_type = BigInt)]
        used: i64,
    }
    let rows: Vec<Usage> = diesel::sql_query(
        "SELECT rc.name::text AS class, sum(a.used)::bigint AS used
           FROM allocations a
           JOIN resource_classes rc ON rc.id = a.resource_class_id
           JOIN resource_providers rp ON rp.id = a.resource_provider_id
           JOIN consumers c ON c.uuid = a.consumer_id
           JOIN projects p ON p.id = c.project_id
           JOIN users u ON u.id = c.user_id
          WHERE ($1::uuid IS NULL OR rp.uuid = $1)
            AND ($2::text IS NULL OR p.external_id = $2)
            AND ($3::text IS NULL OR u.external_id = $3)
          GROUP BY rc.name ORDER BY rc.name",
    )
    .bind::<Nullable<SqlUuid>, _>(provider)
    .bind::<Nullable<Text>, _>(project)
    .bind::<Nullable<Text>, _>(user)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| (row.class, row.used)).collect())
}

/// Usage of a project (and user) per consumer type (1.38): each group maps classes to their
/// sum and `consumer_count` to its number of consumers. Consumers without a type are
/// `unknown`. `only` keeps one type, or `all` (everything in one group), or `unknown`.
pub fn usages_by_consumer_type(
    conn: &mut PgConnection,
    project: &str,
    user: Option<&str>,
    only: Option<&str>,
) -> Result<BTreeMap<String, BTreeMap<String, i64>>, DbError> {
    #[derive(QueryableByName)]
    struct Usage {
        #[diesel(sql_type = Text)]
        kind: String,
        #[diesel(sql_type = Text)]
        class: String,
        #[diesel(sql_type = BigInt)]
        used: i64,
        #[diesel(sql_type = BigInt)]
        consumers: i64,
    }
    let rows: Vec<Usage> = diesel::sql_query(
        "WITH typed AS (
             SELECT CASE WHEN $3::text = 'all' THEN 'all'
                         ELSE coalesce(ct.name, 'unknown') END AS kind,
                    c.uuid AS consumer, rc.name::text AS class, a.used
               FROM allocations a
               JOIN resource_classes rc ON rc.id = a.resource_class_id
               JOIN consumers c ON c.uuid = a.consumer_id
               JOIN projects p ON p.id = c.project_id
               JOIN users u ON u.id = c.user_id
               LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
              WHERE p.external_id = $1
                AND ($2::text IS NULL OR u.external_id = $2))
         SELECT t.kind, t.class, sum(t.used)::bigint AS used, n.consumers
           FROM typed t
           JOIN (SELECT kind, count(DISTINCT consumer)::bigint AS consumers
                   FROM typed GROUP BY kind) n ON n.kind = t.kind
          WHERE $3::text IS NULL OR $3 = 'all' OR t.kind = $3
          GROUP BY t.kind, t.class, n.consumers
          ORDER BY t.kind, t.class",
    )
    .bind::<Text, _>(project)
    .bind::<Nullable<Text>, _>(user)
    .bind::<Nullable<Text>, _>(only)
    .load(conn)?;
    let mut groups: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for row in rows {
        let group = groups.entry(row.kind).or_default();
        group.insert(row.class, row.used);
        group.insert("consumer_count".to_owned(), row.consumers);
    }
    Ok(groups)
}
