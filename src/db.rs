//! The only user of diesel: the connection pool, migrations, the embedded cluster and one
//! file of queries per area. Query fns take `&mut PgConnection` and never open their own
//! transactions, so callers can combine them; `run` and `transaction` are the entry points
//! from async code and keep every blocking call off the async runtime.

pub mod archive;
pub mod audit;
pub mod builds;
pub mod cached;
pub mod cluster;
pub mod compute_nodes;
pub mod database;
pub mod error;
pub mod figures;
pub mod flavors;
pub mod free_nodes;
pub mod hosts;
pub mod ids;
pub mod instances;
pub mod ironic;
pub mod ironic_mirror;
pub mod keypairs;
pub mod leases;
mod messages;
pub mod models;
pub mod node_groups;
pub mod node_reports;
pub mod node_views;
pub mod notify;
pub mod pci;
pub mod placement;
pub mod pool;
pub mod presence;
pub mod processes;
pub mod schema;
pub mod scratch;
pub mod servers;
pub mod services;
pub mod spawns;
pub mod timeline;
pub mod url;

use std::time::Duration;

use diesel::pg::PgConnection;
use diesel::{Connection as _, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub use error::DbError;
pub use pool::{
    IDLE_IN_TRANSACTION_TIMEOUT, Pool, PoolFigures, PooledConnection, build_pool, connect,
    pool_figures,
};

/// The migrations of `migrations/`, compiled into the binary.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// Advisory-lock key that serializes migration runs across processes.
const MIGRATION_LOCK_KEY: i64 = 0x7269_6e67_6d69_6772; // "ringmigr"

/// Applies every pending migration under an advisory lock, so that processes starting at the
/// same time migrate one after the other, then makes sure Placement's standard resource classes
/// and traits exist. Returns the versions it applied.
pub fn migrate(conn: &mut PgConnection) -> Result<Vec<String>, DbError> {
    with_advisory_lock(conn, MIGRATION_LOCK_KEY, |conn| {
        refuse_unknown_migrations(conn)?;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map(|versions| versions.iter().map(ToString::to_string).collect())
            .map_err(|error| DbError::Migration(error.to_string()))?;
        placement::names::seed_standard_names(conn)?;
        Ok(applied)
    })
}

/// Which of this binary's migrations a database has, lacks, and which it has that this binary
/// does not know (a newer ringmaster applied them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationStatus {
    pub applied: Vec<String>,
    pub pending: Vec<String>,
    pub unknown: Vec<String>,
}

/// Compares the database's applied migrations with this binary's.
pub fn migration_status(conn: &mut PgConnection) -> Result<MigrationStatus, DbError> {
    use diesel::migration::MigrationSource;
    let known: Vec<String> = MigrationSource::<diesel::pg::Pg>::migrations(&MIGRATIONS)
        .map_err(|error| DbError::Migration(error.to_string()))?
        .iter()
        .map(|migration| migration.name().version().to_string())
        .collect();
    let mut applied: Vec<String> = conn
        .applied_migrations()
        .map_err(|error| DbError::Migration(error.to_string()))?
        .iter()
        .map(ToString::to_string)
        .collect();
    applied.sort();
    let unknown = applied
        .iter()
        .filter(|version| !known.contains(version))
        .cloned()
        .collect();
    let pending = known
        .into_iter()
        .filter(|version| !applied.contains(version))
        .collect();
    Ok(MigrationStatus {
        applied,
        pending,
        unknown,
    })
}

/// Refuses a database that a newer ringmaster migrated: one of its applied migrations is not
/// among this binary's (its schema may not be what this binary's statements expect). Returns
/// the database's migration status otherwise.
pub fn refuse_unknown_migrations(conn: &mut PgConnection) -> Result<MigrationStatus, DbError> {
    let status = migration_status(conn)?;
    if status.unknown.is_empty() {
        return Ok(status);
    }
    Err(DbError::Migration(format!(
        "the database has migration {} that this binary does not know: a newer ringmaster \
         migrated it; run that version or a newer one",
        status.unknown.join(", ")
    )))
}

