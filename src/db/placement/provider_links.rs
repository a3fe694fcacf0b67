//! A provider's traits and aggregates: read, and replace whole sets with the provider's
//! generation compared and bumped in the same transaction.

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use uuid::Uuid;

use crate::db::DbError;
use crate::domain::identity::{ProviderId, ProviderUuid};

/// Returns the trait names of provider `provider_id`, sorted.
pub fn provider_traits(
    conn: &mut PgConnection,
    provider_id: ProviderId,
) -> Result<Vec<String>, DbError> {
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let rows: Vec<Name> = diesel::sql_query(
        "SELECT t.name::text AS name FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
          WHERE rpt.resource_provider_id = $1 ORDER BY t.name",
    )
    .bind::<BigInt, _>(provider_id)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| row.name).collect())
}

/// What a generation-checked replacement of a provider's traits or aggregates did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkWrite {
    /// The set was replaced; the provider's new generation.
    Written(i64),
    NoSuchProvider,
    /// The provider's generation is not the one given (checked before the names).
    GenerationConflict,
    /// These trait names do not exist (sorted); nothing was written.
    NoSuchTraits(Vec<String>),
}

#[derive(QueryableByName)]
struct LinkOutcome {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    found: bool,
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    seen: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    generation: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::Nullable<Array<Text>>)]
    missing: Option<Vec<String>>,
}

impl LinkOutcome {
    fn into_write(self, expected: i64) -> LinkWrite {
        if !self.found {
            LinkWrite::NoSuchProvider
        } else if self.seen != Some(expected) {
            LinkWrite::GenerationConflict
        } else if let Some(missing) = self.missing {
            LinkWrite::NoSuchTraits(missing)
        } else {
            // Seen at the right generation, but another writer bumped it before the lock.
            self.generation
                .map_or(LinkWrite::GenerationConflict, LinkWrite::Written)
        }
    }
}

/// Replaces the traits of the provider with uuid `provider` at `generation`, in one statement
/// that writes only when the provider is at that generation and every name is a trait. Rows
/// that stay are left alone; the generation bump locks the provider row, so a concurrent
/// writer at the same generation finds it changed and writes nothing.
pub fn replace_traits(
    conn: &mut PgConnection,
    provider: ProviderUuid,
    generation: i64,
    names: &[String],
) -> Result<LinkWrite, DbError> {
    let outcome: LinkOutcome = crate::db::cached::query(concat!(
        "WITH target AS (SELECT id, generation FROM resource_providers WHERE uuid = $1),
         wanted AS (SELECT n AS name, t.id AS trait_id
                      FROM unnest($3::text[]) AS n LEFT JOIN traits t ON t.name = n),
         missing AS (SELECT array_agg(DISTINCT name ORDER BY name) AS names
                       FROM wanted WHERE trait_id IS NULL),
         bumped AS (
             ",
        crate::db::placement::bump_generation!("now()"),
        "
               FROM target t
              WHERE rp.id = t.id AND rp.generation = $2 AND (SELECT names FROM missing) IS NULL
             RETURNING rp.id, rp.generation),
         removed AS (
             DELETE FROM resource_provider_traits rpt USING bumped
              WHERE rpt.resource_provider_id = bumped.id
                AND rpt.trait_id NOT IN (SELECT trait_id FROM wanted WHERE trait_id IS NOT NULL)),
         added AS (
             INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
             SELECT DISTINCT bumped.id, w.trait_id FROM bumped, wanted w
             ON CONFLICT DO NOTHING)
         SELECT EXISTS (SELECT 1 FROM target) AS found,
                (SELECT generation FROM target) AS seen,
                (SELECT generation FROM bumped) AS generation,
                (SELECT names FROM missing) AS missing"
    ))
    .bind::<SqlUuid, _>(provider)
    .bind::<BigInt, _>(generation)
    .bind::<Array<Text>, _>(names)
    .get_result(conn)?;
    Ok(outcome.into_write(generation))
}

