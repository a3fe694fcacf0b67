//! `Rebalancer`: one active per deployment, chosen by a PostgreSQL advisory lock held on a
//! connection of its own (a process that dies loses the lock with its connection). Each tick
//! it reads service liveness and node owners, plans with the hash ring (`domain::ring`) and
//! sends one `ClaimNodes` and one `MoveNodes` to the `Registry`; then it tells the new owners.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix::prelude::*;

use super::HostDirectory;
use super::compute_host::NodesAssigned;
use super::registry::{ClaimNodes, MoveNodes, Registry};
use crate::db::registry::{NodeClaim, NodeMove};
use crate::db::{self, DbError, Pool, PooledConnection};
use crate::domain::clock::SharedClock;
use crate::domain::host::Liveness;
use crate::domain::node::ComputeNode;
use crate::domain::ring::{Assignment, NodeOwner, PlanInput, RingAlgorithm, plan};

/// Advisory-lock key of rebalancer leadership.
const LEADER_LOCK_KEY: i64 = 0x7269_6e67_6c65_6164; // "ringlead"

/// How the rebalancer works.
#[derive(Debug, Clone, Copy)]
pub struct RebalancerSettings {
    /// Time between ticks; zero turns the timer off (tests send `RebalanceNow`).
    pub interval: Duration,
    pub liveness: Liveness,
    pub algorithm: RingAlgorithm,
    /// The most nodes a joining host pulls in one tick.
    pub max_join_moves: usize,
}

/// The ring as the leader last computed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RingView {
    pub version: i64,
    pub algorithm: &'static str,
    pub members: Vec<String>,
    pub leader: bool,
}

/// The rebalancer actor.
pub struct Rebalancer {
    pool: Pool,
    clock: SharedClock,
    settings: RebalancerSettings,
    registry: Addr<Registry>,
    hosts: HostDirectory,
    leader: Arc<Mutex<Option<PooledConnection>>>,
    members: Vec<String>,
    joining: BTreeSet<String>,
    version: i64,
}