/// Runs `work` while holding the session-level advisory lock `key`, released afterwards
/// whether `work` succeeded or not.
pub fn with_advisory_lock<T>(
    conn: &mut PgConnection,
    key: i64,
    work: impl FnOnce(&mut PgConnection) -> Result<T, DbError>,
) -> Result<T, DbError> {
    diesel::sql_query("SELECT pg_advisory_lock($1)")
        .bind::<diesel::sql_types::BigInt, _>(key)
        .execute(conn)?;
    let result = work(conn);
    diesel::sql_query("SELECT pg_advisory_unlock($1)")
        .bind::<diesel::sql_types::BigInt, _>(key)
        .execute(conn)?;
    result
}

/// Takes the session-level advisory lock `key` if it is free; `false` when another session
/// holds it. The lock lasts as long as the connection.
pub fn try_advisory_lock(conn: &mut PgConnection, key: i64) -> Result<bool, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Taken {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        taken: bool,
    }
    let taken: Taken = diesel::sql_query("SELECT pg_try_advisory_lock($1) AS taken")
        .bind::<diesel::sql_types::BigInt, _>(key)
        .get_result(conn)?;
    Ok(taken.taken)
}

/// Releases the session-level advisory lock `key`.
pub fn advisory_unlock(conn: &mut PgConnection, key: i64) -> Result<(), DbError> {
    diesel::sql_query("SELECT pg_advisory_unlock($1)")
        .bind::<diesel::sql_types::BigInt, _>(key)
        .execute(conn)?;
    Ok(())
}

/// Creates database `name` (an SQL identifier we chose, never user input) from `template`
/// unless one of that name exists. Run on a connection to another database of the server.
pub fn create_database_if_missing(
    admin: &mut PgConnection,
    name: &str,
    template: &str,
) -> Result<(), DbError> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let found: Found =
        diesel::sql_query("SELECT count(*) AS count FROM pg_database WHERE datname = $1")
            .bind::<diesel::sql_types::Text, _>(name)
            .get_result(admin)?;
    if found.count == 0 {
        diesel::sql_query(format!("CREATE DATABASE {name} TEMPLATE {template}")).execute(admin)?;
    }
    Ok(())
}

/// Runs `sql`, a `SELECT count(*) AS count …` built by the caller from known names, and
/// returns the count.
pub fn count_rows(conn: &mut PgConnection, sql: &str) -> Result<i64, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    Ok(diesel::sql_query(sql).get_result::<Count>(conn)?.count)
}

/// What a column of a row must be, for `count_matching` and `first_matching`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnIs {
    /// The soft-delete flag is 0.
    Live,
    /// The soft-delete flag is not 0.
    SoftDeleted,
    Null,
    /// Equal to the column as JSON writes it, unquoted (`5`, `allocated`,
    /// `2027-01-15T08:00:00+00:00`).
    Text(String),
}

/// `table` (one the caller checked) with `conditions` (checked names) as a WHERE clause and
/// its binds.
fn matching(
    select: &str,
    table: &str,
    conditions: &[(String, ColumnIs)],
) -> Result<
    diesel::query_builder::BoxedSqlQuery<'static, diesel::pg::Pg, diesel::query_builder::SqlQuery>,
    DbError,
> {
    let mut clauses = Vec::new();
    let mut texts = Vec::new();
    for (column, is) in conditions {
        if column.is_empty()
            || !column
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(DbError::Other(format!("not a column name: {column:?}")));
        }
        clauses.push(match is {
            ColumnIs::Live => format!("t.{column} = 0"),
            ColumnIs::SoftDeleted => format!("t.{column} <> 0"),
            ColumnIs::Null => format!("t.{column} IS NULL"),
            ColumnIs::Text(text) => {
                texts.push(text.clone());
                // As JSON writes it: what a `first_matching` row says compares equal.
                format!("to_jsonb(t.{column}) #>> '{{}}' = ${}", texts.len())
            }
        });
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", clauses.join(" AND "))
    };
    let mut query = diesel::sql_query(format!("{select} FROM {table} t{filter}")).into_boxed();
    for text in texts {
        query = query.bind::<diesel::sql_types::Text, _>(text);
    }
    Ok(query)
}

