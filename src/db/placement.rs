//! Placement's data, one file per area as `http/placement/` has them: providers and their
//! tree, inventories, allocations (the one writer and the one consumer deleter), resource
//! classes and traits, a provider's traits and aggregates, the allocation-candidate snapshot,
//! the reshaper and usages. Each write keeps its invariant in one function every caller uses.

pub mod allocations;
pub mod candidates;
pub mod inventories;
pub mod names;
pub mod provider_links;
pub mod providers;
pub mod reshaper;
pub mod usages;
