//! One listing of a real Ironic per deployment. The process holding the lease
//! `ironic-listing …` (one per conductor group / shard filter, like the rebalancer's) lists
//! Ironic each interval, compares each page with what it remembers of the mirror
//! (`mirror::SeenNodes`: built once from the mirror when it takes the lease, then fed by its
//! own listings and by the rows others wrote since), and writes only the changed nodes in a
//! transaction that holds the lease. Every process reads the holder's outcome from
//! `ironic_listings`; the owners of changed nodes, wherever they run, are asked to report them
//! (`HostDirectory::refresh`, through `db::notify::REFRESH_CHANNEL` for other processes).

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{IronicDriver, ListingStatus, listed_node};
use crate::actors::HostDirectory;
use crate::db::leases::{self, LeaseToken};
use crate::db::{self, DbError, Pool};
use crate::domain::identity::NodeUuid;
use crate::domain::mirror::{self, ListingCompare, SeenNodes};
use crate::ironic_api::{IronicApi, IronicError, NodeSelection};

/// Rows written this long before a listing began are read again at the next: a deploy's
/// transaction may commit a row stamped a little before its commit.
const WATERMARK_MARGIN: chrono::Duration = chrono::Duration::seconds(30);

/// What the listing side of a driver keeps between listings.
pub(super) struct ListingState {
    /// The lease's name: `ironic-listing`, with the conductor group or shard it lists.
    pub(super) lease: String,
    /// How long the lease lasts without a renewal.
    pub(super) duration: chrono::Duration,
    /// Who holds it when this process does: the process's token.
    pub(super) holder: Uuid,
    /// The epoch this process lists under, while it holds the lease.
    token: Option<LeaseToken>,
    renewed: Option<Instant>,
    /// What the mirror shows, while this process holds the lease.
    seen: Option<SeenNodes>,
    /// Rows written after this are read before the next listing.
    watermark: Option<DateTime<Utc>>,
    /// The nodes the last listing lacked beyond the vanish limit, held until the next agrees.
    held: Vec<Uuid>,
    /// How long the last listing waited for Ironic's pages.
    waited: Duration,
    /// Whether the lease's row is known to exist.
    ensured: bool,
}

impl ListingState {
    pub(super) fn new(selection: &NodeSelection) -> ListingState {
        ListingState {
            lease: lease_name(selection),
            duration: chrono::Duration::seconds(30),
            holder: Uuid::new_v4(),
            token: None,
            renewed: None,
            seen: None,
            watermark: None,
            held: Vec::new(),
            waited: Duration::ZERO,
            ensured: false,
        }
    }

    fn drop_lease(&mut self) {
        if self.token.take().is_some() {
            log::info!("this process no longer lists Ironic ({})", self.lease);
            crate::metrics::count_listing_lease("lost");
        }
        self.seen = None;
        self.watermark = None;
        self.held.clear();
    }
}

/// The lease of the listing of `selection`'s nodes: `ironic-listing`, `ironic-listing
/// group=G` or `ironic-listing shard=S` (a name beyond the lease's 64 characters is cut and
/// ends with a digest of the whole).
fn lease_name(selection: &NodeSelection) -> String {
    let name = match (&selection.conductor_group, &selection.shard) {
        (Some(group), _) => format!("ironic-listing group={group}"),
        (None, Some(shard)) => format!("ironic-listing shard={shard}"),
        (None, None) => "ironic-listing".to_owned(),
    };
    if name.len() <= 64 {
        return name;
    }
    // FNV-1a: the same in every process and every version.
    let fnv = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let digest = format!(" #{fnv:016x}");
    let mut cut = 64 - digest.len();
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{digest}", &name[..cut])
}

/// Why a listing did not run or was not applied.
pub(super) enum ListingError {
    /// Another process holds the lease: it lists.
    NotHolder,
    Failed(String),
}

impl From<DbError> for ListingError {
    fn from(error: DbError) -> ListingError {
        match error {
            DbError::LeadershipLost { .. } => ListingError::NotHolder,
            other => ListingError::Failed(other.to_string()),
        }
    }
}

impl IronicDriver {
    /// Bytes the listing holder keeps between listings (what it remembers of the mirror);
    /// 0 when this process does not list.
    pub async fn listing_memory(&self) -> usize {
        self.listing
            .lock()
            .await
            .seen
            .as_ref()
            .map_or(0, SeenNodes::held_bytes)
    }

