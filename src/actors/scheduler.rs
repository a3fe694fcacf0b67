//! `Scheduler`: places an instance. It picks a free node of the requested class (with enough
//! free PCI devices) among the nodes of hosts that are up, not fenced and not disabled,
//! whichever process of the deployment runs them; claims its allocation through the one
//! allocation writer (`db::placement::allocations::replace_allocations`, as the Placement API does) and
//! creates the instance, in one transaction; a claim that loses a race tries the next node, and
//! the boot fails (409, nothing written) only when no node is free. Then it hands the instance
//! to the owning `ComputeHost` — directly in this process, in another through a durable request
//! written with the claim (`db::spawns`); a build that fails after its claim ends `error` with
//! its allocation released (invariants 11 and 12).

use std::collections::BTreeMap;

use actix::prelude::*;
use uuid::Uuid;

use super::HostDirectory;
use super::compute_host::{HostError, Spawn};
use super::rebalancer::RingCell;
use crate::config::HostSettings;
use crate::db::free_nodes::pci_devices;
use crate::db::instances::{FreeNode, NewInstance, NodeRequest};
use crate::db::placement::allocations::{AllocationError, ConsumerAllocations};
use crate::db::{self, DbError, Pool};
use crate::domain::boot::BootRequest;
use crate::domain::clock::SharedClock;
use crate::domain::error::ErrorKind;
use crate::domain::identity::{ConsumerUuid, InstanceUuid, ProviderUuid};
use crate::domain::instance::Instance;
use crate::domain::rebalance::HostJudge;

mod together;

pub use self::together::BootTogether;

/// The most claims one boot attempts before it gives up (each lost race costs one).
const MAX_CLAIM_ATTEMPTS: usize = 64;

/// Says why a boot failed.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error(
        "no free node of resource class {resource_class}{pci} on an up host: every node is in use, \
         locked, unavailable or on a host that is down, fenced or disabled"
    )]
    NoValidHost { resource_class: String, pci: String },
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("compute host unavailable: {0}")]
    Mailbox(#[from] MailboxError),
    /// A boot with this uuid exists already (a retry, or another request with the same uuid
    /// that got there first): the caller answers it.
    #[error("instance {0} exists already")]
    Exists(InstanceUuid),
}

impl BootError {
    /// Classifies this error for the HTTP layer.
    pub fn kind(&self) -> ErrorKind {
        match self {
            BootError::NoValidHost { .. } => ErrorKind::Conflict,
            BootError::Host(error) => error.kind(),
            BootError::Db(error) => error.kind(),
            BootError::Mailbox(_) => ErrorKind::Unavailable,
            BootError::Exists(_) => ErrorKind::Conflict,
        }
    }

    fn no_valid_host(request: &BootRequest) -> BootError {
        let pci_devices = request.pci_devices;
        BootError::NoValidHost {
            resource_class: request.class_name().to_owned(),
            pci: if pci_devices > 0 {
                format!(" with {pci_devices} free PCI devices")
            } else {
                String::new()
            },
        }
    }
}

/// The scheduler actor.
pub struct Scheduler {
    pool: Pool,
    clock: SharedClock,
    /// Where the rebalancer publishes the database outage it noted.
    ring: RingCell,
    hosts: HostDirectory,
    /// Liveness, the build timeout (how long a boot handed to another process is waited for),
    /// the attempts a build may make and the cooldown of a node whose build failed.
    settings: HostSettings,
}

impl Scheduler {
    /// Returns a scheduler placing onto any up host of the deployment; the hosts of `hosts`
    /// (this process's) spawn directly, others through the database. A boot handed over is
    /// waited for at most the build timeout (then its instance is answered as it is).
    pub fn new(
        pool: Pool,
        clock: SharedClock,
        ring: RingCell,
        hosts: HostDirectory,
        settings: HostSettings,
    ) -> Scheduler {
        Scheduler {
            pool,
            clock,
            ring,
            hosts,
            settings,
        }
    }
}

/// How often a boot handed to another process looks at its instance.
const HANDED_OVER_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits until instance `instance` is no longer building (or gone), for at most `wait`.
async fn wait_for_build(pool: &Pool, instance: InstanceUuid, wait: std::time::Duration) {
    let deadline = std::time::Instant::now() + wait;
    while std::time::Instant::now() < deadline {
        let state = db::run(pool, move |conn| {
            db::instances::get_instance(conn, instance)
        })
        .await;
        match state {
            Ok(found) if found.vm_state == crate::domain::instance::VmState::Building => {}
            _ => return,
        }
        actix::clock::sleep(HANDED_OVER_POLL).await;
    }
}

impl Actor for Scheduler {
    type Context = Context<Self>;
}

