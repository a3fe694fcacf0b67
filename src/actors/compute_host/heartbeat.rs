//! A host's heartbeats and the lease they renew. The timer's heartbeats run as a task of their
//! own, outside the host's message queue: a tracker pass over 10,000 nodes that takes 20 s
//! (a host's first pass after a million-node start, on a busy machine) would otherwise hold
//! them up until the host fenced itself, and its pass then wrote nothing. The lease is shared:
//! a pass checks it when it writes, not when it started.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};

use super::{ComputeHost, HostError};
use crate::db::presence::Presence;
use crate::db::{self, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::host::Liveness;
use crate::domain::identity::HostName;

/// When a host's heartbeat was last recorded, shared by the host and its heartbeat task.
#[derive(Debug)]
pub struct HostLease {
    host: HostName,
    liveness: Liveness,
    last_ok: Mutex<Option<DateTime<Utc>>>,
    /// Whether the host's fence was logged (and its unfencing not yet).
    fenced: AtomicBool,
    /// Set when the host stops (a crash, a release): its heartbeat task ends.
    stopped: AtomicBool,
}

impl HostLease {
    pub fn new(host: &HostName, liveness: Liveness) -> HostLease {
        HostLease {
            host: host.clone(),
            liveness,
            last_ok: Mutex::new(None),
            fenced: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        }
    }

    /// The last heartbeat recorded.
    pub fn last_ok(&self) -> Option<DateTime<Utc>> {
        *self.last_ok.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the lease allows writes at `now`.
    pub fn holds(&self, now: DateTime<Utc>) -> bool {
        self.liveness.lease_holds(self.last_ok(), now)
    }

    /// Ends the heartbeat task.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Logs (once) that the host is fenced: its last recorded heartbeat is older than the
    /// fence time at `now`, so it writes nothing until one is recorded again.
    pub fn note_fence(&self, now: DateTime<Utc>) {
        let Some(last) = self.last_ok() else {
            return;
        };
        if self.liveness.lease_holds(Some(last), now) || self.fenced.swap(true, Ordering::SeqCst) {
            return;
        }
        crate::metrics::count_fence(self.host.as_str(), "fenced");
        log::warn!(
            "host {} fenced: no heartbeat recorded for {:.1}s (fence time {:.1}s); it writes \
             nothing until one is",
            self.host,
            (now - last).num_milliseconds() as f64 / 1000.0,
            self.liveness.fence_time.num_milliseconds() as f64 / 1000.0
        );
    }

    /// Takes in the heartbeat sent at `sent_at`, recorded: the lease renewed from then (a
    /// fenced host unfenced, `note_fence` having run for that same moment first).
    pub fn recorded(&self, sent_at: DateTime<Utc>) {
        let mut last = self.last_ok.lock().unwrap_or_else(PoisonError::into_inner);
        if self.fenced.swap(false, Ordering::SeqCst) {
            crate::metrics::count_fence(self.host.as_str(), "unfenced");
            log::info!(
                "host {} unfenced: heartbeat recorded again after {:.1}s without one",
                self.host,
                last.map(|last| (sent_at - last).num_milliseconds() as f64 / 1000.0)
                    .unwrap_or(0.0)
            );
        }
        // Heartbeats may finish out of order (the task's and a `Heartbeat` message's).
        *last = Some(last.map_or(sent_at, |last| last.max(sent_at)));
    }
}

/// What one heartbeat needs.
#[derive(Clone)]
pub struct Beat {
    pub pool: Pool,
    pub presence: Arc<Presence>,
    pub clock: SharedClock,
    pub lease: Arc<HostLease>,
}

impl Beat {
    /// Records a heartbeat now; `false` when another process runs the host now (or it is no
    /// longer registered).
    pub async fn beat(&self) -> Result<bool, HostError> {
        let sent_at = self.clock.now();
        self.lease.note_fence(sent_at);
        let (pool, presence, host) = (
            self.pool.clone(),
            self.presence.clone(),
            self.lease.host.clone(),
        );
        let recorded = db::run(&self.pool, move |conn| {
            presence.ensure(&pool)?;
            db::hosts::heartbeat(conn, &host, presence.holder(), sent_at)
        })
        .await?;
        if recorded {
            self.lease.recorded(sent_at);
        }
        Ok(recorded)
    }

    /// Heartbeats every `interval` until the host stops; tells the host after each recorded
    /// one (it settles builds whose end could not be written), and stops it when another
    /// process has taken it over.
    pub async fn run(self, interval: Duration, host: Addr<ComputeHost>) {
        let mut ticks = actix::clock::interval(interval);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if self.lease.is_stopped() || !host.connected() {
                return;
            }
            match self.beat().await {
                Ok(true) => host.do_send(HeartbeatRecorded),
                Ok(false) => {
                    host.do_send(LeaseLost);
                    return;
                }
                Err(error) => {
                    log::warn!("host {}: heartbeat not recorded: {error}", self.lease.host)
                }
            }
        }
    }
}

/// A heartbeat was recorded: builds whose end could not be written are settled now.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct HeartbeatRecorded;

impl Handler<HeartbeatRecorded> for ComputeHost {
    type Result = ();

    fn handle(&mut self, _: HeartbeatRecorded, ctx: &mut Self::Context) {
        if !self.unsettled.is_empty() {
            ctx.notify(super::SettleBuilds);
        }
    }
}

/// Another process runs the host now: this one stops running it.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct LeaseLost;

impl Handler<LeaseLost> for ComputeHost {
    type Result = ();

    fn handle(&mut self, _: LeaseLost, ctx: &mut Self::Context) {
        log::error!(
            "host {} lost its lease: another process runs it now (or it is no longer \
             registered); this process stops running it",
            self.name
        );
        ctx.stop();
    }
}
