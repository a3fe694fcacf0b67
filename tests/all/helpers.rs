//! Test fixtures: the shared throwaway PostgreSQL server, per-test databases, an in-process
//! app on a random port, and a driver for the `ringmaster` binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use diesel::{Connection, PgConnection};
use ringmaster::actors::ActorSettings;
use ringmaster::config::{AdminToken, ServerConfig};
use ringmaster::db::scratch::{ScratchDb, ScratchServer};
use ringmaster::db::{Pool, build_pool};
use ringmaster::domain::clock::SystemClock;

/// Actor settings with every timer off: tests drive the actors by message.
pub fn quiet_settings() -> ActorSettings {
    ActorSettings::driven_by_messages(chrono::Duration::seconds(10))
}

/// The one PostgreSQL server of this test run: TEST_DATABASE_URL when set, otherwise a
/// private throwaway cluster that stops (and removes itself) when the test process ends.
pub fn scratch_server() -> &'static ScratchServer {
    static SERVER: OnceLock<ScratchServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let _ = env_logger::builder()
            .is_test(true)
            .parse_env(env_logger::Env::new().filter("TEST_LOG"))
            .try_init();
        let server = match std::env::var("TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => ScratchServer::from_url(&url),
            _ => ScratchServer::start_private(None),
        };
        server.expect("the test PostgreSQL server must start")
    })
}

/// A database of its own for one test, migrated and empty; dropped with the value.
pub struct TestDb {
    db: ScratchDb,
}

impl TestDb {
    pub fn new() -> TestDb {
        TestDb {
            db: scratch_server()
                .create_database()
                .expect("create test database"),
        }
    }

    /// An empty database with no migration applied.
    pub fn empty() -> TestDb {
        TestDb {
            db: scratch_server()
                .create_empty_database()
                .expect("create empty test database"),
        }
    }

    pub fn name(&self) -> &str {
        self.db.name()
    }

    pub fn url(&self) -> &str {
        self.db.url()
    }

    pub fn conn(&self) -> PgConnection {
        PgConnection::establish(self.db.url()).expect("connect to test database")
    }

    pub fn pool(&self) -> Pool {
        build_pool(self.db.url(), 8).expect("pool on test database")
    }
}

/// The real HTTP server on a random loopback port, over a database of its own.
pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub actors: ringmaster::actors::Actors,
    handle: actix_web::dev::ServerHandle,
    // Last, so that it drops last.
    pub db: TestDb,
}

