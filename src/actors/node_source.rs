//! Where a process's nodes come from, behind one interface: the built-in simulated Ironic (the
//! default, for `demo`, message scripts and scale tests) or a real Ironic over its REST API
//! (`--ironic-url`). The compute hosts, the rebalancer and the registry see nodes
//! only through `ironic_nodes`, which the simulator writes and a real Ironic's listing
//! mirrors (`db::ironic_mirror`); what differs is here: whether the last listing worked, and
//! how a deploy and a tear-down are done.

mod ironic_driver;

use std::sync::Arc;

use actix::prelude::*;
use futures_util::future::BoxFuture;

use super::ironic::{Carries, CheckListing, Deploy, Destroy, Ironic, SetPower};
pub use crate::domain::compute::deploy::ServerDeploy;
use crate::domain::compute::server::PowerAction;
use crate::domain::identity::{InstanceUuid, NodeUuid};
use crate::domain::mirror::ListedNode;
pub use ironic_driver::{IronicDriver, IronicSettings, ListingStatus};

/// The node source of a process.
#[derive(Clone)]
pub enum NodeSource {
    /// The built-in simulated Ironic over `ironic_nodes`.
    Simulated(Addr<Ironic>),
    /// A real Ironic, mirrored into `ironic_nodes`.
    Ironic(Arc<IronicDriver>),
}

/// What a deploy needs: the node, the instance, and what Nova's driver puts in
/// `instance_info` besides the image.
#[derive(Debug, Clone)]
pub struct DeployRequest {
    pub node: NodeUuid,
    pub instance: InstanceUuid,
    pub display_name: String,
    pub root_gb: i32,
    /// What a server of the Compute API adds, as Nova's driver's patcher sends it.
    pub server: Option<ServerDeploy>,
}

/// Says, before each write sent to Ironic, whether the host still holds the node (by owner and
/// epoch, in the database): a host that lost a node sends Ironic nothing more for it.
pub type Fence = Arc<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

/// Why a deploy or a tear-down did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Ironic refused or failed it (the reason is Ironic's, with the node named).
    #[error("{0}")]
    Failed(String),
    /// The host lost the node on the way: nothing more was sent for it.
    #[error("node {0} is no longer this host's: nothing more was sent to Ironic for it")]
    Fenced(NodeUuid),
    #[error("the simulated Ironic is unavailable: {0}")]
    Mailbox(#[from] MailboxError),
}

/// A node as its source shows it now, for settling a build nobody finished.
#[derive(Debug, Clone)]
pub enum Current {
    /// Ironic is still working on the node (deploying, cleaning …): ask again later.
    Busy(String),
    /// The node is at rest: as the mirror should show it (`None` from the simulator, whose
    /// table is the truth already).
    AtRest(Option<Box<ListedNode>>),
}

impl NodeSource {
    /// The nodes this process's hosts serve: a real Ironic's conductor group and shard (the
    /// simulated Ironic: all of them).
    pub fn serves(&self) -> crate::domain::selection::NodeSelection {
        match self {
            NodeSource::Simulated(_) => Default::default(),
            NodeSource::Ironic(driver) => driver.selection().clone(),
        }
    }

    /// The node as its source shows it now.
    pub async fn current(&self, node: NodeUuid) -> Result<Current, SourceError> {
        match self {
            NodeSource::Simulated(_) => Ok(Current::AtRest(None)),
            NodeSource::Ironic(driver) => driver.current(node).await,
        }
    }

    /// Says whether Ironic has node `node` and it carries instance `instance` (a node gone, or
    /// torn down already, or carrying another instance: nothing of this instance to tear
    /// down).
    pub async fn carries(
        &self,
        node: NodeUuid,
        instance: InstanceUuid,
    ) -> Result<bool, SourceError> {
        match self {
            NodeSource::Simulated(ironic) => ironic
                .send(Carries { node, instance })
                .await?
                .map_err(|error| SourceError::Failed(error.to_string())),
            NodeSource::Ironic(driver) => driver.carries(node, instance.uuid()).await,
        }
    }

    /// `simulated` or `ironic`: what the admin API and the dashboard show.
    pub fn kind(&self) -> &'static str {
        match self {
            NodeSource::Simulated(_) => "simulated",
            NodeSource::Ironic(_) => "ironic",
        }
    }

    /// The real Ironic's driver, when the nodes come from one.
    pub fn driver(&self) -> Option<&Arc<IronicDriver>> {
        match self {
            NodeSource::Simulated(_) => None,
            NodeSource::Ironic(driver) => Some(driver),
        }
    }

    /// Says whether the node listing works now: a tracker pass writes only then, so that no
    /// node is taken for gone while Ironic cannot say.
    pub async fn check_listing(&self) -> Result<(), String> {
        match self {
            NodeSource::Simulated(ironic) => ironic
                .send(CheckListing)
                .await
                .map_err(|error| error.to_string())?,
            NodeSource::Ironic(driver) => driver.check_listing().await,
        }
    }

    /// Deploys `request.instance` on its node; returns the node as Ironic shows it then, for
    /// the mirror (`None` from the simulator, which wrote it already).
    pub async fn deploy(
        &self,
        request: &DeployRequest,
        fence: &Fence,
    ) -> Result<Option<ListedNode>, SourceError> {
        match self {
            NodeSource::Simulated(ironic) => {
                ironic
                    .send(Deploy {
                        node: request.node,
                        instance: request.instance,
                    })
                    .await?
                    .map_err(|error| SourceError::Failed(error.to_string()))?;
                Ok(None)
            }
            NodeSource::Ironic(driver) => driver.deploy(request, fence).await.map(Some),
        }
    }

    /// Powers the node of `instance` as `action` asks and waits until it is so.
    pub async fn power(
        &self,
        node: NodeUuid,
        instance: InstanceUuid,
        action: PowerAction,
        fence: &Fence,
    ) -> Result<(), SourceError> {
        match self {
            NodeSource::Simulated(ironic) => ironic
                .send(SetPower {
                    node,
                    instance,
                    on: action != PowerAction::Stop,
                })
                .await?
                .map_err(|error| SourceError::Failed(error.to_string())),
            NodeSource::Ironic(driver) => driver.power(node, instance.uuid(), action, fence).await,
        }
    }

    /// Tears `instance` down from `node` and leaves the node clean; returns the node as Ironic
    /// shows it then (`None` from the simulator).
    pub async fn destroy(
        &self,
        node: NodeUuid,
        instance: InstanceUuid,
        fence: &Fence,
    ) -> Result<Option<ListedNode>, SourceError> {
        match self {
            NodeSource::Simulated(ironic) => {
                ironic
                    .send(Destroy { node })
                    .await?
                    .map_err(|error| SourceError::Failed(error.to_string()))?;
                Ok(None)
            }
            NodeSource::Ironic(driver) => {
                driver.destroy(node, instance.uuid(), fence).await.map(Some)
            }
        }
    }
}
