//! Wiring, the one way a process is put together: `build` starts the actors (this process's
//! compute hosts, the archive schedule, the demo's nodes) and binds the HTTP server around
//! them; `serve` and `demo` run what it returns until it is stopped (Ctrl-C, SIGTERM) or the
//! database goes away, and the tests run the very same.

use std::net::{SocketAddr, TcpListener};
use std::pin::pin;
use std::time::Duration;

use actix_web::middleware::{Compress, from_fn};
use actix_web::{App, HttpServer};
use futures_util::future::{Either, join, select};

use uuid::Uuid;

use crate::actors::archiver::{self, ArchiveRequest};
use crate::actors::compute_host::HostError;
use crate::actors::ironic::EnrollNodes;
use crate::actors::{self, Actors};
use crate::config::{DeploymentConfig, ServerConfig};
use crate::db::archive::ArchiveOptions;
use crate::db::database::DatabaseProbe;
use crate::db::ironic::NewIronicNode;
use crate::db::{self, DbError, Pool};
use crate::domain::clock::{SharedClock, SystemClock};
use crate::http::{self, AppState, admin_token::require_admin_token};

/// How often the database is probed while serving.
const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// Says why the server stopped other than by being asked to.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("cannot listen on {bind}: {source}")]
    Bind {
        bind: String,
        source: std::io::Error,
    },
    #[error("HTTP server failed: {0}")]
    Server(std::io::Error),
    #[error("lost the database: {0}")]
    DatabaseLost(DbError),
    #[error("database work failed: {0}")]
    Startup(DbError),
    #[error("cannot start host {0}: {1}")]
    Host(String, HostError),
    #[error("{0}")]
    Ironic(crate::ironic_api::IronicError),
    #[error("cannot use Keystone: {0}")]
    Keystone(String),
    #[error("{0}")]
    Tls(#[from] crate::tls::TlsError),
}

/// A process of the deployment, built: its actors running, its HTTP server bound.
pub struct Process {
    pub application: Application,
    pub actors: Actors,
}

/// Builds a process as `serve` and `demo` run it and as the tests do: starts the actors on
/// `clock` with `background` (the API has `api_pool` to itself, so it never waits for a pool
/// the tracker passes and moves keep busy), then this process's compute hosts, the archive
/// schedule and the demo's nodes, and binds the HTTP server. Call inside an actix system.
pub async fn build(
    server: &ServerConfig,
    deployment: &DeploymentConfig,
    api_pool: Pool,
    background: Pool,
    clock: SharedClock,
) -> Result<Process, AppError> {
    let actors = start_deployment(background, clock, deployment).await?;
    let mut application = Application::build(server, api_pool, actors.clone())?;
    if let Some(ironic) = &deployment.ironic {
        application.reloads.clients.push(ironic.tls.clone());
    }
    Ok(Process {
        application,
        actors,
    })
}

/// The system clock, corrected to the database's: every process of a deployment judges
/// heartbeats and leases by one time.
pub async fn database_clock(pool: &Pool) -> Result<SharedClock, AppError> {
    let clock = std::sync::Arc::new(SystemClock::new());
    let database_now = db::run(pool, db::hosts::database_now)
        .await
        .map_err(AppError::Startup)?;
    clock.set_offset(database_now - chrono::Utc::now());
    Ok(clock)
}

