//! `/api/v1/hosts`: the compute hosts.

use actix_web::{HttpResponse, web};

use super::AppState;
use super::dto::HostResponse;
use super::error::ApiError;
use crate::db;

/// Lists the compute hosts, ordered by name.
pub async fn list_hosts(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let hosts = db::run(&state.pool, db::hosts::list_hosts).await?;
    let body: Vec<HostResponse> = hosts.into_iter().map(HostResponse::from).collect();
    Ok(HttpResponse::Ok().json(body))
}
