//! A server's power through a real Ironic: `PUT /v1/nodes/{uuid}/states/power`, soft first
//! where Nova's driver tries soft, hard when the soft one fails, then waiting until the node
//! shows the power asked with no change under way.

use std::time::{Duration, Instant};

use uuid::Uuid;

use super::{Fence, IronicDriver, SourceError, failed};
use crate::domain::compute::server::PowerAction;
use crate::domain::identity::NodeUuid;
use crate::ironic_api::IronicApi;

/// How long a soft power off or reboot may take before the hard one (Nova's
/// `shutdown_timeout`, 60 s).
const SOFT_POWER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a reboot is given to show itself under way before a node that is on counts as
/// rebooted.
const REBOOT_GRACE: Duration = Duration::from_secs(2);

impl IronicDriver {
    /// Powers the node of `instance` as `action` asks: a soft target first, the hard one when
    /// the soft one fails; waits until Ironic shows the node powered as wanted.
    pub async fn power(
        &self,
        node: NodeUuid,
        instance: Uuid,
        action: PowerAction,
        fence: &Fence,
    ) -> Result<(), SourceError> {
        let api = self.connection().await.map_err(failed)?;
        self.count(1);
        let record = api.get_power(node.uuid()).await.map_err(failed)?;
        if record.instance_uuid != Some(instance) {
            return Err(SourceError::Failed(format!(
                "ironic node {node} does not carry instance {instance}: its power is left alone"
            )));
        }
        let wanted = if action == PowerAction::Stop {
            "power off"
        } else {
            "power on"
        };
        let (first, fallback) = action.ironic_targets();
        let mut outcome = Err(SourceError::Failed(format!(
            "ironic node {node}: no power target"
        )));
        for target in std::iter::once(first).chain(fallback) {
            let timeout = target
                .starts_with("soft")
                .then_some(SOFT_POWER_TIMEOUT.as_secs());
            let asked = self
                .write(fence, node, || {
                    api.set_power_state(node.uuid(), target, timeout)
                })
                .await;
            outcome = match asked {
                Ok(()) => {
                    let reboot = matches!(action, PowerAction::Reboot { .. });
                    self.await_power(&api, node, wanted, reboot).await
                }
                Err(fenced @ SourceError::Fenced(_)) => return Err(fenced),
                Err(failure) => Err(failure),
            };
            if outcome.is_ok() {
                break;
            }
        }
        outcome
    }

    /// Waits until node `node` is `wanted` with no power change under way (after a reboot:
    /// once the change was seen, or a moment passed; the node was on before it too). An error
    /// counts only once this change was seen under way: one left by an earlier operation
    /// does not.
    async fn await_power(
        &self,
        api: &IronicApi,
        node: NodeUuid,
        wanted: &str,
        reboot: bool,
    ) -> Result<(), SourceError> {
        let started = Instant::now();
        let deadline = started + self.settings.deploy_timeout;
        let mut under_way = false;
        loop {
            self.count(1);
            let record = api.get_power(node.uuid()).await.map_err(failed)?;
            let settled = record.target_power_state.is_none();
            under_way |= !settled;
            let seen = !reboot || under_way || started.elapsed() > REBOOT_GRACE;
            if settled && seen && record.power_state.as_deref() == Some(wanted) {
                return Ok(());
            }
            if settled && under_way && record.last_error.is_some() {
                return Err(SourceError::Failed(format!(
                    "ironic node {node} did not reach {wanted}: {}",
                    record.last_error.unwrap_or_default()
                )));
            }
            if Instant::now() > deadline {
                return Err(SourceError::Failed(format!(
                    "ironic node {node} did not reach {wanted} within {}",
                    humantime::format_duration(self.settings.deploy_timeout)
                )));
            }
            actix_rt::time::sleep(self.settings.poll_interval).await;
        }
    }
}
