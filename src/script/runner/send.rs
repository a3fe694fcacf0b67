//! The `send` step: one message to one actor, its answer as JSON. One function per target;
//! each reads the message's arguments (interpolated), asks the actor and words the answer.

use std::collections::BTreeMap;
use std::fmt::Display;

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler};
use serde_json::{Value, json};

use super::{Run, StepResult, parse_uuid};
use crate::actors::archiver::{ArchiveOnce, ArchiveRequest};
use crate::actors::compute_host::{
    DestroyInstance, Heartbeat, IsFenced, ReadOwnedNodes, UpdateAvailableResource,
    UpdateAvailableResourceFrom,
};
use crate::actors::ironic::{DeleteNode, FailNodeListing, SetMaintenance};
use crate::actors::rebalancer::{RebalanceNow, Resign};
use crate::actors::registry::{CreateProvider, DeleteOrphan};
use crate::actors::scheduler::Boot;
use crate::db;
use crate::db::compute_nodes::{OrphanOutcome, ProviderOutcome};
use crate::domain::boot::BootRequest;
use crate::domain::identity::{HostName, InstanceUuid, NodeUuid, OwnerEpoch, ProviderUuid};
use crate::script::format::{IntOrRef, Message, Target};

/// Sends `message` to `address` and waits for its answer; a dead mailbox and the actor's own
/// error alike become the step's error text.
async fn ask<A, M, T, E>(address: &Addr<A>, message: M) -> StepResult<T>
where
    A: Actor + Handler<M>,
    A::Context: ToEnvelope<A, M>,
    M: actix::Message<Result = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Display + Send + 'static,
{
    address
        .send(message)
        .await
        .map_err(|error| error.to_string())?
        .map_err(|error| error.to_string())
}

/// `ask` for a message whose answer cannot fail.
async fn tell<A, M>(address: &Addr<A>, message: M) -> StepResult<M::Result>
where
    A: Actor + Handler<M>,
    A::Context: ToEnvelope<A, M>,
    M: actix::Message + Send + 'static,
    M::Result: Send,
{
    address
        .send(message)
        .await
        .map_err(|error| error.to_string())
}

/// Serializes an answer (every report type the scripts see derives `Serialize`).
fn to_json(value: impl serde::Serialize) -> StepResult<Value> {
    serde_json::to_value(value).map_err(|error| error.to_string())
}

/// A date field of a message (`before`, `begin`, `end`) read as Nova reads `--before`.
fn before_field(
    field: &str,
    text: &str,
    today: chrono::NaiveDate,
) -> StepResult<chrono::DateTime<chrono::Utc>> {
    crate::domain::archive::parse_before(text, today)
        .map_err(|reason| format!("Invalid value for {field}: {reason}"))
}

impl Run {
    /// The script clock's day, which fills what a date leaves out.
    fn today(&self) -> chrono::NaiveDate {
        crate::domain::clock::Clock::now(self.clock.as_ref()).date_naive()
    }

    /// Sends `message` to `to` and returns its answer as JSON.
    /// Sends `message` to `to`, waits for its answer and then for the work it set going in
    /// the background (a rebalance's passes on the new owners): the next message finds the
    /// deployment at rest, as a replay must.
    pub(super) async fn send(&mut self, to: &Target, message: &Message) -> StepResult<Value> {
        let answer = self.send_now(to, message).await;
        self.quiesce().await;
        answer
    }

    async fn send_now(&mut self, to: &Target, message: &Message) -> StepResult<Value> {
        match to {
            Target::Rebalancer => self.send_rebalancer(message).await,
            Target::Registry => self.send_registry(message).await,
            Target::Archiver => self.send_archiver(message).await,
            Target::Ironic => self.send_ironic(message).await,
            Target::Scheduler => self.send_scheduler(message).await,
            Target::Host(host) => {
                let host = self.interpolate(host)?;
                self.send_host(&host, message).await
            }
        }
    }

    async fn send_rebalancer(&mut self, message: &Message) -> StepResult<Value> {
        let rebalancer = self.actors.rebalancer.clone();
        match message {
            Message::RebalanceNow => {
                let report = ask(&rebalancer, RebalanceNow).await?;
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
            Message::Resign => {
                tell(&rebalancer, Resign).await?;
                Ok(json!({}))
            }
            other => Err(format!("{other:?} cannot be sent to the rebalancer")),
        }
    }

    async fn send_registry(&mut self, message: &Message) -> StepResult<Value> {
        let registry = self.actors.registry.clone();
        match message {
            Message::CreateProvider { uuid, name } => {
                let uuid = ProviderUuid(parse_uuid(&self.interpolate(uuid)?)?);
                let name = self.interpolate(name)?;
                let outcome = ask(&registry, CreateProvider { uuid, name }).await?;
                Ok(match outcome {
                    ProviderOutcome::Existing => json!({"outcome": "existing", "uuid": uuid}),
                    ProviderOutcome::Created => json!({"outcome": "created", "uuid": uuid}),
                    ProviderOutcome::Adopted(existing) => {
                        json!({"outcome": "adopted", "uuid": existing})
                    }
                })
            }
            Message::DeleteOrphan { node, host, epoch } => {
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
                    epoch: OwnerEpoch(epoch),
                };
                let name = match ask(&registry, message).await? {
                    OrphanOutcome::Deleted => "deleted",
                    OrphanOutcome::KeptWithAllocations => "kept_with_allocations",
                    OrphanOutcome::NotOwner => "not_owner",
                    OrphanOutcome::StillInIronic => "still_in_ironic",
                };
                Ok(json!({ "outcome": name }))
            }
            other => Err(format!("{other:?} cannot be sent to the registry")),
        }
    }

