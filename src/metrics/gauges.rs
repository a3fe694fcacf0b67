//! The gauges of one scrape, rendered from what the process holds: per host, per deployment,
//! per pool, and the listing of a real Ironic.

use chrono::{DateTime, Utc};
use prometheus::{Encoder, GaugeVec, Opts, Registry, TextEncoder};

use super::families;
use crate::db::figures::DeploymentFigures;
use crate::domain::host::{HostState, Liveness};

/// One gauge value with its label values.
pub type Labelled = (Vec<String>, f64);

/// The gauges of one scrape, from what the process holds.
pub struct Gauges {
    registry: Registry,
    values: Vec<(GaugeVec, Vec<Labelled>)>,
}

impl Gauges {
    pub fn new() -> Gauges {
        Gauges {
            registry: Registry::new(),
            values: Vec::new(),
        }
    }

    /// Adds gauge `name` with `labels`, and its values (label values, value).
    pub fn add(&mut self, name: &str, help: &str, labels: &[&str], values: Vec<Labelled>) {
        let Ok(gauge) = GaugeVec::new(Opts::new(name, help), labels) else {
            log::error!("metrics: invalid gauge {name}");
            return;
        };
        if self.registry.register(Box::new(gauge.clone())).is_ok() {
            self.values.push((gauge, values));
        }
    }

