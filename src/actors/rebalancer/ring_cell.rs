//! The ring as the rebalancer last published it, read by scrapes, pages and the scheduler
//! without a message to the actor.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};

use super::RingView;
use crate::db::leases::LeaseToken;
use crate::domain::rebalance::Outage;

/// The ring as this process's rebalancer last left it, readable without a message to the
/// actor: a scrape or a page never waits for a tick in progress (`Actors::ring`).
#[derive(Debug, Clone, Default)]
pub struct RingCell(pub(super) Arc<Mutex<Published>>);

#[derive(Debug, Clone, Default)]
pub(super) struct Published {
    pub(super) version: i64,
    pub(super) algorithm: &'static str,
    pub(super) members: Vec<String>,
    pub(super) lease: Option<(LeaseToken, DateTime<Utc>)>,
    pub(super) outage: Outage,
}

impl RingCell {
    /// The database outage the rebalancer last noted: what everyone showing or using a host's
    /// state credits, as the rebalancer does.
    pub fn outage(&self) -> Outage {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).outage
    }

    /// The ring at `now`: members and leadership only while the lease holds.
    pub fn view(&self, now: DateTime<Utc>) -> RingView {
        let published = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let lease = published
            .lease
            .filter(|(_, expires_at)| *expires_at > now)
            .map(|(lease, _)| lease);
        RingView {
            version: published.version,
            algorithm: published.algorithm,
            members: if lease.is_some() {
                published.members.clone()
            } else {
                Vec::new()
            },
            leader: lease.is_some(),
            lease_epoch: lease.map(|lease| lease.epoch),
        }
    }
}
