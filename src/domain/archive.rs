//! What the archiver may move, and in which order. Pure: the table graph and the date and
//! row-budget rules of `archive_deleted_rows` and `purge`.
//!
//! A row moves to its `shadow_` twin only if it is soft-deleted (re-checked in the moving
//! transaction) or is a lifecycle child, by foreign key, of a row moving with it. `pci_devices`
//! is nobody's lifecycle child: its `instance_uuid` is an allocation pointer, so a device row
//! moves only once it is itself soft-deleted, and a soft-deleted compute node waits while any
//! device row still references it.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};

/// A foreign-key child that moves with its parent whatever its own `deleted` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LifecycleChild {
    pub table: &'static str,
    /// The child's column referencing the parent.
    pub column: &'static str,
    /// The parent's referenced column.
    pub parent_column: &'static str,
    /// This child's own lifecycle children (instance_actions_events of instance_actions).
    pub children: &'static [LifecycleChild],
}

/// A row elsewhere whose presence keeps a soft-deleted row in its table (foreign keys that are
/// not lifecycle: the referencing row is alive on its own terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocker {
    pub table: &'static str,
    pub column: &'static str,
    pub parent_column: &'static str,
}

/// One archivable table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveTable {
    pub name: &'static str,
    pub children: &'static [LifecycleChild],
    pub blockers: &'static [Blocker],
    /// A soft-deleted row this condition (SQL over the row as `t`) holds for is still in use
    /// and never moves: a PCI device allocated or claimed (invariant 8).
    pub in_use: Option<&'static str>,
}

const ACTION_EVENTS: LifecycleChild = LifecycleChild {
    table: "instance_actions_events",
    column: "action_id",
    parent_column: "id",
    children: &[],
};

const fn instance_child(
    table: &'static str,
    children: &'static [LifecycleChild],
) -> LifecycleChild {
    LifecycleChild {
        table,
        column: "instance_uuid",
        parent_column: "uuid",
        children,
    }
}

/// The archivable tables in the order a batch visits them: parents first (their lifecycle
/// children ride along), then tables archived on their own deleted flag, a table that others
/// reference after those others.
pub const ARCHIVE_ORDER: &[ArchiveTable] = &[
    ArchiveTable {
        name: "instances",
        children: &[
            instance_child("instance_actions", &[ACTION_EVENTS]),
            instance_child("instance_extra", &[]),
            instance_child("instance_system_metadata", &[]),
            instance_child("instance_faults", &[]),
            instance_child("block_device_mapping", &[]),
        ],
        blockers: &[],
        in_use: None,
    },
    ArchiveTable {
        name: "instance_actions",
        children: &[ACTION_EVENTS],
        blockers: &[],
        in_use: None,
    },
    ArchiveTable {
        name: "instance_actions_events",
        children: &[],
        blockers: &[],
        in_use: None,
    },
    ArchiveTable {
        name: "instance_extra",
        children: &[],
        blockers: &[],
        in_use: None,
    },
    ArchiveTable {
        name: "instance_system_metadata",
        children: &[],
        blockers: &[],
        in_use: None,
    },
    ArchiveTable {
        name: "instance_faults",
        children: &[],
        blockers: &[],
        in_use: None,
    },
    ArchiveTable {
        name: "block_device_mapping",
        children: &[],
        blockers: &[],
        in_use: None,
    },
    ArchiveTable {
        name: "pci_devices",
        children: &[],
        blockers: &[],
        in_use: Some("t.status IN ('allocated', 'claimed')"),
    },
    ArchiveTable {
        name: "compute_nodes",
        children: &[],
        blockers: &[Blocker {
            table: "pci_devices",
            column: "compute_node_id",
            parent_column: "id",
        }],
        in_use: None,
    },
    ArchiveTable {
        name: "services",
        children: &[],
        blockers: &[Blocker {
            table: "compute_nodes",
            column: "service_id",
            parent_column: "id",
        }],
        in_use: None,
    },
];

/// Returns how `table` hangs off its lifecycle parent, if it has one: (its column, the parent
/// table, the parent's column). Such a row may be archived while live, riding with its parent.
pub fn lifecycle_parent(table: &str) -> Option<(&'static str, &'static str, &'static str)> {
    fn search(
        parent: &'static str,
        children: &'static [LifecycleChild],
        table: &str,
    ) -> Option<(&'static str, &'static str, &'static str)> {
        children.iter().find_map(|child| {
            if child.table == table {
                Some((child.column, parent, child.parent_column))
            } else {
                search(child.table, child.children, table)
            }
        })
    }
    ARCHIVE_ORDER
        .iter()
        .find_map(|archived| search(archived.name, archived.children, table))
}

/// `task_log` is archived only when asked (`--task-log`), by `updated_at`: its rows are never
/// soft-deleted.
pub const TASK_LOG: &str = "task_log";