    /// Renders these gauges and the process's counters and histograms in the text exposition
    /// format.
    pub fn render(self) -> String {
        for (gauge, values) in &self.values {
            for (labels, value) in values {
                let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
                if let Ok(child) = gauge.get_metric_with_label_values(&labels) {
                    child.set(*value);
                }
            }
        }
        let mut gathered = self.registry.gather();
        if let Some(families) = families() {
            gathered.extend(families.registry.gather());
        }
        let mut out = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&gathered, &mut out) {
            log::error!("metrics could not be encoded: {error}");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

impl Default for Gauges {
    fn default() -> Self {
        Gauges::new()
    }
}

/// What a scrape shows of the deployment and of this process.
pub struct ProcessView<'a> {
    pub figures: &'a DeploymentFigures,
    pub now: DateTime<Utc>,
    pub liveness: Liveness,
    /// The hosts this process runs.
    pub local: &'a [String],
    pub leader: bool,
    pub ring_version: i64,
    pub ring_members: usize,
    /// Each database pool, by name.
    pub pools: Vec<(&'static str, crate::db::PoolFigures)>,
    /// The listing of a real Ironic, when nodes come from one.
    pub ironic: Option<IronicView>,
}

/// What a scrape shows of the Ironic listing: the deployment's last listing (this process's
/// when it holds the lease, else the holder's) and its interval.
#[derive(Debug, Clone, Copy, Default)]
pub struct IronicView {
    pub lists_here: bool,
    pub seconds: f64,
    pub pages: usize,
    pub changed: usize,
    pub held: usize,
    pub interval_seconds: f64,
    /// Seconds since the last listing that worked (-1: none yet).
    pub success_age_seconds: f64,
}

fn one(label: &str) -> Vec<String> {
    vec![label.to_owned()]
}

impl Gauges {
    /// Adds the gauges of `view`: per host, per deployment, per pool.
    pub fn add_view(&mut self, view: &ProcessView<'_>) {
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        self.add(
            "ringmaster_build_info",
            "The ringmaster version this process runs.",
            &["version"],
            vec![(one(crate::db::processes::VERSION), 1.0)],
        );
        self.add(
            "ringmaster_leader",
            "1 while this process leads rebalancing.",
            &[],
            vec![(Vec::new(), flag(view.leader))],
        );
        self.add(
            "ringmaster_ring_version",
            "The ring version this process last computed.",
            &[],
            vec![(Vec::new(), view.ring_version as f64)],
        );
        self.add(
            "ringmaster_ring_members",
            "Hosts in the ring (as the leader sees it).",
            &[],
            vec![(Vec::new(), view.ring_members as f64)],
        );
        self.add_hosts(view, flag);
        self.add_unserved(&view.figures.unserved);
        let by_state = |counts: &[(String, i64)]| {
            counts
                .iter()
                .map(|(state, count)| (one(state), *count as f64))
                .collect()
        };
        self.add(
            "ringmaster_nodes",
            "Ironic nodes by provision state.",
            &["state"],
            by_state(&view.figures.nodes_by_state),
        );
        self.add(
            "ringmaster_instances",
            "Live instances by vm state.",
            &["state"],
            by_state(&view.figures.instances_by_state),
        );
        let age = view
            .figures
            .read_at
            .map(|at| seconds(view.now - at))
            .unwrap_or(-1.0);
        self.add(
            "ringmaster_figures_age_seconds",
            "Age of the deployment figures this scrape shows (-1: the first read failed).",
            &[],
            vec![(Vec::new(), age)],
        );
        if let Some(audit) = view.figures.audit {
            self.add(
                "ringmaster_audit_violations",
                "Invariant violations the last audit found (every minute; 0: all hold).",
                &[],
                vec![(Vec::new(), audit.violations as f64)],
            );
            self.add(
                "ringmaster_audit_age_seconds",
                "Age of the audit ringmaster_audit_violations shows.",
                &[],
                vec![(Vec::new(), seconds(view.now - audit.read_at))],
            );
        }
        self.add_pools(view);
        if let Some(ironic) = view.ironic {
            self.add_ironic(&ironic, flag(ironic.lists_here));
        }
    }

    fn add_pools(&mut self, view: &ProcessView<'_>) {
        let mut connections = Vec::new();
        let mut sizes = Vec::new();
        for (pool, figures) in &view.pools {
            let idle = f64::from(figures.idle);
            let open = f64::from(figures.open);
            connections.push((vec![(*pool).to_owned(), "in_use".to_owned()], open - idle));
            connections.push((vec![(*pool).to_owned(), "idle".to_owned()], idle));
            sizes.push((one(pool), f64::from(figures.max)));
        }
        self.add(
            "ringmaster_db_pool_connections",
            "Database connections by pool and use.",
            &["pool", "state"],
            connections,
        );
        self.add(
            "ringmaster_db_pool_max_connections",
            "Largest size of each database pool.",
            &["pool"],
            sizes,
        );
    }

    fn add_ironic(&mut self, ironic: &IronicView, lists_here: f64) {
        let mut single = |name: &str, help: &str, value: f64| {
            self.add(name, help, &[], vec![(Vec::new(), value)]);
        };
        single(
            "ringmaster_ironic_listing_lease_held",
            "1 while this process holds the Ironic listing lease (it lists for the deployment).",
            lists_here,
        );
        single(
            "ringmaster_ironic_listing_last_duration_seconds",
            "How long the deployment's last listing of Ironic took.",
            ironic.seconds,
        );
        single(
            "ringmaster_ironic_listing_last_pages",
            "Pages (requests) of the deployment's last listing of Ironic.",
            ironic.pages as f64,
        );
        single(
            "ringmaster_ironic_listing_last_changed_nodes",
            "Nodes the deployment's last listing of Ironic found new, changed or gone.",
            ironic.changed as f64,
        );
        single(
            "ringmaster_ironic_listing_removals_held",
            "Nodes the last listing lacked beyond --ironic-vanish-limit, held back.",
            ironic.held as f64,
        );
        single(
            "ringmaster_ironic_listing_interval_seconds",
            "How often Ironic is listed (--update-resources-interval).",
            ironic.interval_seconds,
        );
        single(
            "ringmaster_ironic_listing_success_age_seconds",
            "Time since a listing of Ironic last worked (-1: none has yet).",
            ironic.success_age_seconds,
        );
    }

    fn add_hosts(&mut self, view: &ProcessView<'_>, flag: impl Fn(bool) -> f64) {
        let owned: std::collections::HashMap<&str, i64> = view
            .figures
            .nodes_by_host
            .iter()
            .map(|(host, count)| (host.as_str(), *count))
            .collect();
        let (mut states, mut ages, mut nodes, mut fenced, mut local) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for host in &view.figures.hosts {
            let state = host.state(&view.liveness, view.now);
            for candidate in [
                HostState::Up,
                HostState::Fenced,
                HostState::Down,
                HostState::Disabled,
            ] {
                states.push((
                    vec![host.name.clone(), candidate.as_str().to_owned()],
                    flag(state == candidate),
                ));
            }
            if let Some(seen) = host.last_seen_up {
                ages.push((one(&host.name), seconds(view.now - seen)));
            }
            nodes.push((
                one(&host.name),
                owned.get(host.name.as_str()).copied().unwrap_or(0) as f64,
            ));
            fenced.push((one(&host.name), flag(state == HostState::Fenced)));
            local.push((one(&host.name), flag(view.local.contains(&host.name))));
        }
        self.add(
            "ringmaster_host_state",
            "1 for each host's current state (up, fenced, down, disabled).",
            &["host", "state"],
            states,
        );
        self.add(
            "ringmaster_host_heartbeat_age_seconds",
            "Time since each host's last heartbeat.",
            &["host"],
            ages,
        );
        self.add(
            "ringmaster_host_nodes",
            "Nodes each host owns.",
            &["host"],
            nodes,
        );
        self.add(
            "ringmaster_host_fenced",
            "1 while a host's lease has lapsed (it writes nothing).",
            &["host"],
            fenced,
        );
        self.add(
            "ringmaster_host_local",
            "1 for the hosts this process runs.",
            &["host"],
            local,
        );
    }
}

fn seconds(duration: chrono::Duration) -> f64 {
    duration.num_milliseconds() as f64 / 1000.0
}

impl Gauges {
    /// Adds the gauges of the conductor groups and shards no live host serves.
    fn add_unserved(&mut self, unserved: &[crate::db::node_groups::UnservedRow]) {
        self.add(
            "ringmaster_unserved_node_groups",
            "Conductor groups and shards whose nodes no live host serves (their nodes stay \
             where they are: nothing deploys on them and nothing moves them).",
            &[],
            vec![(Vec::new(), unserved.len() as f64)],
        );
        self.add(
            "ringmaster_unserved_nodes",
            "Nodes of a conductor group and shard no live host serves.",
            &["conductor_group", "shard"],
            unserved
                .iter()
                .map(|row| {
                    let shard = row.shard.clone().unwrap_or_default();
                    (vec![row.conductor_group.clone(), shard], row.nodes as f64)
                })
                .collect(),
        );
    }
}