/// Boots an instance as `request` asks: the Compute API's, the admin API's and a script's
/// boot alike.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Instance, BootError>")]
pub struct Boot {
    /// The instance's uuid: the client's (a retry with it finds the same instance), or a new
    /// one when `None`.
    pub uuid: Option<InstanceUuid>,
    pub name: String,
    pub project: String,
    pub user: String,
    /// The node it needs and what its instance records.
    pub request: BootRequest,
    /// Answer as soon as the node is claimed (the instance `building`), the build going on
    /// behind the answer, as Nova's `POST /servers` does; else answer the settled build.
    pub answer_when_claimed: bool,
}

impl Handler<Boot> for Scheduler {
    type Result = ResponseFuture<Result<Instance, BootError>>;

    fn handle(&mut self, message: Boot, _: &mut Self::Context) -> Self::Result {
        let parts = self.parts();
        Box::pin(async move {
            let started = std::time::Instant::now();
            let booted = boot(parts, message).await;
            let result = match &booted {
                Ok(instance) => instance.vm_state.as_str(),
                Err(_) => "refused",
            };
            crate::metrics::observe_boot(result, started.elapsed());
            booted
        })
    }
}

/// What a boot takes along from the scheduler.
struct Parts {
    pool: Pool,
    clock: SharedClock,
    hosts: HostDirectory,
    settings: HostSettings,
    /// How hosts are judged now: by their heartbeats, the outage the rebalancer noted credited.
    judge: HostJudge,
}

impl Scheduler {
    fn parts(&self) -> Parts {
        Parts {
            pool: self.pool.clone(),
            clock: self.clock.clone(),
            hosts: self.hosts.clone(),
            settings: self.settings,
            judge: HostJudge {
                liveness: self.settings.liveness,
                outage: self.ring.outage(),
            },
        }
    }
}

/// Boots: claims a node, has its host (here or in another process) build the instance, and
/// returns the instance as the build left it.
async fn boot(parts: Parts, message: Boot) -> Result<Instance, BootError> {
    let Parts {
        pool,
        clock,
        hosts,
        settings,
        judge,
    } = parts;
    let build_wait = settings.instance_build_timeout;
    let instance = message.uuid.unwrap_or_else(|| InstanceUuid(Uuid::new_v4()));
    let local_hosts = hosts.names();
    let request = message.clone();
    let claim_clock = clock.clone();
    let claim_hosts = local_hosts.clone();
    let placed = db::run(&pool, move |conn| {
        Ok(claim_node(
            conn,
            &request,
            instance,
            &claim_hosts,
            (judge, &settings),
            &claim_clock,
        ))
    })
    .await??;
    let Some(placed) = placed else {
        return Err(BootError::no_valid_host(&message.request));
    };
    let local = local_hosts.iter().any(|local| placed.host == *local);
    let placed = Placed {
        node: placed,
        local,
    };
    after_claim(pool, clock, hosts, build_wait, message, instance, placed).await
}

/// Has a claimed instance built and answers it: at once (the build going on behind) when the
/// boot answers when claimed, else as the build left it.
async fn after_claim(
    pool: Pool,
    clock: SharedClock,
    hosts: HostDirectory,
    build_wait: std::time::Duration,
    message: Boot,
    instance: InstanceUuid,
    placed: Placed,
) -> Result<Instance, BootError> {
    if message.answer_when_claimed {
        let answer = db::run(&pool, move |conn| {
            db::instances::get_instance(conn, instance)
        })
        .await?;
        actix::spawn(async move {
            if let Err(failure) = build(
                &pool, &clock, &hosts, build_wait, &message, instance, placed,
            )
            .await
            {
                log::warn!("build of instance {instance} could not be settled: {failure}");
            }
        });
        return Ok(answer);
    }
    build(
        &pool, &clock, &hosts, build_wait, &message, instance, placed,
    )
    .await?;
    // As it is now: deleted already, even (a delete may come before this answer).
    Ok(db::run(&pool, move |conn| {
        db::instances::find_any_instance(conn, instance)?
            .ok_or_else(|| DbError::NotFound(format!("instance {instance}")))
    })
    .await?)
}

/// A claimed node, and whether this process runs its host.
struct Placed {
    node: FreeNode,
    local: bool,
}

