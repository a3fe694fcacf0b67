//! What allocation candidates choose from: a snapshot of every provider with inventory (its
//! classes with capacity and usage, traits, aggregates, tree), read in a handful of statements
//! and kept by the process until the change counter of migration 9 says a write committed.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Nullable, Text, Uuid as SqlUuid};
use uuid::Uuid;

use crate::db::DbError;
use crate::domain::candidates::Provider;
use crate::domain::placement_filter::{ClassFacts, ProviderFacts};

#[derive(QueryableByName)]
struct ProviderRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    uuid: Uuid,
    #[diesel(sql_type = Nullable<BigInt>)]
    parent: Option<i64>,
    #[diesel(sql_type = BigInt)]
    root: i64,
}

#[derive(QueryableByName)]
struct InventoryRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    class: String,
    #[diesel(sql_type = Double)]
    ceiling: f64,
    #[diesel(sql_type = BigInt)]
    used: i64,
    #[diesel(sql_type = Integer)]
    min_unit: i32,
    #[diesel(sql_type = Integer)]
    max_unit: i32,
    #[diesel(sql_type = Integer)]
    step_size: i32,
}

#[derive(QueryableByName)]
struct TraitRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    name: String,
}

#[derive(QueryableByName)]
struct MemberRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    aggregate: Uuid,
}

/// Everything allocation candidates read, as of one committed state (`epoch`).
#[derive(Debug, Default)]
pub struct PlacementSnapshot {
    /// The sum of the change counters when the snapshot was read.
    pub epoch: i64,
    /// Every provider, in id order; parents and roots are indexes into it.
    pub providers: Vec<Provider>,
    /// The index of every provider by uuid.
    pub by_uuid: HashMap<Uuid, usize>,
    pub classes: HashSet<String>,
    /// Every trait, with its id (summaries list a provider's traits in id order, as Placement).
    pub traits: HashMap<String, i64>,
}

/// The snapshot a process keeps, replaced when the change counter moves.
#[derive(Debug, Default)]
pub struct SnapshotCache(Mutex<Option<Arc<PlacementSnapshot>>>);

impl SnapshotCache {
    fn current(&self, epoch: i64) -> Option<Arc<PlacementSnapshot>> {
        let guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        guard.as_ref().filter(|kept| kept.epoch == epoch).cloned()
    }

    fn store(&self, snapshot: Arc<PlacementSnapshot>) {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if guard
            .as_ref()
            .is_none_or(|kept| kept.epoch < snapshot.epoch)
        {
            *guard = Some(snapshot);
        }
    }
}

/// Returns the current snapshot: the kept one when no write committed since it was read (one
/// small query), else a fresh one read in a single repeatable-read transaction.
pub fn snapshot(
    conn: &mut PgConnection,
    cache: &SnapshotCache,
) -> Result<Arc<PlacementSnapshot>, DbError> {
    if let Some(kept) = cache.current(epoch(conn)?) {
        return Ok(kept);
    }
    let fresh = Arc::new(crate::db::read_snapshot(conn, load_snapshot)?);
    cache.store(fresh.clone());
    Ok(fresh)
}

#[derive(QueryableByName)]
struct Epoch {
    #[diesel(sql_type = BigInt)]
    epoch: i64,
}

fn epoch(conn: &mut PgConnection) -> Result<i64, DbError> {
    let row: Epoch =
        crate::db::cached::query("SELECT sum(n)::bigint AS epoch FROM placement_epochs")
            .get_result(conn)?;
    Ok(row.epoch)
}

#[derive(QueryableByName)]
struct NameRow {
    #[diesel(sql_type = Text)]
    name: String,
}

fn load_snapshot(conn: &mut PgConnection) -> Result<PlacementSnapshot, DbError> {
    let epoch = epoch(conn)?;
    let (mut providers, position) = load_providers(conn)?;
    load_facts(conn, &mut providers, &position)?;
    let classes: Vec<NameRow> =
        diesel::sql_query("SELECT name::text AS name FROM resource_classes").load(conn)?;
    let trait_names: Vec<TraitRow> =
        diesel::sql_query("SELECT id::bigint AS id, name::text AS name FROM traits").load(conn)?;
    Ok(PlacementSnapshot {
        epoch,
        by_uuid: providers
            .iter()
            .enumerate()
            .map(|(index, provider)| (provider.uuid, index))
            .collect(),
        providers,
        classes: classes.into_iter().map(|row| row.name).collect(),
        traits: trait_names
            .into_iter()
            .map(|row| (row.name, row.id))
            .collect(),
    })
}

/// Every provider in id order, with its parent and root as positions in that order; and the
/// position of each provider id.
fn load_providers(
    conn: &mut PgConnection,
) -> Result<(Vec<Provider>, HashMap<i64, usize>), DbError> {
    let rows: Vec<ProviderRow> = diesel::sql_query(
        "SELECT id, uuid, parent_provider_id AS parent, COALESCE(root_provider_id, id) AS root
           FROM resource_providers ORDER BY id",
    )
    .load(conn)?;
    let position: HashMap<i64, usize> = rows
        .iter()
        .enumerate()
        .map(|(index, row)| (row.id, index))
        .collect();
    let providers = rows
        .iter()
        .enumerate()
        .map(|(index, row)| Provider {
            uuid: row.uuid,
            parent: row.parent.and_then(|parent| position.get(&parent).copied()),
            root: position.get(&row.root).copied().unwrap_or(index),
            facts: ProviderFacts::default(),
        })
        .collect();
    Ok((providers, position))
}

/// Fills in each provider's inventories (with their usage), traits and aggregates.
fn load_facts(
    conn: &mut PgConnection,
    providers: &mut [Provider],
    position: &HashMap<i64, usize>,
) -> Result<(), DbError> {
    let inventories: Vec<InventoryRow> = diesel::sql_query(concat!(
        "SELECT i.resource_provider_id AS id, rc.name::text AS class,
                ",
        crate::db::placement::capacity!("i"),
        " AS ceiling,
                COALESCE(u.used, 0)::bigint AS used, i.min_unit, i.max_unit, i.step_size
           FROM inventories i
           JOIN resource_classes rc ON rc.id = i.resource_class_id
           LEFT JOIN (SELECT resource_provider_id, resource_class_id, sum(used) AS used
                        FROM allocations GROUP BY resource_provider_id, resource_class_id) u
                  ON u.resource_provider_id = i.resource_provider_id
                 AND u.resource_class_id = i.resource_class_id"
    ))
    .load(conn)?;
    for row in inventories {
        if let Some(index) = position.get(&row.id) {
            providers[*index].facts.classes.insert(
                row.class,
                ClassFacts {
                    limit: row.ceiling,
                    used: row.used,
                    min_unit: row.min_unit.into(),
                    max_unit: row.max_unit.into(),
                    step_size: row.step_size.into(),
                },
            );
        }
    }
    let traits: Vec<TraitRow> = diesel::sql_query(
        "SELECT rpt.resource_provider_id AS id, t.name::text AS name
           FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id",
    )
    .load(conn)?;
    for row in traits {
        if let Some(index) = position.get(&row.id) {
            providers[*index].facts.traits.insert(row.name);
        }
    }
    let members: Vec<MemberRow> = diesel::sql_query(
        "SELECT rpa.resource_provider_id AS id, a.uuid AS aggregate
           FROM resource_provider_aggregates rpa
           JOIN placement_aggregates a ON a.id = rpa.aggregate_id",
    )
    .load(conn)?;
    for row in members {
        if let Some(index) = position.get(&row.id) {
            providers[*index].facts.aggregates.insert(row.aggregate);
        }
    }
    Ok(())
}
