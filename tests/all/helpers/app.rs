//! The real HTTP server of one process, built as `serve` builds it (`app::build`), on a random
//! loopback port over a database of its own; it audits the invariants when it is dropped.

use std::time::Duration;

use ringmaster::actors::ActorSettings;
use ringmaster::config::{AdminToken, ServerConfig};
use ringmaster::db::{Pool, build_pool};
use ringmaster::domain::clock::SystemClock;

use super::database::TestDb;

/// Actor settings with every timer off: tests drive the actors by message.
pub fn quiet_settings() -> ActorSettings {
    ActorSettings::driven_by_messages(chrono::Duration::seconds(10))
}

/// Another process's actors on the same database, started as every process starts them
/// (`app::start_deployment`), driven by messages (`quiet_settings`), on `clock`.
pub async fn start_actors(
    pool: ringmaster::db::Pool,
    clock: ringmaster::domain::clock::SharedClock,
) -> ringmaster::actors::Actors {
    let deployment = ringmaster::config::DeploymentConfig::actors_only(quiet_settings());
    ringmaster::app::start_deployment(pool, clock, &deployment)
        .await
        .unwrap()
}

/// The real HTTP server on a random loopback port, over a database of its own.
pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub actors: ringmaster::actors::Actors,
    handle: actix_web::dev::ServerHandle,
    /// Whether dropping it audits the invariants (not for a test that drops its database).
    audit_when_dropped: bool,
    // Last, so that it drops last.
    pub db: TestDb,
}

impl TestApp {
    /// Leaves out the audit at the end (the test took the database away).
    pub fn without_final_audit(mut self) -> TestApp {
        self.audit_when_dropped = false;
        self
    }

    pub async fn spawn() -> TestApp {
        Self::spawn_with_token(None).await
    }

    pub async fn spawn_with_token(token: Option<&str>) -> TestApp {
        Self::spawn_with(token, Default::default()).await
    }

    /// A server with this admin token and these Placement settings.
    pub async fn spawn_with(
        token: Option<&str>,
        placement: ringmaster::config::PlacementSettings,
    ) -> TestApp {
        Self::spawn_configured(|config| {
            config.admin_token = token.and_then(AdminToken::new);
            config.placement = placement;
        })
        .await
    }

    /// A server whose settings `configure` changed from the tests' defaults.
    pub async fn spawn_configured(configure: impl FnOnce(&mut ServerConfig)) -> TestApp {
        let db = TestDb::new();
        let (address, actors, handle) = serve_on(db.pool(), configure).await;
        TestApp {
            address,
            client: json_client(),
            actors,
            handle,
            audit_when_dropped: true,
            db,
        }
    }

    /// A second process of the same deployment: its own actors and HTTP server, on the
    /// database of `first`.
    pub async fn spawn_sharing(first: &TestApp) -> SharedApp {
        let pool = build_pool(first.db.url(), 8).expect("pool on the shared database");
        let (address, _, handle) = serve_on(pool, |_| {}).await;
        SharedApp {
            address,
            client: json_client(),
            handle,
        }
    }

    /// Opens the event stream and checks that it is one.
    pub async fn events(&self) -> reqwest::Response {
        let response = self
            .client
            .get(self.url("/api/v1/events"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        response
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }
}

impl Drop for TestApp {
    /// Stops the server and checks every invariant of docs/design.md on what the test left (unless
    /// the test already failed).
    fn drop(&mut self) {
        // Stopping is asynchronous; the test's actix system ends right after anyway.
        drop(self.handle.stop(false));
        if std::thread::panicking() || !self.audit_when_dropped {
            return;
        }
        let violations =
            ringmaster::db::audit::check_invariants(&mut self.db.conn()).expect("the audit runs");
        assert!(
            violations.is_empty(),
            "invariants broken when the test ended: {violations:#?}"
        );
    }
}

/// A plain HTTP(S) client trusting the system's CAs.
pub fn http_client() -> reqwest::Client {
    ringmaster::tls::install_default_provider();
    reqwest::Client::new()
}

/// A client that says JSON on every request, as the dashboard does: the server refuses a
/// mutating request that a browser form could forge (no JSON content type, no token).
pub fn json_client() -> reqwest::Client {
    ringmaster::tls::install_default_provider();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("a client")
}

/// A deployment config that runs no hosts, enrolls nothing and drives the actors by message.
pub fn test_deployment_config(hosts: &[&str]) -> ringmaster::config::DeploymentConfig {
    ringmaster::config::DeploymentConfig {
        hosts: hosts.iter().map(|host| (*host).to_owned()).collect(),
        nodes: None,
        resource_class: "baremetal".to_owned(),
        archive_interval: None,
        actors: quiet_settings(),
        ironic: None,
    }
}

/// Builds a process the way `serve` does (`app::build`) on `pool` (port 0); returns the
/// address, the actors and the server's handle.
async fn serve_on(
    pool: Pool,
    configure: impl FnOnce(&mut ServerConfig),
) -> (
    String,
    ringmaster::actors::Actors,
    actix_web::dev::ServerHandle,
) {
    let mut config = ServerConfig {
        bind: "127.0.0.1:0".to_owned(),
        admin_token: None,
        placement: Default::default(),
        handle_signals: false,
        database_grace: Duration::from_secs(60),
        allowed_hosts: Vec::new(),
        event_streams: Default::default(),
        body_timeout: Duration::from_secs(15),
        keystone: None,
        images: Default::default(),
        access: Default::default(),
        hangup: Default::default(),
        listener: Default::default(),
    };
    configure(&mut config);
    let ringmaster::app::Process {
        application,
        actors,
    } = ringmaster::app::build(
        &config,
        &test_deployment_config(&[]),
        pool.clone(),
        pool,
        std::sync::Arc::new(SystemClock::new()),
    )
    .await
    .expect("build app");
    let address = format!("http://{}", application.local_addr());
    let handle = application.handle();
    actix_rt::spawn(application.run_until_stopped(None));
    (address, actors, handle)
}

/// Another process's server on a `TestApp`'s database (`TestApp::spawn_sharing`).
pub struct SharedApp {
    pub address: String,
    pub client: reqwest::Client,
    handle: actix_web::dev::ServerHandle,
}

impl SharedApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }
}

impl Drop for SharedApp {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}