    async fn send_archiver(&mut self, message: &Message) -> StepResult<Value> {
        match message {
            Message::ArchiveOnce(args) => {
                let request = ArchiveRequest::from_nova(args, self.today())
                    .map_err(|invalid| invalid.to_string())?;
                let report = ask(&self.actors.archiver, ArchiveOnce { request }).await?;
                let purged: BTreeMap<String, i64> = report
                    .purged
                    .into_iter()
                    .map(|(table, _, count)| (table, count))
                    .collect();
                Ok(
                    json!({"run_id": report.run_id, "tables": report.summary.tables,
                          "total": report.summary.total(), "purged": purged}),
                )
            }
            Message::Purge(args) => {
                let before = args
                    .before
                    .as_deref()
                    .map(|text| self.interpolate(text))
                    .transpose()?
                    .map(|text| before_field("before", &text, self.today()))
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
            Message::AuditPeriod(args) => {
                let host = HostName::from(self.interpolate(&args.host)?);
                let begin = before_field("begin", &self.interpolate(&args.begin)?, self.today())?;
                let end = before_field("end", &self.interpolate(&args.end)?, self.today())?;
                let now = crate::domain::clock::Clock::now(self.clock.as_ref());
                db::run(&self.pool, move |conn| {
                    db::archive::record_audit_period(conn, &host, begin, end, now)
                })
                .await
                .map_err(|e| e.to_string())?;
                Ok(json!({"recorded": true}))
            }
            other => Err(format!("{other:?} cannot be sent to the archiver")),
        }
    }

    async fn send_ironic(&mut self, message: &Message) -> StepResult<Value> {
        let ironic = self.actors.ironic.clone();
        match message {
            Message::EnrollNodes(args) => {
                let nodes = self.enroll(args).await?;
                Ok(json!({"enrolled": nodes.len(), "nodes": nodes}))
            }
            Message::DeleteNode { node } => {
                let node = NodeUuid(parse_uuid(&self.interpolate(node)?)?);
                ask(&ironic, DeleteNode { node }).await?;
                Ok(json!({}))
            }
            Message::LockNode { node } | Message::UnlockNode { node } => {
                let node = NodeUuid(parse_uuid(&self.interpolate(node)?)?);
                let locked = matches!(message, Message::LockNode { .. });
                self.actors
                    .set_node_lock(node, locked)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(json!({}))
            }
            Message::SetMaintenance { node, on } => {
                let node = NodeUuid(parse_uuid(&self.interpolate(node)?)?);
                ask(&ironic, SetMaintenance { node, on: *on }).await?;
                Ok(json!({}))
            }
            Message::FailNodeListing { fail } => {
                tell(&ironic, FailNodeListing { fail: *fail }).await?;
                Ok(json!({}))
            }
            other => Err(format!("{other:?} cannot be sent to ironic")),
        }
    }

    async fn send_scheduler(&mut self, message: &Message) -> StepResult<Value> {
        let Message::Boot(args) = message else {
            return Err(format!("{message:?} cannot be sent to the scheduler"));
        };
        self.booted += 1;
        let boot = Boot {
            // Drawn from the script's seed, as node uuids are: a replay books the same uuids.
            uuid: Some(InstanceUuid(uuid::Uuid::from_u64_pair(
                self.seed ^ 0x626f_6f74,
                self.booted,
            ))),
            name: self.interpolate(&args.name)?,
            project: "script".to_owned(),
            user: "script".to_owned(),
            request: BootRequest::of_class(&args.resource_class, args.pci_devices),
            answer_when_claimed: false,
        };
        to_json(
            crate::service::servers::boot(&self.actors, boot)
                .await
                .map_err(|error| error.to_string())?,
        )
    }

    async fn send_host(&mut self, host: &str, message: &Message) -> StepResult<Value> {
        match message {
            Message::Start => {
                self.start_host(host).await?;
                Ok(json!({"started": true}))
            }
            Message::Crash => Ok(json!({"crashed": self.actors.hosts.crash(host)})),
            Message::Heartbeat => {
                let recorded = ask(&self.host_address(host)?, Heartbeat).await?;
                Ok(json!({"recorded": recorded}))
            }
            Message::IsFenced => {
                let fenced = tell(&self.host_address(host)?, IsFenced).await?;
                Ok(json!({"fenced": fenced}))
            }
            Message::ReadNodes => {
                let read = ask(&self.host_address(host)?, ReadOwnedNodes).await?;
                let key = format!("read-{}", self.reads.len() + 1);
                let nodes = read.len();
                self.reads.insert(key.clone(), read);
                Ok(json!({"read": key, "nodes": nodes}))
            }
            Message::UpdateAvailableResource { nodes_from } => {
                let address = self.host_address(host)?;
                let report = match nodes_from {
                    None => ask(&address, UpdateAvailableResource).await?,
                    Some(name) => {
                        let name = self.interpolate(name)?;
                        let read = self.reads.get(&name).cloned().ok_or_else(|| {
                            format!("no read {name:?}: save a ReadNodes result and pass its read")
                        })?;
                        ask(&address, UpdateAvailableResourceFrom { read }).await?
                    }
                };
                to_json(report)
            }
            Message::DestroyInstance {
                instance,
                defer_pci_free,
            } => {
                let instance = InstanceUuid(parse_uuid(&self.interpolate(instance)?)?);
                let destroy = DestroyInstance {
                    instance,
                    defer_pci_free: *defer_pci_free,
                };
                ask(&self.host_address(host)?, destroy).await?;
                Ok(json!({}))
            }
            other => Err(format!("{other:?} cannot be sent to a host")),
        }
    }
}
