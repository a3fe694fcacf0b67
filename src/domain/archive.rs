//! What the archiver may move, and in which order. Pure: the table graph and the date and
//! row-budget rules of `archive_deleted_rows` and `purge`.
//!
//! A row moves to its `shadow_` twin only if it is soft-deleted (re-checked in the moving
//! transaction) or is a lifecycle child, by foreign key, of a row moving with it. `pci_devices`
//! is nobody's lifecycle child: its `instance_uuid` is an allocation pointer, so a device row
//! moves only once it is itself soft-deleted, and a soft-deleted compute node waits while any
//! device row still references it.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Utc};

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

/// Parses a `--before` date as Nova accepts it (dateutil's fuzzy parser, for the dates people
/// write): `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS]`, RFC 3339, `YYYY/MM/DD`, `MM/DD/YYYY`, and
/// dates with a month name in any order and case (`Oct 21 2015`, `21 Oct 2015 12:00:00`,
/// `October 21, 2015 3:04 pm`, the output of `date`), weekdays and words it does not know
/// ignored, an optional zone (`UTC`, `GMT`, `Z`, `+02:00`). Times without a zone are UTC. A text
/// without a day, a month and a year is refused with Nova's message.
pub fn parse_before(text: &str) -> Result<DateTime<Utc>, String> {
    let trimmed = text.trim();
    if let Ok(parsed) = DateTime::parse_from_rfc3339(trimmed) {
        return Ok(parsed.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(parsed) = NaiveDateTime::parse_from_str(trimmed, format) {
            return Ok(Utc.from_utc_datetime(&parsed));
        }
    }
    parse_words(trimmed).ok_or_else(|| format!("Invalid value for --before: {text}"))
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// The word-by-word reading of a date (`parse_before`); `None` without a day, month and year.
fn parse_words(text: &str) -> Option<DateTime<Utc>> {
    let (mut year, mut month, mut day): (Option<i32>, Option<u32>, Option<u32>) =
        (None, None, None);
    let mut time: Option<(u32, u32, u32)> = None;
    let mut afternoon: Option<bool> = None;
    let mut offset_seconds: i64 = 0;
    let mut loose: Vec<i64> = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || c == ',') {
        let word = raw.trim_end_matches('.').to_lowercase();
        if word.is_empty() {
            continue;
        }
        let alphabetic = word.chars().all(|c| c.is_ascii_alphabetic());
        if let Some(index) = MONTHS
            .iter()
            .position(|name| alphabetic && word.get(..3) == Some(*name))
        {
            month = Some(u32::try_from(index).ok()? + 1);
        } else if matches!(word.as_str(), "am" | "a.m" | "pm" | "p.m") {
            afternoon = Some(word.starts_with('p'));
        } else if matches!(word.as_str(), "utc" | "gmt" | "z")
            || (alphabetic && WEEKDAYS.iter().any(|name| word.starts_with(name)))
        {
            // A zone that is UTC, or a weekday: nothing to take.
        } else if let Some(offset) = zone_offset(&word) {
            offset_seconds = offset;
        } else if word.contains(':') {
            time = Some(clock_time(word.trim_end_matches('z'))?);
        } else if word.contains('/') {
            let parts: Vec<&str> = word.split('/').collect();
            let [a, b, c] = parts.as_slice() else {
                return None;
            };
            let (y, m, d) = if a.len() == 4 { (a, b, c) } else { (c, a, b) };
            year = Some(y.parse().ok()?);
            month = Some(m.parse().ok()?);
            day = Some(d.parse().ok()?);
        } else if let Ok(date) = NaiveDate::parse_from_str(&word, "%Y-%m-%d") {
            year = Some(date.year());
            month = Some(date.month());
            day = Some(date.day());
        } else {
            let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            let suffix = &word[digits.len()..];
            if !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
                && matches!(suffix, "" | "st" | "nd" | "rd" | "th")
            {
                if digits.len() == 4 {
                    year = Some(digits.parse().ok()?);
                } else {
                    loose.push(digits.parse().ok()?);
                }
            }
            // Any other word is ignored, as the fuzzy parser does.
        }
    }
    for number in loose {
        if day.is_none() && (1..=31).contains(&number) {
            day = Some(u32::try_from(number).ok()?);
        } else if year.is_none() {
            year = Some(i32::try_from(number).ok()?);
        } else {
            return None;
        }
    }
    let (mut hour, minute, second) = time.unwrap_or((0, 0, 0));
    match afternoon {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let local = NaiveDate::from_ymd_opt(year?, month?, day?)?.and_hms_opt(hour, minute, second)?;
    Some(Utc.from_utc_datetime(&local) - chrono::Duration::seconds(offset_seconds))
}

/// `12:00`, `12:00:05`, `12:00:05.25` (the fraction dropped).
fn clock_time(word: &str) -> Option<(u32, u32, u32)> {
    let mut parts = word.split(':');
    let hour = parts.next()?.parse().ok()?;
    let minute = parts.next()?.parse().ok()?;
    let second = match parts.next() {
        Some(seconds) => seconds.split('.').next()?.parse().ok()?,
        None => 0,
    };
    (parts.next().is_none() && hour < 24 && minute < 60 && second < 61)
        .then_some((hour, minute, second))
}

/// `+02:00`, `-0500`, `+02`: seconds east of UTC.
fn zone_offset(word: &str) -> Option<i64> {
    let sign = match word.chars().next()? {
        '+' => 1,
        '-' => -1,
        _ => return None,
    };
    let digits: String = word[1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || digits.len() > 4 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (hours, minutes) = if digits.len() <= 2 {
        (digits.parse::<i64>().ok()?, 0)
    } else {
        let split = digits.len() - 2;
        (
            digits[..split].parse::<i64>().ok()?,
            digits[split..].parse::<i64>().ok()?,
        )
    };
    Some(sign * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn before_dates_parse_as_dateutil_reads_what_people_write() {
        let day = Utc.with_ymd_and_hms(2015, 10, 21, 0, 0, 0).unwrap();
        let noon = Utc.with_ymd_and_hms(2015, 10, 21, 12, 0, 0).unwrap();
        for (text, expected) in [
            ("2015-10-21", day),
            ("2015-10-21 12:00", noon),
            ("2015-10-21T12:00:00Z", noon),
            ("2015-10-21T12:00", noon),
            ("Oct 21 2015", day),
            ("oct 21 2015", day),
            ("OCT 21, 2015", day),
            ("21 Oct 2015 12:00:00", noon),
            ("October 21st, 2015", day),
            ("Wed Oct 21 12:00:00 UTC 2015", noon),
            ("Wednesday, 21 October 2015 12:00 pm", noon),
            ("2015/10/21", day),
            ("10/21/2015", day),
            ("21 Oct 2015 14:00:00 +02:00", noon),
            ("Oct 21 2015 12:00 GMT", noon),
        ] {
            assert_eq!(parse_before(text), Ok(expected), "{text}");
        }
        for refused in [
            "",
            "yesterday",
            "Oct 2015",
            "2015",
            "Oct 41 2015",
            "13/13/2015",
            "25:00 Oct 21 2015",
        ] {
            assert!(parse_before(refused).is_err(), "{refused:?} is refused");
        }
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
