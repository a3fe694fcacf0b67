//! `/api/v1/archive`: run `archive_deleted_rows` (and optionally purge) and list past runs.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::ApiError;
use crate::actors::archiver::{ArchiveOnce, ArchiveRequest, NovaArchiveOptions};
use crate::db;

/// Body of `POST /api/v1/archive`; every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveRequestBody {
    pub max_rows: Option<i64>,
    pub before: Option<String>,
    #[serde(default)]
    pub until_complete: bool,
    #[serde(default)]
    pub purge: bool,
    #[serde(default)]
    pub task_log: bool,
}

/// Answer of `POST /api/v1/archive`.
#[derive(Debug, Serialize)]
pub struct ArchiveResponse {
    pub run_id: i64,
    pub tables: std::collections::BTreeMap<String, i64>,
    pub total: i64,
    pub purged: std::collections::BTreeMap<String, i64>,
}

/// One past run in `GET /api/v1/archive/runs`.
#[derive(Debug, Serialize)]
pub struct ArchiveRunResponse {
    pub id: i64,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    pub options: serde_json::Value,
    pub tables: serde_json::Value,
    pub total_rows: i64,
    pub purged_rows: i64,
    pub status: String,
}

/// Query of `GET /api/v1/archive/runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    pub limit: Option<i64>,
}

/// Archives soft-deleted rows now; 400 names a bad `max_rows` or `before`.
pub async fn run_archive(
    state: web::Data<AppState>,
    body: Option<web::Json<ArchiveRequestBody>>,
) -> Result<HttpResponse, ApiError> {
    let body = body.map(web::Json::into_inner).unwrap_or_default();
    let request = ArchiveRequest::from_nova(NovaArchiveOptions {
        max_rows: body.max_rows.unwrap_or(1000),
        before: body.before.as_deref(),
        until_complete: body.until_complete,
        purge: body.purge,
        task_log: body.task_log,
        sleep: std::time::Duration::ZERO,
    })
    .map_err(|invalid| ApiError::BadRequest(invalid.to_string()))?;
    let report = state
        .actors
        .archiver
        .send(ArchiveOnce { request })
        .await??;
    Ok(HttpResponse::Ok().json(ArchiveResponse {
        run_id: report.run_id,
        total: report.summary.total(),
        tables: report.summary.tables,
        purged: report
            .purged
            .into_iter()
            .map(|(table, _, count)| (table, count))
            .collect(),
    }))
}

/// Lists the latest archive runs, newest first (`limit`, default 50, at most 1,000).
pub async fn list_archive_runs(
    state: web::Data<AppState>,
    query: web::Query<RunsQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=1_000).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to 1000, not {limit}"
        )));
    }
    let runs = db::run(&state.pool, move |conn| db::archive::list_runs(conn, limit)).await?;
    let body: Vec<ArchiveRunResponse> = runs
        .into_iter()
        .map(|run| ArchiveRunResponse {
            id: run.id,
            started_at: run.started_at,
            finished_at: run.finished_at,
            options: run.options,
            tables: run.tables,
            total_rows: run.total_rows,
            purged_rows: run.purged_rows,
            status: run.status,
        })
        .collect();
    Ok(HttpResponse::Ok().json(body))
}