/// Has the claimed instance built by its host (here, or in the process that runs the host),
/// and settles a build that failed after its claim.
async fn build(
    pool: &Pool,
    clock: &SharedClock,
    hosts: &HostDirectory,
    build_wait: std::time::Duration,
    message: &Boot,
    instance: InstanceUuid,
    placed: Placed,
) -> Result<(), BootError> {
    let Placed {
        node: placed,
        local,
    } = placed;
    let spawned = match (local, hosts.get(placed.host.as_str())) {
        (true, Some(host)) => host
            .send(Spawn {
                instance,
                node: placed.node,
                pci_devices: message.request.pci_devices,
            })
            .await
            .map_err(BootError::from)
            .and_then(|result| result.map_err(BootError::from)),
        (true, None) => Err(BootError::Host(HostError::Fenced(placed.host.clone()))),
        // Handed to the process that runs the host: wait for it to settle the build
        // (if it never does, the node's owner settles it at the build timeout).
        (false, _) => {
            wait_for_build(pool, instance, build_wait).await;
            Ok(crate::domain::instance::VmState::Building)
        }
    };
    if matches!(spawned, Ok(crate::domain::instance::VmState::Building)) && local {
        // Tried again on an alternate node: its host builds it now.
        wait_for_build(pool, instance, build_wait).await;
    }
    if let Err(failure) = spawned {
        // The build failed after its claim: it ends in error and gives the node back
        // (unless Ironic finished it after all).
        let reason = failure.to_string();
        let host = placed.host.clone();
        let now = clock.now();
        let outcome = db::transaction(pool, move |conn| {
            db::instances::settle_build(conn, instance, &reason, &host, now)
        })
        .await?;
        log::warn!(
            "build of instance {instance} on node {} (host {}) failed: {failure}; {outcome:?}",
            placed.node,
            placed.host
        );
    }
    Ok(())
}

/// Claims a free node for `instance` and creates it `building` there, in one transaction per
/// attempt: the node is picked and its provider locked (skipping providers another claim
/// holds), the allocation written by the one allocation writer (which checks capacity under
/// that lock), the instance created. A claim refused for capacity tries the next node. Returns
/// `None` when no node is free.
fn claim_node(
    conn: &mut db::Connection,
    boot: &Boot,
    instance: InstanceUuid,
    local_hosts: &[String],
    (judge, settings): (HostJudge, &HostSettings),
    clock: &SharedClock,
) -> Result<Option<FreeNode>, ClaimError> {
    let now = clock.now();
    let up = boot
        .request
        .hosts(db::hosts::list_hosts(conn)?, &judge, now);
    if up.is_empty() {
        return Ok(None);
    }
    let request = NodeRequest {
        boot: &boot.request,
        hosts: &up,
        cooling_after: settings.cooling_after(now),
    };
    let mut tried: Vec<ProviderUuid> = Vec::new();
    for _ in 0..MAX_CLAIM_ATTEMPTS {
        // A refused claim returns an error from the transaction, so what it wrote rolls back.
        let attempt = db::in_transaction(conn, |conn| {
            let attempt = ClaimAttempt {
                boot,
                instance,
                request: &request,
                tried: &tried,
                local_hosts,
                clock,
                max_attempts: settings.max_build_attempts,
            };
            attempt.run(conn)
        });
        match attempt {
            Ok(candidate) => return Ok(Some(candidate)),
            Err(ClaimFailure::Lost(provider)) => tried.push(provider),
            Err(ClaimFailure::NoneFree) => return Ok(None),
            Err(ClaimFailure::Exists) => return Err(ClaimError::Exists(instance)),
            Err(ClaimFailure::Db(error)) => return Err(error.into()),
        }
    }
    log::warn!(
        "boot of instance {instance}: {MAX_CLAIM_ATTEMPTS} claims lost to concurrent boots; giving up"
    );
    Ok(None)
}

/// One attempt of `claim_node`, inside its transaction.
struct ClaimAttempt<'a> {
    boot: &'a Boot,
    instance: InstanceUuid,
    request: &'a NodeRequest<'a>,
    /// Providers earlier attempts lost to concurrent boots.
    tried: &'a [ProviderUuid],
    local_hosts: &'a [String],
    clock: &'a SharedClock,
    /// Attempts a build may make: the first node and `max_attempts - 1` alternates.
    max_attempts: u32,
}

