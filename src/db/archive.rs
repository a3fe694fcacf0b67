//! `archive_deleted_rows` and `purge` against the database. One transaction per batch; rows are
//! chosen by keyset (`id > last`) in batches, locked `FOR UPDATE SKIP LOCKED` with the
//! soft-delete and `--before` conditions evaluated on the locked row, and moved with
//! `WITH moved AS (DELETE … RETURNING *) INSERT INTO shadow_… SELECT * FROM moved`, lifecycle
//! children first. Table and column names come only from `domain::archive`'s static graph.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz};

use super::{DbError, Pool};
use crate::domain::archive::{
    ARCHIVE_ORDER, ArchiveTable, LifecycleChild, TASK_LOG, purge_column, shadowed_tables,
};
use crate::domain::identity::HostName;

/// What one archive call is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveOptions {
    /// Row budget of a batch, shared across tables.
    pub max_rows: i64,
    /// Only rows deleted strictly before this moment.
    pub before: Option<DateTime<Utc>>,
    /// Also archive `task_log` (by `updated_at`).
    pub task_log: bool,
    /// Repeat batches until one moves nothing.
    pub until_complete: bool,
    /// Pause between batches.
    pub sleep: Duration,
}

/// Where each table's keyset scan has got to within one run.
#[derive(Debug, Default)]
pub struct ArchiveCursor {
    last_id: HashMap<&'static str, i64>,
    /// Rows per tree of each parent table, as last seen: how many parents a budget needs.
    tree_rows: HashMap<&'static str, i64>,
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// Moves one batch of about `options.max_rows` rows across the tables, in the caller's
/// transaction, counted as Nova counts them: a parent and its lifecycle children (riding along)
/// are one tree, trees are added while the count is below `max_rows` (at least one), never half
/// a tree. Returns rows moved per table.
pub fn archive_batch(
    conn: &mut PgConnection,
    options: &ArchiveOptions,
    cursor: &mut ArchiveCursor,
) -> Result<BTreeMap<String, i64>, DbError> {
    let mut moved: BTreeMap<String, i64> = BTreeMap::new();
    let mut budget = options.max_rows;
    // Every statement of a batch reaches its rows through an index (by id, by the parents'
    // keys): a plan that scans a whole table instead, chosen for a batch that is a few percent
    // of it, makes archiving a large table quadratic.
    diesel::sql_query("SET LOCAL enable_seqscan = off").execute(conn)?;
    for table in ARCHIVE_ORDER {
        if budget <= 0 {
            break;
        }
        let rows = if table.children.is_empty() {
            let ids = lock_archivable(conn, table, options.before, budget, cursor)?;
            if ids.is_empty() {
                continue;
            }
            let count = move_rows(conn, table.name, &locked_rows(&ids), &ids)?;
            *moved.entry(table.name.to_owned()).or_default() += count;
            count
        } else {
            let rows = move_trees(conn, table, options.before, budget, cursor, &mut moved)?;
            if rows == 0 {
                continue;
            }
            rows
        };
        budget -= rows.max(1);
    }
    if options.task_log && budget > 0 {
        let last = cursor.last_id.get(TASK_LOG).copied().unwrap_or(0);
        let ids: Vec<i64> = diesel::sql_query(
            "SELECT id FROM task_log WHERE id > $1 AND ($2::timestamptz IS NULL OR updated_at < $2)
              ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED",
        )
        .bind::<BigInt, _>(last)
        .bind::<Nullable<Timestamptz>, _>(options.before)
        .bind::<BigInt, _>(budget)
        .load::<Id>(conn)?
        .into_iter()
        .map(|row| row.id)
        .collect();
        if let Some(max) = ids.iter().max() {
            cursor.last_id.insert(TASK_LOG, *max);
            let count = move_rows(conn, TASK_LOG, "id = ANY($1)", &ids)?;
            *moved.entry(TASK_LOG.to_owned()).or_default() += count;
        }
    }
    moved.retain(|_, count| *count > 0);
    Ok(moved)
}

/// Locks up to `limit` soft-deleted rows of `table` after the cursor that nothing blocks;
/// returns their ids.
fn lock_archivable(
    conn: &mut PgConnection,
    table: &ArchiveTable,
    before: Option<DateTime<Utc>>,
    limit: i64,
    cursor: &mut ArchiveCursor,
) -> Result<Vec<i64>, DbError> {
    Ok(lock_keyed(conn, table, "''", before, limit, cursor)?
        .into_iter()
        .map(|row| row.count)
        .collect())
}

/// `lock_archivable`, returning each row's id (as `count`) with its column `key` (as text).
fn lock_keyed(
    conn: &mut PgConnection,
    table: &ArchiveTable,
    key: &str,
    before: Option<DateTime<Utc>>,
    limit: i64,
    cursor: &mut ArchiveCursor,
) -> Result<Vec<Keyed>, DbError> {
    let blockers: String = table
        .blockers
        .iter()
        .map(|blocker| {
            format!(
                " AND NOT EXISTS (SELECT 1 FROM {} b WHERE b.{} = t.{})",
                blocker.table, blocker.column, blocker.parent_column
            )
        })
        .collect();
    let in_use = table
        .in_use
        .map(|condition| format!(" AND NOT ({condition})"))
        .unwrap_or_default();
    let last = cursor.last_id.get(table.name).copied().unwrap_or(0);
    let rows: Vec<Keyed> = diesel::sql_query(format!(
        "SELECT t.id AS count, {key}::text AS key FROM {} t
          WHERE t.deleted <> 0 AND t.id > $1 AND ($2::timestamptz IS NULL OR t.deleted_at < $2){blockers}{in_use}
          ORDER BY t.id LIMIT $3 FOR UPDATE OF t SKIP LOCKED",
        table.name
    ))
    .bind::<BigInt, _>(last)
    .bind::<Nullable<Timestamptz>, _>(before)
    .bind::<BigInt, _>(limit)
    .load(conn)?;
    if let Some(max) = rows.iter().map(|row| row.count).max() {
        cursor.last_id.insert(table.name, max);
    }
    Ok(rows)
}

/// The condition selecting the locked rows `ids` ($1, in id order) that are still soft-deleted:
/// the ids are a range of the keyset, whose bounds let the id index find them (an array alone
/// of thousands is planned as a scan of the table).
fn locked_rows(ids: &[i64]) -> String {
    format!(
        "id = ANY($1) AND id BETWEEN {} AND {} AND deleted <> 0",
        ids.first().copied().unwrap_or(0),
        ids.last().copied().unwrap_or(0)
    )
}

/// Why a try at moving trees was taken back (its savepoint rolled back).
enum Undone {
    /// Only the first trees fit the budget: this many.
    Fits(usize),
    Db(DbError),
}

impl From<diesel::result::Error> for Undone {
    fn from(error: diesel::result::Error) -> Self {
        Undone::Db(DbError::from(error))
    }
}

impl From<DbError> for Undone {
    fn from(error: DbError) -> Self {
        Undone::Db(error)
    }
}

/// Moves whole trees of `table` (parents and their lifecycle children) while the count, as
/// Nova counts it, is below `budget`: a tree is its parent and each child row; trees are added
/// while the count is below the budget (so at least one), never half a tree. Parents are
/// locked about as many at a time as the budget needs by the last trees' size, their trees
/// moved and counted by the moving statements themselves; when they do not all fit, the move
/// is taken back (a savepoint) and done again for those that do, and the rest stay for the next
/// batch (the cursor goes back). Returns the rows moved.
fn move_trees(
    conn: &mut PgConnection,
    table: &ArchiveTable,
    before: Option<DateTime<Utc>>,
    budget: i64,
    cursor: &mut ArchiveCursor,
    moved: &mut BTreeMap<String, i64>,
) -> Result<i64, DbError> {
    let mut counted = 0;
    while counted < budget {
        // Until a batch has seen some, a tree is guessed to have a row in each child table:
        // a guess too small would move many trees only to take most of them back.
        let per_tree = cursor
            .tree_rows
            .get(table.name)
            .copied()
            .unwrap_or_else(|| 1 + child_tables(table.children))
            .max(1);
        let wanted = ((budget - counted) / per_tree).max(1);
        let key = table
            .children
            .first()
            .map_or("''", |child| child.parent_column);
        let locked = lock_keyed(conn, table, &format!("t.{key}"), before, wanted, cursor)?;
        if locked.is_empty() {
            break;
        }
        let ids: Vec<i64> = locked.iter().map(|row| row.count).collect();
        let room = budget - counted;
        let attempt = super::savepoint::<_, Undone>(conn, |conn| {
            let children = move_children(conn, table, &locked)?;
            match fitting(&ids, &children.sizes, room) {
                all if all == ids.len() => Ok(children),
                some => Err(Undone::Fits(some)),
            }
        });
        let (kept, children) = match attempt {
            Ok(children) => (ids.as_slice(), children),
            Err(Undone::Fits(some)) => (&ids[..some], move_children(conn, table, &locked[..some])?),
            Err(Undone::Db(error)) => return Err(error),
        };
        let parents = move_rows(conn, table.name, &locked_rows(kept), kept)?;
        for (name, count) in &children.per_table {
            *moved.entry((*name).to_owned()).or_default() += count;
        }
        *moved.entry(table.name.to_owned()).or_default() += parents;
        let rows = parents
            + children
                .per_table
                .iter()
                .map(|(_, count)| count)
                .sum::<i64>();
        counted += rows;
        let trees = i64::try_from(kept.len()).unwrap_or(i64::MAX).max(1);
        cursor
            .tree_rows
            .insert(table.name, (rows + trees - 1) / trees);
        if let Some(last) = kept.last() {
            cursor.last_id.insert(table.name, *last);
        }
        if kept.len() < ids.len() {
            break;
        }
    }
    Ok(counted)
}

/// How many child tables (all levels) `children` names.
fn child_tables(children: &[LifecycleChild]) -> i64 {
    children
        .iter()
        .map(|child| 1 + child_tables(child.children))
        .sum()
}

/// How many of the trees `ids` (in order) fit `room` as Nova counts: added while the count is
/// below it, so at least one.
fn fitting(ids: &[i64], sizes: &HashMap<i64, i64>, room: i64) -> usize {
    let mut counted = 0;
    let mut fit = 0;
    for id in ids {
        if counted >= room {
            break;
        }
        counted += 1 + sizes.get(id).copied().unwrap_or(0);
        fit += 1;
    }
    fit
}

/// What moving the lifecycle children of some parents moved: per parent id, its child rows
/// (all levels), and per child table, the rows.
#[derive(Default)]
struct MovedChildren {
    sizes: HashMap<i64, i64>,
    per_table: Vec<(&'static str, i64)>,
}

/// Moves every lifecycle child (all levels, deepest first) of the parents `locked` of `table`
/// (their ids with the key their children reference), each child table in one statement that
/// also counts what it moved per parent key.
fn move_children(
    conn: &mut PgConnection,
    table: &ArchiveTable,
    locked: &[Keyed],
) -> Result<MovedChildren, DbError> {
    let mut moved = MovedChildren::default();
    let mut line: Vec<&LifecycleChild> = Vec::new();
    let keys: Vec<&str> = locked.iter().map(|row| row.key.as_str()).collect();
    let ids: HashMap<&str, i64> = locked
        .iter()
        .map(|row| (row.key.as_str(), row.count))
        .collect();
    for child in table.children {
        let by_key = move_child(conn, child, &mut line, &keys, &mut moved)?;
        for (key, count) in by_key {
            if let Some(id) = ids.get(key.as_str()) {
                *moved.sizes.entry(*id).or_default() += count;
            }
        }
    }
    Ok(moved)
}

/// Moves `child`'s rows (its own children first) under the parents `ids`; `line` is the chain
/// of children between the parent table and `child`. Returns the rows moved (its own and its
/// children's, all levels) by the value of its column `child.column` (its parent's key): the
/// statement counts them as it moves them, or — when the child has children of its own —
/// returns each moved row's key and own key, which the children's counts were keyed by.
fn move_child<'a>(
    conn: &mut PgConnection,
    child: &'a LifecycleChild,
    line: &mut Vec<&'a LifecycleChild>,
    keys: &[&str],
    moved: &mut MovedChildren,
) -> Result<HashMap<String, i64>, DbError> {
    line.push(child);
    let mut below: HashMap<String, i64> = HashMap::new();
    for grandchild in child.children {
        for (key, count) in move_child(conn, grandchild, line, keys, moved)? {
            *below.entry(key).or_default() += count;
        }
    }
    // The rows to move: under the chain of children down from the parents' keys ($1).
    let mut condition = String::new();
    let mut above = "";
    for link in line.iter() {
        condition = if condition.is_empty() {
            format!("{} = ANY($1::text[]::{}[])", link.column, link.parent_type)
        } else {
            format!(
                "{} IN (SELECT {} FROM {above} WHERE {condition})",
                link.column, link.parent_column
            )
        };
        above = link.table;
    }
    line.pop();
    let moving = format!(
        "WITH moved AS (DELETE FROM {table} WHERE {condition} RETURNING *),
              copied AS (INSERT INTO shadow_{table} SELECT * FROM moved RETURNING *)",
        table = child.table
    );
    let mut by_key: HashMap<String, i64> = HashMap::new();
    let mut rows = 0;
    match child.children.first() {
        None => {
            let counted: Vec<Keyed> = diesel::sql_query(format!(
                "{moving} SELECT {column}::text AS key, count(*) AS count FROM copied GROUP BY 1",
                column = child.column
            ))
            .bind::<Array<Text>, _>(keys)
            .load(conn)?;
            for row in counted {
                rows += row.count;
                *by_key.entry(row.key).or_default() += row.count;
            }
        }
        Some(first) => {
            let pairs: Vec<KeyPair> = diesel::sql_query(format!(
                "{moving} SELECT {column}::text AS key, {own}::text AS own FROM copied",
                column = child.column,
                own = first.parent_column
            ))
            .bind::<Array<Text>, _>(keys)
            .load(conn)?;
            for pair in pairs {
                rows += 1;
                let under = below.get(&pair.own).copied().unwrap_or(0);
                *by_key.entry(pair.key).or_default() += 1 + under;
            }
        }
    }
    moved.per_table.push((child.table, rows));
    Ok(by_key)
}

/// A moved row's key (its parent's) and its own key (its children's).
#[derive(QueryableByName)]
struct KeyPair {
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = Text)]
    own: String,
}

