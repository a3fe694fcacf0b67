//! Row types of the tables (`*Row` to read, `New*` to insert) and their conversion into
//! domain types. Row types never leave `db`.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use super::schema::services;
use crate::domain::host::Host;

/// One row of `services`.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = services, check_for_backend(diesel::pg::Pg))]
pub struct ServiceRow {
    pub id: i64,
    pub uuid: uuid::Uuid,
    pub host: String,
    pub binary: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub forced_down: bool,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub report_count: i64,
    pub serves_group: Option<String>,
    pub serves_shard: Option<String>,
}

impl From<ServiceRow> for Host {
    fn from(row: ServiceRow) -> Self {
        Host {
            name: row.host,
            disabled: row.disabled,
            disabled_reason: row.disabled_reason,
            forced_down: row.forced_down,
            last_seen_up: row.last_seen_up,
            report_count: row.report_count,
            serves: crate::domain::selection::NodeSelection {
                conductor_group: row.serves_group,
                shard: row.serves_shard,
            },
        }
    }
}
