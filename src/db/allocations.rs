//! Placement allocations: every consumer's allocations are replaced in one transaction that
//! locks the providers involved (in id order, so concurrent writers never deadlock), compares
//! consumer generations, and checks capacity — (total − reserved) × allocation_ratio, min_unit,
//! max_unit, step_size — against usage inside that same transaction. A consumer row exists
//! exactly while it has allocations.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Double, Integer, Nullable, Text, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;

/// What one consumer asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerAllocations {
    pub consumer: Uuid,
    pub project: String,
    pub user: String,
    /// `None`: not compared (before 1.28); `Some(None)`: the consumer must be new;
    /// `Some(Some(g))`: its generation must be `g`.
    pub expected_generation: Option<Option<i64>>,
    pub consumer_type: Option<String>,
    /// Provider → resource class → amount.
    pub allocations: BTreeMap<Uuid, BTreeMap<String, i64>>,
}

/// Why allocations were refused.
#[derive(Debug, thiserror::Error)]
pub enum AllocationError {
    #[error("resource provider {0} not found")]
    ProviderMissing(Uuid),
    #[error("No such resource class {0}.")]
    UnknownClass(String),
    #[error(
        "Unable to allocate inventory: Inventory for '{class}' on resource provider '{provider}' invalid."
    )]
    NoInventory { class: String, provider: Uuid },
    #[error(
        "Unable to allocate inventory: Unable to create allocation for '{class}' on resource provider '{provider}'. The requested amount would exceed the capacity."
    )]
    Capacity { class: String, provider: Uuid },
    #[error(
        "Unable to allocate inventory: Unable to create allocation for '{class}' on resource provider '{provider}'. The requested amount would violate inventory constraints."
    )]
    Constraint { class: String, provider: Uuid },
    /// Worded as Placement words it: "expected" is the stored generation, "got" the sent one.
    #[error("consumer generation conflict - expected {stored} but got {sent}")]
    ConsumerGeneration { stored: String, sent: String },
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for AllocationError {
    fn from(error: diesel::result::Error) -> Self {
        AllocationError::Db(DbError::from(error))
    }
}

#[derive(QueryableByName)]
struct ProviderLock {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    uuid: Uuid,
}

#[derive(QueryableByName)]
struct ConsumerRow {
    #[diesel(sql_type = BigInt)]
    generation: i64,
}

