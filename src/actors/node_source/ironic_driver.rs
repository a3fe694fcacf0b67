//! A real Ironic as the node source, doing what Nova's ironic driver does: one paginated
//! listing per tracker interval per deployment (`listing`: the lease holder lists, only the
//! nodes that changed are written; a failed, empty or suddenly shrunken listing changes
//! nothing); deploys (`instance_uuid` and
//! `instance_info`, validate, `active`, poll) and tear-downs (`deleted`, poll until available)
//! with `409 NodeLocked` retried with backoff; every write sent to Ironic checked against the
//! host's fence first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{DeployRequest, Fence, SourceError};
pub use crate::config::IronicSettings;
use crate::db::{self, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::identity::NodeUuid;
use crate::domain::mirror::{self, ListedNode};
use crate::ironic_api::{IronicApi, IronicError, IronicNodeRecord, PatchOp};

/// Provision states from which Ironic tears an instance down (`deleted`).
mod listing;
mod patch;
mod power;

use listing::{ListingError, ListingState};

const TEARABLE: &[&str] = &[
    "active",
    "deploy failed",
    "error",
    "wait call-back",
    "rescue",
    "rescue failed",
    "rescue wait",
    "unrescue failed",
];
/// Provision states of a node that carries nothing and is not being worked on.
const CLEAN: &[&str] = &["available", "manageable", "enroll"];
/// The longest wait between two tries of a locked node.
const MAX_LOCK_BACKOFF: Duration = Duration::from_secs(4);

/// What the last listing did, for the tracker passes, the admin API and the dashboard.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ListingStatus {
    /// When the last listing ended (worked or not).
    pub at: Option<DateTime<Utc>>,
    /// When a listing last worked.
    pub last_success: Option<DateTime<Utc>>,
    /// Nodes the last working listing showed.
    pub nodes: usize,
    /// Requests the last working listing took (pages).
    pub requests: usize,
    /// Nodes it found changed (written to the mirror).
    pub changed: usize,
    /// How long it took, in milliseconds, writing included.
    pub took_ms: u64,
    /// Of which waiting for Ironic's pages (the rest is ringmaster's: parse, compare, write).
    pub ironic_ms: u64,
    /// Why the last listing failed; `None` when it worked.
    pub error: Option<String>,
    /// Listings done so far by this process.
    pub listings: u64,
    /// Requests sent to Ironic so far by this process: listings, deploys, tear-downs.
    pub requests_total: u64,
    /// The listing lease: which nodes are listed (`ironic-listing`, with a group or shard).
    pub lease: String,
    /// The process that listed last (its token), if any has.
    pub holder: Option<Uuid>,
    /// Whether this process holds the lease and lists.
    pub lists_here: bool,
    /// Removals the last listing held back (beyond `--ironic-vanish-limit`).
    pub held: usize,
}

impl ListingStatus {
    fn as_record(&self) -> db::ironic_mirror::ListingRecord {
        let count = |value: usize| i64::try_from(value).unwrap_or(i64::MAX);
        db::ironic_mirror::ListingRecord {
            holder: self.holder.unwrap_or_default(),
            at: self.at.unwrap_or_default(),
            last_success: self.last_success,
            nodes: count(self.nodes),
            pages: count(self.requests),
            changed: count(self.changed),
            took_ms: i64::try_from(self.took_ms).unwrap_or(i64::MAX),
            held: count(self.held),
            error: self.error.clone(),
            listings: 0,
        }
    }

    fn from_record(
        record: Option<&db::ironic_mirror::ListingRecord>,
        lease: &str,
    ) -> ListingStatus {
        let Some(record) = record else {
            return ListingStatus {
                lease: lease.to_owned(),
                ..ListingStatus::default()
            };
        };
        let count = |value: i64| usize::try_from(value).unwrap_or(0);
        ListingStatus {
            at: Some(record.at),
            last_success: record.last_success,
            nodes: count(record.nodes),
            requests: count(record.pages),
            changed: count(record.changed),
            took_ms: u64::try_from(record.took_ms).unwrap_or(0),
            ironic_ms: 0,
            error: record.error.clone(),
            listings: u64::try_from(record.listings).unwrap_or(0),
            requests_total: 0,
            lease: lease.to_owned(),
            holder: Some(record.holder),
            lists_here: false,
            held: count(record.held),
        }
    }
}

/// A real Ironic, as this process talks to it.
pub struct IronicDriver {
    settings: IronicSettings,
    pool: Pool,
    clock: SharedClock,
    /// The connection, once the API version is negotiated (the first listing retries it).
    api: Mutex<Option<IronicApi>>,
    status: Mutex<ListingStatus>,
    /// Whether a listing loop runs (then a pass reads its status instead of listing).
    looping: std::sync::atomic::AtomicBool,
    /// The listing's lease and memory; one listing at a time.
    listing: tokio::sync::Mutex<ListingState>,
    requests: AtomicU64,
}

