//! The actors of one ringmaster process and the one place that starts them. Messages are
//! defined next to their actor. `HostDirectory` keeps this process's compute hosts, so the
//! admin API can crash and start them and the rebalancer can tell them about new nodes.

pub mod archiver;
pub mod compute_host;
pub mod figures;
pub mod ironic;
pub mod node_source;
pub mod rebalancer;
pub mod registry;
mod relay;
pub mod scheduler;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use actix::prelude::*;
use uuid::Uuid;

pub use crate::config::ActorSettings;
use crate::db::presence::Presence;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::identity::{HostName, NodeUuid};
use compute_host::{ComputeHost, Crash, HostError, HostSettings};
use ironic::Ironic;
use node_source::{IronicDriver, NodeSource};
use rebalancer::Rebalancer;
use registry::Registry;
use scheduler::Scheduler;

/// The running actors of this process.
#[derive(Clone)]
pub struct Actors {
    pub archiver: Addr<archiver::Archiver>,
    pub registry: Addr<Registry>,
    /// The simulated Ironic (the admin API's enroll, lock and delete speak to it).
    pub ironic: Addr<Ironic>,
    /// Where this process's nodes come from: the simulated Ironic or a real one.
    pub node_source: NodeSource,
    pub rebalancer: Addr<Rebalancer>,
    /// The ring as the rebalancer last left it, read without waiting for a tick.
    pub ring: rebalancer::RingCell,
    pub scheduler: Addr<Scheduler>,
    pub hosts: HostDirectory,
    pub clock: SharedClock,
    pub settings: ActorSettings,
    /// This process's token: the holder of its hosts and of its leadership lease.
    pub process: Uuid,
}

impl Actors {
    /// How this process judges hosts now: its liveness settings, and the database outage its
    /// rebalancer noted credited (invariant 15).
    pub fn judge(&self) -> crate::domain::rebalance::HostJudge {
        crate::domain::rebalance::HostJudge {
            liveness: self.settings.host.liveness,
            outage: self.ring.outage(),
        }
    }

