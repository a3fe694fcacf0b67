//! `/api/v1/archive`: run `archive_deleted_rows` (and optionally purge) and list past runs.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::ApiError;
use crate::actors::archiver::{ArchiveOnce, ArchiveRequest, NovaArchiveOptions};
use crate::db;

/// Answer of `POST /api/v1/archive`.
#[derive(Debug, Serialize)]
pub struct ArchiveResponse {
    pub run_id: i64,
    pub tables: std::collections::BTreeMap<String, i64>,
    pub total: i64,
    pub purged: std::collections::BTreeMap<String, i64>,
}

/// Query of `GET /api/v1/archive/runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    pub limit: Option<i64>,
}

/// The largest body `POST /api/v1/archive` reads.
const MAX_BODY: usize = 64 * 1024;

/// Reads the options of `POST /api/v1/archive`: an empty body means the defaults; anything
/// else must be a JSON object of the known fields with their types (400 naming the field, or
/// saying what the body is not, otherwise).
pub fn archive_options(body: &[u8]) -> Result<NovaArchiveOptions, String> {
    if body.len() > MAX_BODY {
        return Err(format!("the body is too large: at most {MAX_BODY} bytes"));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(NovaArchiveOptions::default());
    }
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|error| format!("the body is not valid JSON: {error}"))?;
    let serde_json::Value::Object(fields) = &value else {
        return Err("the body must be a JSON object of archive options".to_owned());
    };
    for (name, field) in fields {
        let expected = match name.as_str() {
            "max_rows" => field.is_i64().then_some(()).ok_or("an integer"),
            "before" => field.is_string().then_some(()).ok_or("a string (a date)"),
            "until_complete" | "purge" | "task_log" => {
                field.is_boolean().then_some(()).ok_or("true or false")
            }
            _ => {
                return Err(format!(
                    "unknown field {name:?}: the options are max_rows, before, until_complete, purge and task_log"
                ));
            }
        };
        if let Err(wanted) = expected {
            return Err(format!("{name} must be {wanted}, not {field}"));
        }
    }
    serde_json::from_value(value).map_err(|error| format!("invalid archive options: {error}"))
}

/// Archives soft-deleted rows now; 400 names a bad field, and nothing is archived then.
pub async fn run_archive(
    state: web::Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut body = web::BytesMut::new();
    while let Some(chunk) = futures_util::StreamExt::next(&mut payload).await {
        let chunk = chunk
            .map_err(|error| ApiError::BadRequest(format!("cannot read the body: {error}")))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ApiError::BadRequest(format!(
                "the body is too large: at most {MAX_BODY} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    let options = archive_options(&body).map_err(ApiError::BadRequest)?;
    let today = state.actors.clock.now().date_naive();
    let request = ArchiveRequest::from_nova(&options, today)
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
    // A run is answered as it is recorded (`db::archive::ArchiveRunRow`).
    Ok(HttpResponse::Ok().json(runs))
}
