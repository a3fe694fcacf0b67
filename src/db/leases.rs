//! Leadership leases (invariant 13): a process leads while it holds a `leader_leases` row whose
//! `expires_at` is in the future. The leader renews the lease each tick; another process takes
//! it over only once it has expired, bumping its `epoch`. Every write a leader makes runs in a
//! transaction that first holds the row (`FOR SHARE`) at the epoch it leads under, so a
//! takeover waits for that write, and a leader that froze and woke after a takeover writes
//! nothing. Expiry is judged by the caller's clock: the process clock corrected to the
//! database's, or a manual clock in tests.

use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::DbError;

/// The rebalancer's leadership.
pub const REBALANCER: &str = "rebalancer";

/// What a leader's writes carry: who leads, and under which epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseToken {
    pub holder: Uuid,
    pub epoch: i64,
}

/// A lease as stored.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct Lease {
    #[diesel(sql_type = SqlUuid)]
    pub holder: Uuid,
    #[diesel(sql_type = BigInt)]
    pub epoch: i64,
    #[diesel(sql_type = Timestamptz)]
    pub expires_at: DateTime<Utc>,
}

/// Creates lease `name`, expired and held by nobody, unless it exists (leases other than the
/// rebalancer's are made on first use: one per Ironic listing filter).
pub fn ensure(conn: &mut PgConnection, name: &str) -> Result<(), DbError> {
    super::cached::query(
        "INSERT INTO leader_leases (name, holder, epoch, expires_at, acquired_at)
         VALUES ($1, '00000000-0000-0000-0000-000000000000', 0, '1970-01-01T00:00:00Z',
                 '1970-01-01T00:00:00Z')
         ON CONFLICT (name) DO NOTHING",
    )
    .bind::<Text, _>(name)
    .execute(conn)?;
    Ok(())
}

/// Renews lease `name` for `holder` when it holds it, or takes it over when it has expired;
/// returns the epoch `holder` now leads under, or `None` when another process holds it (or is
/// writing under it right now). Never waits for a lock. Run it in a transaction.
pub fn acquire_or_renew(
    conn: &mut PgConnection,
    name: &str,
    holder: Uuid,
    duration: Duration,
    now: DateTime<Utc>,
) -> Result<Option<i64>, DbError> {
    let current: Option<Lease> = diesel::sql_query(
        "SELECT holder, epoch, expires_at FROM leader_leases WHERE name = $1
            FOR UPDATE SKIP LOCKED",
    )
    .bind::<Text, _>(name)
    .get_result(conn)
    .optional()?;
    let Some(current) = current else {
        // Locked: the leader is writing under it (or a contender is taking it).
        return Ok(None);
    };
    let renewing = current.holder == holder && current.expires_at > now;
    let expired = current.expires_at <= now;
    if !renewing && !expired {
        return Ok(None);
    }
    let epoch = if renewing {
        current.epoch
    } else {
        current.epoch + 1
    };
    diesel::sql_query(
        "UPDATE leader_leases
            SET holder = $2, epoch = $3, expires_at = $4,
                acquired_at = CASE WHEN epoch = $3 THEN acquired_at ELSE $5 END
          WHERE name = $1",
    )
    .bind::<Text, _>(name)
    .bind::<SqlUuid, _>(holder)
    .bind::<BigInt, _>(epoch)
    .bind::<Timestamptz, _>(now + duration)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(Some(epoch))
}

/// Holds lease `name` for the rest of the transaction if `token` is current and unexpired at
/// `now`; `LeadershipLost` otherwise, and the caller writes nothing.
pub fn hold(
    conn: &mut PgConnection,
    name: &str,
    token: LeaseToken,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let held = diesel::sql_query(
        "SELECT holder, epoch, expires_at FROM leader_leases
          WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > $4
            FOR SHARE",
    )
    .bind::<Text, _>(name)
    .bind::<SqlUuid, _>(token.holder)
    .bind::<BigInt, _>(token.epoch)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    if held == 1 {
        Ok(())
    } else {
        Err(DbError::LeadershipLost {
            lease: name.to_owned(),
            epoch: token.epoch,
        })
    }
}

/// Extends lease `name` from `now` if `token` still holds it — even past its expiry, as long as
/// nobody took it over since (a takeover bumps the epoch): a leader whose planning outlasted
/// the lease (a million nodes) may still write what it planned, since no other leader can have
/// written in between. `false` when another holds it (or took it and gave it up). A takeover
/// under way holds the row: this waits for it, then finds the epoch changed.
pub fn extend(
    conn: &mut PgConnection,
    name: &str,
    token: LeaseToken,
    duration: Duration,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    let extended = diesel::sql_query(
        "UPDATE leader_leases SET expires_at = GREATEST(expires_at, $4)
          WHERE name = $1 AND holder = $2 AND epoch = $3",
    )
    .bind::<Text, _>(name)
    .bind::<SqlUuid, _>(token.holder)
    .bind::<BigInt, _>(token.epoch)
    .bind::<Timestamptz, _>(now + duration)
    .execute(conn)?;
    Ok(extended == 1)
}

/// Gives lease `name` up (it expires now) if `holder` holds it, so another process can lead
/// at once.
pub fn release(
    conn: &mut PgConnection,
    name: &str,
    holder: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "UPDATE leader_leases SET expires_at = $3
          WHERE name = $1 AND holder = $2 AND expires_at > $3",
    )
    .bind::<Text, _>(name)
    .bind::<SqlUuid, _>(holder)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}

/// Returns lease `name` as stored.
pub fn current(conn: &mut PgConnection, name: &str) -> Result<Option<Lease>, DbError> {
    Ok(
        diesel::sql_query("SELECT holder, epoch, expires_at FROM leader_leases WHERE name = $1")
            .bind::<Text, _>(name)
            .get_result(conn)
            .optional()?,
    )
}
