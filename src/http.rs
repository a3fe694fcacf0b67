//! The HTTP surface: one route table. Handlers are thin: they parse, call `db` (plain reads)
//! or an actor, and shape the reply. Nothing imports `http`.

pub mod admin_token;
pub mod archive;
pub mod deployment;
pub mod dto;
pub mod error;
pub mod events;
pub mod health;
pub mod hosts;
pub mod instances;
pub mod nodes;
pub mod placement;
pub mod static_files;
pub mod validate;

use actix_web::web;

use crate::actors::Actors;
use crate::config::AdminToken;
use crate::db::Pool;

/// What every handler may reach.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub actors: Actors,
    /// The snapshot allocation candidates are chosen from, shared by every worker.
    pub candidates: std::sync::Arc<crate::db::placement::candidates::SnapshotCache>,
    /// Placement's policy profile and CORS settings.
    pub placement: std::sync::Arc<crate::config::PlacementSettings>,
    /// The typed events of this process's event streams, shared by all of them.
    pub events: std::sync::Arc<events::EventHub>,
    /// Node counts per host, counted again only when ownership changes.
    pub node_counts: std::sync::Arc<crate::db::hosts::NodeCountCache>,
}

impl AppState {
    pub fn new(pool: Pool, actors: Actors) -> AppState {
        AppState {
            pool,
            actors,
            candidates: std::sync::Arc::default(),
            placement: std::sync::Arc::default(),
            events: std::sync::Arc::default(),
            node_counts: std::sync::Arc::default(),
        }
    }

    /// The same state with these Placement settings.
    pub fn with_placement(mut self, settings: crate::config::PlacementSettings) -> AppState {
        self.placement = std::sync::Arc::new(settings);
        self
    }
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
            .service(
                web::scope("/api/v1")
                    .route("/hosts", web::get().to(hosts::list_hosts))
                    .route("/hosts", web::post().to(hosts::create_host))
                    .route("/hosts/{host}/crash", web::post().to(hosts::crash_host))
                    .route("/hosts/{host}/start", web::post().to(hosts::start_host))
                    .route("/hosts/{host}/drain", web::post().to(hosts::drain_host))
                    .route("/hosts/{host}/enable", web::post().to(hosts::enable_host))
                    .route("/nodes", web::get().to(nodes::list_nodes))
                    .route("/nodes", web::post().to(nodes::enroll_nodes))
                    .route("/nodes/{uuid}", web::delete().to(nodes::delete_node))
                    .route("/nodes/{uuid}/lock", web::post().to(nodes::lock_node))
                    .route("/nodes/{uuid}/unlock", web::post().to(nodes::unlock_node))
                    .route("/node-source", web::get().to(nodes::get_node_source))
                    .route("/ring", web::get().to(deployment::get_ring))
                    .route("/moves", web::get().to(deployment::list_moves))
                    .route("/timeline", web::get().to(deployment::get_timeline))
                    .route("/usage", web::get().to(deployment::get_usage))
                    .route("/audit", web::get().to(deployment::get_audit))
                    .route("/providers", web::get().to(deployment::list_providers))
                    .route("/instances", web::get().to(instances::list_instances))
                    .route("/instances", web::post().to(instances::create_instance))
                    .route(
                        "/instances/{uuid}",
                        web::delete().to(instances::delete_instance),
                    )
                    .route("/events", web::get().to(events::stream_events))
                    .route("/archive", web::post().to(archive::run_archive))
                    .route("/archive/runs", web::get().to(archive::list_archive_runs)),
            )
            .configure(placement::configure)
            .route("/", web::get().to(static_files::get_index))
            .route("/{file:.+}", web::get().to(static_files::get_static_file))
            .default_service(web::to(error::no_route));
    }
}
