//! The command line of builds (`serve` and `demo`): how long one may take, how many nodes it
//! may be tried on, how long a node whose build failed rests.

use std::time::Duration;

use clap::Args;

use crate::config::ConfigError;

/// How builds are carried out.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// A build with no progress for this long ends in error and releases its claim.
    #[arg(long, env = "RINGMASTER_INSTANCE_BUILD_TIMEOUT", default_value = "10m", value_parser = super::parse_duration)]
    pub instance_build_timeout: Duration,
    /// Attempts a build may make, counting the first (Nova's [scheduler] max_attempts): a
    /// build whose deploy fails on its node is tried again on an alternate picked at its first
    /// scheduling, up to this many nodes in all; 1 turns retries off.
    #[arg(long, env = "RINGMASTER_MAX_BUILD_ATTEMPTS", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_build_attempts: u32,
    /// How long a node whose build failed is not offered to a new build; after it, nodes with
    /// failed builds are offered after every node without (Nova's BuildFailureWeigher), and a
    /// build that succeeds on a node clears its count. 0 offers them at once (last).
    #[arg(long, env = "RINGMASTER_BUILD_FAILURE_COOLDOWN", default_value = "5m", value_parser = super::parse_duration)]
    pub build_failure_cooldown: Duration,
}

impl BuildArgs {
    /// Refuses settings no build could work with.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.instance_build_timeout.is_zero() {
            return Err(ConfigError::Invalid(
                "--instance-build-timeout must be above zero".to_owned(),
            ));
        }
        Ok(())
    }
}
