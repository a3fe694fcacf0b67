//! `Registry`: the single writer of name/UUID ownership. It runs on a `SyncArbiter` with
//! exactly one thread, so claims and moves are applied one at a time, each in one
//! transaction; PostgreSQL's constraints and compare-and-swap updates still have the final say.

use actix::prelude::*;
use diesel::Connection;
use uuid::Uuid;

use crate::db::leases::{self, LeaseToken};
use crate::db::registry::{self, NodeClaim, NodeMove, OrphanOutcome, ProviderOutcome};
use crate::db::{DbError, Pool};
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

    fn in_transaction<T>(
        &self,
        label: &str,
        work: impl FnOnce(&mut diesel::PgConnection) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut pooled = self.pool.get()?;
        let conn: &mut diesel::PgConnection = &mut pooled;
        let result = conn.transaction(work);
        if let Err(error) = &result {
            log::warn!("registry {label} failed: {error}");
        }
        result
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
        self.in_transaction("claim", |conn| {
            leases::hold(conn, leases::REBALANCER, message.lease, now)?;
            registry::claim_nodes(conn, &message.claims, now)
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
        self.in_transaction("move", |conn| {
            leases::hold(conn, leases::REBALANCER, message.lease, now)?;
            registry::move_nodes(conn, &message.moves, message.ring_version, now)
        })
    }
}

/// Creates a provider; a name collision is resolved by adoption, and a UUID held by a provider
/// of another name is refused (nothing is renamed).
#[derive(Debug, Message)]
#[rtype(result = "Result<ProviderOutcome, DbError>")]
pub struct CreateProvider {
    pub uuid: Uuid,
    pub name: String,
}

impl Handler<CreateProvider> for Registry {
    type Result = Result<ProviderOutcome, DbError>;

    fn handle(&mut self, message: CreateProvider, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        self.in_transaction("create provider", |conn| {
            registry::create_provider(conn, message.uuid, &message.name, now)
        })
    }
}

/// Deletes an orphaned compute node, as its owner at `epoch` (invariant 6).
#[derive(Debug, Message)]
#[rtype(result = "Result<OrphanOutcome, DbError>")]
pub struct DeleteOrphan {
    pub node: String,
    pub host: String,
    pub epoch: i64,
}

impl Handler<DeleteOrphan> for Registry {
    type Result = Result<OrphanOutcome, DbError>;

    fn handle(&mut self, message: DeleteOrphan, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        self.in_transaction("delete orphan", |conn| {
            registry::delete_orphan(conn, &message.node, &message.host, message.epoch, now)
        })
    }
}
