//! Runs a validated script on a fresh database: real actors on a manual clock, steps in order,
//! every invariant audited after every step. A failure names `file:line`, the step and what
//! differed. (The runner calls the HTTP API in-process, so unlike the rest of the crate it
//! imports `http`; nothing imports the runner.)

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::test as actix_test;
use serde_json::{Value, json};
use uuid::Uuid;

use super::capture;
use super::format::{
    EnrollArgs, IntOrRef, LogSince, Message, Script, Snapshot, Step, Target, Tick,
};
use crate::actors::archiver::{ArchiveOnce, ArchiveRequest, NovaArchiveOptions};
use crate::actors::compute_host::{
    DestroyInstance, Heartbeat, IsFenced, ReadOwnedNodes, UpdateAvailableResource,
    UpdateAvailableResourceFrom,
};
use crate::actors::ironic::{DeleteNode, EnrollNodes};
use crate::actors::rebalancer::{RebalanceNow, Resign};
use crate::actors::registry::{CreateProvider, DeleteOrphan};
use crate::actors::scheduler::{Boot, schedulable_hosts};
use crate::actors::{ActorSettings, Actors, spawn_all};
use crate::db::compute_nodes::{OrphanOutcome, ProviderOutcome};
use crate::db::instances::NodeRequest;
use crate::db::ironic::NewIronicNode;
use crate::db::{self, Pool};
use crate::domain::clock::{Clock, ManualClock};
use crate::http::{self, AppState};

/// The start of every script's manual clock.
const EPOCH_SECONDS: i64 = 1_800_000_000;

/// Why a step failed.
type StepResult<T> = Result<T, String>;

/// A script's running deployment and what its steps saved.
struct Run {
    actors: Actors,
    clock: Arc<ManualClock>,
    pool: Pool,
    vars: BTreeMap<String, Value>,
    seed: u64,
    enrolled: u64,
    log_mark: Option<usize>,
    /// Where the log stood when the previous step started, and when this one did.
    step_marks: (Option<usize>, Option<usize>),
    /// Reads `ReadNodes` took, for passes that use them later.
    reads: BTreeMap<String, Vec<db::node_reports::OwnedNode>>,
}

/// Runs `script` against the database at `url` (fresh and migrated). Returns the number of
/// steps run, or the failure as `file:line: step N (kind): message`.
pub async fn run(script: &Script, url: &str) -> Result<usize, String> {
    let pool = db::build_pool(url, 8)
        .map_err(|error| format!("{}: cannot open its database: {error}", script.path))?;
    let clock = Arc::new(ManualClock::new(
        chrono::DateTime::from_timestamp(EPOCH_SECONDS, 0).unwrap_or_default(),
    ));
    let down_time = humantime::parse_duration(&script.config.service_down_time)
        .ok()
        .and_then(|duration| chrono::Duration::from_std(duration).ok())
        .unwrap_or_else(|| chrono::Duration::seconds(10));
    let mut settings = ActorSettings::driven_by_messages(down_time);
    settings.host.pci_devices_per_node = script.config.pci_devices;
    settings.rebalancer.algorithm = script.config.ring.parse().unwrap_or_default();
    let actors = spawn_all(pool.clone(), clock.clone(), settings);
    let mut run = Run {
        actors,
        clock,
        pool,
        vars: BTreeMap::new(),
        seed: script.config.seed,
        enrolled: 0,
        log_mark: capture::mark(),
        step_marks: (capture::mark(), capture::mark()),
        reads: BTreeMap::new(),
    };
    for (index, (line, step)) in script.steps.iter().enumerate() {
        let place = format!(
            "{}:{line}: step {} ({})",
            script.path,
            index + 1,
            step.kind()
        );
        run.step_marks = (run.step_marks.1, capture::mark());
        run.step(step)
            .await
            .map_err(|message| format!("{place}: {message}"))?;
        run.audit()
            .await
            .map_err(|message| format!("{place}: {message}"))?;
    }
    run.actors.rebalancer.do_send(Resign);
    Ok(script.steps.len())
}

