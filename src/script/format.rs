//! The message-script format (docs/scripts.md): parsing and validation. A script is checked
//! whole before anything runs; every error names `file:line` and says what is wrong.

use std::collections::BTreeMap;

mod messages;

use messages::{parse_message, parse_target};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::domain::archive::NovaArchiveOptions;

/// A script, parsed and validated.
#[derive(Debug, Clone)]
pub struct Script {
    pub path: String,
    pub name: String,
    pub config: ScriptConfig,
    /// Each step with the line it starts on.
    pub steps: Vec<(usize, Step)>,
}

/// Settings of a script's deployment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptConfig {
    /// Down time of compute services (the fence time is 3/4 of it).
    #[serde(default = "default_down_time")]
    pub service_down_time: String,
    /// `default` or `tooz`.
    #[serde(default = "default_ring")]
    pub ring: String,
    /// Simulated PCI devices per node.
    #[serde(default = "default_pci")]
    pub pci_devices: u32,
    /// Seed of the node uuids a script enrolls.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_down_time() -> String {
    "10s".to_owned()
}
fn default_ring() -> String {
    "default".to_owned()
}
fn default_pci() -> u32 {
    2
}
fn default_seed() -> u64 {
    1
}

impl Default for ScriptConfig {
    fn default() -> Self {
        ScriptConfig {
            service_down_time: default_down_time(),
            ring: default_ring(),
            pci_devices: default_pci(),
            seed: default_seed(),
        }
    }
}

/// Who a `send` goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Rebalancer,
    Registry,
    Archiver,
    Ironic,
    Scheduler,
    /// `host:NAME` (the name may hold `${…}`).
    Host(String),
}

/// A number, or a `${…}` reference to a saved one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum IntOrRef {
    Int(i64),
    Ref(String),
}

/// Every message a script can send, with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    RebalanceNow,
    Resign,
    CreateProvider {
        uuid: String,
        name: String,
    },
    DeleteOrphan {
        node: String,
        host: String,
        epoch: IntOrRef,
    },
    ArchiveOnce(NovaArchiveOptions),
    /// Purges the shadow tables: every row (`all: true`) or those older than `before`.
    Purge(PurgeArgs),
    /// Records an instance usage audit period as Nova's compute hosts do: a `task_log` row.
    AuditPeriod(AuditPeriodArgs),
    EnrollNodes(EnrollArgs),
    DeleteNode {
        node: String,
    },
    LockNode {
        node: String,
    },
    UnlockNode {
        node: String,
    },
    SetMaintenance {
        node: String,
        on: bool,
    },
    FailNodeListing {
        fail: bool,
    },
    Boot(BootArgs),
    Heartbeat,
    /// A tracker pass; on a read taken earlier (`ReadNodes`) when `nodes_from` names one.
    UpdateAvailableResource {
        nodes_from: Option<String>,
    },
    /// Reads what the host owns as a pass would, writing nothing; kept for `nodes_from`.
    ReadNodes,
    Crash,
    Start,
    DestroyInstance {
        instance: String,
        defer_pci_free: bool,
    },
    IsFenced,
}

/// Arguments of `Purge`: one of them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeArgs {
    #[serde(default)]
    pub all: bool,
    pub before: Option<String>,
}

/// Arguments of `AuditPeriod`: the host and the period (dates as `--before` takes them).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditPeriodArgs {
    pub host: String,
    pub begin: String,
    pub end: String,
}

/// Arguments of `EnrollNodes` and of the `enroll` step: `count` new nodes (uuids drawn from
/// the seed), and/or the nodes of these `uuids` (a node enrolled again).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollArgs {
    #[serde(default)]
    pub count: u32,
    #[serde(default)]
    pub uuids: Vec<String>,
    #[serde(default = "default_class")]
    pub resource_class: String,
}

/// Arguments of `Boot`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootArgs {
    pub name: String,
    #[serde(default = "default_class")]
    pub resource_class: String,
    #[serde(default)]
    pub pci_devices: u32,
}

fn default_class() -> String {
    "baremetal".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSend {
    to: String,
    message: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    expect: Option<Value>,
    #[serde(default)]
    save: Option<String>,
}

/// What to check of an HTTP answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpStep {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub body: Option<serde_json::Value>,
    #[serde(default)]
    pub status: Option<u16>,
    /// Fields the JSON answer must have (dotted paths to values).
    #[serde(default)]
    pub json: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default)]
    pub save: Option<String>,
}

/// A snapshot `save` can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Snapshot {
    /// Every node's compute-node and provider uuid.
    Identities,
    /// Every allocation (consumer, provider, class, used).
    Allocations,
    /// Every node's owner.
    Owners,
}

