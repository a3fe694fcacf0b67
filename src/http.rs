//! The HTTP surface: one route table. Handlers are thin: they parse, call `db` (plain reads)
//! or an actor, and shape the reply. Nothing imports `http`.

/// Registers one path with the handler of each of its methods, as one `web::resource`: a method
/// it lacks is answered 405 with `Allow` (put in the envelope of its API: `hygiene` for the admin
/// API, Placement's middleware for Placement). Defined before the modules, which use it too.
macro_rules! resource {
    ($config:expr, $path:expr, $($method:ident => $handler:path),+ $(,)?) => {
        $config.service(web::resource($path)$(.route(web::$method().to($handler)))+)
    };
}

pub mod admin_token;
pub mod archive;
pub mod compute;
pub mod credentials;
pub mod deployment;
pub mod dto;
pub mod error;
pub mod events;
pub mod health;
pub mod hosts;
pub mod hygiene;
pub mod instances;
pub mod metrics;
pub mod nodes;
pub mod observe;
pub mod placement;
pub mod session;
pub mod static_files;
pub mod transport;
pub mod validate;

use actix_web::web;

use crate::actors::Actors;
use crate::config::AdminToken;
use crate::db::Pool;

/// The largest request body taken (a 100,000-node enroll with names fits).
pub const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// The largest Compute request body taken: Nova's (oslo.middleware's `max_request_body_size`,
/// 112 KiB). A server's user data (64 KiB, base64) fits; a 15 MB "key pair" is refused before
/// it is held.
pub const COMPUTE_BODY_LIMIT: usize = 114_688;

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
    /// Keystone, when it authenticates callers.
    pub keystone: Option<std::sync::Arc<crate::keystone::Keystone>>,
    /// The deployment's figures the metrics show, read every few seconds.
    pub figures: crate::actors::figures::FigureCache,
    /// The one database probe of `/readyz`.
    pub readiness: std::sync::Arc<health::Readiness>,
    /// Where the Compute API resolves images.
    pub images: std::sync::Arc<compute::images::ImageService>,
    /// Who may read what: `/metrics`, the admin project.
    pub access: std::sync::Arc<crate::config::AccessSettings>,
    /// The dashboard's logged-in browsers.
    pub sessions: std::sync::Arc<session::SessionStore>,
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
            keystone: None,
            figures: crate::actors::figures::FigureCache::default(),
            readiness: std::sync::Arc::default(),
            images: std::sync::Arc::default(),
            access: std::sync::Arc::default(),
            sessions: std::sync::Arc::default(),
        }
    }

    /// The same state with Keystone authenticating callers.
    pub fn with_keystone(mut self, keystone: Option<crate::keystone::Keystone>) -> AppState {
        self.keystone = keystone.map(std::sync::Arc::new);
        self
    }

    /// The same state resolving images as `settings` say.
    pub fn with_images(mut self, settings: crate::config::ImageSettings) -> AppState {
        self.images = std::sync::Arc::new(compute::images::ImageService::new(settings));
        self
    }

    /// The same state with these access settings.
    pub fn with_access(mut self, access: crate::config::AccessSettings) -> AppState {
        self.access = std::sync::Arc::new(access);
        self
    }

    /// The same state with event streams capped at `limits`.
    pub fn with_stream_limits(mut self, limits: crate::config::StreamLimits) -> AppState {
        self.events = std::sync::Arc::new(events::EventHub::with_limits(limits));
        self
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
            .app_data(web::Data::new(credentials::AdminTokenConfig(admin_token)))
            .app_data(error::json_config())
            .app_data(error::path_config())
            .app_data(error::query_config())
            .service(web::resource("/healthz").route(web::get().to(health::get_health)))
            .service(web::resource("/readyz").route(web::get().to(health::get_ready)))
            .service(web::resource("/metrics").route(web::get().to(metrics::get_metrics)))
            .service(web::scope("/api/v1").configure(admin_routes))
            .configure(placement::configure)
            .configure(compute::configure)
            .route("/", web::get().to(static_files::get_index))
            .route("/{file:.+}", web::get().to(static_files::get_static_file))
            .default_service(web::to(error::no_route));
    }
}

/// The admin API under `/api/v1`, each path once with its methods.
#[rustfmt::skip]
fn admin_routes(config: &mut web::ServiceConfig) {
    resource!(config, "/hosts", get => hosts::list_hosts, post => hosts::create_host);
    resource!(config, "/hosts/{host}/crash", post => hosts::crash_host);
    resource!(config, "/hosts/{host}/start", post => hosts::start_host);
    resource!(config, "/hosts/{host}/drain", post => hosts::drain_host);
    resource!(config, "/hosts/{host}/enable", post => hosts::enable_host);
    resource!(config, "/nodes", get => nodes::list_nodes, post => nodes::enroll_nodes);
    resource!(config, "/nodes/{uuid}", delete => nodes::delete_node);
    resource!(config, "/nodes/{uuid}/lock", post => nodes::lock_node);
    resource!(config, "/nodes/{uuid}/unlock", post => nodes::unlock_node);
    resource!(config, "/node-source", get => nodes::get_node_source);
    resource!(config, "/ring", get => deployment::get_ring);
    resource!(config, "/moves", get => deployment::list_moves);
    resource!(config, "/timeline", get => deployment::get_timeline);
    resource!(config, "/usage", get => deployment::get_usage);
    resource!(config, "/audit", get => deployment::get_audit);
    resource!(config, "/providers", get => deployment::list_providers);
    resource!(config, "/instances", get => instances::list_instances, post => instances::create_instance);
    resource!(config, "/instances/{uuid}", get => instances::get_instance, delete => instances::delete_instance);
    resource!(config, "/events", get => events::stream_events);
    resource!(config, "/session", get => session::get_session, post => session::create_session, delete => session::delete_session);
    resource!(config, "/archive", post => archive::run_archive);
    resource!(config, "/archive/runs", get => archive::list_archive_runs);
}
