//! `Registry`: the single writer of name/UUID ownership. It runs on a `SyncArbiter` with
//! exactly one thread, so claims and moves are applied one at a time, each in one
//! transaction; PostgreSQL's constraints and compare-and-swap updates still have the final say.

use crate::domain::identity::{HostName, NodeUuid, OwnerEpoch, ProviderUuid};
use actix::prelude::*;

use crate::db::compute_nodes::{self, NodeClaim, NodeMove, OrphanOutcome, ProviderOutcome};
use crate::db::leases::{self, LeaseToken};
use crate::db::notify;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::node::ComputeNode;

/// The registry actor.
pub struct Registry {
    pool: Pool,
    clock: SharedClock,
}

impl Registry {
    /// Returns a registry writing through `pool`.
    pub fn new(pool: Pool, clock: SharedClock) -> Registry {
        Registry { pool, clock }
    }

    /// Runs `work` in one transaction; a deadlock or serialization failure (which rolled it
    /// back whole) is retried at once, a few times, naming what the work is about (`label`).
    fn in_transaction<T>(
        &self,
        label: &str,
        work: impl Fn(&mut db::Connection) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut pooled = self.pool.get()?;
        db::retrying_conflicts(&mut pooled, &format!("registry {label}"), work)
    }
}

impl Actor for Registry {
    type Context = SyncContext<Self>;
}

/// Gives unowned nodes their first owner (compute node and provider, by adoption or undelete),
/// under the rebalancer lease `lease` (refused, nothing written, when it is not current).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<ComputeNode>, DbError>")]
pub struct ClaimNodes {
    pub claims: Vec<NodeClaim>,
    pub lease: LeaseToken,
}

impl Handler<ClaimNodes> for Registry {
    type Result = Result<Vec<ComputeNode>, DbError>;

    fn handle(&mut self, message: ClaimNodes, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let label = format!(
            "claim of {}",
            describe_nodes(message.claims.iter().map(|c| c.node.to_string()))
        );
        self.in_transaction(&label, |conn| {
            leases::hold(conn, leases::REBALANCER, message.lease, now)?;
            let claimed = compute_nodes::claim_nodes(conn, &message.claims, now)?;
            if !claimed.is_empty() {
                let mut by_host: std::collections::BTreeMap<&str, usize> = Default::default();
                for node in &claimed {
                    *by_host.entry(node.host.as_str()).or_default() += 1;
                }
                notify::notify(
                    conn,
                    &serde_json::json!({
                        "type": "nodes_claimed", "count": claimed.len(), "to": by_host,
                    }),
                )?;
            }
            Ok(claimed)
        })
        .inspect(|claimed| {
            if let Ok(mut conn) = self.pool.get() {
                crate::db::analyze_after_bulk(
                    &mut conn,
                    &["compute_nodes", "resource_providers"],
                    claimed.len(),
                );
            }
        })
    }
}

/// Moves nodes between hosts, fenced by expected owner and epoch, in one transaction that
/// commits only under the current rebalancer lease `lease` (invariant 13).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<ComputeNode>, DbError>")]
pub struct MoveNodes {
    pub moves: Vec<NodeMove>,
    pub ring_version: i64,
    pub lease: LeaseToken,
}

impl Handler<MoveNodes> for Registry {
    type Result = Result<Vec<ComputeNode>, DbError>;

    fn handle(&mut self, message: MoveNodes, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let label = format!(
            "move of {}",
            describe_nodes(
                message
                    .moves
                    .iter()
                    .map(|m| format!("{} ({} → {})", m.node, m.from, m.to))
            )
        );
        self.in_transaction(&label, |conn| {
            leases::hold(conn, leases::REBALANCER, message.lease, now)?;
            let moved = compute_nodes::move_nodes(conn, &message.moves, message.ring_version, now)?;
            // A node takes its new host's status: off a disabled host, its provider loses
            // COMPUTE_STATUS_DISABLED.
            let uuids: Vec<uuid::Uuid> = moved.iter().map(|node| node.uuid).collect();
            crate::db::services::sync_status_traits(conn, &[], &uuids, now)?;
            Ok(moved)
        })
    }
}

/// Creates a provider; a name collision is resolved by adoption, and a UUID held by a provider
/// of another name is refused (nothing is renamed).
#[derive(Debug, Message)]
#[rtype(result = "Result<ProviderOutcome, DbError>")]
pub struct CreateProvider {
    pub uuid: ProviderUuid,
    pub name: String,
}

impl Handler<CreateProvider> for Registry {
    type Result = Result<ProviderOutcome, DbError>;

    fn handle(&mut self, message: CreateProvider, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let label = format!("create of provider {} ({})", message.uuid, message.name);
        self.in_transaction(&label, |conn| {
            compute_nodes::create_provider(conn, message.uuid, &message.name, now)
        })
    }
}

/// Deletes an orphaned compute node, as its owner at `epoch` (invariant 6).
#[derive(Debug, Message)]
#[rtype(result = "Result<OrphanOutcome, DbError>")]
pub struct DeleteOrphan {
    pub node: NodeUuid,
    pub host: HostName,
    pub epoch: OwnerEpoch,
}

impl Handler<DeleteOrphan> for Registry {
    type Result = Result<OrphanOutcome, DbError>;

    fn handle(&mut self, message: DeleteOrphan, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let label = format!("orphan delete of node {} by {}", message.node, message.host);
        self.in_transaction(&label, |conn| {
            compute_nodes::delete_orphan(conn, message.node, &message.host, message.epoch, now)
        })
    }
}

/// Names the first few of `nodes` and how many there are in all, for a log line.
fn describe_nodes(nodes: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = nodes.collect();
    match names.len() {
        0 => "no nodes".to_owned(),
        1..=3 => format!("nodes {}", names.join(", ")),
        count => format!("{count} nodes ({}, …)", names[..3].join(", ")),
    }
}