    /// Takes or renews the listing lease; `false` when another process holds it.
    async fn hold_lease(&self, state: &mut ListingState) -> Result<bool, DbError> {
        let (name, holder, duration) = (state.lease.clone(), state.holder, state.duration);
        let (now, ensured) = (self.clock.now(), state.ensured);
        let epoch = db::run(&self.pool, move |conn| {
            db::in_transaction(conn, |conn| {
                if !ensured {
                    leases::ensure(conn, &name)?;
                }
                leases::acquire_or_renew(conn, &name, holder, duration, now)
            })
        })
        .await?;
        state.ensured = true;
        match epoch {
            Some(epoch) => {
                if state.token.is_none_or(|token| token.epoch != epoch) {
                    log::info!(
                        "this process lists Ironic now ({}, epoch {epoch})",
                        state.lease
                    );
                    crate::metrics::count_listing_lease("gained");
                    state.seen = None;
                }
                state.token = Some(LeaseToken { holder, epoch });
                state.renewed = Some(Instant::now());
                Ok(true)
            }
            None => {
                state.drop_lease();
                Ok(false)
            }
        }
    }

    /// Renews the lease during a long listing, once a third of it has passed.
    async fn renew_if_due(&self, state: &mut ListingState) -> Result<(), ListingError> {
        let third = (state.duration / 3)
            .to_std()
            .unwrap_or(Duration::from_secs(10));
        if state.renewed.is_some_and(|at| at.elapsed() < third) {
            return Ok(());
        }
        if self.hold_lease(state).await? {
            Ok(())
        } else {
            Err(ListingError::NotHolder)
        }
    }

    /// Lists Ironic and applies the listing to the mirror, as the lease holder; returns the
    /// nodes it changed. A failure (Ironic unreachable, an error, an empty listing) changes
    /// nothing and is logged once; `NotHolder` when another process lists.
    pub(super) async fn list_as_holder(
        &self,
        state: &mut ListingState,
    ) -> Result<Vec<Uuid>, ListingError> {
        if !self.hold_lease(state).await? {
            return Err(ListingError::NotHolder);
        }
        let started = Instant::now();
        let outcome = self.list_and_mirror(state).await;
        let took = started.elapsed();
        let mut status = self
            .status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        status.at = Some(self.clock.now());
        status.listings += 1;
        status.holder = Some(state.holder);
        status.lists_here = true;
        status.lease = state.lease.clone();
        let result = match outcome {
            Ok((listed, pages, changed)) => {
                status.last_success = status.at;
                status.nodes = listed;
                status.requests = pages;
                status.changed = changed.len();
                status.took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
                status.ironic_ms = u64::try_from(state.waited.as_millis()).unwrap_or(u64::MAX);
                status.held = state.held.len();
                status.error = None;
                crate::metrics::observe_ironic_listing(true, took, changed.len());
                Ok(changed)
            }
            Err(ListingError::NotHolder) => {
                state.drop_lease();
                return Err(ListingError::NotHolder);
            }
            Err(ListingError::Failed(error)) => {
                log::warn!(
                    "ironic listing failed, nothing changed (hosts keep what they own): {error}"
                );
                crate::metrics::observe_ironic_listing(false, took, 0);
                status.error = Some(error.clone());
                Err(ListingError::Failed(error))
            }
        };
        self.record(state, status).await;
        result
    }

    /// Shows `status` in this process and, under the lease, to the others.
    async fn record(&self, state: &ListingState, status: ListingStatus) {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = status.clone();
        let (Some(token), name) = (state.token, state.lease.clone()) else {
            return;
        };
        let now = self.clock.now();
        let written = db::run(&self.pool, move |conn| {
            db::in_transaction(conn, |conn| {
                leases::hold(conn, &name, token, now)?;
                db::ironic_mirror::record_listing(conn, &name, &status.as_record())
            })
        })
        .await;
        if let Err(error) = written {
            log::debug!("the listing's outcome was not recorded: {error}");
        }
    }

    /// Reads what the holder's last listing did (this process does not list).
    pub(super) async fn read_holders_status(&self, state: &ListingState) {
        let name = state.lease.clone();
        let record = db::run(&self.pool, move |conn| {
            db::ironic_mirror::listing_record(conn, &name)
        })
        .await;
        match record {
            Ok(record) => {
                let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
                *status = ListingStatus::from_record(record.as_ref(), &state.lease);
            }
            Err(error) => log::debug!("the listing holder's outcome was not read: {error}"),
        }
    }