/// Replaces the allocations of every consumer of `writes`, all or nothing.
pub fn replace_allocations(
    conn: &mut PgConnection,
    writes: &[ConsumerAllocations],
) -> Result<(), AllocationError> {
    let consumers: Vec<Uuid> = writes.iter().map(|write| write.consumer).collect();
    let requested: Vec<Uuid> = writes
        .iter()
        .flat_map(|write| write.allocations.keys().copied())
        .collect();
    // Lock every provider touched: asked for, or holding the consumers' current allocations.
    let locked: Vec<ProviderLock> = diesel::sql_query(
        "SELECT id, uuid FROM resource_providers
          WHERE uuid = ANY($1)
             OR id IN (SELECT resource_provider_id FROM allocations WHERE consumer_id = ANY($2))
          ORDER BY id FOR UPDATE",
    )
    .bind::<Array<SqlUuid>, _>(&requested)
    .bind::<Array<SqlUuid>, _>(&consumers)
    .load(conn)?;
    let provider_ids: BTreeMap<Uuid, i64> = locked.iter().map(|row| (row.uuid, row.id)).collect();
    if let Some(missing) = requested
        .iter()
        .find(|uuid| !provider_ids.contains_key(uuid))
    {
        return Err(AllocationError::ProviderMissing(*missing));
    }

    let names: Vec<&str> = writes
        .iter()
        .flat_map(|write| write.allocations.values())
        .flat_map(|resources| resources.keys().map(String::as_str))
        .collect();
    let class_ids = super::placement_names::class_ids(conn, &names)?;

    for write in writes {
        // The consumer's old allocations go in the same statement that locks it; a refusal
        // below rolls the whole transaction back.
        let existing: Option<ConsumerRow> = diesel::sql_query(
            "WITH cleared AS (DELETE FROM allocations WHERE consumer_id = $1)
             SELECT generation FROM consumers WHERE uuid = $1 FOR UPDATE",
        )
        .bind::<SqlUuid, _>(write.consumer)
        .load::<ConsumerRow>(conn)?
        .into_iter()
        .next();
        if let Some(expected) = write.expected_generation {
            let actual = existing.as_ref().map(|row| row.generation);
            if expected != actual {
                return Err(AllocationError::ConsumerGeneration {
                    stored: actual.map_or_else(|| "null".to_owned(), |g| g.to_string()),
                    sent: expected.map_or_else(|| "None".to_owned(), |g| g.to_string()),
                });
            }
        }
        let empty = write.allocations.values().all(BTreeMap::is_empty);
        if empty {
            diesel::sql_query("DELETE FROM consumers WHERE uuid = $1")
                .bind::<SqlUuid, _>(write.consumer)
                .execute(conn)?;
            continue;
        }
        upsert_consumer(conn, write, existing.is_some())?;
        let mut rows = AllocationRows::default();
        for (provider, resources) in &write.allocations {
            let provider_id = provider_ids
                .get(provider)
                .copied()
                .ok_or(AllocationError::ProviderMissing(*provider))?;
            for (class, amount) in resources {
                let class_id = class_ids
                    .get(class)
                    .copied()
                    .ok_or_else(|| AllocationError::UnknownClass(class.clone()))?;
                let amount = i32::try_from(*amount).map_err(|_| AllocationError::Capacity {
                    class: class.clone(),
                    provider: *provider,
                })?;
                rows.push(provider_id, *provider, class_id, class, amount);
            }
        }
        diesel::sql_query(
            "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
             SELECT p, $1, c, n FROM unnest($2::bigint[], $3::int[], $4::int[]) AS t(p, c, n)",
        )
        .bind::<SqlUuid, _>(write.consumer)
        .bind::<Array<BigInt>, _>(&rows.provider_ids)
        .bind::<Array<Integer>, _>(&rows.class_ids)
        .bind::<Array<Integer>, _>(&rows.amounts)
        .execute(conn)?;
        check_capacity(conn, &rows)?;
    }
    // As Placement: the providers allocated against change generation, not the ones only freed.
    let ids: Vec<i64> = requested
        .iter()
        .filter_map(|uuid| provider_ids.get(uuid).copied())
        .collect();
    diesel::sql_query("UPDATE resource_providers SET generation = generation + 1, updated_at = now() WHERE id = ANY($1)")
        .bind::<Array<BigInt>, _>(&ids)
        .execute(conn)?;
    Ok(())
}