impl Run {
    async fn step(&mut self, step: &Step) -> StepResult<()> {
        match step {
            Step::StartHosts(hosts) => {
                for host in hosts {
                    let host = self.interpolate(host)?;
                    self.start_host(&host).await?;
                }
                Ok(())
            }
            Step::Enroll(args) => self.enroll(args).await.map(|_| ()),
            Step::Send {
                to,
                message,
                expect,
                save,
            } => {
                let outcome = self.send(to, message).await;
                let value = check_outcome(outcome, expect.as_ref(), self)?;
                if let Some(name) = save {
                    self.vars.insert(name.clone(), value);
                }
                Ok(())
            }
            Step::Advance(step) => {
                self.clock.advance(*step);
                Ok(())
            }
            Step::Tick(tick) => self.tick(tick).await,
            Step::Http(request) => self.http(request).await,
            Step::Save(snapshots) => {
                for (name, kind) in snapshots {
                    let value = self.snapshot(*kind).await?;
                    self.vars.insert(
                        name.clone(),
                        json!({ "kind": snapshot_name(*kind), "value": value }),
                    );
                }
                Ok(())
            }
            Step::Expect(facts) => self.expect(facts).await,
            Step::Read(read) => {
                let conditions = self.conditions(&read.filter)?;
                let table = read.table.clone();
                let found = db::run(&self.pool, move |conn| {
                    db::first_matching(conn, &table, &conditions)
                })
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no row of {} matches {:?}", read.table, read.filter))?;
                self.vars.insert(read.save.clone(), found);
                Ok(())
            }
        }
    }

    async fn audit(&self) -> StepResult<()> {
        let clock = self.actors.settings.audit_clock(self.clock.now());
        let violations = db::run(&self.pool, move |conn| {
            db::audit::check_invariants_at(conn, clock)
        })
        .await
        .map_err(|error| format!("audit failed: {error}"))?;
        match violations.first() {
            None => Ok(()),
            Some(first) => Err(format!(
                "invariant {} broken: {}{}",
                first.invariant,
                first.message,
                if violations.len() > 1 {
                    format!(" (and {} more)", violations.len() - 1)
                } else {
                    String::new()
                }
            )),
        }
    }

    async fn start_host(&self, host: &str) -> StepResult<()> {
        let recorded = self
            .actors
            .hosts
            .start(host)
            .await
            .map_err(|error| error.to_string())?
            .send(Heartbeat)
            .await
            .map_err(|error| error.to_string())?
            .map_err(|error| error.to_string())?;
        if recorded {
            Ok(())
        } else {
            Err(format!("host {host} could not register"))
        }
    }

    /// Enrolls `count` nodes with uuids drawn from the script's seed, and the nodes `uuids`.
    async fn enroll(&mut self, args: &EnrollArgs) -> StepResult<Vec<Uuid>> {
        if args.count == 0 && args.uuids.is_empty() {
            return Err("enroll needs a count or uuids".to_owned());
        }
        let mut nodes = Vec::with_capacity(args.count as usize + args.uuids.len());
        for _ in 0..args.count {
            self.enrolled += 1;
            let uuid = seeded_uuid(&mut self.seed);
            nodes.push(NewIronicNode::enrolling(
                uuid,
                Some(format!("node-{}", self.enrolled)),
                &args.resource_class,
            ));
        }
        for uuid in &args.uuids {
            let uuid = parse_uuid(&self.interpolate(uuid)?)?;
            nodes.push(NewIronicNode::enrolling(uuid, None, &args.resource_class));
        }
        let uuids: Vec<Uuid> = nodes.iter().map(|node| node.uuid).collect();
        self.actors
            .ironic
            .send(EnrollNodes { nodes })
            .await
            .map_err(|error| error.to_string())?
            .map_err(|error| error.to_string())?;
        Ok(uuids)
    }

    fn host_address(
        &self,
        host: &str,
    ) -> StepResult<actix::Addr<crate::actors::compute_host::ComputeHost>> {
        self.actors
            .hosts
            .get(host)
            .ok_or_else(|| format!("host {host} is not running (crashed or never started)"))
    }