    async fn list_and_mirror(
        &self,
        state: &mut ListingState,
    ) -> Result<(usize, usize, Vec<Uuid>), ListingError> {
        let api = self
            .connection()
            .await
            .map_err(|error| ListingError::Failed(error.to_string()))?;
        let listed_at = self.clock.now();
        self.catch_up(state, listed_at).await?;
        let mut compare = ListingCompare::default();
        let (mut pages, mut without_class) = (0, 0);
        let mut marker = None;
        state.waited = Duration::ZERO;
        loop {
            let page = api
                .list_page(&self.settings.selection, marker)
                .await
                .map_err(|error| ListingError::Failed(error.to_string()))?;
            pages += 1;
            self.count(1);
            state.waited += page.waited;
            let (records, next) = (page.nodes, page.next);
            let total = records.len();
            let nodes: Vec<_> = records.into_iter().filter_map(listed_node).collect();
            without_class += total - nodes.len();
            compare.page(state.seen.as_ref().unwrap_or(&SeenNodes::default()), nodes);
            match next {
                Some(next) => marker = Some(next),
                None => break,
            }
            self.renew_if_due(state).await?;
        }
        if without_class > 0 {
            log::debug!(
                "ironic lists {without_class} nodes without a resource class: ringmaster leaves \
                 them out"
            );
        }
        let listed = compare.listed() + without_class;
        let seen = state.seen.take().unwrap_or_default();
        let mut changes = match compare.finish(&seen) {
            Ok(changes) => changes,
            Err(refused) => {
                state.seen = Some(seen);
                return Err(ListingError::Failed(refused.to_string()));
            }
        };
        let limit = self.settings.vanish_limit.of(seen.len());
        let agreed = !state.held.is_empty() && changes.removals.len() > limit;
        let held = mirror::hold_mass_removals(limit, &mut changes, &state.held);
        if !held.is_empty() {
            log::warn!(
                "ironic's listing lacks {} of the {} nodes ringmaster knows (more than {limit} at \
                 once, --ironic-vanish-limit {}): none is taken for gone unless the next listing \
                 lacks the same; a project-scoped token sees only its project's nodes",
                held.len(),
                seen.len(),
                self.settings.vanish_limit
            );
            crate::metrics::count_ironic_removals_held(held.len());
        } else if agreed {
            log::warn!(
                "two listings of ironic agree that {} nodes are gone: their compute nodes go \
                 once nothing is allocated on them",
                changes.removals.len()
            );
        }
        state.held = held;
        let regrouped = self.regrouped(&api, &mut changes).await;
        let applied = self.apply(state, changes, listed_at).await;
        let mut seen = seen;
        if let Ok(changes) = &applied {
            seen.note(&changes.upserts);
            seen.forget(&changes.removals);
            seen.forget(&regrouped);
        }
        state.seen = Some(seen);
        Ok((listed, pages, applied?.nodes()))
    }

    /// A listing of one conductor group or shard lacks `changes.removals`: each is asked of
    /// Ironic. A node now of another group or shard moved there — its row is rewritten, not
    /// removed, so its compute node, provider and allocations stay and the rebalancer gives it
    /// to a host of its new group; one Ironic no longer has (404) is gone; one that cannot be
    /// read now is kept until a later listing. Returns the nodes that moved away.
    async fn regrouped(&self, api: &IronicApi, changes: &mut mirror::MirrorChanges) -> Vec<Uuid> {
        let selection = &self.settings.selection;
        if selection.is_all() || changes.removals.is_empty() {
            return Vec::new();
        }
        let mut moved = Vec::new();
        let mut gone = Vec::new();
        for uuid in std::mem::take(&mut changes.removals) {
            self.count(1);
            match api.get_node(uuid).await {
                Err(IronicError::Refused { status: 404, .. }) => gone.push(uuid),
                Ok(record) => match listed_node(record) {
                    Some(node)
                        if !selection.matches(&node.conductor_group, node.shard.as_deref()) =>
                    {
                        moved.push(uuid);
                        changes.upserts.push(node);
                    }
                    // Still selected (a listing that raced a change), or no class: not gone.
                    _ => {}
                },
                Err(error) => {
                    log::warn!(
                        "ironic's listing lacks node {uuid}, which cannot be read now: {error}"
                    )
                }
            }
        }
        if !moved.is_empty() {
            log::info!(
                "{} nodes left {selection} for another conductor group or shard in ironic",
                moved.len()
            );
        }
        changes.removals = gone;
        moved
    }

    /// Brings what the holder remembers up to the mirror: all of it when it has just taken the
    /// lease, else the rows others wrote since the last listing.
    async fn catch_up(
        &self,
        state: &mut ListingState,
        listed_at: DateTime<Utc>,
    ) -> Result<(), ListingError> {
        let since = state.watermark.filter(|_| state.seen.is_some());
        let selection = self.settings.selection.clone();
        let rows = db::run(&self.pool, move |conn| match since {
            Some(since) => db::ironic_mirror::written_since(conn, since, &selection),
            None => db::ironic_mirror::selected_nodes(conn, &selection),
        })
        .await?;
        state
            .seen
            .get_or_insert_with(SeenNodes::default)
            .note(&rows);
        state.watermark = Some(listed_at - WATERMARK_MARGIN);
        Ok(())
    }

