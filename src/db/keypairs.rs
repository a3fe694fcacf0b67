//! Key pairs, per user (the Compute API's `os-keypairs`, issue 26).

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

/// Imports a key pair; `false` when the user has one of that name.
pub fn create_keypair(
    conn: &mut PgConnection,
    name: &str,
    user: &str,
    fingerprint: &str,
    public_key: &str,
    kind: &str,
    now: DateTime<Utc>,
) -> Result<Option<KeyPair>, DbError> {
    Ok(diesel::insert_into(key_pairs::table)
        .values((
            key_pairs::name.eq(name),
            key_pairs::user_id.eq(user),
            key_pairs::fingerprint.eq(fingerprint),
            key_pairs::public_key.eq(public_key),
            key_pairs::type_.eq(kind),
            key_pairs::created_at.eq(now),
        ))
        .on_conflict_do_nothing()
        .returning(KeyPair::as_returning())
        .get_result(conn)
        .optional()?)
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