/// Counts the rows of `table` (a name the caller checked) whose columns are as `conditions`
/// say.
pub fn count_matching(
    conn: &mut PgConnection,
    table: &str,
    conditions: &[(String, ColumnIs)],
) -> Result<i64, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    Ok(matching("SELECT count(*) AS count", table, conditions)?
        .get_result::<Count>(conn)?
        .count)
}

/// Returns the first row (by its first column) of `table` whose columns are as `conditions`
/// say, as JSON, soft-deleted or not.
pub fn first_matching(
    conn: &mut PgConnection,
    table: &str,
    conditions: &[(String, ColumnIs)],
) -> Result<Option<serde_json::Value>, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        row: serde_json::Value,
    }
    let found: Vec<Row> = matching("SELECT to_jsonb(t) AS row", table, conditions)?
        .sql(" ORDER BY 1 LIMIT 1")
        .load(conn)?;
    Ok(found.into_iter().next().map(|found| found.row))
}

/// Checks that the database answers a trivial query.
pub fn ping(conn: &mut PgConnection) -> Result<(), DbError> {
    diesel::sql_query("SELECT 1").execute(conn)?;
    Ok(())
}

/// A connection of `pool` that answers a trivial query, waited for at most `wait` (readiness:
/// a database that is away is told quickly). Blocking.
pub fn answering_within(pool: &Pool, wait: Duration) -> Result<PooledConnection, DbError> {
    let mut conn = pool
        .get_timeout(wait)
        .map_err(|error| DbError::Unavailable(error.to_string()))?;
    ping(&mut conn)?;
    Ok(conn)
}

/// What is told of every checkout: how long it waited, and whether it got a connection.
pub type CheckoutObserver = fn(Duration, bool);

static CHECKOUT_OBSERVER: std::sync::OnceLock<CheckoutObserver> = std::sync::OnceLock::new();

/// Has `observer` told of every checkout from now on (the metrics' pool-wait histogram: `app`
/// installs `metrics::observe_pool_wait`); the first one installed stays.
pub fn observe_checkouts(observer: CheckoutObserver) {
    let _ = CHECKOUT_OBSERVER.set(observer);
}

/// Checks a connection out of `pool`, timing the wait for the checkout observer.
pub fn checkout(pool: &Pool) -> Result<PooledConnection, DbError> {
    let started = std::time::Instant::now();
    let conn = pool.get();
    if let Some(observe) = CHECKOUT_OBSERVER.get() {
        observe(started.elapsed(), conn.is_ok());
    }
    Ok(conn?)
}

/// Runs `work` with a pooled connection on the blocking thread pool.
pub async fn run<T, F>(pool: &Pool, work: F) -> Result<T, DbError>
where
    F: FnOnce(&mut PgConnection) -> Result<T, DbError> + Send + 'static,
    T: Send + 'static,
{
    let pool = pool.clone();
    actix_rt::task::spawn_blocking(move || {
        let mut conn = checkout(&pool)?;
        work(&mut conn)
    })
    .await
    .map_err(|_| DbError::Canceled)?
}

/// The connection query fns take; callers outside `db` name it, never diesel.
pub type Connection = PgConnection;

/// Runs `work` inside one transaction with a pooled connection on the blocking thread pool:
/// committed when it returns `Ok`, rolled back whole when it returns an error — its own
/// (`E`, e.g. a refused write) or the database's. The one way async code opens a transaction.
pub async fn transaction<T, E, F>(pool: &Pool, work: F) -> Result<T, E>
where
    F: FnOnce(&mut PgConnection) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: From<DbError> + Send + 'static,
{
    let pool = pool.clone();
    actix_rt::task::spawn_blocking(move || blocking_transaction(&pool, work))
        .await
        .map_err(|_| E::from(DbError::Canceled))?
}