    async fn send(&mut self, to: &Target, message: &Message) -> Result<Value, String> {
        let actors = self.actors.clone();
        let mailbox = |error: actix::MailboxError| error.to_string();
        match (to, message) {
            (Target::Rebalancer, Message::RebalanceNow) => {
                let report = actors
                    .rebalancer
                    .send(RebalanceNow)
                    .await
                    .map_err(mailbox)?
                    .map_err(|e| e.to_string())?;
                let moves: Vec<Value> = report
                    .plan
                    .iter()
                    .map(|a| json!({"node": a.node, "from": a.from, "to": a.to, "reason": a.reason.name()}))
                    .collect();
                Ok(json!({
                    "leader": report.leader, "ring_version": report.ring_version,
                    "claimed": report.claimed.len(), "moved": report.moved.len(), "moves": moves,
                }))
            }
            (Target::Rebalancer, Message::Resign) => {
                actors.rebalancer.send(Resign).await.map_err(mailbox)?;
                Ok(json!({}))
            }
            (Target::Registry, Message::CreateProvider { uuid, name }) => {
                let uuid = parse_uuid(&self.interpolate(uuid)?)?;
                let name = self.interpolate(name)?;
                let outcome = actors
                    .registry
                    .send(CreateProvider { uuid, name })
                    .await
                    .map_err(mailbox)?
                    .map_err(|e| e.to_string())?;
                Ok(match outcome {
                    ProviderOutcome::Existing => json!({"outcome": "existing", "uuid": uuid}),
                    ProviderOutcome::Created => json!({"outcome": "created", "uuid": uuid}),
                    ProviderOutcome::Adopted(existing) => {
                        json!({"outcome": "adopted", "uuid": existing})
                    }
                })
            }
            (Target::Registry, Message::DeleteOrphan { node, host, epoch }) => {
                let epoch = match epoch {
                    IntOrRef::Int(value) => *value,
                    IntOrRef::Ref(text) => {
                        let text = self.interpolate(text)?;
                        text.parse()
                            .map_err(|_| format!("epoch {text:?} is not a number"))?
                    }
                };
                let message = DeleteOrphan {
                    node: parse_uuid(&self.interpolate(node)?)?.into(),
                    host: self.interpolate(host)?.into(),
                    epoch: crate::domain::identity::OwnerEpoch(epoch),
                };
                let outcome = actors
                    .registry
                    .send(message)
                    .await
                    .map_err(mailbox)?
                    .map_err(|e| e.to_string())?;
                let name = match outcome {
                    OrphanOutcome::Deleted => "deleted",
                    OrphanOutcome::KeptWithAllocations => "kept_with_allocations",
                    OrphanOutcome::NotOwner => "not_owner",
                    OrphanOutcome::StillInIronic => "still_in_ironic",
                };
                Ok(json!({ "outcome": name }))
            }
            (Target::Archiver, Message::ArchiveOnce(args)) => {
                let request = ArchiveRequest::from_nova(NovaArchiveOptions {
                    max_rows: args.max_rows,
                    before: args.before.as_deref(),
                    until_complete: args.until_complete,
                    purge: args.purge,
                    task_log: args.task_log,
                    sleep: std::time::Duration::ZERO,
                })
                .map_err(|invalid| invalid.to_string())?;
                let report = actors
                    .archiver
                    .send(ArchiveOnce { request })
                    .await
                    .map_err(mailbox)?
                    .map_err(|e| e.to_string())?;
                let purged: BTreeMap<String, i64> = report
                    .purged
                    .into_iter()
                    .map(|(table, _, count)| (table, count))
                    .collect();
                Ok(
                    json!({"run_id": report.run_id, "tables": report.summary.tables, "total": report.summary.total(), "purged": purged}),
                )
            }
            (Target::Archiver, Message::Purge(args)) => {
                let before = args
                    .before
                    .as_deref()
                    .map(|text| self.interpolate(text))
                    .transpose()?
                    .map(|text| crate::domain::archive::parse_before(&text))
                    .transpose()?;
                let purged = db::run(&self.pool, move |conn| db::archive::purge(conn, before))
                    .await
                    .map_err(|e| e.to_string())?;
                let total: i64 = purged.iter().map(|(_, _, count)| count).sum();
                let purged: BTreeMap<String, i64> = purged
                    .into_iter()
                    .filter(|(_, _, count)| *count > 0)
                    .map(|(table, _, count)| (table, count))
                    .collect();
                Ok(json!({"purged": purged, "total": total}))
            }
            (Target::Archiver, Message::AuditPeriod(args)) => {
                let host = self.interpolate(&args.host)?;
                let begin = crate::domain::archive::parse_before(&self.interpolate(&args.begin)?)?;
                let end = crate::domain::archive::parse_before(&self.interpolate(&args.end)?)?;
                let now = self.clock.now();
                db::run(&self.pool, move |conn| {
                    db::archive::record_audit_period(conn, &host, begin, end, now)
                })
                .await
                .map_err(|e| e.to_string())?;
                Ok(json!({"recorded": true}))
            }
            (Target::Ironic, Message::EnrollNodes(args)) => {
                let nodes = self.enroll(args).await?;
                Ok(json!({"enrolled": nodes.len(), "nodes": nodes}))
            }
            (Target::Ironic, Message::DeleteNode { node }) => {
                let node = parse_uuid(&self.interpolate(node)?)?;
                actors
                    .ironic
                    .send(DeleteNode { node })
                    .await
                    .map_err(mailbox)?
                    .map_err(|e| e.to_string())?;
                Ok(json!({}))
            }
            (Target::Ironic, Message::LockNode { node } | Message::UnlockNode { node }) => {
                let node = parse_uuid(&self.interpolate(node)?)?;
                let locked = matches!(message, Message::LockNode { .. });
                actors
                    .set_node_lock(node, locked)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(json!({}))
            }
            (Target::Ironic, Message::SetMaintenance { node, on }) => {
                let node = parse_uuid(&self.interpolate(node)?)?;
                actors
                    .ironic
                    .send(crate::actors::ironic::SetMaintenance { node, on: *on })
                    .await
                    .map_err(mailbox)?
                    .map_err(|e| e.to_string())?;
                Ok(json!({}))
            }
            (Target::Ironic, Message::FailNodeListing { fail }) => {
                actors
                    .ironic
                    .send(crate::actors::ironic::FailNodeListing { fail: *fail })
                    .await
                    .map_err(mailbox)?;
                Ok(json!({}))
            }
            (Target::Scheduler, Message::Boot(args)) => {
                let boot = Boot {
                    name: self.interpolate(&args.name)?,
                    resource_class: args.resource_class.clone(),
                    project: "script".to_owned(),
                    user: "script".to_owned(),
                    pci_devices: args.pci_devices,
                };
                let instance = actors
                    .scheduler
                    .send(boot)
                    .await
                    .map_err(mailbox)?
                    .map_err(|e| e.to_string())?;
                Ok(
                    json!({"uuid": instance.uuid, "name": instance.name, "host": instance.host,
                          "node": instance.node, "vm_state": instance.vm_state}),
                )
            }
            (Target::Host(host), message) => {
                let host = self.interpolate(host)?;
                match message {
                    Message::Start => {
                        self.start_host(&host).await?;
                        Ok(json!({"started": true}))
                    }
                    Message::Crash => Ok(json!({"crashed": actors.hosts.crash(&host)})),
                    Message::Heartbeat => {
                        let recorded = self
                            .host_address(&host)?
                            .send(Heartbeat)
                            .await
                            .map_err(mailbox)?
                            .map_err(|e| e.to_string())?;
                        Ok(json!({"recorded": recorded}))
                    }
                    Message::IsFenced => {
                        let fenced = self
                            .host_address(&host)?
                            .send(IsFenced)
                            .await
                            .map_err(mailbox)?;
                        Ok(json!({"fenced": fenced}))
                    }
                    Message::ReadNodes => {
                        let read = self
                            .host_address(&host)?
                            .send(ReadOwnedNodes)
                            .await
                            .map_err(mailbox)?
                            .map_err(|e| e.to_string())?;
                        let key = format!("read-{}", self.reads.len() + 1);
                        let nodes = read.len();
                        self.reads.insert(key.clone(), read);
                        Ok(json!({"read": key, "nodes": nodes}))
                    }
                    Message::UpdateAvailableResource { nodes_from } => {
                        let address = self.host_address(&host)?;
                        let report = match nodes_from {
                            None => address.send(UpdateAvailableResource).await,
                            Some(name) => {
                                let name = self.interpolate(name)?;
                                let read = self.reads.get(&name).cloned().ok_or_else(|| {
                                    format!("no read {name:?}: save a ReadNodes result and pass its read")
                                })?;
                                address.send(UpdateAvailableResourceFrom { read }).await
                            }
                        }
                        .map_err(mailbox)?
                        .map_err(|e| e.to_string())?;
                        Ok(json!({"reported": report.reported, "lost": report.lost,
                                  "orphans_deleted": report.orphans_deleted, "orphans_kept": report.orphans_kept,
                                  "devices_freed": report.devices_freed,
                                  "builds_finished": report.builds_finished,
                                  "builds_failed": report.builds_failed,
                                  "nodes_made_available": report.nodes_made_available}))
                    }
                    Message::DestroyInstance {
                        instance,
                        defer_pci_free,
                    } => {
                        let instance = parse_uuid(&self.interpolate(instance)?)?;
                        self.host_address(&host)?
                            .send(DestroyInstance {
                                instance,
                                defer_pci_free: *defer_pci_free,
                            })
                            .await
                            .map_err(mailbox)?
                            .map_err(|e| e.to_string())?;
                        Ok(json!({}))
                    }
                    other => Err(format!("{other:?} cannot be sent to a host")),
                }
            }
            (to, message) => Err(format!("{message:?} cannot be sent to {to:?}")),
        }
    }

