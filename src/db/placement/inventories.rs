//! Placement inventories: each write checks the provider's generation by compare-and-swap in
//! the writing transaction (a stale one is a conflict) and never removes a class that
//! allocations use.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Text, Uuid as SqlUuid};

use crate::db::DbError;
use crate::domain::identity::{ProviderId, ProviderUuid};

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
    /// No resource class of this name.
    #[error("no resource class {0}")]
    UnknownClass(String),
    /// An inventory written for `provider` names a class that does not exist.
    #[error("inventory of provider {provider} names no resource class {class}")]
    UnknownInventoryClass {
        class: String,
        provider: ProviderUuid,
    },
    #[error("{class} on provider {provider} is allocated")]
    InUse {
        class: String,
        provider: ProviderUuid,
    },
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
    provider_id: ProviderId,
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

/// `providers::bump_generation`, a mismatch refused as a generation conflict.
pub fn bump_generation(
    conn: &mut PgConnection,
    provider_id: ProviderId,
    expected: Option<i64>,
) -> Result<i64, InventoryError> {
    super::providers::bump_generation(conn, provider_id, expected)?
        .ok_or(InventoryError::GenerationConflict)
}

fn class_id(conn: &mut PgConnection, name: &str) -> Result<Option<i32>, DbError> {
    Ok(super::names::find_resource_class(conn, name)?.map(|class| class.id))
}

/// Replaces the whole inventory of provider `provider` (a uuid) at generation `generation`, in
/// one statement that writes only when everything holds: classes missing from `rows` are
/// removed unless allocations use them. Returns the new generation, or `None` when there is no
/// such provider.
///
/// The checks read the statement's snapshot; the generation bump re-checks the generation on
/// the locked row, and every allocation against the provider bumps it, so a claim committed in
/// between turns into a generation conflict rather than a removed class in use.
pub fn replace_inventories(
    conn: &mut PgConnection,
    provider: ProviderUuid,
    generation: i64,
    rows: &[InventoryRow],
) -> Result<Option<i64>, InventoryError> {
    use diesel::sql_types::Array;
    let column = |pick: fn(&InventoryRow) -> i32| rows.iter().map(pick).collect::<Vec<i32>>();
    let names: Vec<&str> = rows.iter().map(|row| row.resource_class.as_str()).collect();
    let ratios: Vec<f64> = rows.iter().map(|row| row.allocation_ratio).collect();
    let outcome: ReplaceOutcome = crate::db::cached::query(REPLACE_INVENTORIES)
        .bind::<SqlUuid, _>(provider)
        .bind::<BigInt, _>(generation)
        .bind::<Array<Text>, _>(&names)
        .bind::<Array<Integer>, _>(column(|row| row.total))
        .bind::<Array<Integer>, _>(column(|row| row.reserved))
        .bind::<Array<Integer>, _>(column(|row| row.min_unit))
        .bind::<Array<Integer>, _>(column(|row| row.max_unit))
        .bind::<Array<Integer>, _>(column(|row| row.step_size))
        .bind::<Array<Double>, _>(&ratios)
        .get_result(conn)?;
    outcome.into_result(generation, provider)
}

/// `replace_inventories` in one statement: `$1` the provider, `$2` its expected generation,
/// `$3`…`$9` the rows as columns. Writes only when the provider is at that generation, every
/// class exists and no class allocations use is dropped.
const REPLACE_INVENTORIES: &str = concat!(
"WITH target AS (SELECT id, generation FROM resource_providers WHERE uuid = $1),
         wanted AS (
             SELECT t.*, rc.id AS class_id
               FROM unnest($3::text[], $4::int[], $5::int[], $6::int[], $7::int[], $8::int[],
                           $9::float8[]) AS t(name, total, reserved, min_unit, max_unit, step_size, ratio)
               LEFT JOIN resource_classes rc ON rc.name = t.name),
         unknown AS (SELECT min(name) AS name FROM wanted WHERE class_id IS NULL),
         in_use AS (
             SELECT string_agg(rc.name, ', ' ORDER BY rc.id) AS names FROM resource_classes rc
              WHERE rc.id IN (SELECT a.resource_class_id FROM allocations a JOIN target t
                                  ON a.resource_provider_id = t.id
                               WHERE a.resource_class_id NOT IN
                                     (SELECT class_id FROM wanted WHERE class_id IS NOT NULL))),
         bumped AS (
             ", crate::db::placement::bump_generation!("now()"), "
               FROM target t
              WHERE rp.id = t.id AND rp.generation = $2
                AND (SELECT name FROM unknown) IS NULL AND (SELECT names FROM in_use) IS NULL
             RETURNING rp.id, rp.generation),
         removed AS (
             DELETE FROM inventories i USING bumped
              WHERE i.resource_provider_id = bumped.id
                AND i.resource_class_id NOT IN (SELECT class_id FROM wanted)),
         written AS (
             INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,
                                      min_unit, max_unit, step_size, allocation_ratio)
             SELECT bumped.id, w.class_id, w.total, w.reserved, w.min_unit, w.max_unit,
                    w.step_size, w.ratio
               FROM bumped, wanted w
             ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE
                SET total = EXCLUDED.total, reserved = EXCLUDED.reserved,
                    min_unit = EXCLUDED.min_unit, max_unit = EXCLUDED.max_unit,
                    step_size = EXCLUDED.step_size, allocation_ratio = EXCLUDED.allocation_ratio,
                    updated_at = now()
             RETURNING 1)
         SELECT EXISTS (SELECT 1 FROM target) AS found,
                (SELECT generation FROM target) AS seen,
                (SELECT generation FROM bumped) AS generation,
                (SELECT name FROM unknown) AS unknown,
                (SELECT names FROM in_use) AS in_use,
                (SELECT count(*) FROM written) AS written"
);