impl TestApp {
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
        let db = TestDb::new();
        let (address, actors, handle) = serve_on(db.pool(), token, placement).await;
        TestApp {
            address,
            client: reqwest::Client::new(),
            actors,
            handle,
            db,
        }
    }

    /// A second process of the same deployment: its own actors and HTTP server, on the
    /// database of `first`.
    pub async fn spawn_sharing(first: &TestApp) -> SharedApp {
        let pool = build_pool(first.db.url(), 8).expect("pool on the shared database");
        let (address, _, handle) = serve_on(pool, None, Default::default()).await;
        SharedApp {
            address,
            client: reqwest::Client::new(),
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
    fn drop(&mut self) {
        // Stopping is asynchronous; the test's actix system ends right after anyway.
        drop(self.handle.stop(false));
    }
}

/// A deployment config that runs no hosts, enrolls nothing and drives the actors by message.
pub fn test_deployment_config(hosts: &[&str]) -> ringmaster::config::DeploymentConfig {
    ringmaster::config::DeploymentConfig {
        hosts: hosts.iter().map(|host| (*host).to_owned()).collect(),
        nodes: None,
        resource_class: "baremetal".to_owned(),
        archive_interval: None,
        actors: quiet_settings(),
    }
}

/// Builds a process the way `serve` does (`app::build`) on `pool` (port 0); returns the
/// address, the actors and the server's handle.
async fn serve_on(
    pool: Pool,
    token: Option<&str>,
    placement: ringmaster::config::PlacementSettings,
) -> (
    String,
    ringmaster::actors::Actors,
    actix_web::dev::ServerHandle,
) {
    let config = ServerConfig {
        bind: "127.0.0.1:0".to_owned(),
        admin_token: token.and_then(AdminToken::new),
        placement,
        handle_signals: false,
        database_grace: Duration::from_secs(60),
    };
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

/// A folder for one test under /dev/shm (or the temp dir), removed on drop.
pub struct TempDir {
    pub path: std::path::PathBuf,
}

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let path = base.join(format!(
            "ringmaster-test-{label}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir { path }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Builds a command for the `ringmaster` binary with no database settings inherited.
pub fn ringmaster() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ringmaster"));
    for (name, _) in std::env::vars() {
        if name.starts_with("RINGMASTER_") || name == "DATABASE_URL" {
            command.env_remove(name);
        }
    }
    command.env("RUST_LOG", "info");
    command
}

/// A running `ringmaster` process whose stdout and stderr are collected line by line.
pub struct Running {
    pub child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    pub stderr_lines: Vec<String>,
}

impl Running {
    pub fn spawn(mut command: Command) -> Running {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ringmaster");
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
            stderr_lines: Vec::new(),
        }
    }

    /// Waits for the first stdout line containing `needle`.
    pub fn wait_for_stdout(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stdout.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        self.collect_stderr();
        panic!(
            "no stdout line with {needle:?}; stderr: {:#?}",
            self.stderr_lines
        );
    }

    /// Waits for the process to exit and returns its exit code and all stderr lines.
    pub fn wait_exit(&mut self, timeout: Duration) -> (Option<i32>, Vec<String>) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Give the reader threads a moment to drain the pipes.
                std::thread::sleep(Duration::from_millis(100));
                self.collect_stderr();
                return (status.code(), self.stderr_lines.clone());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                self.collect_stderr();
                panic!(
                    "ringmaster did not exit within {timeout:?}; stderr: {:#?}",
                    self.stderr_lines
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn collect_stderr(&mut self) {
        while let Ok(line) = self.stderr.try_recv() {
            self.stderr_lines.push(line);
        }
    }

    /// Returns what the process wrote to stdout so far, lines joined with newlines.
    pub fn stdout_text(&mut self) -> String {
        let mut text = String::new();
        while let Ok(line) = self.stdout.try_recv() {
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    /// Sends SIGINT, as Ctrl-C does.
    pub fn interrupt(&self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn lines_of(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Runs a finished command and returns (exit code, stdout, stderr).
pub fn run_to_end(command: &mut Command) -> (Option<i32>, String, String) {
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("run ringmaster");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Asserts that stderr holds exactly one error line, mentioning `needle`, and no panic.
pub fn assert_one_error_line(stderr: &[String], needle: &str) {
    let errors: Vec<&String> = stderr
        .iter()
        .filter(|line| line.to_lowercase().contains("error"))
        .collect();
    assert!(
        !stderr
            .iter()
            .any(|line| line.contains("panicked") || line.contains("RUST_BACKTRACE")),
        "no panic expected: {stderr:#?}"
    );
    assert_eq!(
        errors.len(),
        1,
        "exactly one error line expected: {stderr:#?}"
    );
    assert!(errors[0].starts_with("ringmaster: error: "), "{stderr:#?}");
    assert!(
        errors[0].contains(needle),
        "error line should mention {needle:?}: {stderr:#?}"
    );
}

/// A deployment of actors on a manual clock and a database of its own, driven by messages.
pub struct TestDeployment {
    pub actors: ringmaster::actors::Actors,
    pub clock: std::sync::Arc<ringmaster::domain::clock::ManualClock>,
    pub db: TestDb,
}

impl TestDeployment {
    /// Starts `hosts`, enrolls `nodes` nodes of class `baremetal`, gives them owners and runs
    /// every host's tracker pass; the invariants hold at the end.
    pub async fn start(hosts: &[&str], nodes: usize) -> TestDeployment {
        let db = TestDb::new();
        let pool = db.pool();
        let clock = std::sync::Arc::new(ringmaster::domain::clock::ManualClock::new(
            chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        ));
        // The production start path, hosts included (`app::start_deployment`).
        let actors =
            ringmaster::app::start_deployment(pool, clock.clone(), &test_deployment_config(hosts))
                .await
                .expect("start the deployment");
        let deployment = TestDeployment { actors, clock, db };
        deployment.heartbeat(hosts).await;
        if nodes > 0 {
            deployment.enroll(nodes).await;
            let report = deployment.rebalance().await;
            assert_eq!(
                report.claimed.len(),
                nodes,
                "every node gets its first owner"
            );
            deployment.track(hosts).await;
            // The refreshes the claims queued (NodesAssigned) may run after that pass: a second
            // one comes after them, so no pass is left to run behind a test's back.
            deployment.track(hosts).await;
        }
        deployment.audit();
        deployment
    }

    pub async fn enroll(&self, count: usize) -> Vec<uuid::Uuid> {
        use ringmaster::db::ironic::NewIronicNode;
        let nodes: Vec<NewIronicNode> = (0..count)
            .map(|index| {
                NewIronicNode::enrolling(
                    uuid::Uuid::new_v4(),
                    Some(format!("node-{index}")),
                    "baremetal",
                )
            })
            .collect();
        let uuids = nodes.iter().map(|node| node.uuid).collect();
        self.actors
            .ironic
            .send(ringmaster::actors::ironic::EnrollNodes { nodes })
            .await
            .unwrap()
            .unwrap();
        uuids
    }

    /// Sends a heartbeat to each host and checks that it was recorded.
    pub async fn heartbeat(&self, hosts: &[&str]) {
        for host in hosts {
            let address = self
                .actors
                .hosts
                .get(host)
                .unwrap_or_else(|| panic!("host {host} runs"));
            let recorded = address
                .send(ringmaster::actors::compute_host::Heartbeat)
                .await
                .unwrap()
                .unwrap();
            assert!(recorded, "heartbeat of {host} recorded");
        }
    }

    /// Runs each host's tracker pass; every pass must succeed.
    pub async fn track(
        &self,
        hosts: &[&str],
    ) -> Vec<ringmaster::actors::compute_host::TrackerReport> {
        let mut reports = Vec::new();
        for host in hosts {
            let address = self.actors.hosts.get(host).unwrap();
            let report = address
                .send(ringmaster::actors::compute_host::UpdateAvailableResource)
                .await
                .unwrap()
                .unwrap_or_else(|error| panic!("tracker pass of {host}: {error}"));
            reports.push(report);
        }
        reports
    }

    pub async fn rebalance(&self) -> ringmaster::actors::rebalancer::RebalanceReport {
        let report = self
            .actors
            .rebalancer
            .send(ringmaster::actors::rebalancer::RebalanceNow)
            .await
            .unwrap()
            .unwrap();
        assert!(report.leader, "the only rebalancer leads");
        report
    }

    /// The rebalancer lease this deployment leads under (it must lead).
    pub async fn lease(&self) -> ringmaster::db::leases::LeaseToken {
        let ring = self
            .actors
            .rebalancer
            .send(ringmaster::actors::rebalancer::GetRing)
            .await
            .unwrap();
        ringmaster::db::leases::LeaseToken {
            holder: self.actors.process,
            epoch: ring.lease_epoch.expect("this deployment leads"),
        }
    }

    pub fn clock_now(&self) -> chrono::DateTime<chrono::Utc> {
        use ringmaster::domain::clock::Clock;
        self.clock.now()
    }

    pub fn advance(&self, seconds: i64) {
        self.clock.advance(chrono::Duration::seconds(seconds));
    }

    /// Panics naming every broken invariant (time judged by the deployment's manual clock).
    pub fn audit(&self) {
        let mut conn = self.db.conn();
        let clock = self.actors.settings.audit_clock(self.clock_now());
        let violations = ringmaster::db::audit::check_invariants_at(&mut conn, clock).unwrap();
        assert!(violations.is_empty(), "invariants broken: {violations:#?}");
    }

    pub fn nodes(&self) -> Vec<ringmaster::db::node_views::NodeView> {
        ringmaster::db::node_views::list_node_views(&mut self.db.conn()).unwrap()
    }

    /// Each node's compute-node and provider uuid.
    pub fn identities(
        &self,
    ) -> std::collections::BTreeMap<uuid::Uuid, (Option<uuid::Uuid>, Option<uuid::Uuid>)> {
        self.nodes()
            .into_iter()
            .map(|node| {
                (
                    node.uuid,
                    (node.compute_node_uuid, node.resource_provider_uuid),
                )
            })
            .collect()
    }

    pub fn owner_of(&self, node: &str) -> Option<String> {
        self.nodes()
            .into_iter()
            .find(|view| view.uuid.to_string() == node)
            .and_then(|view| view.host)
    }

    pub async fn boot(
        &self,
        name: &str,
    ) -> Result<ringmaster::domain::instance::Instance, ringmaster::actors::scheduler::BootError>
    {
        self.boot_with_devices(name, 0).await
    }

    pub async fn boot_with_devices(
        &self,
        name: &str,
        pci_devices: u32,
    ) -> Result<ringmaster::domain::instance::Instance, ringmaster::actors::scheduler::BootError>
    {
        self.actors
            .scheduler
            .send(boot_request(name, pci_devices))
            .await
            .unwrap()
    }

    /// Allocations as (consumer, provider uuid, used), sorted.
    pub fn allocations(&self) -> Vec<(uuid::Uuid, uuid::Uuid, i32)> {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            consumer: uuid::Uuid,
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            provider: uuid::Uuid,
            #[diesel(sql_type = diesel::sql_types::Integer)]
            used: i32,
        }
        use diesel::RunQueryDsl;
        diesel::sql_query(
            "SELECT a.consumer_id AS consumer, rp.uuid AS provider, a.used FROM allocations a
               JOIN resource_providers rp ON rp.id = a.resource_provider_id ORDER BY 1, 2",
        )
        .load::<Row>(&mut self.db.conn())
        .unwrap()
        .into_iter()
        .map(|row| (row.consumer, row.provider, row.used))
        .collect()
    }
}

/// A boot of one `baremetal` node named `name` with `pci_devices` PCI devices.
pub fn boot_request(name: &str, pci_devices: u32) -> ringmaster::actors::scheduler::Boot {
    ringmaster::actors::scheduler::Boot {
        name: name.to_owned(),
        resource_class: "baremetal".to_owned(),
        project: "project".to_owned(),
        user: "user".to_owned(),
        pci_devices,
    }
}

/// Polls `check` every 100 ms until it returns `Some`, or panics after `timeout`.
pub fn eventually<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sends one HTTP/1.0 request and returns the status code and body.
pub fn http(address: &str, method: &str, path: &str) -> (u16, String) {
    http_json(address, method, path, "")
}

/// Starts `demo` with the FAST timings on a data directory of its own; returns the folder
/// (removed on drop), the process and its `host:port`.
pub fn start_demo(label: &str) -> (TempDir, Running, String) {
    start_demo_with(label, &[])
}

/// `start_demo` with more arguments (`--hosts`, `--nodes` …).
pub fn start_demo_with(label: &str, extra: &[&str]) -> (TempDir, Running, String) {
    let dir = TempDir::new(label);
    let mut command = ringmaster();
    command
        .args(["demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path.join("pg"))
        .args(FAST)
        .args(extra)
        .env("RUST_LOG", "warn");
    let mut demo = Running::spawn(command);
    let address =
        address_of(&demo.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    (dir, demo, address)
}

/// Returns `host:port` from the "listening on http://host:port/" line.
pub fn address_of(line: &str) -> String {
    line.rsplit("http://")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned()
}

/// Flags that make a `serve`/`demo` process react within a couple of seconds.
pub const FAST: [&str; 8] = [
    "--report-interval",
    "200ms",
    "--service-down-time",
    "2s",
    "--rebalance-interval",
    "200ms",
    "--update-resources-interval",
    "500ms",
];

/// Sends one Placement request (optional microversion, token and JSON body) and returns the
/// status, the headers and the JSON body (`Null` when the body is not JSON).
pub async fn placement_call(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    version: Option<&str>,
    token: Option<&str>,
    body: Option<serde_json::Value>,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
    let mut request = app.client.request(method, app.url(path));
    if let Some(version) = version {
        request = request.header("openstack-api-version", format!("placement {version}"));
    }
    if let Some(token) = token {
        request = request.header("x-auth-token", token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
    )
}

/// Creates Placement provider `uuid` (named `rp-{uuid}`); asserts success.
pub async fn create_placement_provider(app: &TestApp, uuid: &str) {
    let (status, _, body) = placement_call(
        app,
        reqwest::Method::POST,
        "/placement/resource_providers",
        Some("1.20"),
        Some("admin"),
        Some(serde_json::json!({"name": format!("rp-{uuid}"), "uuid": uuid})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// Sends the PUT requests (path, body) all at once; returns each (status, error code).
pub async fn placement_race(
    app: &TestApp,
    requests: impl Iterator<Item = (String, serde_json::Value)>,
    version: &str,
) -> Vec<(u16, serde_json::Value)> {
    let sent = requests.map(|(path, body)| {
        app.client
            .put(app.url(&path))
            .header("x-auth-token", "admin")
            .header("openstack-api-version", format!("placement {version}"))
            .json(&body)
            .send()
    });
    let mut outcomes = Vec::new();
    for response in futures_util::future::join_all(sent).await {
        let response = response.unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
        outcomes.push((status, body["errors"][0]["code"].clone()));
    }
    outcomes
}

/// Sends one HTTP/1.0 request with a JSON body and returns the status code and body.
pub fn http_json(address: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// Runs a PostgreSQL server program as the server's user (`postgres` when we are root).
fn pg_command(program: &str) -> Command {
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .find(|dir| dir.join(program).exists())
        .map(|dir| dir.join(program))
        .unwrap_or_else(|| program.into());
    if nix::unistd::geteuid().is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(bin);
        command
    } else {
        Command::new(bin)
    }
}

/// The server of a throwaway cluster, restarted by a test under a running deployment: the
/// new server runs on the same data directory and socket; it is stopped when this is dropped
/// (before the cluster, whose keeper then removes the folder).
pub struct RestartedServer {
    data_dir: std::path::PathBuf,
}

impl RestartedServer {
    /// Stops the cluster's server (fast shutdown: every connection is cut), keeps it down for
    /// `down`, then starts it again on the same data directory.
    pub fn restart(data_dir: &std::path::Path, down: Duration) -> RestartedServer {
        let pid_file = data_dir.join("postmaster.pid");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        eventually(Duration::from_secs(30), "the server to stop", || {
            (!pid_file.exists()).then_some(())
        });
        std::thread::sleep(down);
        let dir = data_dir.to_string_lossy().into_owned();
        let (code, _, stderr) = run_to_end(pg_command("pg_ctl").args([
            "start",
            "-w",
            "-D",
            &dir,
            "-l",
            &format!("{dir}/restarted.log"),
            "-o",
            &format!(
                "-k {dir} -c listen_addresses= -c port=5432 -c max_connections=300 -c fsync=off"
            ),
        ]));
        assert_eq!(code, Some(0), "pg_ctl start: {stderr}");
        RestartedServer {
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// Kills one backend with SIGKILL: the server ends every session and recovers from the
    /// crash (about 0.3 s), as when a backend dies.
    pub fn kill_a_backend(url: &str, application_prefix: &str) {
        #[derive(diesel::QueryableByName)]
        struct Backend {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            pid: i32,
        }
        use diesel::RunQueryDsl;
        let mut conn = PgConnection::establish(url).unwrap();
        let backend: Backend = diesel::sql_query(
            "SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1 || '%' LIMIT 1",
        )
        .bind::<diesel::sql_types::Text, _>(application_prefix)
        .get_result(&mut conn)
        .unwrap();
        drop(conn);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(backend.pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    }
}

impl Drop for RestartedServer {
    fn drop(&mut self) {
        let dir = self.data_dir.to_string_lossy().into_owned();
        let _ = run_to_end(pg_command("pg_ctl").args(["stop", "-m", "immediate", "-D", &dir]));
    }
}