    /// Writes `changes` under the lease (a holder that lost it writes nothing); gives them
    /// back once written.
    async fn apply(
        &self,
        state: &ListingState,
        changes: mirror::MirrorChanges,
        listed_at: DateTime<Utc>,
    ) -> Result<mirror::MirrorChanges, ListingError> {
        if changes.is_empty() {
            return Ok(changes);
        }
        let token = state.token.ok_or(ListingError::NotHolder)?;
        let name = state.lease.clone();
        let clock = self.clock.clone();
        let selection = self.settings.selection.clone();
        Ok(db::run(&self.pool, move |conn| {
            db::in_transaction(conn, |conn| {
                leases::hold(conn, &name, token, clock.now())?;
                let now = clock.now();
                db::ironic_mirror::apply(conn, &changes, &selection, now, Some(listed_at))
            })?;
            Ok(changes)
        })
        .await?)
    }

    /// Starts the listing loop: every tracker interval, the lease holder lists; the others
    /// read what it did. The lease (the rebalancer's duration) is renewed at least three times
    /// within it; a holder that stops is replaced within it. After a listing that changed
    /// nodes, their owners report them at once, in this process or another.
    pub fn start_listing(
        self: &std::sync::Arc<Self>,
        hosts: HostDirectory,
        settings: &crate::config::ActorSettings,
        process: Uuid,
    ) {
        let (interval, lease) = (
            settings.host.update_resources_interval,
            settings.rebalancer.lease,
        );
        if interval.is_zero() {
            return;
        }
        self.looping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let tick = interval
            .min((lease / 3).to_std().unwrap_or(interval))
            .max(Duration::from_millis(50));
        let driver = std::sync::Arc::downgrade(self);
        actix::spawn(async move {
            let mut last_listing: Option<Instant> = None;
            loop {
                let Some(running) = driver.upgrade() else {
                    break;
                };
                let mut state = running.listing.lock().await;
                state.duration = lease;
                state.holder = process;
                let due = last_listing.is_none_or(|at| at.elapsed() >= interval);
                if due || state.token.is_none() {
                    let started = Instant::now();
                    match running.list_as_holder(&mut state).await {
                        Ok(changed) => {
                            last_listing = Some(started);
                            let changed = changed.into_iter().map(NodeUuid).collect();
                            refresh_owners(&running.pool, &hosts, changed).await;
                        }
                        Err(ListingError::Failed(_)) => last_listing = Some(started),
                        Err(ListingError::NotHolder) => {
                            last_listing = None;
                            running.read_holders_status(&state).await;
                        }
                    }
                } else if let Err(error) = running.hold_lease(&mut state).await {
                    log::debug!("the listing lease was not renewed: {error}");
                }
                drop(state);
                drop(running);
                actix_rt::time::sleep(tick).await;
            }
        });
    }
}

/// Has the owners of `changed` nodes report them now, so that a change in Ironic
/// (maintenance, a new or deleted node) shows within the listing's pass: hosts of this
/// process by message, hosts of others through a notification.
async fn refresh_owners(pool: &Pool, hosts: &HostDirectory, changed: Vec<NodeUuid>) {
    if changed.is_empty() {
        return;
    }
    let local = hosts.names();
    let refreshed = db::run(pool, move |conn| {
        let owners = db::compute_nodes::owners_of(conn, &changed)?;
        let mut by_host: std::collections::BTreeMap<String, Vec<NodeUuid>> = Default::default();
        for (host, node) in owners {
            by_host.entry(host).or_default().push(node);
        }
        let (here, elsewhere): (Vec<_>, Vec<_>) = by_host
            .into_iter()
            .partition(|(host, _)| local.contains(host));
        db::in_transaction(conn, |conn| db::notify::refresh_nodes(conn, &elsewhere))?;
        Ok(here)
    })
    .await;
    match refreshed {
        Ok(here) => {
            for (host, nodes) in here {
                hosts.refresh(&host, nodes);
            }
        }
        Err(error) => log::debug!("owners of changed ironic nodes not read: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_filter_has_a_lease_that_fits_its_column() {
        let select = |group: Option<&str>, shard: Option<&str>| NodeSelection {
            conductor_group: group.map(str::to_owned),
            shard: shard.map(str::to_owned),
        };
        assert_eq!(lease_name(&select(None, None)), "ironic-listing");
        assert_eq!(lease_name(&select(Some(""), None)), "ironic-listing group=");
        assert_eq!(
            lease_name(&select(None, Some("s1"))),
            "ironic-listing shard=s1"
        );
        let long = "g".repeat(255);
        let (a, b) = (
            lease_name(&select(Some(&long), None)),
            lease_name(&select(Some(&long[1..]), None)),
        );
        assert!(a.len() <= 64 && b.len() <= 64, "{a}");
        assert_ne!(a, b, "the digest tells long names apart");
    }
}