/// Facts an `expect` step checks; every given one must hold.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    /// Exactly this many nodes on each listed host.
    pub nodes_on: Option<BTreeMap<String, usize>>,
    /// Every node is owned by one of these hosts.
    pub all_nodes_on: Option<Vec<String>>,
    /// A saved snapshot equals the same snapshot now.
    pub unchanged: Option<Vec<String>>,
    /// Fields of an instance (by `uuid`).
    pub instance: Option<BTreeMap<String, String>>,
    /// The owner of a node: {node: uuid, host: name, epoch?: its owner epoch}.
    pub owner: Option<BTreeMap<String, serde_json::Value>>,
    /// The state of hosts as the admin API shows it (up, down, fenced, disabled).
    pub host_state: Option<BTreeMap<String, String>>,
    /// Row counts of tables (archivable tables, their shadows, allocations, pci_devices …):
    /// `{table: count, …}`, or rows that match columns: `{table, where: {column: value}, count}`
    /// (one, or a list of them).
    pub rows: Option<RowsFact>,
    /// A log line containing this text was emitted.
    pub log: Option<String>,
    /// No log line containing this text was emitted.
    pub log_absent: Option<String>,
    /// Which log lines `log` and `log_absent` look at: `script` (since it started, the
    /// default) or `step` (since the previous step started).
    pub log_since: Option<LogSince>,
    /// How many `baremetal` nodes the scheduler could place an instance on now.
    pub free_nodes: Option<usize>,
}

/// The `rows` fact: plain counts per table, or counts of the rows that match columns.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum RowsFact {
    Counts(BTreeMap<String, i64>),
    One(RowFilter),
    Many(Vec<RowFilter>),
}

impl RowsFact {
    /// Every count this fact asks for, as filters (plain counts have no `where`).
    pub fn filters(&self) -> Vec<RowFilter> {
        match self {
            RowsFact::Counts(counts) => counts
                .iter()
                .map(|(table, count)| RowFilter {
                    table: table.clone(),
                    filter: BTreeMap::new(),
                    count: *count,
                })
                .collect(),
            RowsFact::One(filter) => vec![filter.clone()],
            RowsFact::Many(filters) => filters.clone(),
        }
    }
}

/// Rows of `table` whose columns have these values (`deleted: live` or `deleted: deleted` for
/// the soft-delete flag; `null` for NULL; anything else compared as text).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowFilter {
    pub table: String,
    #[serde(rename = "where", default)]
    pub filter: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub count: i64,
}

/// Where the log facts start looking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogSince {
    Script,
    Step,
}

/// A `read` step: the first row (by id) of `table` matching `where`, saved as `save`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadRow {
    pub table: String,
    #[serde(rename = "where", default)]
    pub filter: BTreeMap<String, serde_json::Value>,
    pub save: String,
}

/// Which periodic work a `tick` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tick {
    /// Heartbeat every running host, run the rebalancer, then every host's tracker pass.
    All,
    Heartbeats,
    Rebalancer,
    Trackers,
    /// One host's heartbeat and tracker pass.
    Host(String),
}

/// One validated step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    StartHosts(Vec<String>),
    Enroll(EnrollArgs),
    Send {
        to: Target,
        message: Message,
        expect: Option<serde_json::Value>,
        save: Option<String>,
    },
    Advance(chrono::Duration),
    Tick(Tick),
    Http(HttpStep),
    Save(BTreeMap<String, Snapshot>),
    Expect(Facts),
    /// Reads a row (soft-deleted ones too) and saves its columns.
    Read(ReadRow),
}

impl Step {
    /// Returns the step's kind, as written in the script.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::StartHosts(_) => "start_hosts",
            Step::Enroll(_) => "enroll",
            Step::Send { .. } => "send",
            Step::Advance(_) => "advance",
            Step::Tick(_) => "tick",
            Step::Http(_) => "http",
            Step::Save(_) => "save",
            Step::Expect(_) => "expect",
            Step::Read(_) => "read",
        }
    }
}

/// Tables whose rows an `expect: rows` may count.
pub const COUNTABLE_TABLES: &[&str] = &[
    "allocations",
    "archive_runs",
    "compute_nodes",
    "consumers",
    "instances",
    "instance_actions",
    "ironic_nodes",
    "node_moves",
    "pci_devices",
    "resource_providers",
    "services",
    "shadow_compute_nodes",
    "shadow_instances",
    "shadow_instance_actions",
    "shadow_pci_devices",
    "shadow_services",
    "task_log",
    "shadow_task_log",
    "move_batches",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    name: Option<String>,
    #[serde(default)]
    config: Option<ScriptConfig>,
    /// Each step with where it starts in the file.
    steps: Vec<serde_saphyr::Spanned<BTreeMap<String, Value>>>,
}

