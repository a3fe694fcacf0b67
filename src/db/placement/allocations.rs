//! Placement allocations: every consumer's allocations are replaced in one transaction that
//! locks the providers involved (in id order, so concurrent writers never deadlock), compares
//! consumer generations, and checks capacity — (total − reserved) × allocation_ratio, min_unit,
//! max_unit, step_size — against usage inside that same transaction. A consumer row exists
//! exactly while it has allocations.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Uuid as SqlUuid};

use crate::db::DbError;
use crate::domain::identity::{ConsumerUuid, ProviderId, ProviderUuid};
pub use crate::domain::placement::GenerationCheck;

/// The consumer type of an instance's allocations (Placement 1.38), as Nova writes it.
pub const INSTANCE_CONSUMER_TYPE: &str = "INSTANCE";

/// What one consumer asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerAllocations {
    pub consumer: ConsumerUuid,
    pub project: String,
    pub user: String,
    pub expected_generation: GenerationCheck,
    pub consumer_type: Option<String>,
    /// Provider → resource class → amount.
    pub allocations: BTreeMap<ProviderUuid, BTreeMap<String, i64>>,
}

/// Why allocations were refused (structured; the HTTP layer words it as Placement does).
#[derive(Debug, thiserror::Error)]
pub enum AllocationError {
    #[error("resource provider {0} not found")]
    ProviderMissing(ProviderUuid),
    #[error("no resource class {0}")]
    UnknownClass(String),
    #[error("provider {provider} has no inventory of {class}")]
    NoInventory {
        class: String,
        provider: ProviderUuid,
    },
    #[error("{class} on provider {provider} would exceed its capacity")]
    Capacity {
        class: String,
        provider: ProviderUuid,
    },
    #[error("{class} on provider {provider} would violate min_unit, max_unit or step_size")]
    Constraint {
        class: String,
        provider: ProviderUuid,
    },
    /// `stored`: the consumer's generation (`None`: no such consumer); `sent`: the one the
    /// write expected.
    #[error("consumer generation conflict: stored {stored:?}, expected {sent:?}")]
    ConsumerGeneration {
        stored: Option<i64>,
        sent: Option<i64>,
    },
    #[error("consumer {0} was created concurrently")]
    ConsumerCreatedConcurrently(ConsumerUuid),
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
pub fn delete_consumer(conn: &mut PgConnection, consumer: ConsumerUuid) -> Result<bool, DbError> {
    Ok(delete_consumers(conn, &[consumer])? > 0)
}

/// `delete_consumer` for several consumers in one statement (locked in uuid order); returns
/// how many allocations went.
fn delete_consumers(conn: &mut PgConnection, consumers: &[ConsumerUuid]) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let deleted: Count = crate::db::cached::query(
        "WITH consumer AS (SELECT uuid FROM consumers WHERE uuid = ANY($1)
                            ORDER BY uuid FOR UPDATE),
              gone AS (DELETE FROM allocations
                        WHERE consumer_id IN (SELECT uuid FROM consumer) RETURNING 1),
              dropped AS (DELETE FROM consumers WHERE uuid IN (SELECT uuid FROM consumer))
         SELECT count(*) AS n FROM gone",
    )
    .bind::<Array<SqlUuid>, _>(consumers)
    .get_result(conn)?;
    Ok(deleted.n)
}

mod write;

/// Replaces the allocations of every consumer of `writes`, all or nothing (run it in a
/// transaction), in a handful of statements however many consumers there are: every provider
/// touched is locked in id order first, so concurrent writers on a provider take turns and
/// each sees the usage the others committed; then every consumer is locked and cleared in one
/// statement, the generations compared, names created when new, emptied consumers deleted,
/// and every consumer and allocation written and checked in one last statement. A refusal
/// names the first consumer (in the order of `writes`) whose generation does not match, else
/// the first allocation that breaks capacity or its inventory's limits, counting the usage of
/// the consumers written before it.
pub fn replace_allocations(
    conn: &mut PgConnection,
    writes: &[ConsumerAllocations],
) -> Result<(), AllocationError> {
    let provider_ids = lock_providers(conn, writes)?;
    let found = write::clear_consumers(conn, writes)?;
    for (write, existing) in writes.iter().zip(&found) {
        if !write.expected_generation.accepts(existing.generation) {
            return Err(AllocationError::ConsumerGeneration {
                stored: existing.generation,
                sent: write.expected_generation.expected(),
            });
        }
    }
    let (emptied, filled): (Vec<_>, Vec<_>) = writes
        .iter()
        .zip(found)
        .partition(|(write, _)| write.allocations.values().all(BTreeMap::is_empty));
    let emptied: Vec<ConsumerUuid> = emptied.iter().map(|(write, _)| write.consumer).collect();
    if !emptied.is_empty() {
        delete_consumers(conn, &emptied)?;
    }
    if filled.is_empty() {
        return Ok(());
    }
    let consumers = write::name_ids(conn, filled)?;
    let mut rows = write::AllocationRows::default();
    for (index, consumer) in consumers.iter().enumerate() {
        for (provider, resources) in &consumer.allocations.allocations {
            let provider_id = provider_ids
                .get(provider)
                .copied()
                .ok_or(AllocationError::ProviderMissing(*provider))?;
            for (class, amount) in resources {
                let amount = i32::try_from(*amount).map_err(|_| AllocationError::Capacity {
                    class: class.clone(),
                    provider: *provider,
                })?;
                rows.push(index, provider_id, *provider, class, amount);
            }
        }
    }
    write::write_and_check(conn, &consumers, &rows)
}

/// Locks every provider the writes touch (asked for, or holding the consumers' current
/// allocations) through `providers::lock`, and bumps, as Placement, the generation of those
/// allocated against and of those a consumer written with no allocations at all is freed from
/// (not those other consumers only move away from). The consumers are read by later
/// statements, whose snapshots are taken after these locks are held, so they see what a writer
/// that held them committed.
fn lock_providers(
    conn: &mut PgConnection,
    writes: &[ConsumerAllocations],
) -> Result<BTreeMap<ProviderUuid, ProviderId>, AllocationError> {
    let consumers: Vec<ConsumerUuid> = writes.iter().map(|write| write.consumer).collect();
    let requested: Vec<ProviderUuid> = writes
        .iter()
        .flat_map(|write| write.allocations.keys().copied())
        .collect();
    let emptied: Vec<ConsumerUuid> = writes
        .iter()
        .filter(|write| write.allocations.values().all(BTreeMap::is_empty))
        .map(|write| write.consumer)
        .collect();
    let locked = super::providers::lock(conn, &requested, &consumers)?;
    let provider_ids: BTreeMap<ProviderUuid, ProviderId> =
        locked.iter().map(|row| (row.uuid, row.id)).collect();
    if let Some(missing) = requested
        .iter()
        .find(|uuid| !provider_ids.contains_key(uuid))
    {
        return Err(AllocationError::ProviderMissing(*missing));
    }
    let allocated_against: Vec<ProviderId> = requested
        .iter()
        .filter_map(|uuid| provider_ids.get(uuid).copied())
        .collect();
    super::providers::bump_generations(conn, &allocated_against, &emptied, chrono::Utc::now())?;
    Ok(provider_ids)
}

/// One allocation row, as the read APIs show them.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct AllocationRow {
    #[diesel(sql_type = SqlUuid)]
    pub consumer: ConsumerUuid,
    #[diesel(sql_type = SqlUuid)]
    pub provider: ProviderUuid,
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
    consumer: ConsumerUuid,
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
    provider: ProviderUuid,
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
    consumer: ConsumerUuid,
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
    provider: Option<ProviderUuid>,
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
