//! Placement data the control plane itself needs: resource classes, allocations claimed for
//! instances (capacity and generations checked inside the writing transaction) and the
//! provider overview. The Placement HTTP API builds on these.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;

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

/// Creates resource class `name` unless it exists.
pub fn ensure_resource_class(conn: &mut PgConnection, name: &str) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO resource_classes (name) VALUES ($1) ON CONFLICT (name) DO NOTHING",
    )
    .bind::<Text, _>(name)
    .execute(conn)?;
    Ok(())
}

/// Who an allocation is for.
#[derive(Debug, Clone)]
pub struct Consumer {
    pub uuid: Uuid,
    pub project: String,
    pub user: String,
}

/// Claims `used` units of `resource_class` on provider `provider` for a new consumer: locks
/// the provider, checks capacity ((total - reserved) × ratio against current usage), writes
/// the consumer and the allocation and bumps the provider's generation — all or nothing.
pub fn claim_allocation(
    conn: &mut PgConnection,
    consumer: &Consumer,
    provider: Uuid,
    resource_class: &str,
    used: i32,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    #[derive(QueryableByName)]
    struct Capacity {
        #[diesel(sql_type = BigInt)]
        provider_id: i64,
        #[diesel(sql_type = Integer)]
        class_id: i32,
        #[diesel(sql_type = Double)]
        capacity: f64,
        #[diesel(sql_type = BigInt)]
        usage: i64,
    }
    let capacity: Option<Capacity> = diesel::sql_query(
        "SELECT rp.id AS provider_id, rc.id AS class_id,
                (inv.total - inv.reserved) * inv.allocation_ratio AS capacity,
                (SELECT COALESCE(sum(a.used), 0)::bigint FROM allocations a
                  WHERE a.resource_provider_id = rp.id AND a.resource_class_id = rc.id) AS usage
           FROM resource_providers rp
           JOIN inventories inv ON inv.resource_provider_id = rp.id
           JOIN resource_classes rc ON rc.id = inv.resource_class_id AND rc.name = $2
          WHERE rp.uuid = $1
            FOR UPDATE OF rp",
    )
    .bind::<SqlUuid, _>(provider)
    .bind::<Text, _>(resource_class)
    .get_result(conn)
    .optional()?;
    let Some(capacity) = capacity else {
        return Err(DbError::Conflict(format!(
            "resource provider {provider} has no {resource_class} inventory"
        )));
    };
    if (capacity.usage + i64::from(used)) as f64 > capacity.capacity {
        return Err(DbError::Conflict(format!(
            "resource provider {provider} has no free {resource_class}"
        )));
    }
    diesel::sql_query(
        "WITH p AS (INSERT INTO projects (external_id) VALUES ($2)
                    ON CONFLICT (external_id) DO UPDATE SET external_id = EXCLUDED.external_id
                    RETURNING id),
              u AS (INSERT INTO users (external_id) VALUES ($3)
                    ON CONFLICT (external_id) DO UPDATE SET external_id = EXCLUDED.external_id
                    RETURNING id)
         INSERT INTO consumers (uuid, project_id, user_id, generation, created_at)
         SELECT $1, p.id, u.id, 1, $4 FROM p, u",
    )
    .bind::<SqlUuid, _>(consumer.uuid)
    .bind::<Text, _>(&consumer.project)
    .bind::<Text, _>(&consumer.user)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    diesel::sql_query(
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, created_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind::<BigInt, _>(capacity.provider_id)
    .bind::<SqlUuid, _>(consumer.uuid)
    .bind::<Integer, _>(capacity.class_id)
    .bind::<Integer, _>(used)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    diesel::sql_query(
        "UPDATE resource_providers SET generation = generation + 1, updated_at = $2 WHERE id = $1",
    )
    .bind::<BigInt, _>(capacity.provider_id)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

/// Removes every allocation of `consumer` and the consumer itself, bumping the generations
/// of the providers it used. Returns how many allocations went.
pub fn delete_consumer_allocations(
    conn: &mut PgConnection,
    consumer: Uuid,
    now: DateTime<Utc>,
) -> Result<usize, DbError> {
    #[derive(QueryableByName)]
    struct Deleted {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }
    let deleted: Deleted = diesel::sql_query(
        "WITH gone AS (DELETE FROM allocations WHERE consumer_id = $1 RETURNING resource_provider_id),
              bumped AS (UPDATE resource_providers SET generation = generation + 1, updated_at = $2
                          WHERE id IN (SELECT resource_provider_id FROM gone))
         SELECT count(*) AS count FROM gone",
    )
    .bind::<SqlUuid, _>(consumer)
    .bind::<Timestamptz, _>(now)
    .get_result(conn)?;
    diesel::sql_query("DELETE FROM consumers WHERE uuid = $1")
        .bind::<SqlUuid, _>(consumer)
        .execute(conn)?;
    Ok(usize::try_from(deleted.count).unwrap_or(0))
}

/// A provider with its inventory and usage per resource class.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub struct ProviderUsage {
    #[diesel(sql_type = SqlUuid)]
    pub uuid: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = BigInt)]
    pub generation: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub resource_class: Option<String>,
    #[diesel(sql_type = Nullable<Integer>)]
    pub total: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    pub reserved: Option<i32>,
    #[diesel(sql_type = BigInt)]
    pub used: i64,
}

/// Lists providers with one row per inventory (or one bare row without inventory).
pub fn list_provider_usages(conn: &mut PgConnection) -> Result<Vec<ProviderUsage>, DbError> {
    Ok(diesel::sql_query(
        "SELECT rp.uuid, rp.name::text AS name, rp.generation, rc.name::text AS resource_class,
                inv.total, inv.reserved,
                COALESCE((SELECT sum(a.used) FROM allocations a
                           WHERE a.resource_provider_id = rp.id
                             AND a.resource_class_id = inv.resource_class_id), 0)::bigint AS used
           FROM resource_providers rp
           LEFT JOIN inventories inv ON inv.resource_provider_id = rp.id
           LEFT JOIN resource_classes rc ON rc.id = inv.resource_class_id
          ORDER BY rp.name, rc.name",
    )
    .load(conn)?)
}