/// Starts the actors, this process's compute hosts and the archive schedule, and enrolls the
/// demo's nodes when Ironic has none: the one start path of a process's actors — `build` for
/// `serve` and `demo`, and message scripts, tests and benches directly. Its injection points:
/// `clock` (a manual clock drives time in scripts and tests), `deployment.ironic` (`None`: the
/// simulated Ironic, whose faults are its messages — `actors.ironic` — and the node-source
/// switches of `NodeSource`), `deployment.actors` (every timing and limit) and
/// `DeploymentConfig::actors_only` for a process that starts its hosts by message.
pub async fn start_deployment(
    pool: Pool,
    clock: SharedClock,
    deployment: &DeploymentConfig,
) -> Result<Actors, AppError> {
    let ironic = match &deployment.ironic {
        Some(settings) if settings.catalog.is_some() => find_in_catalog(settings).await?,
        other => other.clone(),
    };
    let real_ironic = match &ironic {
        Some(settings) => Some(connect_ironic(settings, &pool, &clock).await?),
        None => None,
    };
    let simulated = real_ironic.is_none();
    let actors = actors::spawn_all(pool.clone(), clock, deployment.actors, real_ironic);
    actors
        .hosts
        .record_process()
        .await
        .map_err(AppError::Startup)?;
    for host in &deployment.hosts {
        actors
            .hosts
            .start(host)
            .await
            .map_err(|error| AppError::Host(host.clone(), error))?;
    }
    if let Some(interval) = deployment
        .archive_interval
        .filter(|interval| !interval.is_zero())
    {
        let request = ArchiveRequest {
            options: ArchiveOptions {
                max_rows: 1000,
                before: None,
                task_log: false,
                until_complete: true,
                sleep: Duration::ZERO,
            },
            purge: false,
        };
        archiver::schedule(actors.archiver.clone(), interval, request);
        log::info!(
            "archiving deleted rows every {}",
            humantime::format_duration(interval)
        );
    }
    if let Some(count) = deployment.nodes.filter(|_| simulated) {
        enroll_demo_nodes(&pool, &actors, count, &deployment.resource_class).await?;
    }
    Ok(actors)
}

/// Looks Ironic up in Keystone's catalog (`baremetal`, the first of the valid interfaces):
/// the settings with its URL, or none (the simulated Ironic) when the catalog has no Ironic. A
/// Keystone that cannot be asked stops the start: which nodes are real cannot be known.
async fn find_in_catalog(
    settings: &crate::config::IronicSettings,
) -> Result<Option<crate::config::IronicSettings>, AppError> {
    let crate::ironic_api::IronicAuth::Keystone(keystone) = &settings.auth else {
        return Ok(Some(settings.clone()));
    };
    let interfaces = settings.catalog.clone().unwrap_or_default();
    match keystone.endpoint_in("baremetal", &interfaces).await {
        Ok(Some(url)) => {
            log::info!(
                "ironic found in Keystone's catalog at {url} ({})",
                interfaces.join(",")
            );
            Ok(Some(crate::config::IronicSettings {
                url,
                catalog: None,
                ..settings.clone()
            }))
        }
        Ok(None) => {
            log::info!(
                "Keystone's catalog has no baremetal endpoint ({}): nodes come from the \
                 simulated Ironic",
                interfaces.join(",")
            );
            Ok(None)
        }
        Err(error) => Err(AppError::Keystone(format!(
            "cannot read the catalog for Ironic's endpoint: {error}"
        ))),
    }
}

/// Connects to the real Ironic `settings` name: a server older than ringmaster needs (or one
/// that does not say its versions) stops the start; an Ironic that does not answer yet is
/// connected to by the first listing that reaches it (hosts keep what they own meanwhile).
async fn connect_ironic(
    settings: &crate::config::IronicSettings,
    pool: &Pool,
    clock: &SharedClock,
) -> Result<std::sync::Arc<actors::node_source::IronicDriver>, AppError> {
    use crate::ironic_api::{IronicApi, IronicError};
    let api = match IronicApi::connect(&settings.url, settings.auth.clone(), &settings.tls).await {
        Ok(api) => {
            log::info!(
                "nodes come from ironic at {} (API {})",
                settings.url,
                api.version()
            );
            Some(api)
        }
        Err(unreachable @ IronicError::Unreachable { .. }) => {
            log::warn!("{unreachable}; nodes stay as they are until it answers");
            None
        }
        Err(other) => return Err(AppError::Ironic(other)),
    };
    Ok(std::sync::Arc::new(actors::node_source::IronicDriver::new(
        settings.clone(),
        api,
        pool.clone(),
        clock.clone(),
    )))
}