/// `transaction` for the synchronous actors, which run on threads of their own: a pooled
/// connection, one transaction.
pub fn blocking_transaction<T, E>(
    pool: &Pool,
    work: impl FnOnce(&mut PgConnection) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<DbError>,
{
    let mut conn = checkout(pool)?;
    in_transaction(&mut conn, work)
}

/// Runs `work` in one transaction on `conn`, committed on `Ok`, rolled back on any error.
pub fn in_transaction<T, E>(
    conn: &mut PgConnection,
    work: impl FnOnce(&mut PgConnection) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<DbError>,
{
    /// Keeps the work's own error apart from diesel's, which `Connection::transaction`
    /// needs to be able to make.
    enum Failed<E> {
        Work(E),
        Db(diesel::result::Error),
    }
    impl<E> From<diesel::result::Error> for Failed<E> {
        fn from(error: diesel::result::Error) -> Self {
            Failed::Db(error)
        }
    }
    conn.transaction(|conn| work(conn).map_err(Failed::Work))
        .map_err(|failed| match failed {
            Failed::Work(error) => error,
            Failed::Db(error) => E::from(DbError::from(error)),
        })
}

/// Runs `work` in a read-only, repeatable-read transaction: every statement of it reads one
/// snapshot of the database.
pub fn read_snapshot<T>(
    conn: &mut PgConnection,
    work: impl FnOnce(&mut PgConnection) -> Result<T, DbError>,
) -> Result<T, DbError> {
    conn.build_transaction()
        .read_only()
        .repeatable_read()
        .run(work)
}

/// Runs `work` in a savepoint of the transaction `conn` is in: a failure of `work` takes back
/// what it wrote, and only that. Outside a transaction it runs nothing and fails, for a query
/// function never opens a transaction of its own.
pub fn savepoint<T, E>(
    conn: &mut PgConnection,
    work: impl FnOnce(&mut PgConnection) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<DbError>,
{
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    let depth = AnsiTransactionManager::transaction_manager_status_mut(conn)
        .transaction_depth()
        .map_err(DbError::from)?;
    if depth.is_none() {
        return Err(E::from(DbError::Other(
            "a savepoint was asked for outside a transaction".to_owned(),
        )));
    }
    in_transaction(conn, work)
}

/// How many times `retrying_conflicts` tries a transaction.
pub const CONFLICT_ATTEMPTS: u32 = 4;

/// Runs `work` in one transaction; a deadlock or a serialization failure (which rolled it back
/// whole) is tried again at once, up to `CONFLICT_ATTEMPTS` in all, each retry logged naming
/// what the work is about (`label`).
pub fn retrying_conflicts<T>(
    conn: &mut PgConnection,
    label: &str,
    work: impl Fn(&mut PgConnection) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let mut attempt = 1;
    loop {
        let result = in_transaction(conn, &work);
        match &result {
            Err(error @ (DbError::Deadlock | DbError::SerializationFailure))
                if attempt < CONFLICT_ATTEMPTS =>
            {
                log::warn!("{label}: {error} (attempt {attempt}); retrying at once");
                attempt += 1;
            }
            Err(error) => {
                log::warn!("{label} failed: {error}");
                return result;
            }
            Ok(_) => return result,
        }
    }
}

/// Makes `text` a LIKE pattern matching what starts with it (its `%`, `_` and `\\` taken
/// literally).
pub fn like_prefix(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 1);
    for character in text.chars() {
        if matches!(character, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(character);
    }
    pattern.push('%');
    pattern
}

/// A statement that changed at least this many rows of a table refreshes its statistics.
pub const ANALYZE_AFTER_ROWS: usize = 1_000;

/// Refreshes the planner statistics of `tables` after a bulk change of `rows` rows (nothing
/// below `ANALYZE_AFTER_ROWS`): a table that grew from nothing to 100,000 rows is otherwise
/// planned as nearly empty until autovacuum comes by, and a page of it takes seconds. A
/// failure is logged, not returned: the change itself is committed already.
pub fn analyze_after_bulk(conn: &mut PgConnection, tables: &[&str], rows: usize) {
    if rows < ANALYZE_AFTER_ROWS {
        return;
    }
    for table in tables {
        if let Err(error) = diesel::sql_query(format!("ANALYZE {table}")).execute(conn) {
            log::warn!("statistics of {table} not refreshed after {rows} rows changed: {error}");
        }
    }
}
