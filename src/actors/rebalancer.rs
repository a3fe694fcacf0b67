//! `Rebalancer`: one leads per deployment, by a lease (`db::leases`) it renews every tick and
//! another process takes over once it has expired — a leader that dies, freezes or loses the
//! database loses it within one lease, even with its connections still open (invariant 13).
//! Each tick the leader reads service liveness and node owners, plans with the hash ring
//! (`domain::ring`) and sends one `ClaimNodes` and one `MoveNodes` to the `Registry`, both
//! carrying its lease epoch, so they commit only while it still leads; then it tells the new
//! owners.

pub use crate::config::RebalancerSettings;
use std::sync::PoisonError;
use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::HostDirectory;
use super::compute_host::NodesAssigned;
use super::registry::{ClaimNodes, MoveNodes, Registry};
use crate::db::leases::{self, LeaseToken};
use crate::db::node_groups::UnservedRow;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::failover;
use crate::domain::host::Host;
use crate::domain::node::ComputeNode;
use crate::domain::rebalance::{self, Judged, Outage, RingMemory, TickPlan, TickSettings};
use crate::domain::ring::Assignment;

mod ring_cell;
mod unserved;
use ring_cell::Published;
pub use ring_cell::RingCell;
use unserved::{note_unserved, report_unserved};

/// The ring as the leader last computed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RingView {
    pub version: i64,
    pub algorithm: &'static str,
    pub members: Vec<String>,
    pub leader: bool,
    /// The lease epoch this process leads under, when it leads.
    pub lease_epoch: Option<i64>,
}

/// The rebalancer actor.
pub struct Rebalancer {
    pool: Pool,
    clock: SharedClock,
    settings: RebalancerSettings,
    registry: Addr<Registry>,
    hosts: HostDirectory,
    /// This process's token, the holder of the lease.
    process: Uuid,
    /// The lease this process leads under, and until when, as last renewed.
    lease: Option<(LeaseToken, DateTime<Utc>)>,
    /// A database outage this rebalancer lived through: when it began and when it ended.
    outage: Outage,
    /// When the last tick started (a tick far later than the interval means this process
    /// could not tick: the database or the process itself stalled).
    last_tick: Option<DateTime<Utc>>,
    /// What the last tick leaves to the next (members, joining hosts, and the deployment as
    /// it was when the last plan came out empty: while it stays so, a tick plans nothing
    /// without reading every node's owner).
    memory: RingMemory,
    version: i64,
    /// What `GetRing` and `Actors::ring` read.
    published: RingCell,
}

impl Rebalancer {
    /// Returns a rebalancer; it competes for leadership on its first tick.
    pub fn new(
        pool: Pool,
        clock: SharedClock,
        settings: RebalancerSettings,
        registry: Addr<Registry>,
        hosts: HostDirectory,
        process: Uuid,
        published: RingCell,
    ) -> Rebalancer {
        Rebalancer {
            pool,
            clock,
            settings,
            registry,
            hosts,
            process,
            lease: None,
            outage: Outage::default(),
            last_tick: None,
            memory: RingMemory::default(),
            version: 0,
            published,
        }
    }
}

impl Actor for Rebalancer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if !self.settings.interval.is_zero() {
            ctx.run_interval(self.settings.interval, |_, ctx| ctx.notify(RebalanceNow));
        }
    }
}