/// Enrolls `count` simulated nodes of `resource_class` when Ironic has none.
async fn enroll_demo_nodes(
    pool: &Pool,
    actors: &Actors,
    count: u32,
    resource_class: &str,
) -> Result<(), AppError> {
    let existing = db::run(pool, |conn| Ok(db::ironic::list_nodes(conn)?.len()))
        .await
        .map_err(AppError::Startup)?;
    if existing > 0 {
        return Ok(());
    }
    let nodes = (0..count)
        .map(|index| {
            NewIronicNode::enrolling(
                Uuid::new_v4(),
                Some(format!("node-{index}")),
                resource_class,
            )
        })
        .collect();
    actors
        .ironic
        .send(EnrollNodes { nodes })
        .await
        .map_err(|error| AppError::Startup(DbError::Other(error.to_string())))?
        .map_err(AppError::Startup)?;
    log::info!("enrolled {count} simulated ironic nodes");
    Ok(())
}

/// The HTTP server's worker threads.
const WORKERS: usize = 2;

/// What the request guard needs of the server's settings: the names it answers to (the name
/// it is bound to included) and Placement's CORS origins.
fn hygiene_settings(config: &ServerConfig) -> http::hygiene::HygieneSettings {
    let mut allowed_hosts = config.allowed_hosts.clone();
    if let Some((name, _)) = config.bind.rsplit_once(':') {
        allowed_hosts.push(name.trim_matches(['[', ']']).to_owned());
    }
    http::hygiene::HygieneSettings {
        allowed_hosts,
        placement_origins: config.placement.cors_origins.clone(),
        body_timeout: config.body_timeout,
    }
}

