//! A node as this host owned it when it was looked up (`Owned`), and every write for it fenced
//! by that owner and epoch: the builds, the tear-downs and the power actions go through it
//! (invariant 4: no write lands for a node another host took over meanwhile).

use super::HostError;
use crate::actors::node_source::{Fence, SourceError};
use crate::db::{self, DbError, Pool};
use crate::domain::identity::{ComputeNodeId, HostName, NodeUuid, OwnerEpoch};

/// A node this host owned when it was looked up: its writes go through `write`, which
/// re-checks the ownership in the writing transaction (invariant 4).
pub(super) struct Owned {
    host: HostName,
    pub(super) node: NodeUuid,
    pub(super) compute_node_id: ComputeNodeId,
    epoch: OwnerEpoch,
}

impl Owned {
    /// Runs `work` in one transaction that holds the node at the epoch it was found at;
    /// `NotOwner` with nothing written when the node has moved since.
    pub(super) async fn write<T, F>(&self, pool: &Pool, work: F) -> Result<T, HostError>
    where
        F: FnOnce(&mut db::Connection) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let (id, host, epoch) = (self.compute_node_id, self.host.clone(), self.epoch);
        let written = db::transaction(pool, move |conn| {
            if !db::compute_nodes::hold_one(conn, &host, id, epoch)? {
                return Ok(None);
            }
            work(conn).map(Some)
        })
        .await?;
        written.ok_or_else(|| HostError::NotOwner {
            host: self.host.clone(),
            node: self.node,
        })
    }
}

impl Owned {
    /// The fence a node source checks before each write it sends for this node: the node still
    /// this host's at the epoch it was found at.
    pub(super) fn fence(&self, pool: &Pool) -> Fence {
        let (pool, host, id, epoch) = (
            pool.clone(),
            self.host.clone(),
            self.compute_node_id,
            self.epoch,
        );
        std::sync::Arc::new(move || {
            let (pool, host) = (pool.clone(), host.clone());
            Box::pin(async move {
                db::transaction(&pool, move |conn| {
                    db::compute_nodes::hold_one(conn, &host, id, epoch)
                })
                .await
                .unwrap_or(false)
            })
        })
    }

    /// A node source's refusal as the host says it.
    pub(super) fn source_error(&self, error: SourceError) -> HostError {
        match error {
            SourceError::Fenced(_) => HostError::NotOwner {
                host: self.host.clone(),
                node: self.node,
            },
            SourceError::Mailbox(mailbox) => HostError::Mailbox(mailbox),
            SourceError::Failed(reason) => HostError::Ironic(reason),
        }
    }
}

/// Runs `work` fenced by `owned` when the instance has a node, in a plain transaction when not.
pub(super) async fn write_for<T, F>(
    owned: Option<&Owned>,
    pool: &Pool,
    work: F,
) -> Result<T, HostError>
where
    F: FnOnce(&mut db::Connection) -> Result<T, DbError> + Send + 'static,
    T: Send + 'static,
{
    match owned {
        Some(owned) => owned.write(pool, work).await,
        None => Ok(db::transaction(pool, work).await?),
    }
}

/// Returns `node` if `host` owns it now; `None` when the node has no live compute node (it
/// went from Ironic and nothing held it); `NotOwner` when another host owns it.
pub(super) async fn owner_of(
    pool: &Pool,
    host: &HostName,
    node: NodeUuid,
) -> Result<Option<Owned>, HostError> {
    let exists = db::run(pool, move |conn| {
        db::compute_nodes::find_compute_node(conn, node)
    })
    .await?
    .is_some();
    if !exists {
        return Ok(None);
    }
    require_owned(pool, host, node).await.map(Some)
}

/// Returns `node` if `host` owns it now.
pub(super) async fn require_owned(
    pool: &Pool,
    host: &HostName,
    node: NodeUuid,
) -> Result<Owned, HostError> {
    let compute_node = db::run(pool, move |conn| {
        db::compute_nodes::find_compute_node(conn, node)
    })
    .await?;
    let not_owner = || HostError::NotOwner {
        host: host.clone(),
        node,
    };
    match compute_node {
        Some(compute_node) if compute_node.host == *host => Ok(Owned {
            host: host.clone(),
            node,
            compute_node_id: compute_node.id,
            epoch: compute_node.owner_epoch,
        }),
        _ => Err(not_owner()),
    }
}
