//! `GET /healthz`: the process is up and its database answers.

use actix_web::{HttpResponse, web};

use super::AppState;
use super::dto::HealthResponse;
use super::error::ApiError;
use crate::db;

/// Returns 200 `{"status": "ok"}` when the database answers, 503 otherwise.
pub async fn get_health(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    db::run(&state.pool, db::ping).await?;
    Ok(HttpResponse::Ok().json(HealthResponse { status: "ok" }))
}
