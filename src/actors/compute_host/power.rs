//! `PowerServer` on a `ComputeHost`: stop, start or reboot a server by its node's power in
//! Ironic (soft first where Nova's driver tries soft), then record its new vm_state and power
//! state; every write fenced by the node's owner and epoch. The Compute API has set the
//! action's task_state before; it is cleared whatever the outcome.

use actix::prelude::*;

use super::build::Build;
use super::owned::require_owned;
use super::{ComputeHost, HostError};
use crate::db;
use crate::domain::compute::server::PowerAction;
use crate::domain::identity::InstanceUuid;

/// Powers server `instance` as `action` asks.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), HostError>")]
pub struct PowerServer {
    pub instance: InstanceUuid,
    pub action: PowerAction,
}

leased_work!(PowerServer => power);

impl Build {
    async fn power(&self, message: PowerServer) -> Result<(), HostError> {
        let PowerServer { instance, action } = message;
        let found = db::run(&self.pool, move |conn| {
            db::instances::get_instance(conn, instance)
        })
        .await?;
        let Some(node) = found.node else {
            return Err(HostError::Ironic(format!(
                "server {instance} is on no node"
            )));
        };
        let owned = require_owned(&self.pool, &self.host, node).await?;
        let powered = self
            .node_source
            .power(owned.node, instance, action, &owned.fence(&self.pool))
            .await
            .map_err(|error| owned.source_error(error));
        let now = self.clock.now();
        let outcome = powered.is_ok().then(|| action.outcome());
        owned
            .write(&self.pool, move |conn| {
                db::servers::end_power(conn, instance, outcome, now)
            })
            .await?;
        if let Err(failure) = &powered {
            log::warn!(
                "host {}: {} of server {instance} failed: {failure}",
                self.host,
                action.name()
            );
        }
        powered
    }
}