/// Replaces the aggregates of the provider with uuid `provider` at `generation` (1.19+), in one
/// statement, creating the aggregates that do not exist yet (only when the write goes ahead).
pub fn replace_aggregates(
    conn: &mut PgConnection,
    provider: ProviderUuid,
    generation: i64,
    aggregates: &[Uuid],
) -> Result<LinkWrite, DbError> {
    let outcome: LinkOutcome = crate::db::cached::query(concat!(
        "WITH target AS (SELECT id, generation FROM resource_providers WHERE uuid = $1),
         existing AS (SELECT id, uuid FROM placement_aggregates WHERE uuid = ANY($3)),
         bumped AS (
             ",
        crate::db::placement::bump_generation!("now()"),
        "
               FROM target t
              WHERE rp.id = t.id AND rp.generation = $2
             RETURNING rp.id, rp.generation),
         created AS (
             -- DO UPDATE (not NOTHING) returns the id of an aggregate another transaction
             -- created after this statement's snapshot; it only runs for uuids not seen here.
             INSERT INTO placement_aggregates (uuid)
             SELECT u FROM unnest($3::uuid[]) AS u
              WHERE EXISTS (SELECT 1 FROM bumped) AND u NOT IN (SELECT uuid FROM existing)
             ON CONFLICT (uuid) DO UPDATE SET uuid = EXCLUDED.uuid
             RETURNING id),
         chosen AS (SELECT id FROM existing UNION ALL SELECT id FROM created),
         removed AS (
             DELETE FROM resource_provider_aggregates rpa USING bumped
              WHERE rpa.resource_provider_id = bumped.id
                AND rpa.aggregate_id NOT IN (SELECT id FROM chosen)),
         added AS (
             INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
             SELECT bumped.id, c.id FROM bumped, chosen c
             ON CONFLICT DO NOTHING)
         SELECT EXISTS (SELECT 1 FROM target) AS found,
                (SELECT generation FROM target) AS seen,
                (SELECT generation FROM bumped) AS generation,
                NULL::text[] AS missing"
    ))
    .bind::<SqlUuid, _>(provider)
    .bind::<BigInt, _>(generation)
    .bind::<Array<SqlUuid>, _>(aggregates)
    .get_result(conn)?;
    Ok(outcome.into_write(generation))
}

/// Removes every trait of provider `provider_id` and bumps its generation (DELETE traits);
/// returns the new generation.
pub fn clear_provider_traits(
    conn: &mut PgConnection,
    provider_id: ProviderId,
) -> Result<i64, DbError> {
    let new_generation = super::providers::bump_generation(conn, provider_id, None)?
        .ok_or_else(|| DbError::NotFound(format!("resource provider {provider_id}")))?;
    crate::db::cached::query(
        "DELETE FROM resource_provider_traits WHERE resource_provider_id = $1",
    )
    .bind::<BigInt, _>(provider_id)
    .execute(conn)?;
    Ok(new_generation)
}

/// Returns the aggregate uuids of provider `provider_id`, sorted.
pub fn provider_aggregates(
    conn: &mut PgConnection,
    provider_id: ProviderId,
) -> Result<Vec<Uuid>, DbError> {
    #[derive(QueryableByName)]
    struct Aggregate {
        #[diesel(sql_type = SqlUuid)]
        uuid: Uuid,
    }
    let rows: Vec<Aggregate> = diesel::sql_query(
        "SELECT a.uuid FROM resource_provider_aggregates rpa JOIN placement_aggregates a ON a.id = rpa.aggregate_id
          WHERE rpa.resource_provider_id = $1 ORDER BY a.uuid",
    )
    .bind::<BigInt, _>(provider_id)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| row.uuid).collect())
}

