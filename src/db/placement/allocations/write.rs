//! The statements of `replace_allocations`, each for every consumer of a write at once: lock
//! and clear the consumers, create the project, user and type names seen for the first time,
//! and write the consumers and their allocations while checking capacity.

use std::collections::{BTreeMap, BTreeSet};

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Double, Integer, Nullable, Text, Uuid as SqlUuid};

use super::{AllocationError, ConsumerAllocations};
use crate::db::DbError;
use crate::domain::identity::{ConsumerUuid, ProviderId, ProviderUuid};

/// A consumer as the clearing statement finds it, with the ids of its project, user and type
/// names when those exist.
#[derive(QueryableByName)]
pub(super) struct ConsumerState {
    #[diesel(sql_type = BigInt)]
    ord: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(super) generation: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    project_id: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    user_id: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    type_id: Option<i64>,
}

/// Locks every consumer of `writes` (in uuid order) and clears its allocations; returns what
/// it found of each, in the order of `writes`.
pub(super) fn clear_consumers(
    conn: &mut PgConnection,
    writes: &[ConsumerAllocations],
) -> Result<Vec<ConsumerState>, AllocationError> {
    let uuids: Vec<ConsumerUuid> = writes.iter().map(|write| write.consumer).collect();
    let projects: Vec<&str> = writes.iter().map(|write| write.project.as_str()).collect();
    let users: Vec<&str> = writes.iter().map(|write| write.user.as_str()).collect();
    let kinds: Vec<Option<&str>> = writes
        .iter()
        .map(|write| write.consumer_type.as_deref())
        .collect();
    let mut found: Vec<ConsumerState> = crate::db::cached::query(
        "WITH input AS (
             SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[])
                    WITH ORDINALITY AS t(uuid, project, usr, kind, ord)),
              locked AS (SELECT uuid, generation FROM consumers
                          WHERE uuid IN (SELECT uuid FROM input) ORDER BY uuid FOR UPDATE),
              -- Reads `locked`, so the consumers are locked before their allocations.
              cleared AS (DELETE FROM allocations
                           WHERE consumer_id IN (SELECT uuid FROM input)
                             AND (SELECT count(*) FROM locked) >= 0)
         SELECT i.ord, l.generation, p.id::bigint AS project_id, u.id::bigint AS user_id,
                ct.id::bigint AS type_id
           FROM input i
           LEFT JOIN locked l ON l.uuid = i.uuid
           LEFT JOIN projects p ON p.external_id = i.project
           LEFT JOIN users u ON u.external_id = i.usr
           LEFT JOIN consumer_types ct ON ct.name = i.kind
          ORDER BY i.ord",
    )
    .bind::<Array<SqlUuid>, _>(&uuids)
    .bind::<Array<Text>, _>(&projects)
    .bind::<Array<Text>, _>(&users)
    .bind::<Array<Nullable<Text>>, _>(&kinds)
    .load(conn)?;
    found.sort_by_key(|state| state.ord);
    Ok(found)
}

/// One consumer to write, with the ids of its names.
pub(super) struct Named<'a> {
    pub(super) allocations: &'a ConsumerAllocations,
    exists: bool,
    project: i64,
    user: i64,
    kind: Option<i64>,
}

/// The consumers `filled` as rows to write: the ids of their project, user and type names,
/// creating those seen for the first time (one statement per kind of name, only then).
pub(super) fn name_ids<'a>(
    conn: &mut PgConnection,
    filled: Vec<(&'a ConsumerAllocations, ConsumerState)>,
) -> Result<Vec<Named<'a>>, DbError> {
    let missing = |pick: &dyn Fn(&ConsumerAllocations, &ConsumerState) -> Option<String>| {
        filled
            .iter()
            .filter_map(|(write, state)| pick(write, state))
            .collect::<BTreeSet<String>>()
    };
    let projects = ensure_named(
        conn,
        "projects",
        "external_id",
        &missing(&|write, state| state.project_id.is_none().then(|| write.project.clone())),
    )?;
    let users = ensure_named(
        conn,
        "users",
        "external_id",
        &missing(&|write, state| state.user_id.is_none().then(|| write.user.clone())),
    )?;
    let kinds = ensure_named(
        conn,
        "consumer_types",
        "name",
        &missing(
            &|write, state| match (&write.consumer_type, state.type_id) {
                (Some(name), None) => Some(name.clone()),
                _ => None,
            },
        ),
    )?;
    Ok(filled
        .into_iter()
        .map(|(write, state)| Named {
            allocations: write,
            exists: state.generation.is_some(),
            project: state
                .project_id
                .or_else(|| projects.get(&write.project).copied())
                .unwrap_or_default(),
            user: state
                .user_id
                .or_else(|| users.get(&write.user).copied())
                .unwrap_or_default(),
            kind: write
                .consumer_type
                .as_ref()
                .and_then(|name| state.type_id.or_else(|| kinds.get(name).copied())),
        })
        .collect())
}

