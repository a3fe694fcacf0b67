//! Placement inventories: each write checks the provider's generation by compare-and-swap in
//! the writing transaction (a stale one is a conflict) and never removes a class that
//! allocations use.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Text};

use super::DbError;

/// One inventory record.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub struct InventoryRow {
    #[diesel(sql_type = Text)]
    pub resource_class: String,
    #[diesel(sql_type = Integer)]
    pub total: i32,
    #[diesel(sql_type = Integer)]
    pub reserved: i32,
    #[diesel(sql_type = Integer)]
    pub min_unit: i32,
    #[diesel(sql_type = Integer)]
    pub max_unit: i32,
    #[diesel(sql_type = Integer)]
    pub step_size: i32,
    #[diesel(sql_type = Double)]
    pub allocation_ratio: f64,
}

/// Why an inventory write was refused.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("resource provider generation conflict")]
    GenerationConflict,
    #[error("{0}")]
    UnknownClass(String),
    #[error("Inventory for '{class}' on resource provider '{provider}' in use.")]
    InUse { class: String, provider: uuid::Uuid },
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for InventoryError {
    fn from(error: diesel::result::Error) -> Self {
        InventoryError::Db(DbError::from(error))
    }
}

/// Lists the inventory of provider `provider_id`, by class name.
pub fn list_inventories(
    conn: &mut PgConnection,
    provider_id: i64,
) -> Result<Vec<InventoryRow>, DbError> {
    Ok(diesel::sql_query(
        "SELECT rc.name::text AS resource_class, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size,
                i.allocation_ratio
           FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
          WHERE i.resource_provider_id = $1 ORDER BY rc.name",
    )
    .bind::<BigInt, _>(provider_id)
    .load(conn)?)
}

/// Bumps the generation of provider `provider_id` if it is still `expected`; returns the new one.
pub fn bump_generation(
    conn: &mut PgConnection,
    provider_id: i64,
    expected: Option<i64>,
) -> Result<i64, InventoryError> {
    #[derive(QueryableByName)]
    struct Generation {
        #[diesel(sql_type = BigInt)]
        generation: i64,
    }
    let bumped: Vec<Generation> = diesel::sql_query(
        "UPDATE resource_providers SET generation = generation + 1, updated_at = now()
          WHERE id = $1 AND ($2::bigint IS NULL OR generation = $2) RETURNING generation",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<diesel::sql_types::Nullable<BigInt>, _>(expected)
    .load(conn)?;
    bumped
        .first()
        .map(|row| row.generation)
        .ok_or(InventoryError::GenerationConflict)
}

fn class_id(conn: &mut PgConnection, name: &str) -> Result<Option<i32>, DbError> {
    Ok(super::placement_names::find_resource_class(conn, name)?.map(|class| class.id))
}

/// Replaces the whole inventory of a provider (at generation `generation`): classes missing
/// from `rows` are removed unless in use. Returns the new generation.
pub fn replace_inventories(
    conn: &mut PgConnection,
    provider: (i64, uuid::Uuid),
    generation: i64,
    rows: &[InventoryRow],
) -> Result<i64, InventoryError> {
    let (provider_id, provider_uuid) = provider;
    let new_generation = bump_generation(conn, provider_id, Some(generation))?;
    let names: Vec<&str> = rows.iter().map(|row| row.resource_class.as_str()).collect();
    let known = super::placement_names::class_ids(conn, &names)?;
    let mut ids = Vec::with_capacity(rows.len());
    for row in rows {
        let id = known.get(&row.resource_class).copied().ok_or_else(|| {
            InventoryError::UnknownClass(format!(
                "Unknown resource class in inventory for resource provider {provider_uuid}: {}",
                row.resource_class
            ))
        })?;
        ids.push(id);
    }
    #[derive(QueryableByName)]
    struct Used {
        #[diesel(sql_type = Text)]
        class: String,
    }
    // Removes the classes no longer listed, unless allocations use them: then nothing is
    // removed and the classes in use are named.
    let removed_in_use: Vec<Used> = diesel::sql_query(
        "WITH in_use AS (
             SELECT rc.id, rc.name::text AS class FROM resource_classes rc
              WHERE rc.id IN (SELECT a.resource_class_id FROM allocations a
                               WHERE a.resource_provider_id = $1
                                 AND NOT (a.resource_class_id = ANY($2)))),
         removed AS (
             DELETE FROM inventories
              WHERE resource_provider_id = $1 AND NOT (resource_class_id = ANY($2))
                AND NOT EXISTS (SELECT 1 FROM in_use))
         SELECT class FROM in_use ORDER BY id",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<diesel::sql_types::Array<Integer>, _>(&ids)
    .load(conn)?;
    if !removed_in_use.is_empty() {
        let classes: Vec<String> = removed_in_use.into_iter().map(|used| used.class).collect();
        return Err(InventoryError::InUse {
            class: classes.join(", "),
            provider: provider_uuid,
        });
    }
    upsert_many(conn, provider_id, &ids, rows)?;
    Ok(new_generation)
}

/// Writes several classes' inventory in one statement (`class_ids[i]` is `rows[i]`'s class).
pub fn upsert_many(
    conn: &mut PgConnection,
    provider_id: i64,
    class_ids: &[i32],
    rows: &[InventoryRow],
) -> Result<(), DbError> {
    use diesel::sql_types::Array;
    let column = |pick: fn(&InventoryRow) -> i32| rows.iter().map(pick).collect::<Vec<i32>>();
    let ratios: Vec<f64> = rows.iter().map(|row| row.allocation_ratio).collect();
    diesel::sql_query(
        "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit,
                                  step_size, allocation_ratio)
         SELECT $1, * FROM unnest($2::int[], $3::int[], $4::int[], $5::int[], $6::int[], $7::int[],
                                  $8::float8[])
         ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE
            SET total = EXCLUDED.total, reserved = EXCLUDED.reserved, min_unit = EXCLUDED.min_unit,
                max_unit = EXCLUDED.max_unit, step_size = EXCLUDED.step_size,
                allocation_ratio = EXCLUDED.allocation_ratio, updated_at = now()",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<Array<Integer>, _>(class_ids)
    .bind::<Array<Integer>, _>(column(|row| row.total))
    .bind::<Array<Integer>, _>(column(|row| row.reserved))
    .bind::<Array<Integer>, _>(column(|row| row.min_unit))
    .bind::<Array<Integer>, _>(column(|row| row.max_unit))
    .bind::<Array<Integer>, _>(column(|row| row.step_size))
    .bind::<Array<Double>, _>(&ratios)
    .execute(conn)?;
    Ok(())
}

/// Writes one class's inventory (insert or update).
pub fn upsert(
    conn: &mut PgConnection,
    provider_id: i64,
    class_id: i32,
    row: &InventoryRow,
) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit,
                                  step_size, allocation_ratio)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE
            SET total = EXCLUDED.total, reserved = EXCLUDED.reserved, min_unit = EXCLUDED.min_unit,
                max_unit = EXCLUDED.max_unit, step_size = EXCLUDED.step_size,
                allocation_ratio = EXCLUDED.allocation_ratio, updated_at = now()",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<Integer, _>(class_id)
    .bind::<Integer, _>(row.total)
    .bind::<Integer, _>(row.reserved)
    .bind::<Integer, _>(row.min_unit)
    .bind::<Integer, _>(row.max_unit)
    .bind::<Integer, _>(row.step_size)
    .bind::<Double, _>(row.allocation_ratio)
    .execute(conn)?;
    Ok(())
}

