//! The command line of the Placement API (`serve` and `demo`): its policy, CORS, and how
//! allocation candidates are generated (Placement's `max_allocation_candidates`,
//! `allocation_candidates_generation_strategy` and `randomize_allocation_candidates`, and a
//! deadline).

use std::time::Duration;

use clap::Args;

use crate::config::{CandidateSettings, ConfigError, PlacementSettings};
use crate::domain::candidates::Strategy;

/// Placement's settings.
#[derive(Debug, Args)]
pub struct PlacementArgs {
    /// Placement policy: legacy (Placement's default), secure-rbac (new defaults only) or
    /// open (any authenticated caller).
    #[arg(long, env = "RINGMASTER_PLACEMENT_POLICY", default_value = "legacy")]
    pub placement_policy: crate::domain::placement::PolicyProfile,
    /// Origins allowed cross-origin requests to Placement (CORS), comma-separated.
    #[arg(long, env = "RINGMASTER_PLACEMENT_CORS_ORIGINS", value_delimiter = ',')]
    pub placement_cors_origins: Vec<String>,
    /// Request headers cross-origin Placement requests may send, comma-separated.
    #[arg(long, env = "RINGMASTER_PLACEMENT_CORS_HEADERS", value_delimiter = ',')]
    pub placement_cors_headers: Vec<String>,
    /// The most allocation candidates one request generates (-1: no cap; Placement's
    /// default is -1, ringmaster's is 1000 so that one request cannot exhaust memory).
    #[arg(
        long,
        env = "RINGMASTER_PLACEMENT_MAX_ALLOCATION_CANDIDATES",
        default_value_t = 1000,
        allow_negative_numbers = true
    )]
    pub placement_max_allocation_candidates: i64,
    /// The order allocation candidates are generated in across root providers: depth-first
    /// (every candidate of one root first) or breadth-first (one of each root in turn).
    #[arg(
        long,
        env = "RINGMASTER_PLACEMENT_CANDIDATES_STRATEGY",
        default_value = "depth-first"
    )]
    pub placement_candidates_strategy: Strategy,
    /// Answer allocation candidates drawn at random from the capped set (Placement's
    /// randomize_allocation_candidates), so concurrent schedulers do not all get the same.
    #[arg(long, env = "RINGMASTER_PLACEMENT_RANDOMIZE_CANDIDATES")]
    pub placement_randomize_candidates: bool,
    /// How long one allocation-candidates request may compute before it is answered 503.
    #[arg(
        long,
        env = "RINGMASTER_PLACEMENT_CANDIDATES_TIMEOUT",
        default_value = "30s",
        value_parser = super::parse_duration
    )]
    pub placement_candidates_timeout: Duration,
}

impl PlacementArgs {
    /// The Placement settings these flags give.
    pub fn settings(&self) -> Result<PlacementSettings, ConfigError> {
        let cap = match self.placement_max_allocation_candidates {
            -1 => None,
            cap if cap >= 1 => Some(usize::try_from(cap).unwrap_or(usize::MAX)),
            other => {
                return Err(ConfigError::Invalid(format!(
                    "--placement-max-allocation-candidates must be -1 (no cap) or at least 1, \
                     not {other}"
                )));
            }
        };
        if self.placement_candidates_timeout.is_zero() {
            return Err(ConfigError::Invalid(
                "--placement-candidates-timeout must be above zero".to_owned(),
            ));
        }
        Ok(PlacementSettings {
            policy: self.placement_policy,
            cors_origins: self.placement_cors_origins.clone(),
            cors_headers: self.placement_cors_headers.clone(),
            candidates: CandidateSettings {
                cap,
                strategy: self.placement_candidates_strategy,
                randomize: self.placement_randomize_candidates,
                timeout: self.placement_candidates_timeout,
            },
        })
    }
}