/// The ids of the rows of `table` whose `column` is each of `values`, creating those missing,
/// in one statement (none when `values` is empty).
fn ensure_named(
    conn: &mut PgConnection,
    table: &str,
    column: &str,
    values: &BTreeSet<String>,
) -> Result<BTreeMap<String, i64>, DbError> {
    #[derive(QueryableByName)]
    struct Named {
        #[diesel(sql_type = BigInt)]
        id: i64,
        #[diesel(sql_type = Text)]
        value: String,
    }
    if values.is_empty() {
        return Ok(BTreeMap::new());
    }
    let values: Vec<&String> = values.iter().collect();
    let rows: Vec<Named> = diesel::sql_query(format!(
        "INSERT INTO {table} ({column}) SELECT unnest($1::text[]) ORDER BY 1
         ON CONFLICT ({column}) DO UPDATE SET {column} = EXCLUDED.{column}
         RETURNING id::bigint AS id, {column}::text AS value"
    ))
    .bind::<Array<Text>, _>(&values)
    .load(conn)?;
    Ok(rows.into_iter().map(|row| (row.value, row.id)).collect())
}

/// Every allocation to write, as columns for one statement (consumers by their index).
#[derive(Debug, Default)]
pub(super) struct AllocationRows {
    consumers: Vec<usize>,
    provider_ids: Vec<ProviderId>,
    providers: Vec<ProviderUuid>,
    classes: Vec<String>,
    amounts: Vec<i32>,
}

impl AllocationRows {
    pub(super) fn push(
        &mut self,
        consumer: usize,
        provider_id: ProviderId,
        provider: ProviderUuid,
        class: &str,
        amount: i32,
    ) {
        self.consumers.push(consumer);
        self.provider_ids.push(provider_id);
        self.providers.push(provider);
        self.classes.push(class.to_owned());
        self.amounts.push(amount);
    }
}

/// The statement of `write_and_check`: $1–$4 the allocations (consumer, provider id, class
/// name, amount), $5–$8 the consumers to update, $9–$12 those to insert (uuid, project id,
/// user id, type id).
const WRITE_AND_CHECK: &str = concat!(
    "WITH updated AS (
             UPDATE consumers c SET project_id = v.project, user_id = v.usr,
                    generation = c.generation + 1, updated_at = now(),
                    consumer_type_id = COALESCE(v.kind::int, c.consumer_type_id)
               FROM unnest($5::uuid[], $6::bigint[], $7::bigint[], $8::bigint[])
                    AS v(uuid, project, usr, kind)
              WHERE c.uuid = v.uuid),
         inserted AS (
             INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type_id)
             SELECT v.uuid, v.project, v.usr, 1, v.kind::int
               FROM unnest($9::uuid[], $10::bigint[], $11::bigint[], $12::bigint[])
                    AS v(uuid, project, usr, kind)),
         wanted AS (
             SELECT t.c, t.p, t.n, t.ord, rc.id AS class_id
               FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::int[])
                    WITH ORDINALITY AS t(c, p, name, n, ord)
               LEFT JOIN resource_classes rc ON rc.name = t.name),
         written AS (
             INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
             SELECT p, c, class_id, n FROM wanted WHERE class_id IS NOT NULL),
         others AS (
             SELECT a.resource_provider_id AS p, a.resource_class_id AS class_id,
                    sum(a.used)::bigint AS used
               FROM allocations a
               JOIN (SELECT DISTINCT p, class_id FROM wanted) k
                 ON k.p = a.resource_provider_id AND k.class_id = a.resource_class_id
              GROUP BY 1, 2)
         SELECT w.ord, w.class_id,
                ",
    crate::db::placement::capacity!("i"),
    " AS capacity,
                i.min_unit, i.max_unit, i.step_size,
                (COALESCE(o.used, 0)
                 + sum(w.n) OVER (PARTITION BY w.p, w.class_id ORDER BY w.ord))::bigint AS used
           FROM wanted w
           LEFT JOIN inventories i
             ON i.resource_provider_id = w.p AND i.resource_class_id = w.class_id
           LEFT JOIN others o ON o.p = w.p AND o.class_id = w.class_id
          ORDER BY w.ord"
);

