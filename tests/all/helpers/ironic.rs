//! A real OpenStack Ironic for a test (`scripts/ironic`, on a port and state folder of its own),
//! stopped when dropped. One test at a time uses it.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use super::process::{TempDir, run_to_end};

/// The port test Ironics listen on (not the script's default, so a developer's own stays).
const TEST_PORT: &str = "16385";

/// One test's Ironic.
pub struct RealIronic {
    pub url: String,
    state: TempDir,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl RealIronic {
    /// Starts a standalone Ironic with no nodes (the script installs its venv on first use).
    pub fn start() -> RealIronic {
        RealIronic::start_with(&[])
    }

    /// Starts an Ironic with `scripts/ironic start`'s options `extra` (`--keystone URL`,
    /// `--tls CERT KEY`, `--cafile CA`).
    pub fn start_with(extra: &[&str]) -> RealIronic {
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = TempDir::new("ironic");
        let (code, stdout, stderr) = run_to_end(
            script(&state)
                .args(["start", "--port", TEST_PORT])
                .args(extra),
        );
        if code != Some(0) {
            let _ = run_to_end(script(&state).arg("stop"));
        }
        assert_eq!(code, Some(0), "scripts/ironic start: {stderr}");
        RealIronic {
            url: stdout.trim().to_owned(),
            state,
            _one_at_a_time: guard,
        }
    }

    /// Enrolls `count` fake-hardware nodes and makes them available; returns their uuids.
    pub fn enroll(&self, count: usize) -> Vec<uuid::Uuid> {
        self.enroll_with(count, &[])
    }

    /// Enrolls `count` nodes with `scripts/ironic enroll`'s options `extra` (`--trait T`,
    /// `--resource-class C`, `--deploy-interface direct`); returns their uuids.
    pub fn enroll_with(&self, count: usize, extra: &[&str]) -> Vec<uuid::Uuid> {
        let (code, stdout, stderr) = run_to_end(
            script(&self.state)
                .args(["enroll", &count.to_string()])
                .args(extra),
        );
        assert_eq!(code, Some(0), "scripts/ironic enroll: {stderr}");
        stdout
            .lines()
            .map(|line| line.trim().parse().unwrap())
            .collect()
    }
}

impl RealIronic {
    /// Stops the Ironic process and keeps its state: an outage.
    pub fn pause(&self) {
        let (code, _, stderr) = run_to_end(script(&self.state).arg("pause"));
        assert_eq!(code, Some(0), "scripts/ironic pause: {stderr}");
    }

    /// Starts it again after `pause`, on the same state and port.
    pub fn resume(&self) {
        let (code, _, stderr) = run_to_end(script(&self.state).arg("resume"));
        assert_eq!(code, Some(0), "scripts/ironic resume: {stderr}");
    }

    /// Settings for a deployment that takes its nodes from this Ironic (quick polls).
    pub fn settings(&self) -> ringmaster::config::IronicSettings {
        let mut settings = ringmaster::config::IronicSettings::new(&self.url);
        settings.poll_interval = std::time::Duration::from_millis(100);
        settings.deploy_timeout = std::time::Duration::from_secs(60);
        settings
    }

    /// A request to Ironic's API (`path` under `/v1`) at a recent microversion.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        crate::helpers::http_client()
            .request(method, format!("{}/v1{path}", self.url))
            .header("X-OpenStack-Ironic-API-Version", "1.82")
    }

    /// Node `uuid` as Ironic shows it.
    pub async fn node(&self, uuid: uuid::Uuid) -> serde_json::Value {
        let response = self
            .request(reqwest::Method::GET, &format!("/nodes/{uuid}"))
            .send()
            .await
            .expect("ironic answers");
        assert_eq!(response.status(), 200, "GET node {uuid}");
        response.json().await.expect("a node")
    }

    /// Puts node `uuid` in maintenance (`on`) or takes it out, through Ironic's API.
    pub async fn set_maintenance(&self, uuid: uuid::Uuid, on: bool) {
        let request = self.request(
            if on {
                reqwest::Method::PUT
            } else {
                reqwest::Method::DELETE
            },
            &format!("/nodes/{uuid}/maintenance"),
        );
        let request = if on {
            request.json(&serde_json::json!({"reason": "a test"}))
        } else {
            request
        };
        let status = request.send().await.expect("ironic answers").status();
        assert_eq!(status, 202, "maintenance {on} of node {uuid}");
    }

    /// Deletes node `uuid` from Ironic.
    pub async fn delete_node(&self, uuid: uuid::Uuid) {
        let status = self
            .request(reqwest::Method::DELETE, &format!("/nodes/{uuid}"))
            .send()
            .await
            .expect("ironic answers")
            .status();
        assert_eq!(status, 204, "delete node {uuid}");
    }

    /// The lines of Ironic's API log that name `needle` (e.g. a node's uuid).
    pub fn api_log_lines(&self, needle: &str) -> Vec<String> {
        let log = std::fs::read_to_string(self.state.path.join("state").join("ironic.log"))
            .unwrap_or_default();
        log.lines()
            .filter(|line| line.contains("ironic.api") && line.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for RealIronic {
    fn drop(&mut self) {
        let _ = run_to_end(script(&self.state).arg("stop"));
    }
}

/// `scripts/ironic` with its state in `state`.
fn script(state: &TempDir) -> Command {
    let mut command = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ironic"));
    command.env("IRONIC_STATE_DIR", state.path.join("state"));
    command
}
