//! Key pairs, per user (the Compute API's `os-keypairs`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use super::DbError;
use super::schema::key_pairs;

/// A stored key pair.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = key_pairs)]
pub struct KeyPair {
    pub id: i64,
    pub name: String,
    pub user_id: String,
    pub fingerprint: String,
    pub public_key: String,
    #[diesel(column_name = type_)]
    pub kind: String,
    pub created_at: DateTime<Utc>,
}

/// A key pair to import, as checked.
#[derive(Debug, Clone, Copy)]
pub struct NewKeyPair<'a> {
    pub name: &'a str,
    pub user: &'a str,
    pub fingerprint: &'a str,
    pub public_key: &'a str,
    pub kind: &'a str,
}

/// What an import came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPairImport {
    Created(KeyPair),
    /// The user has a key pair of that name.
    Exists,
    /// The user holds `quota` key pairs already.
    OverQuota,
}

/// Imports a key pair, unless its user holds `quota` key pairs already (counted under a lock
/// on the user until the transaction ends, so that racing imports cannot pass the quota
/// together) or one of its name. Run it in a transaction (`db::transaction`).
pub fn create_keypair(
    conn: &mut PgConnection,
    pair: NewKeyPair<'_>,
    quota: i64,
    now: DateTime<Utc>,
) -> Result<KeyPairImport, DbError> {
    diesel::sql_query("SELECT pg_advisory_xact_lock(26, hashtext($1))")
        .bind::<diesel::sql_types::Text, _>(pair.user)
        .execute(conn)?;
    let held: i64 = key_pairs::table
        .filter(key_pairs::user_id.eq(pair.user))
        .count()
        .get_result(conn)?;
    if held >= quota {
        return Ok(KeyPairImport::OverQuota);
    }
    let created = diesel::insert_into(key_pairs::table)
        .values((
            key_pairs::name.eq(pair.name),
            key_pairs::user_id.eq(pair.user),
            key_pairs::fingerprint.eq(pair.fingerprint),
            key_pairs::public_key.eq(pair.public_key),
            key_pairs::type_.eq(pair.kind),
            key_pairs::created_at.eq(now),
        ))
        .on_conflict_do_nothing()
        .returning(KeyPair::as_returning())
        .get_result(conn)
        .optional()?;
    Ok(created.map_or(KeyPairImport::Exists, KeyPairImport::Created))
}

/// Key pair `name` of `user`.
pub fn get_keypair(
    conn: &mut PgConnection,
    user: &str,
    name: &str,
) -> Result<Option<KeyPair>, DbError> {
    Ok(key_pairs::table
        .filter(key_pairs::user_id.eq(user))
        .filter(key_pairs::name.eq(name))
        .select(KeyPair::as_select())
        .first(conn)
        .optional()?)
}

/// `user`'s key pairs by name, `limit` after `marker` (a name).
pub fn list_keypairs(
    conn: &mut PgConnection,
    user: &str,
    marker: Option<&str>,
    limit: i64,
) -> Result<Vec<KeyPair>, DbError> {
    let mut query = key_pairs::table
        .filter(key_pairs::user_id.eq(user))
        .into_boxed();
    if let Some(marker) = marker {
        query = query.filter(key_pairs::name.gt(marker.to_owned()));
    }
    Ok(query
        .order(key_pairs::name.asc())
        .limit(limit)
        .select(KeyPair::as_select())
        .load(conn)?)
}

/// Deletes key pair `name` of `user`; `false` when there is none.
pub fn delete_keypair(conn: &mut PgConnection, user: &str, name: &str) -> Result<bool, DbError> {
    Ok(diesel::delete(
        key_pairs::table
            .filter(key_pairs::user_id.eq(user))
            .filter(key_pairs::name.eq(name)),
    )
    .execute(conn)?
        == 1)
}