/// Writes the consumers (updated when they exist, inserted when not — where a racing request
/// that created one first makes the insert fail) and every allocation, and checks in the same
/// statement that each class is known and has inventory on its provider, that each amount
/// meets min_unit, max_unit and step_size, and that usage — the other consumers' plus the
/// amounts written up to this one, in order — stays within (total − reserved) ×
/// allocation_ratio. Refuses at the first failure, in the order of `rows`.
pub(super) fn write_and_check(
    conn: &mut PgConnection,
    consumers: &[Named],
    rows: &AllocationRows,
) -> Result<(), AllocationError> {
    let (old, old_projects, old_users, old_kinds) = columns(consumers, true);
    let (new, new_projects, new_users, new_kinds) = columns(consumers, false);
    let row_consumers: Vec<ConsumerUuid> = rows
        .consumers
        .iter()
        .map(|index| consumers[*index].allocations.consumer)
        .collect();
    let checked: Result<Vec<Capacity>, DbError> = crate::db::cached::query(WRITE_AND_CHECK)
        .bind::<Array<SqlUuid>, _>(&row_consumers)
        .bind::<Array<BigInt>, _>(&rows.provider_ids)
        .bind::<Array<Text>, _>(&rows.classes)
        .bind::<Array<Integer>, _>(&rows.amounts)
        .bind::<Array<SqlUuid>, _>(&old)
        .bind::<Array<BigInt>, _>(&old_projects)
        .bind::<Array<BigInt>, _>(&old_users)
        .bind::<Array<Nullable<BigInt>>, _>(&old_kinds)
        .bind::<Array<SqlUuid>, _>(&new)
        .bind::<Array<BigInt>, _>(&new_projects)
        .bind::<Array<BigInt>, _>(&new_users)
        .bind::<Array<Nullable<BigInt>>, _>(&new_kinds)
        .load(conn)
        .map_err(DbError::from);
    let checked = match checked {
        // Another request wrote a consumer after this one read it (a new consumer both saw
        // missing): the consumer's row or its allocations already exist.
        Err(DbError::UniqueViolation { constraint })
            if constraint.starts_with("consumers") || constraint.starts_with("allocations") =>
        {
            let consumer = new.first().copied().unwrap_or_default();
            return Err(AllocationError::ConsumerCreatedConcurrently(consumer));
        }
        other => other?,
    };
    checked
        .iter()
        .try_for_each(|row| refusal(row, rows).map_or(Ok(()), Err))
}

/// The consumers that exist (or not), as columns: uuid, project, user, type.
#[allow(clippy::type_complexity)]
fn columns(
    consumers: &[Named],
    exists: bool,
) -> (Vec<ConsumerUuid>, Vec<i64>, Vec<i64>, Vec<Option<i64>>) {
    let chosen: Vec<&Named> = consumers.iter().filter(|c| c.exists == exists).collect();
    (
        chosen.iter().map(|c| c.allocations.consumer).collect(),
        chosen.iter().map(|c| c.project).collect(),
        chosen.iter().map(|c| c.user).collect(),
        chosen.iter().map(|c| c.kind).collect(),
    )
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