/// A count (or an id) by key, as text.
#[derive(QueryableByName)]
struct Keyed {
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// Moves the rows of `table` matching `condition` (which may use `$1`, the parent ids) to its
/// shadow twin in one statement. Returns how many moved.
fn move_rows(
    conn: &mut PgConnection,
    table: &str,
    condition: &str,
    ids: &[i64],
) -> Result<i64, DbError> {
    let count: Count = diesel::sql_query(format!(
        "WITH moved AS (DELETE FROM {table} WHERE {condition} RETURNING *),
              copied AS (INSERT INTO shadow_{table} SELECT * FROM moved RETURNING 1)
         SELECT count(*) AS count FROM copied"
    ))
    .bind::<Array<BigInt>, _>(ids)
    .get_result(conn)?;
    Ok(count.count)
}

mod runs;

pub use runs::{ArchiveRunRow, finish_run, list_runs, start_run};

/// What a whole archive call moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveSummary {
    pub tables: BTreeMap<String, i64>,
    pub batches: usize,
    /// Whether `stop` ended the run before it was complete.
    pub stopped: bool,
}

impl ArchiveSummary {
    /// Returns the rows moved in all.
    pub fn total(&self) -> i64 {
        self.tables.values().sum()
    }
}

/// Runs batches (each in its own transaction) as `options` say: one, or until one moves nothing
/// or `stop` is set. `on_batch` hears of each batch that moved rows.
pub fn archive_deleted_rows(
    pool: &Pool,
    options: &ArchiveOptions,
    stop: &AtomicBool,
    mut on_batch: impl FnMut(&BTreeMap<String, i64>),
) -> Result<ArchiveSummary, DbError> {
    let mut summary = ArchiveSummary::default();
    let mut cursor = ArchiveCursor::default();
    let mut conn = pool.get()?;
    loop {
        if stop.load(Ordering::Relaxed) {
            summary.stopped = true;
            break;
        }
        let batch =
            super::in_transaction(&mut conn, |conn| archive_batch(conn, options, &mut cursor))?;
        summary.batches += 1;
        if batch.is_empty() {
            break;
        }
        for (table, count) in &batch {
            *summary.tables.entry(table.clone()).or_default() += count;
        }
        on_batch(&batch);
        if !options.until_complete {
            break;
        }
        if !options.sleep.is_zero() {
            std::thread::sleep(options.sleep);
        }
    }
    Ok(summary)
}