impl Rebalancer {
    /// Returns a rebalancer; it competes for leadership on its first tick.
    pub fn new(
        pool: Pool,
        clock: SharedClock,
        settings: RebalancerSettings,
        registry: Addr<Registry>,
        hosts: HostDirectory,
    ) -> Rebalancer {
        Rebalancer {
            pool,
            clock,
            settings,
            registry,
            hosts,
            leader: Arc::new(Mutex::new(None)),
            members: Vec::new(),
            joining: BTreeSet::new(),
            version: 0,
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
    leader: bool,
    members: Vec<String>,
    joining: BTreeSet<String>,
    plan: Vec<Assignment>,
    epochs: std::collections::HashMap<String, i64>,
}

impl Handler<RebalanceNow> for Rebalancer {
    type Result = AtomicResponse<Self, Result<RebalanceReport, RebalanceError>>;

    fn handle(&mut self, _: RebalanceNow, _: &mut Self::Context) -> Self::Result {
        let pool = self.pool.clone();
        let leader = self.leader.clone();
        let now = self.clock.now();
        let settings = self.settings;
        let previous_members = self.members.clone();
        let previous_joining = self.joining.clone();
        let registry = self.registry.clone();
        let previous_version = self.version;
        AtomicResponse::new(Box::pin(
            async move {
                let members_before = previous_members.clone();
                let decision = actix_rt::task::spawn_blocking(move || {
                    decide(
                        &pool,
                        &leader,
                        now,
                        settings,
                        &members_before,
                        previous_joining,
                    )
                })
                .await
                .map_err(|_| DbError::Canceled)??;
                let version = if decision.leader && decision.members != previous_members {
                    previous_version + 1
                } else {
                    previous_version
                };
                let (claims, moves) = split_plan(&decision);
                let claimed = if claims.is_empty() {
                    Vec::new()
                } else {
                    registry.send(ClaimNodes { claims }).await??
                };
                let moved = if moves.is_empty() {
                    Vec::new()
                } else {
                    registry
                        .send(MoveNodes {
                            moves,
                            ring_version: version,
                        })
                        .await??
                };
                Ok::<_, RebalanceError>((decision, claimed, moved, version))
            }
            .into_actor(self)
            .map(|result, actor, _| {
                let (decision, claimed, moved, version) = result?;
                if !decision.leader {
                    actor.members.clear();
                    return Ok(RebalanceReport::default());
                }
                actor.version = version;
                actor.members = decision.members;
                actor.joining = decision.joining;
                actor.notify_owners(&claimed, &moved);
                if !moved.is_empty() || !claimed.is_empty() {
                    log::info!(
                        "ring v{version}: claimed {} nodes, moved {} nodes",
                        claimed.len(),
                        moved.len()
                    );
                }
                Ok(RebalanceReport {
                    leader: true,
                    ring_version: version,
                    claimed,
                    moved,
                    plan: decision.plan,
                })
            }),
        ))
    }
}

/// Splits a plan into first claims and moves (with the epochs the moves expect).
fn split_plan(decision: &Decision) -> (Vec<NodeClaim>, Vec<NodeMove>) {
    let mut claims = Vec::new();
    let mut moves = Vec::new();
    for assignment in &decision.plan {
        match assignment.from.clone() {
            None => {
                if let Ok(node) = assignment.node.parse() {
                    claims.push(NodeClaim {
                        node,
                        host: assignment.to.clone(),
                    });
                }
            }
            Some(from) => {
                if let Some(epoch) = decision.epochs.get(&assignment.node) {
                    moves.push(NodeMove {
                        node: assignment.node.clone(),
                        from,
                        epoch: *epoch,
                        to: assignment.to.clone(),
                        reason: assignment.reason,
                    });
                }
            }
        }
    }
    (claims, moves)
}

impl Rebalancer {
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

/// Holds or takes leadership, then reads hosts and owners and plans (blocking).
fn decide(
    pool: &Pool,
    leader: &Mutex<Option<PooledConnection>>,
    now: chrono::DateTime<chrono::Utc>,
    settings: RebalancerSettings,
    previous_members: &[String],
    previous_joining: BTreeSet<String>,
) -> Result<Decision, DbError> {
    let mut held = leader.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(conn) = held.as_mut()
        && db::ping(conn).is_err()
    {
        log::warn!("rebalancer lost its leadership connection");
        *held = None;
    }
    if held.is_none() {
        let mut conn = pool.get()?;
        if db::try_advisory_lock(&mut conn, LEADER_LOCK_KEY)? {
            log::info!("this process now leads rebalancing");
            *held = Some(conn);
        }
    }
    let Some(conn) = held.as_mut() else {
        return Ok(Decision {
            leader: false,
            members: Vec::new(),
            joining: BTreeSet::new(),
            plan: Vec::new(),
            epochs: Default::default(),
        });
    };
    let hosts = db::hosts::list_hosts(conn)?;
    let owners = db::registry::node_owners(conn)?;
    drop(held);

    let liveness = settings.liveness;
    let up: Vec<&crate::domain::host::Host> = hosts
        .iter()
        .filter(|host| host.is_up(&liveness, now))
        .collect();
    let eligible: Vec<String> = up
        .iter()
        .filter(|host| !host.disabled)
        .map(|host| host.name.clone())
        .collect();
    let draining: Vec<String> = up
        .iter()
        .filter(|host| host.is_draining())
        .map(|host| host.name.clone())
        .collect();
    let holding: Vec<String> = up
        .iter()
        .filter(|host| host.disabled && !host.is_draining())
        .map(|host| host.name.clone())
        .collect();

    let nodes: Vec<NodeOwner> = owners
        .iter()
        .map(|row| NodeOwner {
            node: row.node.clone(),
            owner: row.host.clone(),
        })
        .collect();
    let mut load: std::collections::HashMap<&str, usize> = Default::default();
    for node in &nodes {
        if let Some(owner) = node.owner.as_deref() {
            *load.entry(owner).or_default() += 1;
        }
    }
    let anyone_owns = !load.is_empty();
    let mut joining: BTreeSet<String> = previous_joining;
    for host in &eligible {
        let is_new = !previous_members.is_empty() && !previous_members.contains(host);
        let is_empty = anyone_owns && load.get(host.as_str()).copied().unwrap_or(0) == 0;
        if is_new || is_empty {
            joining.insert(host.clone());
        }
    }
    joining.retain(|host| eligible.contains(host));
    let joining_list: Vec<String> = joining.iter().cloned().collect();

    let planned = plan(PlanInput {
        algorithm: settings.algorithm,
        nodes: &nodes,
        eligible: &eligible,
        draining: &draining,
        holding: &holding,
        joining: &joining_list,
        max_join_moves: settings.max_join_moves,
    });
    let join_moves = planned
        .iter()
        .filter(|assignment| {
            assignment.from.is_some() && assignment.reason == crate::domain::ring::MoveReason::Join
        })
        .count();
    if join_moves < settings.max_join_moves {
        // Converged: the joining hosts have their share.
        joining.clear();
    }
    let epochs = owners
        .into_iter()
        .filter_map(|row| Some((row.node, row.owner_epoch?)))
        .collect();
    let mut members = eligible;
    members.sort();
    Ok(Decision {
        leader: true,
        members,
        joining,
        plan: planned,
        epochs,
    })
}

/// Asks for the ring as this rebalancer last computed it.
#[derive(Debug, Message)]
#[rtype(result = "RingView")]
pub struct GetRing;

impl Handler<GetRing> for Rebalancer {
    type Result = MessageResult<GetRing>;

    fn handle(&mut self, _: GetRing, _: &mut Self::Context) -> Self::Result {
        let leader = self
            .leader
            .lock()
            .map(|held| held.is_some())
            .unwrap_or(false);
        MessageResult(RingView {
            version: self.version,
            algorithm: self.settings.algorithm.name(),
            members: self.members.clone(),
            leader,
        })
    }
}

/// Gives up leadership (used when a process shuts down cleanly, and by tests).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Resign;

impl Handler<Resign> for Rebalancer {
    type Result = ();

    fn handle(&mut self, _: Resign, _: &mut Self::Context) {
        let leader = self.leader.clone();
        self.members.clear();
        // The connection goes back to the pool, so the lock must be released first.
        drop(actix_rt::task::spawn_blocking(move || {
            let mut held = leader.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(mut conn) = held.take()
                && let Err(error) = db::advisory_unlock(&mut conn, LEADER_LOCK_KEY)
            {
                log::warn!("could not release rebalancer leadership: {error}");
            }
        }));
    }
}
