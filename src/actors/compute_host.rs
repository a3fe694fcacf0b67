//! `ComputeHost`: one compute service. It heartbeats its service row, fences itself when its
//! lease lapses (it stops every write until a heartbeat succeeds again), runs the
//! resource-tracker pass over the nodes it owns, and spawns and destroys instances. Every
//! write it makes for a node is conditional on `host = me AND owner_epoch = e`; zero rows
//! means the node is no longer its own, and it drops the node instead of retrying.
//!
//! Database work runs on the blocking pool (`db::run`); handlers that touch the actor's state
//! are `AtomicResponse`s, so one host handles one message at a time.

/// The handler of a message a host answers only while its lease holds, by running
/// `Build::$method` with it (`ComputeHost::while_leased`).
macro_rules! leased_work {
    ($message:ty => $method:ident) => {
        impl Handler<$message> for ComputeHost {
            type Result = AtomicResponse<Self, Result<(), HostError>>;

            fn handle(&mut self, message: $message, _: &mut Self::Context) -> Self::Result {
                self.while_leased(|build| async move { build.$method(message).await })
            }
        }
    };
}

mod build;
mod destroy;
mod heartbeat;
mod owned;
mod periodic;
mod power;
mod tracker;

pub use crate::config::HostSettings;
use build::Build;
use build::SettleBuilds;
pub use build::{Spawn, TakeSpawns};
pub use destroy::DestroyInstance;
use heartbeat::{Beat, HeartbeatRecorded, HostLease, LeaseLost};
pub use power::PowerServer;
use std::sync::Arc;
use std::time::Duration;
pub use tracker::{
    ReadOwnedNodes, RefreshNodes, TrackerReport, UpdateAvailableResource,
    UpdateAvailableResourceFrom,
};

use actix::prelude::*;
use chrono::{DateTime, Utc};

use super::node_source::NodeSource;
use super::registry::Registry;
use crate::db::presence::Presence;
use crate::db::{DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::error::ErrorKind;
use crate::domain::identity::{InstanceUuid, NodeUuid};
use crate::domain::node::{ComputeNode, HostName};
use crate::domain::ring::stable_hash;

/// Says why a host could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "host {0} is fenced: its lease lapsed, so it writes nothing until a heartbeat succeeds"
    )]
    Fenced(HostName),
    #[error("host {host} does not own node {node}")]
    NotOwner { host: HostName, node: NodeUuid },
    #[error("the build of instance {0} was ended meanwhile (failed, timed out or deleted)")]
    BuildEnded(InstanceUuid),
    #[error("ironic: {0}")]
    Ironic(String),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("actor unavailable: {0}")]
    Mailbox(#[from] MailboxError),
}

impl HostError {
    /// Classifies this error for the HTTP layer.
    pub fn kind(&self) -> ErrorKind {
        match self {
            HostError::Fenced(_) | HostError::Mailbox(_) => ErrorKind::Unavailable,
            HostError::NotOwner { .. } | HostError::Ironic(_) | HostError::BuildEnded(_) => {
                ErrorKind::Conflict
            }
            HostError::Db(error) => error.kind(),
        }
    }
}

/// One compute service.
pub struct ComputeHost {
    name: HostName,
    pool: Pool,
    clock: SharedClock,
    settings: HostSettings,
    registry: Addr<Registry>,
    node_source: NodeSource,
    presence: Arc<Presence>,
    /// When this actor started: builds on its nodes older than this have nobody working on
    /// them (their spawn died with the process or actor that ran it).
    started_at: DateTime<Utc>,
    /// Its heartbeats' lease, shared with its heartbeat task and its passes.
    lease: Arc<HostLease>,
    /// How many tracker passes of this process's hosts may run at once.
    passes: Arc<tokio::sync::Semaphore>,
    /// The tracker change counter at this host's last complete pass: while it stays there,
    /// a pass has nothing to compare.
    seen_changes: Option<i64>,
    /// Builds of this host whose end could not be written (the database went away): settled
    /// as soon as it answers again (`SettleBuilds`), not at the build timeout.
    unsettled: std::collections::BTreeMap<InstanceUuid, String>,
    /// This process's hosts, whom a build tried again on their node is handed to directly.
    neighbours: Neighbours,
}

/// The hosts of this process by name, as the host directory keeps them (weak: a host does not
/// keep the directory alive).
pub type Neighbours =
    std::sync::Weak<std::sync::Mutex<std::collections::BTreeMap<String, Addr<ComputeHost>>>>;

impl ComputeHost {
    /// Returns the actor of host `name`, registered to this process (`HostDirectory::start`);
    /// it heartbeats once started.
    pub fn new(
        name: HostName,
        pool: Pool,
        clock: SharedClock,
        settings: HostSettings,
        registry: Addr<Registry>,
        node_source: NodeSource,
        (presence, passes, neighbours): (Arc<Presence>, Arc<tokio::sync::Semaphore>, Neighbours),
    ) -> ComputeHost {
        let started_at = clock.now();
        ComputeHost {
            lease: Arc::new(HostLease::new(&name, settings.liveness)),
            passes,
            name,
            pool,
            clock,
            settings,
            registry,
            node_source,
            presence,
            started_at,
            seen_changes: None,
            unsettled: std::collections::BTreeMap::new(),
            neighbours,
        }
    }

