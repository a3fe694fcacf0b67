//! Pure types and rules of ringmaster: no IO, no diesel, no actix, no logging.

pub mod archive;
pub mod candidates;
pub mod clock;
pub mod compute;
pub mod error;
pub mod failover;
pub mod host;
pub mod identity;
pub mod instance;
pub mod listing;
pub mod mirror;
pub mod node;
pub mod placement;
pub mod placement_filter;
pub mod rebalance;
pub mod ring;
pub mod selection;
pub mod text;
pub mod timeline;
pub mod tracker;
