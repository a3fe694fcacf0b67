//! Placement's writes, one use case each: a class's inventory created, replaced or deleted, a
//! provider renamed or reparented or deleted, consumers' allocations replaced, a reshape (the
//! inventories and allocations of several providers at once), a provider's traits cleared and
//! its aggregates set — each one transaction, every check in it (generations, capacity,
//! allocations in use) made by `db::placement`'s one writer of its table.

use uuid::Uuid;

use crate::db::placement::allocations::{AllocationError, ConsumerAllocations};
use crate::db::placement::inventories::{InventoryError, InventoryRow};
use crate::db::placement::providers::{ProviderError, ProviderRow};
use crate::db::placement::reshaper::{ProviderInventory, ReshapeError};
use crate::db::{self, DbError, Pool};
use crate::domain::identity::{ProviderId, ProviderUuid};

/// What a write of one class's inventory asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InventoryWrite {
    /// A new class (`false` when the provider has it already), at `generation` if given.
    Create { generation: Option<i64> },
    /// A class the provider has (`false` when it has not), at `generation`.
    Replace { generation: i64 },
}

/// Writes `row`, one class's inventory of provider `provider`, as `write` asks.
pub async fn write_inventory(
    pool: &Pool,
    provider: ProviderId,
    row: InventoryRow,
    write: InventoryWrite,
) -> Result<bool, InventoryError> {
    let (generation, exists) = match write {
        InventoryWrite::Create { generation } => (generation, false),
        InventoryWrite::Replace { generation } => (Some(generation), true),
    };
    db::transaction(pool, move |conn| {
        db::placement::inventories::write_class_inventory(conn, provider, generation, &row, exists)
    })
    .await
}

/// Deletes provider `provider`'s inventory of `class`; `false` when it has none.
pub async fn delete_inventory(
    pool: &Pool,
    provider: (ProviderId, ProviderUuid),
    class: String,
) -> Result<bool, InventoryError> {
    db::transaction(pool, move |conn| {
        db::placement::inventories::delete_inventory(conn, provider, &class)
    })
    .await
}

/// Renames provider `uuid` and, where `parent` says and `reparenting` allows, reparents it.
pub async fn update_provider(
    pool: &Pool,
    uuid: ProviderUuid,
    name: String,
    parent: Option<Option<ProviderUuid>>,
    reparenting: bool,
) -> Result<ProviderRow, ProviderError> {
    let now = chrono::Utc::now();
    db::transaction(pool, move |conn| {
        db::placement::providers::update_provider(conn, uuid, &name, parent, reparenting, now)
    })
    .await
}

/// Deletes provider `uuid`, which must have neither allocations nor children.
pub async fn delete_provider(pool: &Pool, uuid: ProviderUuid) -> Result<(), ProviderError> {
    db::transaction(pool, move |conn| {
        db::placement::providers::delete_provider(conn, uuid)
    })
    .await
}

/// Replaces the allocations of every consumer of `writes`, all or none.
pub async fn replace_allocations(
    pool: &Pool,
    writes: Vec<ConsumerAllocations>,
) -> Result<(), AllocationError> {
    db::transaction(pool, move |conn| {
        db::placement::allocations::replace_allocations(conn, &writes)
    })
    .await
}

/// Replaces the inventories and the allocations given, all or none.
pub async fn reshape(
    pool: &Pool,
    inventories: Vec<ProviderInventory>,
    writes: Vec<ConsumerAllocations>,
) -> Result<(), ReshapeError> {
    db::transaction(pool, move |conn| {
        db::placement::reshaper::reshape(conn, &inventories, &writes)
    })
    .await
}

/// Clears provider `provider`'s traits; its new generation.
pub async fn clear_traits(pool: &Pool, provider: ProviderId) -> Result<i64, DbError> {
    db::transaction(pool, move |conn| {
        db::placement::provider_links::clear_provider_traits(conn, provider)
    })
    .await
}

/// Sets provider `provider`'s aggregates to `aggregates` (no generation check: before 1.19);
/// its new generation.
pub async fn set_aggregates(
    pool: &Pool,
    provider: ProviderId,
    aggregates: Vec<Uuid>,
) -> Result<i64, DbError> {
    db::transaction(pool, move |conn| {
        db::placement::provider_links::set_provider_aggregates(conn, provider, &aggregates)
    })
    .await
}