impl IronicDriver {
    /// A driver for the Ironic `settings` name; `api` is the connection made at start, if
    /// Ironic answered then (else the first listing connects).
    pub fn new(
        settings: IronicSettings,
        api: Option<IronicApi>,
        pool: Pool,
        clock: SharedClock,
    ) -> IronicDriver {
        let listing = ListingState::new(&settings.selection);
        IronicDriver {
            status: Mutex::new(ListingStatus {
                lease: listing.lease.clone(),
                ..ListingStatus::default()
            }),
            listing: tokio::sync::Mutex::new(listing),
            settings,
            pool,
            clock,
            api: Mutex::new(api),
            looping: std::sync::atomic::AtomicBool::new(false),
            requests: AtomicU64::new(0),
        }
    }

    /// The conductor group and shard it lists.
    pub fn selection(&self) -> &crate::ironic_api::NodeSelection {
        &self.settings.selection
    }

    /// The Ironic's URL.
    pub fn url(&self) -> &str {
        &self.settings.url
    }

    /// The negotiated API version, once connected.
    pub fn api_version(&self) -> Option<String> {
        self.api
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|api| api.version().to_string())
    }

    /// What the last listing did.
    pub fn status(&self) -> ListingStatus {
        let mut status = self
            .status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        status.requests_total = self.requests.load(Ordering::Relaxed);
        status
    }

    /// Says whether the node listing works: the last listing of the deployment's lister, or
    /// one now when no loop runs.
    pub async fn check_listing(&self) -> Result<(), String> {
        if !self.looping.load(Ordering::SeqCst) {
            let mut state = self.listing.lock().await;
            match self.list_as_holder(&mut state).await {
                Ok(_) => return Ok(()),
                Err(ListingError::Failed(error)) => return Err(error),
                Err(ListingError::NotHolder) => self.read_holders_status(&state).await,
            }
        }
        let status = self.status();
        match (status.error, status.last_success) {
            (Some(error), _) => Err(error),
            (None, Some(_)) => Ok(()),
            (None, None) => Err(format!(
                "Ironic at {} has not been listed yet",
                self.settings.url
            )),
        }
    }

    /// Lists the nodes and applies the listing to the mirror, taking the listing lease if
    /// it is free; returns the nodes it changed. A failure (Ironic unreachable, an error, an
    /// empty listing, another process listing) changes nothing.
    pub async fn list_once(&self) -> Result<Vec<Uuid>, String> {
        let mut state = self.listing.lock().await;
        match self.list_as_holder(&mut state).await {
            Ok(changed) => Ok(changed),
            Err(ListingError::Failed(error)) => Err(error),
            Err(ListingError::NotHolder) => Err(format!(
                "another process lists Ironic ({}): it holds the lease",
                state.lease
            )),
        }
    }

    /// The connection, negotiating the API version first when there is none yet.
    async fn connection(&self) -> Result<IronicApi, IronicError> {
        if let Some(api) = self
            .api
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return Ok(api);
        }
        self.count(1);
        let api = IronicApi::connect(
            &self.settings.url,
            self.settings.auth.clone(),
            &self.settings.tls,
        )
        .await?;
        log::info!(
            "ironic at {} answers: API {}",
            self.settings.url,
            api.version()
        );
        *self.api.lock().unwrap_or_else(PoisonError::into_inner) = Some(api.clone());
        Ok(api)
    }

    fn count(&self, requests: usize) {
        self.requests
            .fetch_add(u64::try_from(requests).unwrap_or(0), Ordering::Relaxed);
    }

    /// Deploys as Nova's driver does: `instance_uuid` and `instance_info`, validation,
    /// `active`, then polls until `active` (done) or `deploy failed`/`error`. A deploy that
    /// fails leaves the node clean (torn down, its `instance_uuid` and `instance_info` gone).
    pub async fn deploy(
        &self,
        request: &DeployRequest,
        fence: &Fence,
    ) -> Result<ListedNode, SourceError> {
        let api = self.connection().await.map_err(failed)?;
        let node = request.node;
        let mut ops = vec![
            PatchOp::add("/instance_uuid", serde_json::json!(request.instance)),
            PatchOp::add(
                "/instance_info/image_source",
                serde_json::json!(self.settings.image_source),
            ),
            PatchOp::add("/instance_info/root_gb", serde_json::json!(request.root_gb)),
            PatchOp::add(
                "/instance_info/display_name",
                serde_json::json!(request.display_name),
            ),
        ];
        let configdrive = request.server.as_ref().and_then(|server| {
            ops.extend(patch::server_patch(server));
            server.configdrive.clone()
        });
        self.write(fence, node, || api.patch_node(node.uuid(), &ops))
            .await?;
        match self
            .validate_and_deploy(&api, node, configdrive, fence)
            .await
        {
            Ok(record) => Ok(record),
            Err(SourceError::Fenced(node)) => Err(SourceError::Fenced(node)),
            Err(failure) => {
                if let Err(cleanup) = self
                    .tear_down(&api, node, request.instance.uuid(), fence)
                    .await
                {
                    log::warn!(
                        "node {node}: cleaning up after the failed deploy of instance {} failed: {cleanup}",
                        request.instance
                    );
                }
                Err(failure)
            }
        }
    }

    async fn validate_and_deploy(
        &self,
        api: &IronicApi,
        node: NodeUuid,
        configdrive: Option<serde_json::Value>,
        fence: &Fence,
    ) -> Result<ListedNode, SourceError> {
        self.count(1);
        let checks = api.validate_node(node.uuid()).await.map_err(failed)?;
        for interface in ["deploy", "power", "boot", "management"] {
            if let Some(check) = checks.get(interface)
                && check.result == Some(false)
            {
                return Err(SourceError::Failed(format!(
                    "ironic node {node} failed validation of its {interface} interface: {}",
                    check.reason.as_deref().unwrap_or("no reason given")
                )));
            }
        }
        self.write(fence, node, || {
            api.set_provision_state_with(node.uuid(), "active", configdrive.clone())
        })
        .await?;
        let record = self
            .wait_for(api, node, "deploy", |state| {
                matches!(state, "active" | "deploy failed" | "error")
            })
            .await?;
        if record.provision_state == "active" {
            return listed_node(record).ok_or_else(|| {
                SourceError::Failed(format!("ironic node {node} lost its resource class"))
            });
        }
        Err(SourceError::Failed(format!(
            "ironic failed to deploy node {node}: {}{}",
            record.provision_state,
            record
                .last_error
                .map(|error| format!(": {error}"))
                .unwrap_or_default()
        )))
    }

    /// Says whether Ironic has `node` and it carries `instance` (404: it has not).
    pub async fn carries(&self, node: NodeUuid, instance: Uuid) -> Result<bool, SourceError> {
        let api = self.connection().await.map_err(failed)?;
        self.count(1);
        match api.get_node(node.uuid()).await {
            Ok(record) => Ok(record.instance_uuid == Some(instance)),
            Err(IronicError::Refused { status: 404, .. }) => Ok(false),
            Err(other) => Err(failed(other)),
        }
    }

    /// Reads `node` from Ironic: busy while a provision state is in progress (`…ing`,
    /// `… wait`, `wait call-back`), at rest otherwise (as the mirror should show it).
    pub async fn current(&self, node: NodeUuid) -> Result<super::Current, SourceError> {
        let api = self.connection().await.map_err(failed)?;
        self.count(1);
        let record = api.get_node(node.uuid()).await.map_err(failed)?;
        let state = record.provision_state.clone();
        if state.ends_with("ing") || state.contains("wait") {
            return Ok(super::Current::Busy(state));
        }
        Ok(super::Current::AtRest(listed_node(record).map(Box::new)))
    }

    /// Tears `instance` down from `node` as Nova's driver does: `deleted`, then polls until
    /// the node is available again (`clean failed` is reported), then clears what the deploy
    /// set. A node that carries another instance is left alone.
    pub async fn destroy(
        &self,
        node: NodeUuid,
        instance: Uuid,
        fence: &Fence,
    ) -> Result<ListedNode, SourceError> {
        let api = self.connection().await.map_err(failed)?;
        let record = self.tear_down(&api, node, instance, fence).await?;
        listed_node(record)
            .ok_or_else(|| SourceError::Failed(format!("ironic node {node} has no resource class")))
    }

    async fn tear_down(
        &self,
        api: &IronicApi,
        node: NodeUuid,
        instance: Uuid,
        fence: &Fence,
    ) -> Result<IronicNodeRecord, SourceError> {
        let deadline = Instant::now() + self.settings.deploy_timeout;
        let mut requested = false;
        let record = loop {
            self.count(1);
            let record = api.get_node(node.uuid()).await.map_err(failed)?;
            if let Some(other) = record.instance_uuid.filter(|other| *other != instance) {
                return Err(SourceError::Failed(format!(
                    "ironic node {node} carries instance {other}, not {instance}: left alone"
                )));
            }
            let state = record.provision_state.as_str();
            if CLEAN.contains(&state) {
                break record;
            }
            if state == "clean failed" {
                return Err(SourceError::Failed(format!(
                    "ironic node {node} failed cleaning after the tear-down of instance {instance}: {}",
                    record.last_error.as_deref().unwrap_or("no error given")
                )));
            }
            if TEARABLE.contains(&state) && !requested {
                self.write(fence, node, || {
                    api.set_provision_state(node.uuid(), "deleted")
                })
                .await?;
                requested = true;
            } else if Instant::now() > deadline {
                return Err(SourceError::Failed(format!(
                    "ironic node {node} was not torn down within {}: still {state}",
                    humantime::format_duration(self.settings.deploy_timeout)
                )));
            }
            actix_rt::time::sleep(self.settings.poll_interval).await;
        };
        if record.instance_uuid == Some(instance) {
            let ops = [
                PatchOp::remove("/instance_uuid"),
                PatchOp::remove("/instance_info"),
            ];
            self.write(fence, node, || api.patch_node(node.uuid(), &ops))
                .await?;
            self.count(1);
            return api.get_node(node.uuid()).await.map_err(failed);
        }
        Ok(record)
    }

    /// Reads `node` every poll interval until `done` says its state is final, for at most the
    /// deploy timeout; a read that fails is tried again until then.
    async fn wait_for(
        &self,
        api: &IronicApi,
        node: NodeUuid,
        what: &str,
        done: impl Fn(&str) -> bool,
    ) -> Result<IronicNodeRecord, SourceError> {
        let deadline = Instant::now() + self.settings.deploy_timeout;
        loop {
            actix_rt::time::sleep(self.settings.poll_interval).await;
            self.count(1);
            let last = match api.get_node(node.uuid()).await {
                Ok(record) if done(&record.provision_state) => return Ok(record),
                Ok(record) => record.provision_state,
                Err(error) => error.to_string(),
            };
            if Instant::now() > deadline {
                return Err(SourceError::Failed(format!(
                    "ironic node {node}: the {what} did not finish within {} (last seen: {last})",
                    humantime::format_duration(self.settings.deploy_timeout)
                )));
            }
        }
    }

    /// Sends one write for `node` while the host holds it: the fence is checked before each
    /// try, and a `409 NodeLocked` is tried again with backoff up to the configured limit.
    async fn write<F, Fut>(&self, fence: &Fence, node: NodeUuid, send: F) -> Result<(), SourceError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), IronicError>>,
    {
        let mut backoff = Duration::from_millis(250);
        let mut tries = 0;
        loop {
            if !fence().await {
                return Err(SourceError::Fenced(node));
            }
            tries += 1;
            self.count(1);
            match send().await {
                Ok(()) => return Ok(()),
                Err(locked) if locked.is_node_locked() => {
                    if tries > self.settings.lock_retries {
                        return Err(SourceError::Failed(format!(
                            "ironic node {node} stayed locked by a conductor through {tries} tries: {locked}"
                        )));
                    }
                    log::debug!("ironic node {node} is locked; trying again in {backoff:?}");
                    actix_rt::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_LOCK_BACKOFF);
                }
                Err(other) => return Err(failed(other)),
            }
        }
    }
}