/// Parses and validates `text` (read from `path`); the error is `path:line: message`.
pub fn parse(path: &str, text: &str) -> Result<Script, String> {
    // YAML as the scripts were written for (YAML 1.1's spellings): `yes`, `on` and `012`
    // are strings, a merge key `<<` is a key, an unknown tag is refused.
    let options = serde_saphyr::options! {
        with_snippet: false,
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        merge_keys: serde_saphyr::MergeKeyPolicy::AsOrdinary,
        reject_unsupported_tags: true,
    };
    let raw: RawScript = serde_saphyr::from_str_with_options(text, options).map_err(|error| {
        let line = error
            .location()
            .map_or(1, |location| location.line().max(1));
        format!(
            "{path}:{line}: invalid script: {}",
            strip_location(&error.to_string())
        )
    })?;
    let config = raw.config.unwrap_or_default();
    if humantime::parse_duration(&config.service_down_time).is_err() {
        return Err(format!(
            "{path}:1: config.service_down_time {:?} is not a duration (2s, 500ms, 1m)",
            config.service_down_time
        ));
    }
    if !matches!(config.ring.as_str(), "default" | "tooz") {
        return Err(format!(
            "{path}:1: config.ring {:?}: expected default or tooz",
            config.ring
        ));
    }
    let mut steps = Vec::with_capacity(raw.steps.len());
    for (index, raw_step) in raw.steps.into_iter().enumerate() {
        let line = usize::try_from(raw_step.referenced.line())
            .unwrap_or(1)
            .max(1);
        let step = parse_step(raw_step.value)
            .map_err(|message| format!("{path}:{line}: step {}: {message}", index + 1))?;
        steps.push((line, step));
    }
    if steps.is_empty() {
        return Err(format!("{path}:1: the script has no steps"));
    }
    Ok(Script {
        path: path.to_owned(),
        name: raw.name.unwrap_or_else(|| path.to_owned()),
        config,
        steps,
    })
}

fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// Deserializes `value` as a `T`; the error names the field at fault (`pci_devices: …`).
fn typed<T: DeserializeOwned>(what: &str, value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = strip_location(&error.into_inner().to_string());
        if path == "." || path.is_empty() {
            format!("invalid {what}: {inner}")
        } else {
            format!("invalid {what}: {path}: {inner}")
        }
    })
}

fn parse_step(raw: BTreeMap<String, Value>) -> Result<Step, String> {
    if raw.len() != 1 {
        let keys: Vec<&String> = raw.keys().collect();
        return Err(format!("a step has exactly one kind, found {keys:?}"));
    }
    let Some((kind, value)) = raw.into_iter().next() else {
        return Err("empty step".to_owned());
    };
    match kind.as_str() {
        "start_hosts" => Ok(Step::StartHosts(typed(
            "start_hosts (a list of host names)",
            value,
        )?)),
        "enroll" => Ok(Step::Enroll(typed("enroll", value)?)),
        "advance" => {
            let text: String = typed("advance (a duration such as 61s)", value)?;
            let duration = humantime::parse_duration(&text)
                .map_err(|error| format!("invalid advance {text:?}: {error}"))?;
            chrono::Duration::from_std(duration)
                .map(Step::Advance)
                .map_err(|_| format!("advance {text:?} is too long"))
        }
        "tick" => {
            let text: String = typed("tick", value)?;
            let tick = match text.as_str() {
                "all" => Tick::All,
                "heartbeats" => Tick::Heartbeats,
                "rebalancer" => Tick::Rebalancer,
                "trackers" => Tick::Trackers,
                other => match other.strip_prefix("host:") {
                    Some(host) if !host.is_empty() => Tick::Host(host.to_owned()),
                    _ => {
                        return Err(format!(
                            "unknown tick {other:?}: expected all, heartbeats, rebalancer, trackers or host:NAME"
                        ));
                    }
                },
            };
            Ok(Step::Tick(tick))
        }
        "http" => Ok(Step::Http(typed("http", value)?)),
        "save" => Ok(Step::Save(typed(
            "save (name: identities|allocations|owners)",
            value,
        )?)),
        "expect" => Ok(Step::Expect(typed("expect", value)?)),
        "read" => {
            let read: ReadRow = typed("read", value)?;
            if !COUNTABLE_TABLES.contains(&read.table.as_str()) {
                return Err(format!("cannot read rows of {}", read.table));
            }
            Ok(Step::Read(read))
        }
        "send" => {
            let send: RawSend = typed("send", value)?;
            let to = parse_target(&send.to)?;
            let message = parse_message(&to, &send.message, send.args)?;
            Ok(Step::Send {
                to,
                message,
                expect: send.expect,
                save: send.save,
            })
        }
        other => Err(format!(
            "unknown step kind {other:?}: expected start_hosts, enroll, send, advance, tick, http, save, read or expect"
        )),
    }
}

#[cfg(test)]
mod tests;