/// Says why a tick failed.
#[derive(Debug, thiserror::Error)]
pub enum RebalanceError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("registry unavailable: {0}")]
    Mailbox(#[from] MailboxError),
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebalanceReport {
    /// Whether this rebalancer holds leadership (a follower does nothing else).
    pub leader: bool,
    pub ring_version: i64,
    /// Nodes that got their first owner.
    pub claimed: Vec<ComputeNode>,
    /// Nodes that changed owner.
    pub moved: Vec<ComputeNode>,
    /// The plan the tick carried out.
    pub plan: Vec<Assignment>,
}

/// Runs one rebalance tick now.
#[derive(Debug, Message)]
#[rtype(result = "Result<RebalanceReport, RebalanceError>")]
pub struct RebalanceNow;

/// What the blocking part of a tick decided.
struct Decision {
    /// The lease this process leads under (`None`: it does not lead, and the tick is empty).
    lease: Option<LeaseToken>,
    tick: TickPlan,
    /// Set when reaching the database took so long that the hosts' heartbeats may have been
    /// held up too: the tick judged nobody.
    stalled: bool,
    /// The hosts as read for this tick (for the failover log).
    hosts: Vec<Host>,
    /// The groups no live host served before this tick, when the tick changed them.
    unserved_before: Option<Vec<UnservedRow>>,
}

impl Handler<RebalanceNow> for Rebalancer {
    type Result = AtomicResponse<Self, Result<RebalanceReport, RebalanceError>>;

    fn handle(&mut self, _: RebalanceNow, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        self.note_late_tick(now);
        let pool = self.pool.clone();
        let clock = self.clock.clone();
        let (settings, process, outage) = (self.settings, self.process, self.outage);
        let memory = self.memory.clone();
        let registry = self.registry.clone();
        let previous_version = self.version;
        AtomicResponse::new(Box::pin(
            async move {
                let previous_members = memory.members.clone();
                let decision = actix_rt::task::spawn_blocking(move || {
                    decide(&pool, (process, &clock), now, settings, outage, memory)
                })
                .await
                .map_err(|_| DbError::Canceled)??;
                let version = if decision.tick.memory.members != previous_members {
                    previous_version + 1
                } else {
                    previous_version
                };
                let (claimed, moved) = carry_out(&registry, &decision, version).await?;
                Ok::<_, RebalanceError>(Carried {
                    decision,
                    claimed,
                    moved,
                    version,
                })
            }
            .into_actor(self)
            .map(move |result, actor, _| {
                let report = actor
                    .note_outcome(result, now)
                    .map(|carried| actor.finish_tick(carried, now));
                actor.publish();
                report
            }),
        ))
    }
}

/// A tick carried out: what was decided, and what the registry claimed and moved under the
/// ring `version`.
struct Carried {
    decision: Decision,
    claimed: Vec<ComputeNode>,
    moved: Vec<ComputeNode>,
    version: i64,
}

/// Sends the decided claims and moves to the registry under the lease (nothing when this
/// process does not lead); returns the compute nodes claimed and moved.
async fn carry_out(
    registry: &Addr<Registry>,
    decision: &Decision,
    version: i64,
) -> Result<(Vec<ComputeNode>, Vec<ComputeNode>), RebalanceError> {
    let Some(lease) = decision.lease else {
        return Ok((Vec::new(), Vec::new()));
    };
    let claims = decision.tick.claims.clone();
    let moves = decision.tick.moves.clone();
    let claimed = if claims.is_empty() {
        Vec::new()
    } else {
        registry.send(ClaimNodes { claims, lease }).await??
    };
    let moved = if moves.is_empty() {
        Vec::new()
    } else {
        let ring_version = version;
        registry
            .send(MoveNodes {
                moves,
                ring_version,
                lease,
            })
            .await??
    };
    Ok((claimed, moved))
}

impl Rebalancer {
    /// A tick far later than the interval means this process could not tick for a while:
    /// hosts are not judged for heartbeats they could not send meanwhile either.
    fn note_late_tick(&mut self, now: DateTime<Utc>) {
        let settings = self.settings;
        if let Some(previous) = self.last_tick.replace(now)
            && !settings.interval.is_zero()
            && (now - previous).to_std().unwrap_or_default() > stall_threshold(settings) * 2
        {
            log::warn!(
                "rebalancer did not tick for {:.1}s; hosts are given a down time to heartbeat",
                (now - previous).num_milliseconds() as f64 / 1000.0
            );
            let window = settings.liveness.service_down_time;
            self.set_outage(self.outage.gap(previous, now, window));
        }
    }

    /// Takes in a carried-out tick: leadership won or lost, the new ring memory, the owners
    /// told; returns the tick's report.
    fn finish_tick(&mut self, carried: Carried, now: DateTime<Utc>) -> RebalanceReport {
        let Carried {
            decision,
            claimed,
            moved,
            version,
        } = carried;
        if decision.stalled {
            log::warn!(
                "rebalancer reached the database only after a long wait; hosts are given a down time to heartbeat"
            );
            let window = self.settings.liveness.service_down_time;
            self.set_outage(self.outage.gap(now, self.clock.now(), window));
        }
        let Some(lease) = decision.lease else {
            if let Some((lost, _)) = self.lease.take() {
                log::warn!(
                    "leadership lost: this process no longer leads rebalancing (lease epoch {} \
                     expired or was taken over)",
                    lost.epoch
                );
                crate::metrics::count_leadership("lost");
            }
            self.memory.members.clear();
            self.memory.quiet = None;
            return RebalanceReport::default();
        };
        if self.lease.map(|(held, _)| held) != Some(lease) {
            log::info!(
                "leadership gained: this process now leads rebalancing (lease epoch {}, process {})",
                lease.epoch,
                self.process
            );
            crate::metrics::count_leadership("gained");
        }
        self.lease = Some((lease, now + self.settings.lease));
        self.report_departures(&decision, &moved, version);
        report_unserved(&decision);
        self.version = version;
        self.memory = decision.tick.memory;
        self.notify_owners(&claimed, &moved);
        if !moved.is_empty() || !claimed.is_empty() {
            log::info!(
                "ring v{version}: claimed {} nodes, moved {} nodes",
                claimed.len(),
                moved.len()
            );
        }
        RebalanceReport {
            leader: true,
            ring_version: version,
            claimed,
            moved,
            plan: decision.tick.plan,
        }
    }
}

impl Rebalancer {
    /// Keeps track of database outages, and of a lease lost to a refused write.
    fn note_outcome<T>(
        &mut self,
        result: Result<T, RebalanceError>,
        now: DateTime<Utc>,
    ) -> Result<T, RebalanceError> {
        match &result {
            Err(RebalanceError::Db(DbError::Unavailable(_) | DbError::Canceled)) => {
                if !self.outage.is_going_on() {
                    log::warn!(
                        "rebalancer cannot reach the database; hosts are not judged until it is back"
                    );
                }
                self.set_outage(
                    self.outage
                        .failed(now, self.settings.liveness.service_down_time),
                );
            }
            Err(RebalanceError::Db(DbError::LeadershipLost { epoch, .. })) => {
                log::warn!(
                    "leadership lost: this process no longer leads rebalancing (its writes under \
                     lease epoch {epoch} were refused)"
                );
                crate::metrics::count_leadership("lost");
                self.lease = None;
                self.memory.members.clear();
            }
            Err(_) => {}
            Ok(_) => {
                if self.outage.is_going_on() {
                    log::info!("rebalancer reaches the database again");
                }
                self.set_outage(self.outage.recovered(self.clock.now()));
            }
        }
        result
    }

    /// Logs each host the tick's moves left (one line: which host, why, since when, how many
    /// nodes went where, how long it took) and counts them in the metrics.
    fn report_departures(&self, decision: &Decision, moved: &[ComputeNode], version: i64) {
        if moved.is_empty() {
            return;
        }
        let now = self.clock.now();
        let liveness = self.settings.liveness;
        for departure in
            failover::departures(&decision.tick.moves, moved, &decision.hosts, &liveness)
        {
            crate::metrics::count_moves(departure.reason.name(), departure.moved());
            if let Some(took) = departure.duration(now) {
                crate::metrics::observe_failover(
                    departure.reason.name(),
                    took.num_milliseconds() as f64 / 1000.0,
                );
            }
            let line = departure.describe(now, version);
            if departure.is_failover() {
                log::warn!("{line}");
            } else {
                log::info!("{line}");
            }
        }
    }

    /// Tells each new owner running in this process which nodes it received.
    fn notify_owners(&self, claimed: &[ComputeNode], moved: &[ComputeNode]) {
        let mut by_host: std::collections::BTreeMap<&str, Vec<ComputeNode>> = Default::default();
        for node in claimed.iter().chain(moved) {
            by_host
                .entry(node.host.as_str())
                .or_default()
                .push(node.clone());
        }
        for (host, nodes) in by_host {
            if let Some(address) = self.hosts.get(host) {
                // Best effort: the host's periodic pass picks the nodes up anyway.
                address.do_send(NodesAssigned { nodes });
            }
        }
    }
}

/// Renews or takes the lease, then reads hosts (and, unless the deployment is as it was when
/// the last plan came out empty, every node's owner) and plans with `domain::rebalance`
/// (blocking).
fn decide(
    pool: &Pool,
    (process, clock): (Uuid, &SharedClock),
    now: DateTime<Utc>,
    settings: RebalancerSettings,
    outage: Outage,
    memory: RingMemory,
) -> Result<Decision, DbError> {
    let reaching = std::time::Instant::now();
    let mut conn = pool.get()?;
    let epoch = db::in_transaction(&mut conn, |conn| {
        leases::acquire_or_renew(conn, leases::REBALANCER, process, settings.lease, now)
    })?;
    let Some(epoch) = epoch else {
        return Ok(Decision::not_leading());
    };
    let lease = Some(LeaseToken {
        holder: process,
        epoch,
    });
    let hosts = db::hosts::list_hosts(&mut conn)?;
    let ownership = db::compute_nodes::ownership_counter(&mut conn)?;
    // (Only with a running timer: a deployment driven by messages has no tick to be late.)
    if !settings.interval.is_zero() && reaching.elapsed() > stall_threshold(settings) {
        // The database answered only after a long wait (a restart, a crash recovery): the
        // hosts' heartbeats were held up as well, so this tick judges nobody.
        let memory = RingMemory {
            quiet: None,
            ..memory
        };
        return Ok(Decision {
            lease,
            tick: TickPlan {
                memory,
                ..TickPlan::default()
            },
            stalled: true,
            hosts,
            unserved_before: None,
        });
    }
    let judged = rebalance::judge(&hosts, ownership, outage, &settings.liveness, now, &memory);
    let planned = matches!(judged, Judged::Changed(_));
    let tick = match judged {
        Judged::Unchanged(quiet) => rebalance::quiet_tick(quiet, &memory),
        Judged::Changed(quiet) => {
            let owners = db::compute_nodes::node_owners(&mut conn)?;
            drop(conn);
            let tick_settings = TickSettings {
                algorithm: settings.algorithm,
                max_join_moves: settings.max_join_moves,
            };
            rebalance::plan_tick(quiet, &owners, &memory, tick_settings)
        }
    };
    // A plan over a million nodes can outlast the lease: extended from now, unless another
    // process took it meanwhile (then nothing planned is written).
    let writes = !tick.claims.is_empty() || !tick.moves.is_empty();
    if writes && !extended(pool, lease, settings, clock)? {
        return Ok(Decision::not_leading());
    }
    let unserved_before = match lease.filter(|_| planned) {
        Some(token) => note_unserved(pool, token, &tick.memory.unserved, clock)?,
        None => None,
    };
    Ok(Decision {
        lease,
        tick,
        stalled: false,
        hosts,
        unserved_before,
    })
}

impl Decision {
    /// The decision of a process that does not lead: nothing.
    fn not_leading() -> Decision {
        Decision {
            lease: None,
            tick: TickPlan::default(),
            stalled: false,
            hosts: Vec::new(),
            unserved_before: None,
        }
    }
}

/// Extends the lease `token` from now before a tick writes its claims and moves; `false` when
/// another process took it meanwhile.
fn extended(
    pool: &Pool,
    token: Option<LeaseToken>,
    settings: RebalancerSettings,
    clock: &SharedClock,
) -> Result<bool, DbError> {
    let Some(token) = token else {
        return Ok(false);
    };
    let mut conn = pool.get()?;
    leases::extend(
        &mut conn,
        leases::REBALANCER,
        token,
        settings.lease,
        clock.now(),
    )
}

/// How long reaching the database may take before a tick counts as stalled: twice the tick
/// interval, and at least a second.
fn stall_threshold(settings: RebalancerSettings) -> Duration {
    (settings.interval * 2).max(Duration::from_secs(1))
}

/// Asks for the ring as this rebalancer last computed it.
#[derive(Debug, Message)]
#[rtype(result = "RingView")]
pub struct GetRing;

impl Handler<GetRing> for Rebalancer {
    type Result = MessageResult<GetRing>;

    fn handle(&mut self, _: GetRing, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.published.view(self.clock.now()))
    }
}