    async fn tick(&mut self, tick: &Tick) -> StepResult<()> {
        let hosts = self.actors.hosts.names();
        let heartbeat_all = matches!(tick, Tick::All | Tick::Heartbeats);
        let track_all = matches!(tick, Tick::All | Tick::Trackers);
        if heartbeat_all {
            for host in &hosts {
                self.send(&Target::Host(host.clone()), &Message::Heartbeat)
                    .await?;
            }
        }
        if matches!(tick, Tick::All | Tick::Rebalancer) {
            self.send(&Target::Rebalancer, &Message::RebalanceNow)
                .await?;
        }
        if track_all {
            for host in &self.actors.hosts.names() {
                self.send(
                    &Target::Host(host.clone()),
                    &Message::UpdateAvailableResource { nodes_from: None },
                )
                .await?;
            }
        }
        if let Tick::Host(host) = tick {
            let host = self.interpolate(host)?;
            self.send(&Target::Host(host.clone()), &Message::Heartbeat)
                .await?;
            self.send(
                &Target::Host(host),
                &Message::UpdateAvailableResource { nodes_from: None },
            )
            .await?;
        }
        Ok(())
    }

    async fn http(&mut self, request: &super::format::HttpStep) -> StepResult<()> {
        let state = AppState::new(self.pool.clone(), self.actors.clone());
        let app =
            actix_test::init_service(actix_web::App::new().configure(http::configure(state, None)))
                .await;
        let method = actix_web::http::Method::from_bytes(request.method.to_uppercase().as_bytes())
            .map_err(|_| format!("unknown HTTP method {:?}", request.method))?;
        let path = self.interpolate(&request.path)?;
        let mut builder = actix_test::TestRequest::default().method(method).uri(&path);
        if let Some(body) = &request.body {
            builder = builder.set_json(self.interpolate_json(body)?);
        }
        let response = actix_test::call_service(&app, builder.to_request()).await;
        let status = response.status().as_u16();
        let bytes = actix_test::read_body(response).await;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if let Some(expected) = request.status
            && expected != status
        {
            return Err(format!(
                "{} {path}: expected status {expected}, got {status} ({body})",
                request.method
            ));
        }
        if let Some(fields) = &request.json {
            for (field, expected) in fields {
                let expected = self.interpolate_json(expected)?;
                let actual = lookup(&body, field).cloned().unwrap_or(Value::Null);
                if actual != expected {
                    return Err(format!(
                        "{} {path}: {field}: expected {expected}, got {actual}",
                        request.method
                    ));
                }
            }
        }
        if let Some(name) = &request.save {
            self.vars
                .insert(name.clone(), json!({"status": status, "body": body}));
        }
        Ok(())
    }