    /// Takes (`locked`) or releases a node's conductor lock in Ironic, then has the node's
    /// owner, when it runs in this process, report it at once: an unlocked node is
    /// schedulable now, not at the owner's next tracker pass.
    pub async fn set_node_lock(&self, node: NodeUuid, locked: bool) -> Result<(), HostError> {
        self.ironic
            .send(ironic::LockNode { node, locked })
            .await??;
        let owner = db::run(&self.pool(), move |conn| {
            db::compute_nodes::find_compute_node(conn, node)
        })
        .await?;
        if let Some(owner) = owner
            && let Some(host) = self.hosts.get(owner.host.as_str())
        {
            match host
                .send(compute_host::RefreshNodes {
                    nodes: vec![owner.node],
                })
                .await?
            {
                Ok(_) => {}
                // A fenced owner reports it once it heartbeats again.
                Err(HostError::Fenced(_)) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(())
    }

    /// The background work's connection pool.
    pub fn pool(&self) -> Pool {
        self.hosts.factory.pool.clone()
    }
}

/// Starts the registry (one thread), Ironic, the archiver, the rebalancer and the scheduler, and an
/// arbiter for the compute hosts; with `real_ironic`, its listing loop too (the nodes come from
/// it then). Call inside an actix system; `app::start_deployment` is the start path that
/// calls it.
pub(crate) fn spawn_all(
    pool: Pool,
    clock: SharedClock,
    settings: ActorSettings,
    real_ironic: Option<Arc<IronicDriver>>,
) -> Actors {
    let process = Uuid::new_v4();
    let presence = Arc::new(Presence::new(process));
    let registry = {
        let (pool, clock) = (pool.clone(), clock.clone());
        SyncArbiter::start(1, move || Registry::new(pool.clone(), clock.clone()))
    };
    let ironic = {
        let (pool, clock) = (pool.clone(), clock.clone());
        let listing_fails = Arc::new(std::sync::atomic::AtomicBool::new(false));
        SyncArbiter::start(2, move || {
            Ironic::new(pool.clone(), clock.clone(), listing_fails.clone())
        })
    };
    let archiver = {
        let (pool, clock) = (pool.clone(), clock.clone());
        SyncArbiter::start(1, move || {
            archiver::Archiver::new(pool.clone(), clock.clone())
        })
    };
    let node_source = match real_ironic {
        Some(driver) => NodeSource::Ironic(driver),
        None => NodeSource::Simulated(ironic.clone()),
    };
    let hosts = HostDirectory {
        hosts: Arc::new(Mutex::new(BTreeMap::new())),
        factory: Arc::new(HostFactory {
            pool: pool.clone(),
            clock: clock.clone(),
            settings: settings.host,
            registry: registry.clone(),
            node_source: node_source.clone(),
            presence,
            arbiter: Arbiter::new().handle(),
            relay: std::sync::Once::new(),
            passes: pass_permits(&pool),
        }),
    };
    if let Some(driver) = node_source.driver() {
        driver.start_listing(hosts.clone(), &settings, process);
    }
    let ring = rebalancer::RingCell::default();
    let rebalancer = Rebalancer::new(
        pool.clone(),
        clock.clone(),
        settings.rebalancer,
        registry.clone(),
        hosts.clone(),
        process,
        ring.clone(),
    )
    .start();
    let scheduler = Scheduler::new(
        pool,
        clock.clone(),
        ring.clone(),
        hosts.clone(),
        settings.host,
    )
    .start();
    Actors {
        archiver,
        registry,
        ironic,
        node_source,
        rebalancer,
        ring,
        scheduler,
        hosts,
        clock,
        settings,
        process,
    }
}

/// The tracker passes one process runs at once: its background pool less three connections.
fn pass_permits(pool: &Pool) -> Arc<tokio::sync::Semaphore> {
    let permits = usize::try_from(pool.max_size().saturating_sub(3).max(1)).unwrap_or(1);
    Arc::new(tokio::sync::Semaphore::new(permits))
}

struct HostFactory {
    pool: Pool,
    clock: SharedClock,
    settings: HostSettings,
    registry: Addr<Registry>,
    node_source: NodeSource,
    presence: Arc<Presence>,
    arbiter: ArbiterHandle,
    /// Starts the spawn relay with this process's first host.
    relay: std::sync::Once,
    /// How many tracker passes of this process's hosts run at once: the background pool's
    /// connections less three, so that heartbeats, the rebalancer and the registry always find
    /// one (a hundred hosts' first passes over 10,000 nodes each would take them all).
    passes: Arc<tokio::sync::Semaphore>,
}

/// This process's compute hosts, by name.
#[derive(Clone)]
pub struct HostDirectory {
    hosts: Arc<Mutex<BTreeMap<String, Addr<ComputeHost>>>>,
    factory: Arc<HostFactory>,
}

impl HostDirectory {
    /// Registers host `name` as run by this process and starts it (on the compute arbiter),
    /// unless it runs here already; returns it. Refused (a conflict naming the host) while
    /// another live process runs a host of that name.
    pub async fn start(&self, name: &str) -> Result<Addr<ComputeHost>, HostError> {
        if let Some(running) = self.get(name) {
            return Ok(running);
        }
        let factory = self.factory.clone();
        let host = HostName::from(name);
        let now = factory.clock.now();
        db::run(&factory.pool.clone(), move |conn| {
            factory.presence.ensure(&factory.pool)?;
            let down_time = factory.settings.liveness.service_down_time;
            let holder = factory.presence.holder();
            let serves = factory.node_source.serves();
            db::in_transaction(conn, |conn| {
                db::hosts::register_host(conn, &host, (holder, &serves), down_time, now)
            })
        })
        .await?;
        let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(address) = hosts.get(name).filter(|address| address.connected()) {
            return Ok(address.clone());
        }
        let factory = self.factory.clone();
        let host_name = HostName::from(name);
        let arbiter = factory.arbiter.clone();
        let neighbours = Arc::downgrade(&self.hosts);
        let address = ComputeHost::start_in_arbiter(&arbiter, move |_| {
            ComputeHost::new(
                host_name,
                factory.pool.clone(),
                factory.clock.clone(),
                factory.settings,
                factory.registry.clone(),
                factory.node_source.clone(),
                (factory.presence.clone(), factory.passes.clone(), neighbours),
            )
        });
        hosts.insert(name.to_owned(), address.clone());
        drop(hosts);
        self.factory
            .relay
            .call_once(|| relay::start(self.factory.pool.clone(), Arc::downgrade(&self.hosts)));
        Ok(address)
    }

    /// Records this process and its version in the deployment's database (with its presence
    /// connection open, so it shows as live).
    pub async fn record_process(&self) -> Result<(), DbError> {
        let factory = self.factory.clone();
        let now = factory.clock.now();
        db::run(&factory.pool.clone(), move |conn| {
            factory.presence.ensure(&factory.pool)?;
            db::processes::record_start(conn, factory.presence.holder(), now)
        })
        .await
    }

    /// Stops every host of this process and closes its presence: the last step of a stop, so
    /// another process may take the hosts at once.
    pub async fn release_all(&self) {
        let running: Vec<Addr<ComputeHost>> =
            std::mem::take(&mut *self.hosts.lock().unwrap_or_else(PoisonError::into_inner))
                .into_values()
                .collect();
        for host in &running {
            let _ = host.send(compute_host::Release).await;
        }
        let presence = self.factory.presence.clone();
        let _ = actix_rt::task::spawn_blocking(move || presence.release()).await;
    }

    /// Says whether host `name` runs in this process.
    pub fn is_running(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Crashes host `name`: it stops at once, without clean-up. `false` if it was not running.
    pub fn crash(&self, name: &str) -> bool {
        let removed = self
            .hosts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        match removed {
            Some(address) if address.connected() => {
                address.do_send(Crash);
                true
            }
            _ => false,
        }
    }

    /// Returns running host `name`.
    pub fn get(&self, name: &str) -> Option<Addr<ComputeHost>> {
        self.hosts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .filter(|address| address.connected())
            .cloned()
    }

    /// Asks running host `name`, if it runs here, for a tracker pass over `nodes` (whose
    /// source changed); says whether it runs here.
    pub fn refresh(&self, name: &str, nodes: Vec<NodeUuid>) -> bool {
        let Some(address) = self.get(name) else {
            return false;
        };
        address.do_send(compute_host::RefreshNodes { nodes });
        true
    }

    /// Lists the hosts running in this process.
    pub fn names(&self) -> Vec<String> {
        self.hosts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, address)| address.connected())
            .map(|(name, _)| name.clone())
            .collect()
    }
}