fn failed(error: IronicError) -> SourceError {
    SourceError::Failed(error.to_string())
}

/// A listed node in the mirror's terms; `None` for a node without a resource class (nothing
/// can be scheduled to it, as in Nova).
pub(super) fn listed_node(record: IronicNodeRecord) -> Option<ListedNode> {
    let property = |name: &str| -> i32 {
        match record.properties.get(name) {
            Some(serde_json::Value::Number(number)) => number
                .as_i64()
                .and_then(|value| i32::try_from(value).ok())
                .unwrap_or(0),
            Some(serde_json::Value::String(text)) => text.trim().parse().unwrap_or(0),
            _ => 0,
        }
    };
    let (cpus, memory_mb, local_gb) = (
        property("cpus"),
        property("memory_mb"),
        property("local_gb"),
    );
    Some(ListedNode {
        uuid: record.uuid,
        name: record.name,
        resource_class: record.resource_class.filter(|class| !class.is_empty())?,
        provision_state: record.provision_state,
        power_state: record.power_state,
        maintenance: record.maintenance,
        last_error: record.last_error,
        instance_uuid: record.instance_uuid,
        reservation: record.reservation,
        traits: mirror::normalize_traits(record.traits),
        cpus,
        memory_mb,
        local_gb,
        addresses: record
            .network_data
            .as_ref()
            .and_then(crate::domain::compute::addresses::from_network_data),
        conductor_group: record.conductor_group.unwrap_or_default(),
        shard: record.shard,
    })
}
