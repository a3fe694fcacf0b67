//! The record of archive runs (`archive_runs`): what each moved, and how it ended.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz};

use super::{ArchiveSummary, Id};
use crate::db::DbError;

/// Records the start of an archive run; returns its id.
pub fn start_run(
    conn: &mut PgConnection,
    options: &serde_json::Value,
    now: DateTime<Utc>,
) -> Result<i64, DbError> {
    let row: Id = diesel::sql_query(
        "INSERT INTO archive_runs (options, started_at) VALUES ($1, $2) RETURNING id",
    )
    .bind::<Jsonb, _>(options)
    .bind::<Timestamptz, _>(now)
    .get_result(conn)?;
    Ok(row.id)
}

/// Records how archive run `id` ended.
pub fn finish_run(
    conn: &mut PgConnection,
    id: i64,
    summary: &ArchiveSummary,
    purged: i64,
    status: &str,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let tables =
        serde_json::to_value(&summary.tables).map_err(|error| DbError::Other(error.to_string()))?;
    diesel::sql_query(
        "UPDATE archive_runs SET finished_at = $2, tables = $3, total_rows = $4, purged_rows = $5, status = $6
          WHERE id = $1",
    )
    .bind::<BigInt, _>(id)
    .bind::<Timestamptz, _>(now)
    .bind::<Jsonb, _>(tables)
    .bind::<BigInt, _>(summary.total())
    .bind::<BigInt, _>(purged)
    .bind::<Text, _>(status)
    .execute(conn)?;
    Ok(())
}

/// One recorded archive run.
#[derive(Debug, Clone, PartialEq, QueryableByName, serde::Serialize)]
pub struct ArchiveRunRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Timestamptz)]
    pub started_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub finished_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Jsonb)]
    pub options: serde_json::Value,
    #[diesel(sql_type = Jsonb)]
    pub tables: serde_json::Value,
    #[diesel(sql_type = BigInt)]
    pub total_rows: i64,
    #[diesel(sql_type = BigInt)]
    pub purged_rows: i64,
    #[diesel(sql_type = Text)]
    pub status: String,
}

/// Lists the latest `limit` archive runs, newest first.
pub fn list_runs(conn: &mut PgConnection, limit: i64) -> Result<Vec<ArchiveRunRow>, DbError> {
    Ok(diesel::sql_query(
        "SELECT id, started_at, finished_at, options, tables, total_rows, purged_rows, status::text AS status
           FROM archive_runs ORDER BY id DESC LIMIT $1",
    )
    .bind::<BigInt, _>(limit)
    .load(conn)?)
}
