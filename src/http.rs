//! The HTTP surface: one route table. Handlers are thin: they parse, call `db` (plain reads)
//! or an actor, and shape the reply. Nothing imports `http`.

pub mod admin_token;
pub mod dto;
pub mod error;
pub mod health;
pub mod hosts;
pub mod static_files;

use actix_web::web;

use crate::config::AdminToken;
use crate::db::Pool;

/// What every handler may reach.
#[derive(Debug, Clone)]
pub struct AppState {
    pub pool: Pool,
}

/// Registers every route, the JSON error envelope for malformed requests, and the admin
/// token check on mutating requests.
pub fn configure(
    state: AppState,
    admin_token: Option<AdminToken>,
) -> impl FnOnce(&mut web::ServiceConfig) {
    move |config| {
        config
            .app_data(web::Data::new(state))
            .app_data(web::Data::new(admin_token::AdminTokenConfig(admin_token)))
            .app_data(error::json_config())
            .app_data(error::path_config())
            .app_data(error::query_config())
            .route("/healthz", web::get().to(health::get_health))
            .service(web::scope("/api/v1").route("/hosts", web::get().to(hosts::list_hosts)))
            .route("/", web::get().to(static_files::get_index))
            .route("/{file:.+}", web::get().to(static_files::get_static_file))
            .default_service(web::to(error::no_route));
    }
}