    async fn snapshot(&self, kind: Snapshot) -> StepResult<Value> {
        let nodes = db::run(&self.pool, db::node_views::list_node_views)
            .await
            .map_err(|e| e.to_string())?;
        Ok(match kind {
            Snapshot::Identities => nodes
                .iter()
                .map(|node| {
                    (
                        node.uuid.to_string(),
                        json!([node.compute_node_uuid, node.resource_provider_uuid]),
                    )
                })
                .collect::<serde_json::Map<String, Value>>()
                .into(),
            Snapshot::Owners => nodes
                .iter()
                .map(|node| (node.uuid.to_string(), json!(node.host)))
                .collect::<serde_json::Map<String, Value>>()
                .into(),
            Snapshot::Allocations => {
                let rows = db::run(&self.pool, db::placement::usages::list_provider_usages)
                    .await
                    .map_err(|e| e.to_string())?;
                rows.iter()
                    .filter(|row| row.used > 0)
                    .map(|row| json!([row.uuid, row.resource_class, row.used]))
                    .collect::<Vec<Value>>()
                    .into()
            }
        })
    }

    async fn expect(&mut self, facts: &super::format::Facts) -> StepResult<()> {
        let nodes = db::run(&self.pool, db::node_views::list_node_views)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(expected) = &facts.nodes_on {
            for (host, count) in expected {
                let host = self.interpolate(host)?;
                let actual = nodes
                    .iter()
                    .filter(|node| node.host.as_deref() == Some(host.as_str()))
                    .count();
                if actual != *count {
                    return Err(format!("nodes on {host}: expected {count}, got {actual}"));
                }
            }
        }
        if let Some(hosts) = &facts.all_nodes_on {
            let hosts: Vec<String> = hosts
                .iter()
                .map(|host| self.interpolate(host))
                .collect::<Result<_, _>>()?;
            if let Some(stray) = nodes
                .iter()
                .find(|node| !node.host.as_ref().is_some_and(|host| hosts.contains(host)))
            {
                return Err(format!(
                    "node {} is on {:?}, expected one of {hosts:?}",
                    stray.uuid, stray.host
                ));
            }
        }
        if let Some(names) = &facts.unchanged {
            for name in names {
                let saved = self
                    .vars
                    .get(name)
                    .cloned()
                    .ok_or_else(|| format!("nothing saved as {name}"))?;
                let kind: Snapshot = serde_json::from_value(saved["kind"].clone())
                    .map_err(|_| format!("{name} is not a saved snapshot"))?;
                let now = self.snapshot(kind).await?;
                if now != saved["value"] {
                    return Err(format!(
                        "{name} changed: expected {}, got {now}",
                        saved["value"]
                    ));
                }
            }
        }
        if let Some(fields) = &facts.instance {
            let uuid =
                parse_uuid(&self.interpolate(fields.get("uuid").ok_or("instance needs a uuid")?)?)?;
            let instance = db::run(&self.pool, move |conn| {
                db::instances::get_instance(conn, uuid)
            })
            .await
            .map_err(|e| e.to_string())?;
            let actual = json!({"uuid": instance.uuid, "host": instance.host, "node": instance.node,
                                "vm_state": instance.vm_state, "name": instance.name});
            for (field, expected) in fields {
                let expected = self.interpolate(expected)?;
                let value = actual.get(field).cloned().unwrap_or(Value::Null);
                if value.as_str() != Some(expected.as_str()) {
                    return Err(format!(
                        "instance {uuid} {field}: expected {expected}, got {value}"
                    ));
                }
            }
        }
        if let Some(owner) = &facts.owner {
            let field = |name: &str| -> StepResult<Option<String>> {
                owner
                    .get(name)
                    .map(|value| match value {
                        Value::String(text) => self.interpolate(text),
                        other => Ok(other.to_string()),
                    })
                    .transpose()
            };
            let node = field("node")?.ok_or("owner needs a node")?;
            let host = field("host")?.ok_or("owner needs a host")?;
            let view = nodes.iter().find(|view| view.uuid.to_string() == node);
            let actual = view.and_then(|view| view.host.clone());
            if actual.as_deref() != Some(host.as_str()) {
                return Err(format!(
                    "owner of node {node}: expected {host}, got {actual:?}"
                ));
            }
            if let Some(epoch) = field("epoch")? {
                let actual = view.and_then(|view| view.owner_epoch);
                if actual.map(|epoch| epoch.to_string()).as_deref() != Some(epoch.as_str()) {
                    return Err(format!(
                        "owner epoch of node {node}: expected {epoch}, got {actual:?}"
                    ));
                }
            }
        }
        if let Some(states) = &facts.host_state {
            let hosts = db::run(&self.pool, db::hosts::list_hosts)
                .await
                .map_err(|e| e.to_string())?;
            let now = self.clock.now();
            let liveness = self.actors.settings.host.liveness;
            for (name, expected) in states {
                let name = self.interpolate(name)?;
                let actual = hosts
                    .iter()
                    .find(|host| host.name == name)
                    .map(|host| host.state(&liveness, now).as_str())
                    .unwrap_or("unknown");
                if actual != expected {
                    return Err(format!(
                        "state of host {name}: expected {expected}, got {actual}"
                    ));
                }
            }
        }
        if let Some(rows) = &facts.rows {
            for filter in rows.filters() {
                if !super::format::COUNTABLE_TABLES.contains(&filter.table.as_str()) {
                    return Err(format!("cannot count rows of {}", filter.table));
                }
                let conditions = self.conditions(&filter.filter)?;
                let table = filter.table.clone();
                let actual = db::run(&self.pool, move |conn| {
                    db::count_matching(conn, &table, &conditions)
                })
                .await
                .map_err(|e| e.to_string())?;
                if actual != filter.count {
                    let which = if filter.filter.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " where {}",
                            Value::from(serde_json::Map::from_iter(filter.filter.clone()))
                        )
                    };
                    return Err(format!(
                        "rows of {}{which}: expected {}, got {actual}",
                        filter.table, filter.count
                    ));
                }
            }
        }
        if let Some(expected) = facts.free_nodes {
            let now = self.clock.now();
            let liveness = self.actors.settings.host.liveness;
            let free = db::run(&self.pool, move |conn| {
                let up = schedulable_hosts(db::hosts::list_hosts(conn)?, &liveness, now);
                let request = NodeRequest {
                    resource_class: "baremetal",
                    placement_class: "CUSTOM_BAREMETAL",
                    hosts: &up,
                    pci_devices: 0,
                };
                db::instances::free_nodes(conn, &request, i32::MAX)
            })
            .await
            .map_err(|e| e.to_string())?;
            if free.len() != expected {
                return Err(format!(
                    "free nodes: expected {expected}, got {}",
                    free.len()
                ));
            }
        }
        if facts.log.is_some() || facts.log_absent.is_some() {
            let since = match facts.log_since.unwrap_or(LogSince::Script) {
                LogSince::Script => self.log_mark,
                LogSince::Step => self.step_marks.0,
            };
            let Some(mark) = since else {
                return Err("log lines are not captured in this process".to_owned());
            };
            let lines = capture::lines_since(mark);
            let scope = match facts.log_since {
                Some(LogSince::Step) => "the previous step started",
                _ => "the script started",
            };
            if let Some(text) = &facts.log {
                let text = self.interpolate(text)?;
                if !lines.iter().any(|line| line.contains(text.as_str())) {
                    return Err(format!("no log line containing {text:?} since {scope}"));
                }
            }
            if let Some(text) = &facts.log_absent {
                let text = self.interpolate(text)?;
                if let Some(line) = lines.iter().find(|line| line.contains(text.as_str())) {
                    return Err(format!(
                        "a log line contains {text:?} since {scope}: {line}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Reads a `where` of a script: column names to `ColumnIs`, values interpolated.
    fn conditions(
        &self,
        filter: &BTreeMap<String, Value>,
    ) -> StepResult<Vec<(String, db::ColumnIs)>> {
        filter
            .iter()
            .map(|(column, value)| {
                let is = match (column.as_str(), value) {
                    ("deleted", Value::String(word)) if word == "live" => db::ColumnIs::Live,
                    ("deleted", Value::String(word)) if word == "deleted" => {
                        db::ColumnIs::SoftDeleted
                    }
                    (_, Value::Null) => db::ColumnIs::Null,
                    (_, Value::String(text)) => db::ColumnIs::Text(self.interpolate(text)?),
                    (_, other) => db::ColumnIs::Text(other.to_string()),
                };
                Ok((column.clone(), is))
            })
            .collect()
    }

    /// Replaces every `${name.path}` in `text` with the saved value.
    fn interpolate(&self, text: &str) -> StepResult<String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("unclosed ${{ in {text:?}"))?;
            let reference = &after[..end];
            let (name, path) = reference.split_once('.').unwrap_or((reference, ""));
            let saved = self
                .vars
                .get(name)
                .ok_or_else(|| format!("nothing saved as {name:?} (in {text:?})"))?;
            let value = if path.is_empty() {
                Some(saved)
            } else {
                lookup(saved, path)
            };
            match value {
                Some(Value::String(string)) => out.push_str(string),
                Some(Value::Null) | None => return Err(format!("{reference} is not set")),
                Some(other) => out.push_str(&other.to_string()),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn interpolate_json(&self, value: &Value) -> StepResult<Value> {
        Ok(match value {
            Value::String(text) => Value::String(self.interpolate(text)?),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.interpolate_json(item))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| Ok((key.clone(), self.interpolate_json(item)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }
}

/// Checks a send's outcome against its `expect` (an `error` substring, or fields of the result)
/// and returns the result.
fn check_outcome(
    outcome: Result<Value, String>,
    expect: Option<&Value>,
    run: &Run,
) -> StepResult<Value> {
    let any_error = expect.and_then(|expect| expect.get("error_any")) == Some(&Value::Bool(true));
    let expected_error = expect
        .and_then(|expect| expect.get("error"))
        .and_then(Value::as_str)
        .or(any_error.then_some(""));
    match (outcome, expected_error) {
        (Err(error), Some(wanted)) if error.contains(wanted) => Ok(json!({"error": error})),
        (Err(error), Some(wanted)) => Err(format!(
            "expected an error containing {wanted:?}, got {error:?}"
        )),
        (Err(error), None) => Err(error),
        (Ok(value), Some(_)) if any_error => Err(format!("expected an error, got {value}")),
        (Ok(value), Some(wanted)) => Err(format!(
            "expected an error containing {wanted:?}, got {value}"
        )),
        (Ok(value), None) => {
            if let Some(Value::Object(fields)) = expect {
                for (field, expected) in fields {
                    let expected = run.interpolate_json(expected)?;
                    let actual = lookup(&value, field).cloned().unwrap_or(Value::Null);
                    if actual != expected {
                        return Err(format!("{field}: expected {expected}, got {actual}"));
                    }
                }
            }
            Ok(value)
        }
    }
}

/// Follows a dotted path (`a.b.0.c`) into a JSON value.
fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(value, |current, part| match current {
            Value::Array(items) => part
                .parse::<usize>()
                .ok()
                .and_then(|index| items.get(index)),
            other => other.get(part),
        })
}

fn parse_uuid(text: &str) -> StepResult<Uuid> {
    Uuid::parse_str(text).map_err(|_| format!("{text:?} is not a uuid"))
}

fn snapshot_name(kind: Snapshot) -> &'static str {
    match kind {
        Snapshot::Identities => "identities",
        Snapshot::Allocations => "allocations",
        Snapshot::Owners => "owners",
    }
}

/// Draws a version-4 uuid from `state` (xorshift64*), so a script's nodes are the same every run.
fn seeded_uuid(state: &mut u64) -> Uuid {
    let mut bytes = [0_u8; 16];
    for half in bytes.chunks_mut(8) {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        if *state == 0 {
            *state = 0x9e37_79b9_7f4a_7c15;
        }
        half.copy_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_be_bytes());
    }
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}