/// Deletes shadow rows older than `before` (all when `None`) by each table's timestamp column.
/// Returns (shadow table, column, rows deleted) for each table that lost rows.
pub fn purge(
    conn: &mut PgConnection,
    before: Option<DateTime<Utc>>,
) -> Result<Vec<(String, &'static str, i64)>, DbError> {
    let mut deleted = Vec::new();
    for table in shadowed_tables() {
        let column = purge_column(table);
        let count: Count = diesel::sql_query(format!(
            "WITH gone AS (DELETE FROM shadow_{table} WHERE $1::timestamptz IS NULL OR {column} < $1 RETURNING 1)
             SELECT count(*) AS count FROM gone"
        ))
        .bind::<Nullable<Timestamptz>, _>(before)
        .get_result(conn)?;
        if count.count > 0 {
            deleted.push((format!("shadow_{table}"), column, count.count));
        }
    }
    Ok(deleted)
}

/// Records an instance usage audit period of `host` as Nova's compute hosts do (a `task_log`
/// row, state DONE), created at `now`; a period recorded already is left as it is.
pub fn record_audit_period(
    conn: &mut PgConnection,
    host: &HostName,
    begin: DateTime<Utc>,
    end: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    diesel::sql_query(
        "INSERT INTO task_log (task_name, state, host, period_beginning, period_ending, message,
                               created_at, updated_at)
         VALUES ('instance_usage_audit', 'DONE', $1, $2, $3, 'Instance usage audit ran', $4, $4)
         ON CONFLICT (task_name, host, period_beginning, period_ending) DO NOTHING",
    )
    .bind::<Text, _>(host)
    .bind::<Timestamptz, _>(begin)
    .bind::<Timestamptz, _>(end)
    .bind::<Timestamptz, _>(now)
    .execute(conn)?;
    Ok(())
}
