//! Placement's data, one file per area as `http/placement/` has them: providers and their
//! tree, inventories, allocations (the one writer and the one consumer deleter), resource
//! classes and traits, a provider's traits and aggregates, the allocation-candidate snapshot,
//! the reshaper and usages. Each write keeps its invariant in one function every caller uses,
//! and each rule is written once: the capacity of an inventory (`capacity!`), a generation bump
//! (`bump_generation!`), the provider lock (`providers::lock`).

/// The capacity of the inventory row aliased `$i`, as Placement computes it:
/// (total − reserved) × allocation_ratio, a float8. The one text of the rule: the claim, the
/// scheduler's pick, the allocation candidates and the audit all use it.
macro_rules! capacity {
    ($i:literal) => {
        concat!(
            "((",
            $i,
            ".total - ",
            $i,
            ".reserved) * ",
            $i,
            ".allocation_ratio)::float8"
        )
    };
}
pub(crate) use capacity;

/// The head of every statement that bumps provider generations: `UPDATE resource_providers rp
/// SET generation = rp.generation + 1, updated_at = $at` (the caller adds FROM/WHERE). The one
/// text of the rule; `providers::bump_generation` and `providers::bump_generations` use it, and
/// so do the statements that compare a generation and write in one step.
macro_rules! bump_generation {
    ($at:literal) => {
        concat!(
            "UPDATE resource_providers rp SET generation = rp.generation + 1, updated_at = ",
            $at
        )
    };
}
pub(crate) use bump_generation;

pub mod allocations;
pub mod candidates;
pub mod inventories;
pub mod names;
pub mod provider_links;
pub mod providers;
pub mod reshaper;
pub mod usages;
