//! The providers an allocation-candidates request can choose from: every provider with an
//! inventory of each requested class, with all its classes (capacity and usage), and its
//! traits and aggregates when asked — a handful of statements whatever the number of providers.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Double, Integer, Nullable, Text, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;
use crate::domain::placement_filter::{ClassFacts, ProviderFacts};

/// One provider that has inventory of every requested class.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateProvider {
    pub id: i64,
    pub uuid: Uuid,
    pub parent: Option<Uuid>,
    pub root: Uuid,
    pub facts: ProviderFacts,
}

/// Why no candidates could be looked for.
#[derive(Debug, thiserror::Error)]
pub enum CandidatesError {
    #[error("No such resource class {0}.")]
    UnknownClass(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for CandidatesError {
    fn from(error: diesel::result::Error) -> Self {
        CandidatesError::Db(DbError::from(error))
    }
}

#[derive(QueryableByName)]
struct ClassRow {
    #[diesel(sql_type = Integer)]
    id: i32,
    #[diesel(sql_type = Text)]
    name: String,
}

#[derive(QueryableByName)]
struct InventoryRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    uuid: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    parent: Option<Uuid>,
    #[diesel(sql_type = SqlUuid)]
    root: Uuid,
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

/// Loads, in provider id order, every provider with inventory of each class of `classes`.
pub fn candidate_providers(
    conn: &mut PgConnection,
    classes: &[String],
    with_traits: bool,
    with_aggregates: bool,
) -> Result<Vec<CandidateProvider>, CandidatesError> {
    let known: Vec<ClassRow> = diesel::sql_query(
        "SELECT id, name::text AS name FROM resource_classes WHERE name = ANY($1)",
    )
    .bind::<Array<Text>, _>(classes)
    .load(conn)?;
    if let Some(missing) = classes
        .iter()
        .find(|name| !known.iter().any(|row| &row.name == *name))
    {
        return Err(CandidatesError::UnknownClass(missing.clone()));
    }
    let ids: Vec<i32> = known.iter().map(|row| row.id).collect();
    let rows: Vec<InventoryRow> = diesel::sql_query(
        "WITH wanted AS (
             SELECT resource_provider_id AS id FROM inventories
              WHERE resource_class_id = ANY($1)
              GROUP BY resource_provider_id HAVING count(*) = $2),
         usage AS (
             SELECT a.resource_provider_id AS id, a.resource_class_id, sum(a.used)::bigint AS used
               FROM allocations a JOIN wanted w ON w.id = a.resource_provider_id
              GROUP BY a.resource_provider_id, a.resource_class_id)
         SELECT rp.id, rp.uuid, parent.uuid AS parent, root.uuid AS root,
                rc.name::text AS class,
                ((i.total - i.reserved) * i.allocation_ratio)::float8 AS ceiling,
                COALESCE(u.used, 0)::bigint AS used, i.min_unit, i.max_unit, i.step_size
           FROM wanted w
           JOIN resource_providers rp ON rp.id = w.id
           JOIN resource_providers root ON root.id = COALESCE(rp.root_provider_id, rp.id)
           LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id
           JOIN inventories i ON i.resource_provider_id = rp.id
           JOIN resource_classes rc ON rc.id = i.resource_class_id
           LEFT JOIN usage u ON u.id = rp.id AND u.resource_class_id = i.resource_class_id
          ORDER BY rp.id",
    )
    .bind::<Array<Integer>, _>(&ids)
    .bind::<BigInt, _>(ids.len() as i64)
    .load(conn)?;
    let mut providers: Vec<CandidateProvider> = Vec::new();
    for row in rows {
        if providers.last().is_none_or(|last| last.id != row.id) {
            providers.push(CandidateProvider {
                id: row.id,
                uuid: row.uuid,
                parent: row.parent,
                root: row.root,
                facts: ProviderFacts::default(),
            });
        }
        if let Some(provider) = providers.last_mut() {
            provider.facts.classes.insert(
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
    let provider_ids: Vec<i64> = providers.iter().map(|provider| provider.id).collect();
    let position: BTreeMap<i64, usize> = provider_ids
        .iter()
        .enumerate()
        .map(|(index, id)| (*id, index))
        .collect();
    if with_traits && !providers.is_empty() {
        let traits: Vec<TraitRow> = diesel::sql_query(
            "SELECT rpt.resource_provider_id AS id, t.name::text AS name
               FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
              WHERE rpt.resource_provider_id = ANY($1)",
        )
        .bind::<Array<BigInt>, _>(&provider_ids)
        .load(conn)?;
        for row in traits {
            if let Some(index) = position.get(&row.id) {
                providers[*index].facts.traits.insert(row.name);
            }
        }
    }
    if with_aggregates && !providers.is_empty() {
        let members: Vec<MemberRow> = diesel::sql_query(
            "SELECT rpa.resource_provider_id AS id, a.uuid AS aggregate
               FROM resource_provider_aggregates rpa
               JOIN placement_aggregates a ON a.id = rpa.aggregate_id
              WHERE rpa.resource_provider_id = ANY($1)",
        )
        .bind::<Array<BigInt>, _>(&provider_ids)
        .load(conn)?;
        for row in members {
            if let Some(index) = position.get(&row.id) {
                providers[*index].facts.aggregates.insert(row.aggregate);
            }
        }
    }
    Ok(providers)
}
