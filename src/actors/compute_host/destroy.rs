//! `DestroyInstance` on a `ComputeHost`: tear the instance down through Ironic when Ironic
//! still has it on its node, then free its allocation and soft-delete it; every write fenced
//! by the node's owner and epoch.

use actix::prelude::*;

use super::build::{Build, mirror};
use super::owned::{Owned, owner_of, write_for};
use super::{ComputeHost, HostError};
use crate::db::{self, Pool};
use crate::domain::clock::SharedClock;
use crate::domain::identity::{ConsumerUuid, InstanceUuid};
use crate::domain::instance::VmState;
use crate::domain::mirror::ListedNode;

/// Destroys instance `instance` through Ironic, then frees its allocation and soft-deletes
/// it. An instance Ironic has nothing of any more (its node gone, torn down already, or
/// carrying another instance) goes whole, its claim with it. A destroy that Ironic refuses
/// while it still has the instance (a locked node) leaves the instance in error, allocated,
/// with the fault that says why.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), HostError>")]
pub struct DestroyInstance {
    pub instance: InstanceUuid,
    /// Leave the PCI devices for the next tracker pass, as a busy host does (fault injection).
    pub defer_pci_free: bool,
}

leased_work!(DestroyInstance => destroy);

impl Build {
    async fn destroy(&self, message: DestroyInstance) -> Result<(), HostError> {
        let instance = message.instance;
        let found = db::run(&self.pool, move |conn| {
            db::instances::get_instance(conn, instance)
        })
        .await?;
        let owned = match found.node {
            Some(node) => owner_of(&self.pool, &self.host, node).await?,
            None => None,
        };
        let Some(shown) = self.tear_down(owned.as_ref(), instance).await? else {
            return Ok(());
        };
        let (pool, now) = (self.pool.clone(), self.clock.now());
        write_for(owned.as_ref(), &pool, move |conn| {
            mirror(conn, shown.as_ref(), now)?;
            db::placement::allocations::delete_consumer(conn, ConsumerUuid::from(instance))?;
            db::instances::soft_delete_instance(conn, instance, now)
        })
        .await?;
        // Freeing the devices is its own step, as in Nova: it may lag behind the delete (this
        // host busy or down), and the tracker pass finishes it then.
        if message.defer_pci_free {
            return Ok(());
        }
        let now = self.clock.now();
        let freed = write_for(owned.as_ref(), &pool, move |conn| {
            db::pci::free_instance_devices(conn, instance, now)
        })
        .await;
        if let Err(error) = freed {
            log::warn!(
                "host {}: pci devices of instance {instance} not freed yet: {error}",
                self.host
            );
        }
        Ok(())
    }

    /// Tears `instance` down from `owned`'s node when Ironic still has it there; returns the
    /// node as Ironic shows it then (`Some(None)`: nothing to show), or `None` when the
    /// instance went whole already (Ironic lost it while this asked).
    async fn tear_down(
        &self,
        owned: Option<&Owned>,
        instance: InstanceUuid,
    ) -> Result<Option<Option<ListedNode>>, HostError> {
        let Some(owned) = owned else {
            return Ok(Some(None));
        };
        // Ironic that cannot say is asked to tear down.
        let carried = self
            .node_source
            .carries(owned.node, instance)
            .await
            .unwrap_or(true);
        if !carried {
            return Ok(Some(None));
        }
        let failure = match self
            .node_source
            .destroy(owned.node, instance, &owned.fence(&self.pool))
            .await
            .map_err(|error| owned.source_error(error))
        {
            Ok(shown) => return Ok(Some(shown)),
            Err(lost @ HostError::NotOwner { .. }) => return Err(lost),
            Err(failure) => failure,
        };
        // The node went, or was torn down, while this asked: nothing is left.
        let left = self.node_source.carries(owned.node, instance).await;
        if matches!(left, Ok(false)) {
            whole_delete(owned, &self.pool, instance, &self.clock).await?;
            return Ok(None);
        }
        // Kept with its claim while Ironic still has it on the node, together with the fault
        // that says why (one transaction).
        let (text, host, now) = (failure.to_string(), self.host.clone(), self.clock.now());
        let fault = text.clone();
        owned
            .write(&self.pool, move |conn| {
                db::instances::add_fault(conn, instance, &fault, &host, now)?;
                db::instances::set_state(conn, instance, VmState::Error, None, now)
            })
            .await?;
        Err(HostError::Ironic(text))
    }
}

/// Deletes instance `instance` whole, its claim with it, on `owned`'s node where Ironic has
/// nothing of it any more.
async fn whole_delete(
    owned: &Owned,
    pool: &Pool,
    instance: InstanceUuid,
    clock: &SharedClock,
) -> Result<(), HostError> {
    let now = clock.now();
    owned
        .write(pool, move |conn| {
            db::placement::allocations::delete_consumer(conn, ConsumerUuid::from(instance))?;
            db::pci::free_instance_devices(conn, instance, now)?;
            db::instances::soft_delete_instance(conn, instance, now)
        })
        .await
}
