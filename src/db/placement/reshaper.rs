//! `POST /reshaper`: inventories and allocations moved between providers in one transaction,
//! as Placement's "replace the world" reshape: an interim inventory (the current one plus the
//! new one), then the consumers' allocations, then the final inventory.

use crate::domain::identity::ProviderUuid;
use diesel::prelude::*;

use super::allocations::{AllocationError, ConsumerAllocations, replace_allocations};
use super::inventories::{InventoryError, InventoryRow, bump_generation, replace_inventories};
use crate::db::DbError;

/// One provider's inventory as the reshape wants it in the end.
#[derive(Debug, Clone)]
pub struct ProviderInventory {
    pub provider: ProviderUuid,
    pub generation: i64,
    pub rows: Vec<InventoryRow>,
}

/// Why a reshape was refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ReshapeError {
    #[error("provider {0} of the inventories not found")]
    ProviderMissing(ProviderUuid),
    #[error("provider {provider} is at generation {actual}, not {given}")]
    Generation {
        provider: ProviderUuid,
        actual: i64,
        given: i64,
    },
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    #[error(transparent)]
    Allocation(#[from] AllocationError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ReshapeError {
    fn from(error: diesel::result::Error) -> Self {
        ReshapeError::Db(DbError::from(error))
    }
}

/// Runs a reshape; call it inside a transaction, which a refusal must roll back.
pub fn reshape(
    conn: &mut PgConnection,
    inventories: &[ProviderInventory],
    writes: &[ConsumerAllocations],
) -> Result<(), ReshapeError> {
    let uuids: Vec<ProviderUuid> = inventories.iter().map(|entry| entry.provider).collect();
    let locked = super::providers::lock(conn, &uuids, &[])?;
    for entry in inventories {
        let Some(row) = locked.iter().find(|row| row.uuid == entry.provider) else {
            return Err(ReshapeError::ProviderMissing(entry.provider));
        };
        if row.generation != entry.generation {
            return Err(ReshapeError::Generation {
                provider: entry.provider,
                actual: row.generation,
                given: entry.generation,
            });
        }
    }
    // Interim inventory: the new records over the current ones, so that allocations can move
    // onto new classes before the old ones go.
    for entry in inventories.iter().filter(|entry| !entry.rows.is_empty()) {
        let Some(row) = locked.iter().find(|row| row.uuid == entry.provider) else {
            return Err(ReshapeError::ProviderMissing(entry.provider));
        };
        for record in &entry.rows {
            let class = super::inventories::require_class(conn, &record.resource_class)?;
            super::inventories::upsert(conn, row.id, class, record)?;
        }
        bump_generation(conn, row.id, None)?;
    }
    replace_allocations(conn, writes)?;
    for entry in inventories {
        let Some(row) = locked.iter().find(|row| row.uuid == entry.provider) else {
            return Err(ReshapeError::ProviderMissing(entry.provider));
        };
        let current = super::providers::generation_of(conn, row.id)?;
        replace_inventories(conn, entry.provider, current, &entry.rows)?
            .ok_or(ReshapeError::ProviderMissing(entry.provider))?;
    }
    Ok(())
}
