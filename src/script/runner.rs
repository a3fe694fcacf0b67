//! Runs a validated script on a fresh database: real actors on a manual clock, steps in order,
//! every invariant audited after every step. A failure names `file:line`, the step and what
//! differed. (The runner calls the HTTP API in-process, so unlike the rest of the crate it
//! imports `http`; nothing imports the runner.)

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::test as actix_test;
use serde_json::{Value, json};
use uuid::Uuid;

mod expect;
mod send;

use super::capture;
use super::format::{EnrollArgs, Message, Script, Snapshot, Step, Target, Tick};
use crate::actors::compute_host::Heartbeat;
use crate::actors::ironic::EnrollNodes;
use crate::actors::rebalancer::Resign;
use crate::actors::{ActorSettings, Actors};
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
    /// Boots sent so far (their uuids come from the seed).
    booted: u64,
    log_mark: Option<usize>,
    /// Where the log stood when the previous step started, and when this one did.
    step_marks: (Option<usize>, Option<usize>),
    /// Reads `ReadNodes` took, for passes that use them later.
    reads: BTreeMap<String, Vec<crate::domain::tracker::OwnedNode>>,
}

/// Runs `script` against the database at `url` (fresh and migrated). Returns what each step
/// gave (its transcript: the same script must give the same every time), or the failure as
/// `file:line: step N (kind): message`.
pub async fn run(script: &Script, url: &str) -> Result<Vec<Value>, String> {
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
    let deployment = crate::config::DeploymentConfig::actors_only(settings);
    let actors = crate::app::start_deployment(pool.clone(), clock.clone(), &deployment)
        .await
        .map_err(|error| format!("{}: cannot start: {error}", script.path))?;
    let mut run = Run {
        actors,
        clock,
        pool,
        vars: BTreeMap::new(),
        seed: script.config.seed,
        enrolled: 0,
        booted: 0,
        log_mark: capture::mark(),
        step_marks: (capture::mark(), capture::mark()),
        reads: BTreeMap::new(),
    };
    let mut transcript = Vec::with_capacity(script.steps.len());
    for (index, (line, step)) in script.steps.iter().enumerate() {
        let place = format!(
            "{}:{line}: step {} ({})",
            script.path,
            index + 1,
            step.kind()
        );
        run.step_marks = (run.step_marks.1, capture::mark());
        let result = run
            .step(step)
            .await
            .map_err(|message| format!("{place}: {message}"))?;
        run.quiesce().await;
        run.audit()
            .await
            .map_err(|message| format!("{place}: {message}"))?;
        transcript.push(result);
    }
    run.actors.rebalancer.do_send(Resign);
    Ok(transcript)
}

impl Run {
    /// Waits until the work a step set going in the background has finished (a pass the
    /// rebalancer asked of a new owner, a boot handed to a host): each host answers a message
    /// only after what is queued before it. A script is a replay: only its steps run work.
    pub(super) async fn quiesce(&self) {
        for host in self.actors.hosts.names() {
            if let Some(address) = self.actors.hosts.get(&host) {
                let _ = address.send(crate::actors::compute_host::IsFenced).await;
            }
        }
    }

    /// Runs `step`; returns what it gave (`null` for steps that give nothing).
    async fn step(&mut self, step: &Step) -> StepResult<Value> {
        match step {
            Step::StartHosts(hosts) => {
                for host in hosts {
                    let host = self.interpolate(host)?;
                    self.start_host(&host).await?;
                }
                Ok(Value::Null)
            }
            Step::Enroll(args) => self.enroll(args).await.map(|uuids| json!(uuids)),
            Step::Send {
                to,
                message,
                expect,
                save,
            } => {
                let outcome = self.send(to, message).await;
                let value = check_outcome(outcome, expect.as_ref(), self)?;
                if let Some(name) = save {
                    self.vars.insert(name.clone(), value.clone());
                }
                Ok(value)
            }
            Step::Advance(step) => {
                self.clock.advance(*step);
                Ok(Value::Null)
            }
            Step::Tick(tick) => self.tick(tick).await,
            Step::Http(request) => self.http(request).await,
            Step::Save(snapshots) => {
                let mut saved = serde_json::Map::new();
                for (name, kind) in snapshots {
                    let value = json!({ "kind": snapshot_name(*kind), "value": self.snapshot(*kind).await? });
                    saved.insert(name.clone(), value.clone());
                    self.vars.insert(name.clone(), value);
                }
                Ok(Value::Object(saved))
            }
            Step::Expect(facts) => self.expect(facts).await.map(|()| Value::Null),
            Step::Read(read) => {
                let conditions = self.conditions(&read.filter)?;
                let table = read.table.clone();
                let found = db::run(&self.pool, move |conn| {
                    db::first_matching(conn, &table, &conditions)
                })
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no row of {} matches {:?}", read.table, read.filter))?;
                self.vars.insert(read.save.clone(), found.clone());
                Ok(found)
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

    /// Sends a tick's messages; returns what each gave, in order.
    async fn tick(&mut self, tick: &Tick) -> StepResult<Value> {
        let mut gave = Vec::new();
        let hosts = self.actors.hosts.names();
        let heartbeat_all = matches!(tick, Tick::All | Tick::Heartbeats);
        let track_all = matches!(tick, Tick::All | Tick::Trackers);
        if heartbeat_all {
            for host in &hosts {
                gave.push(
                    self.send(&Target::Host(host.clone()), &Message::Heartbeat)
                        .await?,
                );
            }
        }
        if matches!(tick, Tick::All | Tick::Rebalancer) {
            gave.push(
                self.send(&Target::Rebalancer, &Message::RebalanceNow)
                    .await?,
            );
        }
        if track_all {
            for host in &self.actors.hosts.names() {
                gave.push(
                    self.send(
                        &Target::Host(host.clone()),
                        &Message::UpdateAvailableResource { nodes_from: None },
                    )
                    .await?,
                );
            }
        }
        if let Tick::Host(host) = tick {
            let host = self.interpolate(host)?;
            gave.push(
                self.send(&Target::Host(host.clone()), &Message::Heartbeat)
                    .await?,
            );
            gave.push(
                self.send(
                    &Target::Host(host),
                    &Message::UpdateAvailableResource { nodes_from: None },
                )
                .await?,
            );
        }
        Ok(Value::Array(gave))
    }

    async fn http(&mut self, request: &super::format::HttpStep) -> StepResult<Value> {
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
        let gave = json!({"status": status, "body": body});
        if let Some(name) = &request.save {
            self.vars.insert(name.clone(), gave.clone());
        }
        Ok(gave)
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