/// Writes one class's inventory at `generation` (not compared when `None`): `exists` says
/// whether the class must already have inventory (an update) or must not (an add). Returns
/// `false`, writing nothing, when that does not hold.
pub fn write_class_inventory(
    conn: &mut PgConnection,
    provider_id: i64,
    generation: Option<i64>,
    row: &InventoryRow,
    exists: bool,
) -> Result<bool, InventoryError> {
    let class_id = require_class(conn, &row.resource_class)?;
    let present = list_inventories(conn, provider_id)?
        .iter()
        .any(|current| current.resource_class == row.resource_class);
    if present != exists {
        return Ok(false);
    }
    bump_generation(conn, provider_id, generation)?;
    upsert(conn, provider_id, class_id, row)?;
    Ok(true)
}

/// Returns the id of resource class `name`, or the error Placement gives for it.
pub fn require_class(conn: &mut PgConnection, name: &str) -> Result<i32, InventoryError> {
    class_id(conn, name)?
        .ok_or_else(|| InventoryError::UnknownClass(format!("No such resource class {name}.")))
}

/// Deletes one class's inventory (refused while allocations use it); `false` when there was
/// none. Bumps the generation.
pub fn delete_inventory(
    conn: &mut PgConnection,
    provider: (i64, uuid::Uuid),
    class: &str,
) -> Result<bool, InventoryError> {
    let (provider_id, provider_uuid) = provider;
    let Some(id) = class_id(conn, class)? else {
        return Ok(false);
    };
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }
    let used: Count = diesel::sql_query(
        "SELECT count(*) AS count FROM allocations WHERE resource_provider_id = $1 AND resource_class_id = $2",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<Integer, _>(id)
    .get_result(conn)?;
    if used.count > 0 {
        return Err(InventoryError::InUse {
            class: class.to_owned(),
            provider: provider_uuid,
        });
    }
    let deleted = diesel::sql_query(
        "DELETE FROM inventories WHERE resource_provider_id = $1 AND resource_class_id = $2",
    )
    .bind::<BigInt, _>(provider_id)
    .bind::<Integer, _>(id)
    .execute(conn)?;
    if deleted > 0 {
        bump_generation(conn, provider_id, None)?;
    }
    Ok(deleted > 0)
}
