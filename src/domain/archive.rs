//! What the archiver may move, and in which order. Pure: the table graph and the date and
//! row-budget rules of `archive_deleted_rows` and `purge`.
//!
//! A row moves to its `shadow_` twin only if it is soft-deleted (re-checked in the moving
//! transaction) or is a lifecycle child, by foreign key, of a row moving with it. `pci_devices`
//! is nobody's lifecycle child: its `instance_uuid` is an allocation pointer, so a device row
//! moves only once it is itself soft-deleted, and a soft-deleted compute node waits while any
//! device row still references it.

use chrono::{DateTime, NaiveDate, Utc};

/// A foreign-key child that moves with its parent whatever its own `deleted` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LifecycleChild {
    pub table: &'static str,
    /// The child's column referencing the parent.
    pub column: &'static str,
    /// The parent's referenced column.
    pub parent_column: &'static str,
    /// The SQL type of that column (the archiver passes the parents' keys as an array of it).
    pub parent_type: &'static str,
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
    parent_type: "bigint",
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
        parent_type: "uuid",
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

/// The options of an archive run as `nova-manage db archive_deleted_rows` takes them, the one
/// shape every front end reads them into: the `POST /api/v1/archive` body and the script step
/// `ArchiveOnce` deserialize into it (unknown fields refused), the CLI fills it from its
/// flags. They are checked once, when the archiver's request is made of them
/// (`ArchiveRequest::from_nova`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NovaArchiveOptions {
    /// Row budget of a batch (default 1000).
    #[serde(default = "default_max_rows")]
    pub max_rows: i64,
    /// Only rows deleted before this date, as the text given (checked by `parse_before`).
    pub before: Option<String>,
    #[serde(default)]
    pub until_complete: bool,
    #[serde(default)]
    pub purge: bool,
    #[serde(default)]
    pub task_log: bool,
    /// Pause between batches of an `until_complete` run (the CLI's `--sleep`; none elsewhere).
    #[serde(skip)]
    pub sleep: std::time::Duration,
}

/// `--max_rows` when none is given (Nova's default).
pub const DEFAULT_MAX_ROWS: i64 = 1000;

fn default_max_rows() -> i64 {
    DEFAULT_MAX_ROWS
}

impl Default for NovaArchiveOptions {
    fn default() -> Self {
        NovaArchiveOptions {
            max_rows: DEFAULT_MAX_ROWS,
            before: None,
            until_complete: false,
            purge: false,
            task_log: false,
            sleep: std::time::Duration::ZERO,
        }
    }
}

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

/// Reads a `--before` date as Nova does: python-dateutil's `parse(text, fuzzy=True)`
/// (`domain::dateutil`, which says what it takes), `today` filling what the text leaves out.
/// The error is dateutil's reason (`String does not contain a date: soon`); the caller names
/// the option or field it came from.
pub fn parse_before(text: &str, today: NaiveDate) -> Result<DateTime<Utc>, String> {
    super::dateutil::parse(text, today)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn archive_options_read_as_nova_takes_them_with_its_defaults() {
        let empty: NovaArchiveOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, NovaArchiveOptions::default());
        assert_eq!(empty.max_rows, 1000);
        let given: NovaArchiveOptions =
            serde_json::from_str(r#"{"max_rows": 5, "before": "2026-01-01", "purge": true}"#)
                .unwrap();
        assert_eq!((given.max_rows, given.purge), (5, true));
        assert_eq!(given.before.as_deref(), Some("2026-01-01"));
        let unknown = serde_json::from_str::<NovaArchiveOptions>(r#"{"sleep": 3}"#);
        assert!(
            unknown.is_err(),
            "sleep is the CLI's only: not a field of a body"
        );
    }

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
    fn before_dates_parse_as_dateutil_reads_what_people_write() {
        let today = NaiveDate::from_ymd_opt(2026, 12, 7).unwrap();
        let day = Utc.with_ymd_and_hms(2015, 10, 21, 0, 0, 0).unwrap();
        let noon = Utc.with_ymd_and_hms(2015, 10, 21, 12, 0, 0).unwrap();
        for (text, expected) in [
            ("2015-10-21", day),
            ("21/10/2015", day),
            ("2015.10.21", day),
            ("Oct 21 15", day),
            ("2015-10-21T12:00:00Z", noon),
            ("Wed Oct 21 12:00:00 UTC 2015", noon),
            ("21 Oct 2015 14:00:00 +02:00", noon),
        ] {
            assert_eq!(parse_before(text, today), Ok(expected), "{text}");
        }
        assert_eq!(
            parse_before("Oct 21", today),
            Ok(Utc.with_ymd_and_hms(2026, 10, 21, 0, 0, 0).unwrap()),
            "the year left out is this year"
        );
        assert_eq!(
            parse_before("yesterday-ish", today),
            Err("String does not contain a date: yesterday-ish".to_owned())
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

    /// The archiver keys a parent's (or a child's) children by one of its columns: they all
    /// reference the same.
    #[test]
    fn the_children_of_a_lifecycle_child_reference_one_column_of_it() {
        fn check(children: &[LifecycleChild]) {
            let columns: std::collections::BTreeSet<&str> =
                children.iter().map(|child| child.parent_column).collect();
            assert!(columns.len() <= 1, "{columns:?}");
            for child in children {
                let columns: std::collections::BTreeSet<&str> = child
                    .children
                    .iter()
                    .map(|grandchild| grandchild.parent_column)
                    .collect();
                assert!(columns.len() <= 1, "{}: {columns:?}", child.table);
                check(child.children);
            }
        }
        for table in ARCHIVE_ORDER {
            check(table.children);
        }
    }

    #[test]
    fn every_table_with_a_shadow_is_known() {
        assert_eq!(shadowed_tables().len(), 11);
        assert_eq!(purge_column("instances"), "deleted_at");
        assert_eq!(purge_column("instance_actions"), "created_at");
    }
}