/// The headers every answer carries: the dashboard loads nothing from elsewhere, is framed by
/// no one, and its content types are not sniffed.
fn security_headers() -> actix_web::middleware::DefaultHeaders {
    actix_web::middleware::DefaultHeaders::new()
        .add((
            "Content-Security-Policy",
            "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ))
        .add(("X-Frame-Options", "DENY"))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Referrer-Policy", "no-referrer"))
}

/// Connections each worker takes at once: together they leave room under the process's file
/// limit for the database pools, the data files and the logs (at most 10,000 in all).
fn connections_per_worker() -> usize {
    let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| soft)
        .unwrap_or(1024);
    let total = usize::try_from(limit.saturating_sub(256))
        .unwrap_or(usize::MAX)
        .clamp(64, 10_000);
    total / WORKERS
}

/// A bound, not yet running, HTTP server.
pub struct Application {
    server: actix_web::dev::Server,
    local_addr: SocketAddr,
    database_grace: Duration,
    /// Whether SIGINT and SIGTERM stop it (`serve`, `demo`; not the tests).
    handle_signals: bool,
    /// The process's event streams, ended when it stops.
    events: std::sync::Arc<http::events::EventHub>,
    /// What SIGHUP reads again.
    pub reloads: Reloads,
}

/// The certificates and CA files SIGHUP reads again: the listener's, and those of the
/// clients of Ironic and Keystone.
#[derive(Debug, Clone, Default)]
pub struct Reloads {
    pub server: Option<std::sync::Arc<crate::tls::server::ServerTls>>,
    pub clients: Vec<std::sync::Arc<crate::tls::client::ClientTls>>,
    /// The rest of what SIGHUP does (the log levels from the configuration file).
    pub hooks: crate::config::HangupHooks,
}

impl Reloads {
    /// The listener's certificate (loaded: a bad pair stops the start) and Keystone's trust.
    fn of(config: &ServerConfig) -> Result<Reloads, AppError> {
        let server = match &config.access.tls {
            Some(files) => Some(crate::tls::server::ServerTls::load(files.clone())?),
            None => None,
        };
        let clients = config.keystone.iter().map(|keystone| keystone.tls.clone());
        Ok(Reloads {
            server,
            clients: clients.collect(),
            hooks: config.hangup.clone(),
        })
    }

    /// Reads every file again; a file that cannot be used keeps the one in use (one warning).
    pub fn reload(&self) {
        let mut failed = false;
        if let Some(server) = &self.server
            && let Err(error) = server.reload()
        {
            log::warn!("SIGHUP: keeping the listener's certificate: {error}");
            failed = true;
        }
        for client in &self.clients {
            if let Err(error) = client.reload() {
                log::warn!("SIGHUP: keeping the trust in use: {error}");
                failed = true;
            }
        }
        if !failed {
            log::info!("SIGHUP: certificates and CA files read again");
        }
        for hook in &self.hooks.0 {
            hook();
        }
    }
}

/// How long a stop waits for requests in flight (event streams are ended at once).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

impl Application {
    /// Binds the listener and builds the server; call inside an actix system.
    pub fn build(
        config: &ServerConfig,
        pool: Pool,
        actors: Actors,
    ) -> Result<Application, AppError> {
        let bind_error = |source| AppError::Bind {
            bind: config.bind.clone(),
            source,
        };
        let listener: TcpListener = config
            .listener
            .take_or_bind(&config.bind)
            .map_err(bind_error)?;
        // `/metrics` shows how long checkouts wait.
        crate::db::observe_checkouts(crate::metrics::observe_pool_wait);
        let local_addr = listener.local_addr().map_err(bind_error)?;
        let keystone = match &config.keystone {
            Some(settings) => Some(
                crate::keystone::Keystone::new(settings.clone())
                    .map_err(|error| AppError::Keystone(error.to_string()))?,
            ),
            None => None,
        };
        let state = AppState::new(pool, actors)
            .with_placement(config.placement.clone())
            .with_stream_limits(config.event_streams)
            .with_keystone(keystone)
            .with_images(config.images.clone())
            .with_access(config.access.clone());
        let events = state.events.clone();
        let admin_token = config.admin_token.clone();
        let hygiene = actix_web::web::Data::new(hygiene_settings(config));
        let proxies = actix_web::web::Data::new(http::transport::TrustedProxies(
            config.access.trusted_proxies.clone(),
        ));
        let reloads = Reloads::of(config)?;
        let server_tls = reloads.server.clone();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(hygiene.clone())
                .app_data(proxies.clone())
                // Compressed when the client asks (Accept-Encoding): a 100,000-node listing is
                // tens of megabytes as JSON.
                .wrap(Compress::default())
                .wrap(from_fn(require_admin_token))
                .wrap(from_fn(http::hygiene::guard))
                .wrap(from_fn(http::observe::observe))
                .wrap(security_headers())
                .wrap(from_fn(http::transport::strict_transport))
                .configure(http::configure(state.clone(), admin_token.clone()))
        })
        .workers(WORKERS)
        // Small writes go out at once: a TLS 1.3 handshake's session tickets (and an event)
        // are not held back by Nagle until the client's delayed ACK — 20 ms per new https
        // connection with it.
        .tcp_nodelay(true)
        .max_connections(connections_per_worker())
        .client_request_timeout(Duration::from_secs(5))
        .client_disconnect_timeout(Duration::from_secs(2))
        .shutdown_timeout(SHUTDOWN_TIMEOUT.as_secs())
        // Signals are handled here (`run_until_stopped`): the event streams end first.
        .disable_signals();
        let server = match &server_tls {
            Some(tls) => server
                .tls_handshake_timeout(Duration::from_secs(5))
                .listen_rustls_0_23(listener, tls.config()?),
            None => server.listen(listener),
        }
        .map_err(bind_error)?
        .run();
        Ok(Application {
            server,
            local_addr,
            database_grace: config.database_grace,
            handle_signals: config.handle_signals,
            events,
            reloads,
        })
    }

    /// Returns the address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Returns a handle that can stop the server.
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// Serves until the server is stopped (by its handle, or by SIGINT or SIGTERM when it
    /// handles signals), or until `probe` has found the database gone for the whole database
    /// grace period (a restart or failover shorter than that is ridden out). A stop ends the
    /// event streams first, then waits for the requests in flight (at most
    /// `SHUTDOWN_TIMEOUT`).
    pub async fn run_until_stopped(self, probe: Option<DatabaseProbe>) -> Result<(), AppError> {
        let handle = self.server.handle();
        let grace = self.database_grace;
        let events = self.events.clone();
        let watched = async move {
            match probe {
                Some(probe) => Some(watch_database(probe, grace).await),
                None => std::future::pending().await,
            }
        };
        let signalled = async move {
            if self.handle_signals {
                stop_signal().await;
            } else {
                std::future::pending::<()>().await;
            }
            None
        };
        if self.handle_signals {
            actix_rt::spawn(reload_on_hangup(self.reloads.clone()));
        }
        let (watched, signalled) = (pin!(watched), pin!(signalled));
        let stopping = select(watched, signalled);
        match select(pin!(self.server), stopping).await {
            Either::Left((served, _)) => served.map_err(AppError::Server),
            Either::Right((Either::Left((lost, _)) | Either::Right((lost, _)), server)) => {
                log::info!("stopping: ending event streams, finishing requests in flight");
                events.close();
                // The server processes its stop command only while it is polled.
                let (_, stopped) = join(handle.stop(true), server).await;
                if let Err(error) = stopped {
                    log::warn!("HTTP server did not stop cleanly: {error}");
                }
                match lost {
                    Some(error) => Err(AppError::DatabaseLost(error)),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Reads the certificates and CA files again at each SIGHUP.
async fn reload_on_hangup(reloads: Reloads) {
    use actix_rt::signal::unix::{SignalKind, signal};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(hangups) => hangups,
        Err(error) => {
            log::warn!("SIGHUP cannot be handled: {error}");
            return;
        }
    };
    while hangups.recv().await.is_some() {
        crate::systemd::reloading();
        let reloads = reloads.clone();
        if actix_rt::task::spawn_blocking(move || reloads.reload())
            .await
            .is_err()
        {
            log::warn!("SIGHUP: the reload did not finish");
        }
        crate::systemd::notify("READY=1");
    }
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM.
async fn stop_signal() {
    use actix_rt::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(error) => {
                log::warn!("SIGTERM cannot be handled: {error}");
                std::future::pending::<()>().await;
            }
        }
    };
    let interrupt = async {
        if actix_rt::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    select(pin!(terminate), pin!(interrupt)).await;
}

/// Probes the database every `PROBE_INTERVAL` and returns once it has not answered for
/// `grace`. While it does not answer, hosts fence themselves (their heartbeats fail) and the
/// pool reconnects as work asks for connections; a database back within `grace` is ridden out.
async fn watch_database(mut probe: DatabaseProbe, grace: Duration) -> DbError {
    let mut lost_since: Option<std::time::Instant> = None;
    loop {
        actix::clock::sleep(PROBE_INTERVAL).await;
        let checked = actix_rt::task::spawn_blocking(move || {
            let result = probe.check();
            (probe, result)
        })
        .await;
        let (returned, result) = match checked {
            Ok(checked) => checked,
            Err(_) => return DbError::Canceled,
        };
        probe = returned;
        match result {
            Ok(()) => {
                if let Some(since) = lost_since.take() {
                    log::info!(
                        "database reachable again after {:.1}s",
                        since.elapsed().as_secs_f64()
                    );
                }
            }
            Err(error) => {
                let since = *lost_since.get_or_insert_with(|| {
                    log::warn!(
                        "database unreachable ({error}); hosts fence themselves, riding it out for up to {}",
                        humantime::format_duration(grace)
                    );
                    std::time::Instant::now()
                });
                if since.elapsed() >= grace {
                    return error;
                }
            }
        }
    }
}
