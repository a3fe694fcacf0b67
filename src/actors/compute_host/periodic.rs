//! The timer's tracker pass.

use actix::prelude::*;

use super::tracker::TrackerReport;
use super::{ComputeHost, HostError};

/// The timer's tracker pass: deferred to the next interval when as many passes as the process
/// allows are running (a pass waiting for one would hold the host's messages meanwhile, and
/// the timer's next ones would queue up behind it).
#[derive(Debug, Message)]
#[rtype(result = "Result<TrackerReport, HostError>")]
pub(super) struct PeriodicPass;

impl Handler<PeriodicPass> for ComputeHost {
    type Result = AtomicResponse<Self, Result<TrackerReport, HostError>>;

    fn handle(&mut self, _: PeriodicPass, _: &mut Self::Context) -> Self::Result {
        match self.passes.clone().try_acquire_owned() {
            Ok(permit) => self.pass_with(None, None, Some(permit)),
            Err(_) => AtomicResponse::new(Box::pin(fut::ready(Ok(TrackerReport {
                deferred: true,
                ..TrackerReport::default()
            })))),
        }
    }
}