impl Rebalancer {
    /// Publishes the ring as this rebalancer holds it now.
    fn publish(&self) {
        *self
            .published
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Published {
            version: self.version,
            algorithm: self.settings.algorithm.name(),
            members: self.memory.members.clone(),
            lease: self.lease,
            outage: self.outage,
        };
    }

    /// Notes `outage` and publishes it.
    fn set_outage(&mut self, outage: Outage) {
        self.outage = outage;
        self.published
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .outage = outage;
    }
}

/// Gives up leadership (used when a process shuts down cleanly, and by tests): the lease
/// expires now, so another process leads at its next tick.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Resign;

impl Handler<Resign> for Rebalancer {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: Resign, _: &mut Self::Context) -> Self::Result {
        self.memory.members.clear();
        let held = self.lease.take();
        self.publish();
        let (pool, process, now) = (self.pool.clone(), self.process, self.clock.now());
        AtomicResponse::new(Box::pin(
            async move {
                if held.is_none() {
                    return;
                }
                let released = db::run(&pool, move |conn| {
                    leases::release(conn, leases::REBALANCER, process, now)
                })
                .await;
                match released {
                    Ok(()) => {
                        log::info!("leadership released: this process stops leading rebalancing")
                    }
                    Err(error) => log::warn!("could not release rebalancer leadership: {error}"),
                }
            }
            .into_actor(self),
        ))
    }
}