    fn lease_holds(&self) -> bool {
        self.lease.holds(self.clock.now())
    }

    /// What a build on this host needs.
    fn build(&self) -> Build {
        Build {
            pool: self.pool.clone(),
            clock: self.clock.clone(),
            node_source: self.node_source.clone(),
            host: self.name.clone(),
            settings: self.settings,
            neighbours: self.neighbours.clone(),
        }
    }

    /// Runs `work` on this host's build context while its lease holds, as the handler's
    /// atomic answer; a fenced host answers `Fenced` and runs nothing.
    fn while_leased<F, Fut>(&mut self, work: F) -> AtomicResponse<Self, Result<(), HostError>>
    where
        F: FnOnce(Build) -> Fut,
        Fut: std::future::Future<Output = Result<(), HostError>> + 'static,
    {
        if let Err(fenced) = self.require_lease() {
            return AtomicResponse::new(Box::pin(fut::ready(Err(fenced))));
        }
        AtomicResponse::new(Box::pin(work(self.build()).into_actor(self)))
    }

    fn require_lease(&self) -> Result<(), HostError> {
        if self.lease_holds() {
            Ok(())
        } else {
            Err(HostError::Fenced(self.name.clone()))
        }
    }
}

impl Actor for ComputeHost {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        crate::metrics::start_host(self.name.as_str());
        ctx.notify(Heartbeat);
        if !self.settings.report_interval.is_zero() {
            actix_rt::spawn(
                self.beat()
                    .run(self.settings.report_interval, ctx.address()),
            );
        }
        let interval = self.settings.update_resources_interval;
        if !interval.is_zero() {
            // Each host's passes start at its own offset within the interval (from its name's
            // stable hash), so the hosts of a process do not all pass at the same moment.
            let spread = u64::try_from(interval.as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            let offset = Duration::from_millis(stable_hash(self.name.as_str().as_bytes()) % spread);
            ctx.run_later(offset, move |_, ctx| {
                ctx.notify(periodic::PeriodicPass);
                ctx.run_interval(interval, |_, ctx| ctx.notify(periodic::PeriodicPass));
            });
        }
        log::info!("compute host {} started", self.name);
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.lease.stop();
        log::info!("compute host {} stopped", self.name);
    }
}

/// Bumps the service row; a success renews the lease from the time it was sent.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, HostError>")]
pub struct Heartbeat;

impl Handler<Heartbeat> for ComputeHost {
    type Result = AtomicResponse<Self, Result<bool, HostError>>;

    fn handle(&mut self, _: Heartbeat, _: &mut Self::Context) -> Self::Result {
        let beat = self.beat();
        AtomicResponse::new(Box::pin(
            async move { beat.beat().await }
                .into_actor(self)
                .map(move |result, actor, ctx| {
                    let recorded = result?;
                    if recorded {
                        <Self as Handler<HeartbeatRecorded>>::handle(actor, HeartbeatRecorded, ctx);
                    } else {
                        <Self as Handler<LeaseLost>>::handle(actor, LeaseLost, ctx);
                    }
                    Ok(recorded)
                }),
        ))
    }
}

impl ComputeHost {
    /// What a heartbeat of this host needs.
    fn beat(&self) -> Beat {
        Beat {
            pool: self.pool.clone(),
            presence: self.presence.clone(),
            clock: self.clock.clone(),
            lease: self.lease.clone(),
        }
    }
}

/// Tells a host it now owns these nodes: it runs a tracker pass over them, as this message's
/// handling (so that a message sent to the host after this one is answered after the pass).
#[derive(Debug, Message)]
#[rtype(result = "Result<TrackerReport, HostError>")]
pub struct NodesAssigned {
    pub nodes: Vec<ComputeNode>,
}

impl Handler<NodesAssigned> for ComputeHost {
    type Result = AtomicResponse<Self, Result<TrackerReport, HostError>>;

    fn handle(&mut self, message: NodesAssigned, ctx: &mut Self::Context) -> Self::Result {
        log::info!(
            "host {} was assigned {} nodes",
            self.name,
            message.nodes.len()
        );
        // A pass over just those nodes: the host's other nodes did not change.
        let nodes = message.nodes.iter().map(|node| node.node).collect();
        <Self as Handler<RefreshNodes>>::handle(self, RefreshNodes { nodes }, ctx)
    }
}

/// Stops the host at once: no more heartbeats, no clean-up (a crash).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Crash;

impl Handler<Crash> for ComputeHost {
    type Result = ();

    fn handle(&mut self, _: Crash, ctx: &mut Self::Context) {
        log::warn!("compute host {} crashed", self.name);
        ctx.stop();
    }
}

/// Stops the host as its process stops: no more heartbeats; its nodes wait for it (or move
/// once it is down).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Release;

impl Handler<Release> for ComputeHost {
    type Result = ();

    fn handle(&mut self, _: Release, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// Asks whether the host's lease holds.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct IsFenced;

impl Handler<IsFenced> for ComputeHost {
    type Result = bool;

    fn handle(&mut self, _: IsFenced, _: &mut Self::Context) -> bool {
        !self.lease_holds()
    }
}