impl ClaimAttempt<'_> {
    /// Picks a free node (its provider locked, skipping those another claim holds), writes
    /// the allocation through the one allocation writer, creates the instance `building`, and
    /// hands the boot to the process that runs the host when that is another.
    fn run(&self, conn: &mut db::Connection) -> Result<FreeNode, ClaimFailure> {
        // A uuid the client chose: one boot of it at a time; a later one finds the first's.
        if self.boot.uuid.is_some() && db::instances::hold_boot(conn, self.instance)? {
            return Err(ClaimFailure::Exists);
        }
        let Some(candidate) = db::instances::pick_free_node(conn, self.request, self.tried)? else {
            return Err(ClaimFailure::NoneFree);
        };
        let write = ConsumerAllocations {
            consumer: ConsumerUuid::from(self.instance),
            project: self.boot.project.clone(),
            user: self.boot.user.clone(),
            expected_generation: crate::domain::placement::GenerationCheck::MustBeNew,
            consumer_type: Some(db::placement::allocations::INSTANCE_CONSUMER_TYPE.to_owned()),
            allocations: BTreeMap::from([(
                candidate.provider,
                BTreeMap::from([(self.boot.request.placement_class.clone(), 1)]),
            )]),
        };
        match db::placement::allocations::replace_allocations(conn, &[write]) {
            Ok(()) => {}
            // The consumer exists: a boot with this uuid got there first.
            Err(
                AllocationError::ConsumerGeneration {
                    stored: Some(_), ..
                }
                | AllocationError::ConsumerCreatedConcurrently(_),
            ) => return Err(ClaimFailure::Exists),
            Err(AllocationError::Db(error)) => return Err(ClaimFailure::Db(error)),
            // Lost the race for this node (or its inventory changed): the next one.
            Err(refused) => {
                log::debug!("node {} refused the claim: {refused}", candidate.node);
                return Err(ClaimFailure::Lost(candidate.provider));
            }
        }
        let new = NewInstance {
            uuid: self.instance,
            name: self.boot.name.clone(),
            project_id: self.boot.project.clone(),
            user_id: self.boot.user.clone(),
            host: candidate.host.clone(),
            node: candidate.node,
            resource_class: candidate.resource_class.clone(),
            server: self.boot.request.server.clone(),
        };
        match db::instances::create_instance(conn, &new, self.clock.now()) {
            Err(DbError::UniqueViolation { constraint }) if constraint == "instances_uuid_key" => {
                return Err(ClaimFailure::Exists);
            }
            other => other?,
        }
        self.record_alternates(conn, &candidate)?;
        if !self
            .local_hosts
            .iter()
            .any(|local| candidate.host == *local)
        {
            // Another process runs the host: it takes the boot from the database.
            log::debug!("boot {} handed to {}", self.instance, candidate.host);
            db::spawns::request_spawn(
                conn,
                &db::spawns::SpawnRequest {
                    instance_uuid: self.instance,
                    host: candidate.host.clone(),
                    node: candidate.node,
                    pci_devices: pci_devices(&self.boot.request),
                },
            )?;
        }
        Ok(candidate)
    }
}

impl ClaimAttempt<'_> {
    /// Picks the build's alternates, as Nova's scheduler does with the first node: up to
    /// `max_attempts - 1` other free nodes, best first (not claimed: each is claimed only if
    /// the build fails and it is still free then).
    fn record_alternates(
        &self,
        conn: &mut db::Connection,
        candidate: &FreeNode,
    ) -> Result<(), ClaimFailure> {
        if self.max_attempts <= 1 {
            return Ok(());
        }
        let wanted = i32::try_from(self.max_attempts).unwrap_or(i32::MAX);
        let alternates = db::instances::free_nodes(conn, self.request, wanted)?
            .into_iter()
            .filter(|free| free.node != candidate.node)
            .map(|free| free.node)
            .take(self.max_attempts as usize - 1)
            .collect();
        let plan = db::builds::BuildPlan {
            instance: self.instance,
            alternates,
            max_attempts: wanted,
            placement_class: self.boot.request.placement_class.clone(),
            pci_devices: pci_devices(&self.boot.request),
        };
        db::builds::record_build(conn, &plan, self.clock.now())?;
        Ok(())
    }
}

/// Why one claim attempt did not place the instance; any of them rolls the attempt back.
enum ClaimFailure {
    /// The node's provider refused the claim (a concurrent boot took it): try the next.
    Lost(ProviderUuid),
    /// No node is free.
    NoneFree,
    /// An instance (or a consumer) with this uuid exists already.
    Exists,
    Db(DbError),
}

/// Why `claim_node` placed nothing, other than no free node.
#[derive(Debug, thiserror::Error)]
enum ClaimError {
    #[error("instance {0} exists already")]
    Exists(InstanceUuid),
    /// A boot of several together found no node for one of them: none is kept.
    #[error("no free node for every boot together")]
    Short,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<ClaimError> for BootError {
    fn from(error: ClaimError) -> Self {
        match error {
            ClaimError::Exists(uuid) => BootError::Exists(uuid),
            ClaimError::Short => BootError::NoValidHost {
                resource_class: String::new(),
                pci: String::new(),
            },
            ClaimError::Db(error) => BootError::Db(error),
        }
    }
}

impl From<DbError> for ClaimFailure {
    fn from(error: DbError) -> Self {
        ClaimFailure::Db(error)
    }
}
