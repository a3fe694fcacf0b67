//! A provider's traits and aggregates: read, and replace whole sets with the provider's
//! generation compared and bumped in the same transaction.

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use super::inventories::{InventoryError, bump_generation};

/// Returns the trait names of provider `provider_id`, sorted.
pub fn provider_traits(conn: &mut PgConnection, provider_id: i64) -> Result<Vec<String>, DbError> {
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

/// Returns which of `names` are not traits.
pub fn missing_traits(conn: &mut PgConnection, names: &[String]) -> Result<Vec<String>, DbError> {
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let rows: Vec<Name> = super::cached::query(
        "SELECT n AS name FROM unnest($1::text[]) AS n WHERE NOT EXISTS (SELECT 1 FROM traits t WHERE t.name = n) ORDER BY n",
    )
    .bind::<Array<Text>, _>(names)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| row.name).collect())
}

/// Replaces the traits of provider `provider_id` (at `generation`, when given); returns the
/// new generation.
pub fn set_provider_traits(
    conn: &mut PgConnection,
    provider_id: i64,
    generation: Option<i64>,
    names: &[String],
) -> Result<i64, InventoryError> {
    let new_generation = bump_generation(conn, provider_id, generation)?;
    super::cached::query("DELETE FROM resource_provider_traits WHERE resource_provider_id = $1")
        .bind::<BigInt, _>(provider_id)
        .execute(conn)?;
    super::cached::query(
        "INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
         SELECT $1, t.id FROM traits t WHERE t.name = ANY($2)",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<Array<Text>, _>(names)
    .execute(conn)?;
    Ok(new_generation)
}

/// Returns the aggregate uuids of provider `provider_id`, sorted.
pub fn provider_aggregates(
    conn: &mut PgConnection,
    provider_id: i64,
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

/// Replaces the aggregates of provider `provider_id`, creating aggregates that do not exist
/// yet. With `generation` (microversion 1.19+) it is compared and bumped; without, the
/// generation stays, as before 1.19. Returns the provider's generation afterwards.
pub fn set_provider_aggregates(
    conn: &mut PgConnection,
    provider_id: i64,
    generation: Option<i64>,
    aggregates: &[Uuid],
) -> Result<i64, InventoryError> {
    let new_generation = match generation {
        Some(expected) => bump_generation(conn, provider_id, Some(expected))?,
        None => super::providers::generation_of(conn, provider_id)?,
    };
    super::cached::query("INSERT INTO placement_aggregates (uuid) SELECT unnest($1::uuid[]) ON CONFLICT (uuid) DO NOTHING")
        .bind::<Array<SqlUuid>, _>(aggregates)
        .execute(conn)?;
    super::cached::query(
        "DELETE FROM resource_provider_aggregates WHERE resource_provider_id = $1",
    )
    .bind::<BigInt, _>(provider_id)
    .execute(conn)?;
    super::cached::query(
        "INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
         SELECT $1, a.id FROM placement_aggregates a WHERE a.uuid = ANY($2)",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<Array<SqlUuid>, _>(aggregates)
    .execute(conn)?;
    Ok(new_generation)
}