fn upsert_consumer(
    conn: &mut PgConnection,
    write: &ConsumerAllocations,
    exists: bool,
) -> Result<(), DbError> {
    let sql = if exists {
        "WITH p AS (INSERT INTO projects (external_id) VALUES ($2) ON CONFLICT (external_id)
                    DO UPDATE SET external_id = EXCLUDED.external_id RETURNING id),
              u AS (INSERT INTO users (external_id) VALUES ($3) ON CONFLICT (external_id)
                    DO UPDATE SET external_id = EXCLUDED.external_id RETURNING id),
              t AS (SELECT id FROM consumer_types WHERE name = $4)
         UPDATE consumers SET project_id = (SELECT id FROM p), user_id = (SELECT id FROM u),
                generation = generation + 1, updated_at = now(),
                consumer_type_id = CASE WHEN $4::text IS NULL THEN consumer_type_id ELSE (SELECT id FROM t) END
          WHERE uuid = $1"
    } else {
        "WITH p AS (INSERT INTO projects (external_id) VALUES ($2) ON CONFLICT (external_id)
                    DO UPDATE SET external_id = EXCLUDED.external_id RETURNING id),
              u AS (INSERT INTO users (external_id) VALUES ($3) ON CONFLICT (external_id)
                    DO UPDATE SET external_id = EXCLUDED.external_id RETURNING id),
              t AS (SELECT id FROM consumer_types WHERE name = $4)
         INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type_id)
         SELECT $1, p.id, u.id, 1, (SELECT id FROM t) FROM p, u"
    };
    if let Some(name) = &write.consumer_type {
        diesel::sql_query(
            "INSERT INTO consumer_types (name) VALUES ($1) ON CONFLICT (name) DO NOTHING",
        )
        .bind::<Text, _>(name)
        .execute(conn)?;
    }
    diesel::sql_query(sql)
        .bind::<SqlUuid, _>(write.consumer)
        .bind::<Text, _>(&write.project)
        .bind::<Text, _>(&write.user)
        .bind::<Nullable<Text>, _>(write.consumer_type.as_deref())
        .execute(conn)?;
    Ok(())
}

/// The allocations of one consumer, as columns for one statement.
#[derive(Debug, Default)]
struct AllocationRows {
    provider_ids: Vec<i64>,
    providers: Vec<Uuid>,
    class_ids: Vec<i32>,
    classes: Vec<String>,
    amounts: Vec<i32>,
}

impl AllocationRows {
    fn push(&mut self, provider_id: i64, provider: Uuid, class_id: i32, class: &str, amount: i32) {
        self.provider_ids.push(provider_id);
        self.providers.push(provider);
        self.class_ids.push(class_id);
        self.classes.push(class.to_owned());
        self.amounts.push(amount);
    }
}

/// Checks, after the consumer's allocations are written, that each (provider, class) it uses
/// has inventory, that each amount meets min_unit, max_unit and step_size, and that usage stays
/// within (total − reserved) × allocation_ratio — in one query, refusing at the first failure.
fn check_capacity(conn: &mut PgConnection, rows: &AllocationRows) -> Result<(), AllocationError> {
    #[derive(QueryableByName)]
    struct Capacity {
        #[diesel(sql_type = BigInt)]
        ord: i64,
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
    let checked: Vec<Capacity> = diesel::sql_query(
        "SELECT t.ord, ((i.total - i.reserved) * i.allocation_ratio)::float8 AS capacity,
                i.min_unit, i.max_unit, i.step_size,
                (SELECT COALESCE(sum(a.used), 0)::bigint FROM allocations a
                  WHERE a.resource_provider_id = t.p AND a.resource_class_id = t.c) AS used
           FROM unnest($1::bigint[], $2::int[]) WITH ORDINALITY AS t(p, c, ord)
           LEFT JOIN inventories i ON i.resource_provider_id = t.p AND i.resource_class_id = t.c
          ORDER BY t.ord",
    )
    .bind::<Array<BigInt>, _>(&rows.provider_ids)
    .bind::<Array<Integer>, _>(&rows.class_ids)
    .load(conn)?;
    for row in checked {
        let index = usize::try_from(row.ord - 1).unwrap_or(usize::MAX);
        let (Some(provider), Some(class), Some(amount)) = (
            rows.providers.get(index).copied(),
            rows.classes.get(index).cloned(),
            rows.amounts.get(index).copied(),
        ) else {
            continue;
        };
        let (Some(capacity), Some(min_unit), Some(max_unit), Some(step_size)) =
            (row.capacity, row.min_unit, row.max_unit, row.step_size)
        else {
            return Err(AllocationError::NoInventory { class, provider });
        };
        if amount < min_unit || amount > max_unit || amount % step_size.max(1) != 0 {
            return Err(AllocationError::Constraint { class, provider });
        }
        if row.used as f64 > capacity {
            return Err(AllocationError::Capacity { class, provider });
        }
    }
    Ok(())
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
