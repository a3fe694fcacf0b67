//! What is used of what: per provider and resource class (the dashboard's overview) and per
//! class over every provider.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Uuid as SqlUuid};
use uuid::Uuid;

use crate::db::DbError;

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

/// The capacity and use of one resource class over every provider.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName, serde::Serialize)]
pub struct ClassUsage {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub resource_class: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub total: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub reserved: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub used: i64,
    /// How many providers have inventory of it.
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub providers: i64,
}

/// Sums inventory and allocations per resource class, over every provider, by class name.
pub fn usage_by_class(conn: &mut PgConnection) -> Result<Vec<ClassUsage>, DbError> {
    Ok(diesel::sql_query(
        "SELECT rc.name::text AS resource_class, inv.total, inv.reserved, inv.providers,
                COALESCE(used.used, 0)::bigint AS used
           FROM (SELECT resource_class_id, sum(total)::bigint AS total,
                        sum(reserved)::bigint AS reserved, count(*) AS providers
                   FROM inventories GROUP BY resource_class_id) inv
           JOIN resource_classes rc ON rc.id = inv.resource_class_id
           LEFT JOIN (SELECT resource_class_id, sum(used) AS used
                        FROM allocations GROUP BY resource_class_id) used
                  ON used.resource_class_id = inv.resource_class_id
          ORDER BY rc.name",
    )
    .load(conn)?)
}
