//! The groups no live host serves: recorded by the leader when a plan changes them, and
//! logged once per change.

use super::Decision;
use crate::db::leases::LeaseToken;
use crate::db::node_groups::UnservedRow;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::selection::UnservedGroup;

/// Records the groups no live host serves as the plan found them; returns those recorded
/// before when they changed. A lease that lapsed while planning records nothing (the next
/// leader does).
pub(super) fn note_unserved(
    pool: &Pool,
    token: LeaseToken,
    unserved: &[UnservedGroup],
    clock: &SharedClock,
) -> Result<Option<Vec<UnservedRow>>, DbError> {
    let mut conn = pool.get()?;
    let now = clock.now();
    let replaced = db::in_transaction(&mut conn, |conn| {
        db::node_groups::replace_unserved(conn, token, unserved, now)
    });
    match replaced {
        Err(DbError::LeadershipLost { .. }) => Ok(None),
        other => other,
    }
}

/// Logs a change of the groups no live host serves: one WARN naming every such group, or one
/// INFO when none is left.
pub(super) fn report_unserved(decision: &Decision) {
    let Some(before) = &decision.unserved_before else {
        return;
    };
    let now = &decision.tick.memory.unserved;
    if now.is_empty() {
        if !before.is_empty() {
            log::info!("every conductor group and shard with nodes has a live host again");
        }
        return;
    }
    let groups: Vec<String> = now.iter().map(UnservedGroup::to_string).collect();
    log::warn!(
        "no live host serves {}: these nodes stay with their owners (nothing deploys on them) \
         until a host of their group is up; they are not given to hosts of other groups",
        groups.join(", ")
    );
}