/// The largest `--max_rows` (Nova's MAX_INT).
pub const MAX_ROWS_LIMIT: i64 = 2_147_483_647;

/// Checks `--max_rows` as Nova does; the error is Nova's message.
pub fn check_max_rows(max_rows: i64) -> Result<i64, String> {
    if max_rows < 0 {
        Err("Must supply a positive value for max_rows".to_owned())
    } else if max_rows > MAX_ROWS_LIMIT {
        Err(format!("max rows must be <= {MAX_ROWS_LIMIT}"))
    } else {
        Ok(max_rows)
    }
}

/// The timestamp column `purge` compares for a shadow table: `created_at` for instance actions
/// and their events (never soft-deleted), `updated_at` for the task log, `deleted_at` otherwise.
pub fn purge_column(table: &str) -> &'static str {
    match table {
        "instance_actions" | "instance_actions_events" => "created_at",
        TASK_LOG => "updated_at",
        _ => "deleted_at",
    }
}

/// Every table with a shadow twin, in purge order (children before parents).
pub fn shadowed_tables() -> Vec<&'static str> {
    let mut tables: Vec<&'static str> = ARCHIVE_ORDER.iter().map(|table| table.name).collect();
    tables.push(TASK_LOG);
    tables.sort_unstable();
    tables
}

/// Parses a `--before` date as Nova accepts it: `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS]`, RFC 3339,
/// or the output of `date` (`Sun Nov 29 23:04:54 UTC 2026`). Times without a zone are UTC. The
/// error is Nova's message.
pub fn parse_before(text: &str) -> Result<DateTime<Utc>, String> {
    let trimmed = text.trim();
    if let Ok(parsed) = DateTime::parse_from_rfc3339(trimmed) {
        return Ok(parsed.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
    ] {
        if let Ok(parsed) = NaiveDateTime::parse_from_str(trimmed, format) {
            return Ok(Utc.from_utc_datetime(&parsed));
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
        && let Some(midnight) = date.and_hms_opt(0, 0, 0)
    {
        return Ok(Utc.from_utc_datetime(&midnight));
    }
    let without_zone: Vec<&str> = trimmed
        .split_whitespace()
        .filter(|word| !matches!(*word, "UTC" | "GMT" | "Z"))
        .collect();
    if let Ok(parsed) =
        NaiveDateTime::parse_from_str(&without_zone.join(" "), "%a %b %d %H:%M:%S %Y")
    {
        return Ok(Utc.from_utc_datetime(&parsed));
    }
    Err(format!("Invalid value for --before: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_rows_is_checked_with_novas_words() {
        assert_eq!(check_max_rows(0), Ok(0));
        assert_eq!(
            check_max_rows(-1),
            Err("Must supply a positive value for max_rows".to_owned())
        );
        assert_eq!(
            check_max_rows(2_147_483_648),
            Err("max rows must be <= 2147483647".to_owned())
        );
    }

    #[test]
    fn before_dates_parse_as_nova_accepts_them() {
        let expected = Utc.with_ymd_and_hms(2026, 11, 29, 23, 4, 54).unwrap();
        assert_eq!(parse_before("2026-11-29 23:04:54"), Ok(expected));
        assert_eq!(parse_before("2026-11-29T23:04:54Z"), Ok(expected));
        assert_eq!(parse_before("Sun Nov 29 23:04:54 UTC 2026"), Ok(expected));
        assert_eq!(
            parse_before("2026-11-29"),
            Ok(Utc.with_ymd_and_hms(2026, 11, 29, 0, 0, 0).unwrap())
        );
        assert_eq!(
            parse_before("yesterday-ish"),
            Err("Invalid value for --before: yesterday-ish".to_owned())
        );
    }

    #[test]
    fn pci_devices_are_no_ones_lifecycle_child() {
        for table in ARCHIVE_ORDER {
            assert!(
                table
                    .children
                    .iter()
                    .all(|child| child.table != "pci_devices"),
                "{}",
                table.name
            );
        }
        let compute_nodes = ARCHIVE_ORDER
            .iter()
            .find(|t| t.name == "compute_nodes")
            .unwrap();
        assert_eq!(compute_nodes.blockers[0].table, "pci_devices");
    }

    #[test]
    fn lifecycle_parents_follow_the_graph() {
        assert_eq!(
            lifecycle_parent("instance_actions_events"),
            Some(("action_id", "instance_actions", "id"))
        );
        assert_eq!(
            lifecycle_parent("instance_extra"),
            Some(("instance_uuid", "instances", "uuid"))
        );
        assert_eq!(lifecycle_parent("pci_devices"), None);
        assert_eq!(lifecycle_parent("compute_nodes"), None);
    }

    #[test]
    fn every_table_with_a_shadow_is_known() {
        assert_eq!(shadowed_tables().len(), 11);
        assert_eq!(purge_column("instances"), "deleted_at");
        assert_eq!(purge_column("instance_actions"), "created_at");
    }
}
