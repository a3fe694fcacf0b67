//! Key pairs: an OpenSSH public key imported for a user, within the user's quota of key pairs
//! (a name is the user's once; the check and the insert are one transaction under a lock).

use chrono::{DateTime, Utc};

use crate::db::keypairs::{KeyPairImport, NewKeyPair};
use crate::db::{self, DbError, Pool};
use crate::domain::compute::keypair::KEY_PAIRS_PER_USER;

/// A key pair to import, checked by the caller (its name, its key and the key's fingerprint).
#[derive(Debug, Clone)]
pub struct Import {
    pub name: String,
    pub user: String,
    pub fingerprint: String,
    pub public_key: String,
    pub kind: String,
}

/// Imports `pair`: created, or why not (the name exists, the user's quota is reached).
pub async fn import(
    pool: &Pool,
    pair: Import,
    now: DateTime<Utc>,
) -> Result<KeyPairImport, DbError> {
    db::transaction(pool, move |conn| {
        let new = NewKeyPair {
            name: &pair.name,
            user: &pair.user,
            fingerprint: &pair.fingerprint,
            public_key: &pair.public_key,
            kind: &pair.kind,
        };
        db::keypairs::create_keypair(conn, new, KEY_PAIRS_PER_USER, now)
    })
    .await
}