/// What the `REPLACE_INVENTORIES` statement found and did.
#[derive(QueryableByName)]
struct ReplaceOutcome {
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    seen: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    generation: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    unknown: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    in_use: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    found: bool,
}

impl ReplaceOutcome {
    /// The new generation; `None` for no such provider; or why nothing was written.
    fn into_result(
        self,
        generation: i64,
        provider: ProviderUuid,
    ) -> Result<Option<i64>, InventoryError> {
        if !self.found {
            return Ok(None);
        }
        if self.seen != Some(generation) {
            return Err(InventoryError::GenerationConflict);
        }
        if let Some(class) = self.unknown {
            return Err(InventoryError::UnknownInventoryClass { class, provider });
        }
        if let Some(classes) = self.in_use {
            return Err(InventoryError::InUse {
                class: classes,
                provider,
            });
        }
        // Seen at the right generation, but another writer bumped it before the lock.
        self.generation
            .map(Some)
            .ok_or(InventoryError::GenerationConflict)
    }
}

/// Writes one class's inventory (insert or update).
pub fn upsert(
    conn: &mut PgConnection,
    provider_id: ProviderId,
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
    provider_id: ProviderId,
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
    class_id(conn, name)?.ok_or_else(|| InventoryError::UnknownClass(name.to_owned()))
}

/// Deletes one class's inventory (refused while allocations use it); `false` when there was
/// none. Bumps the generation.
pub fn delete_inventory(
    conn: &mut PgConnection,
    provider: (ProviderId, ProviderUuid),
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

/// The resource tracker's batch write: each (provider, one-class inventory) of `reports`
/// becomes that class's record on the provider (created with min_unit 1, max_unit = total,
/// step 1, ratio 1.0, as Nova's ironic driver reports a node), creating the classes it needs;
/// only records that differ are written and only their providers' generations bumped. Three
/// statements whatever the number. Call only while holding the nodes
/// (`compute_nodes::hold_owned`).
pub fn report_node_inventories(
    conn: &mut PgConnection,
    reports: &[(ProviderUuid, crate::domain::node::NodeInventory)],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DbError> {
    use diesel::sql_types::{Array, Timestamptz};
    if reports.is_empty() {
        return Ok(());
    }
    let providers: Vec<ProviderUuid> = reports.iter().map(|(uuid, _)| *uuid).collect();
    let classes: Vec<&str> = reports
        .iter()
        .map(|(_, inventory)| inventory.resource_class.as_str())
        .collect();
    let column = |pick: fn(&crate::domain::node::NodeInventory) -> i32| {
        reports
            .iter()
            .map(|(_, inventory)| pick(inventory))
            .collect::<Vec<i32>>()
    };
    super::names::ensure_resource_classes(conn, &classes)?;
    let written: Vec<super::providers::Touched> = crate::db::cached::query(
        "WITH wanted AS (
             SELECT rp.id AS provider_id, rc.id AS class_id, t.total, t.reserved
               FROM unnest($1::uuid[], $2::text[], $3::int[], $4::int[])
                    AS t(provider, class, total, reserved)
               JOIN resource_providers rp ON rp.uuid = t.provider
               JOIN resource_classes rc ON rc.name = t.class
         )
         INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,
                                  min_unit, max_unit, step_size, allocation_ratio, created_at)
         SELECT provider_id, class_id, total, reserved, 1, total, 1, 1.0, $5 FROM wanted
         ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE
            SET total = EXCLUDED.total, reserved = EXCLUDED.reserved,
                max_unit = EXCLUDED.max_unit, updated_at = EXCLUDED.created_at
          WHERE inventories.total <> EXCLUDED.total
             OR inventories.reserved <> EXCLUDED.reserved
         RETURNING resource_provider_id AS id",
    )
    .bind::<Array<SqlUuid>, _>(&providers)
    .bind::<Array<Text>, _>(&classes)
    .bind::<Array<Integer>, _>(column(|inventory| inventory.total))
    .bind::<Array<Integer>, _>(column(|inventory| inventory.reserved))
    .bind::<Timestamptz, _>(now)
    .load(conn)?;
    let ids: Vec<ProviderId> = written.iter().map(|row| row.id).collect();
    super::providers::bump_generations(conn, &ids, &[], now)?;
    Ok(())
}