/// Replaces the aggregates of provider `provider_id` as before microversion 1.19: no
/// generation check, and the generation stays (from 1.19, `replace_aggregates`). Creates the
/// aggregates that do not exist yet. Returns the provider's generation.
pub fn set_provider_aggregates(
    conn: &mut PgConnection,
    provider_id: ProviderId,
    aggregates: &[Uuid],
) -> Result<i64, DbError> {
    let generation = super::providers::generation_of(conn, provider_id)?;
    crate::db::cached::query("INSERT INTO placement_aggregates (uuid) SELECT unnest($1::uuid[]) ON CONFLICT (uuid) DO NOTHING")
        .bind::<Array<SqlUuid>, _>(aggregates)
        .execute(conn)?;
    crate::db::cached::query(
        "DELETE FROM resource_provider_aggregates WHERE resource_provider_id = $1",
    )
    .bind::<BigInt, _>(provider_id)
    .execute(conn)?;
    crate::db::cached::query(
        "INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
         SELECT $1, a.id FROM placement_aggregates a WHERE a.uuid = ANY($2)",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<Array<SqlUuid>, _>(aggregates)
    .execute(conn)?;
    Ok(generation)
}

/// The host's status trait, which the tracker's trait writes keep and `set_status_trait` sets.
pub const STATUS_DISABLED: &str = "COMPUTE_STATUS_DISABLED";

/// The resource tracker's batch write: makes each provider of `reports` carry exactly its
/// node's traits (as Nova's ironic driver sets a provider's traits from its node's), creating
/// the custom traits it needs and bumping those providers' generations. The status trait
/// `COMPUTE_STATUS_DISABLED` is the host's, not the node's: it is kept. Call only while holding
/// the nodes.
pub fn report_node_traits(
    conn: &mut PgConnection,
    reports: &[(ProviderUuid, Vec<String>)],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    if reports.is_empty() {
        return Ok(());
    }
    let providers: Vec<ProviderUuid> = reports.iter().map(|(uuid, _)| *uuid).collect();
    let (pair_providers, pair_traits): (Vec<ProviderUuid>, Vec<&str>) = reports
        .iter()
        .flat_map(|(uuid, traits)| traits.iter().map(move |name| (*uuid, name.as_str())))
        .unzip();
    super::names::ensure_traits(conn, &pair_traits, now)?;
    let targets: Vec<super::providers::Touched> = crate::db::cached::query(
        "WITH wanted AS (
             SELECT rp.id AS provider_id, t.id AS trait_id
               FROM unnest($2::uuid[], $3::text[]) AS w(provider, name)
               JOIN resource_providers rp ON rp.uuid = w.provider
               JOIN traits t ON t.name = w.name
         ),
         targets AS (SELECT id FROM resource_providers WHERE uuid = ANY($1)),
         removed AS (
             DELETE FROM resource_provider_traits rpt USING targets
              WHERE rpt.resource_provider_id = targets.id
                AND rpt.trait_id NOT IN (SELECT id FROM traits WHERE name = $4)
                AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.provider_id = rpt.resource_provider_id
                                                        AND w.trait_id = rpt.trait_id)
         ),
         added AS (
             INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
             SELECT provider_id, trait_id FROM wanted ON CONFLICT DO NOTHING
         )
         SELECT id FROM targets",
    )
    .bind::<Array<SqlUuid>, _>(&providers)
    .bind::<Array<SqlUuid>, _>(&pair_providers)
    .bind::<Array<Text>, _>(&pair_traits)
    .bind::<Text, _>(STATUS_DISABLED)
    .load(conn)?;
    let ids: Vec<ProviderId> = targets.iter().map(|row| row.id).collect();
    super::providers::bump_generations(conn, &ids, &[], now)?;
    Ok(())
}

/// Makes each provider of `providers` carry `COMPUTE_STATUS_DISABLED` exactly when its entry
/// says disabled (as Nova's compute service sets it on its nodes' providers), bumping the
/// generation of each provider that changed: two statements. Returns how many changed.
pub fn set_status_trait(
    conn: &mut PgConnection,
    providers: &[(ProviderId, bool)],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<usize, DbError> {
    use diesel::sql_types::Bool;
    if providers.is_empty() {
        return Ok(0);
    }
    let (ids, disabled): (Vec<ProviderId>, Vec<bool>) = providers.iter().copied().unzip();
    let changed: Vec<super::providers::Touched> = crate::db::cached::query(
        "WITH status AS (SELECT id FROM traits WHERE name = $3),
         scope AS (SELECT * FROM unnest($1::bigint[], $2::bool[]) AS s(provider_id, disabled)),
         removed AS (
             DELETE FROM resource_provider_traits rpt USING scope, status
              WHERE rpt.resource_provider_id = scope.provider_id AND rpt.trait_id = status.id
                AND NOT scope.disabled
             RETURNING rpt.resource_provider_id
         ),
         added AS (
             INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
             SELECT scope.provider_id, status.id FROM scope, status WHERE scope.disabled
             ON CONFLICT DO NOTHING
             RETURNING resource_provider_id
         )
         SELECT resource_provider_id AS id FROM removed
         UNION SELECT resource_provider_id AS id FROM added",
    )
    .bind::<Array<BigInt>, _>(&ids)
    .bind::<Array<Bool>, _>(&disabled)
    .bind::<Text, _>(STATUS_DISABLED)
    .load(conn)?;
    let ids: Vec<ProviderId> = changed.iter().map(|row| row.id).collect();
    super::providers::bump_generations(conn, &ids, &[], now)
}
