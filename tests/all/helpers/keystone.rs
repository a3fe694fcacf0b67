//! A real OpenStack Keystone for a test (`scripts/keystone`, on a port and state folder of its
//! own), stopped when dropped; one test at a time uses it. Its users: `admin` (admin),
//! `placement` (ringmaster's service user) and `reader` (reader).

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use super::process::{TempDir, run_to_end};

const TEST_PORT: &str = "15357";

/// One test's Keystone.
pub struct RealKeystone {
    /// The identity endpoint, `http://127.0.0.1:PORT/v3`.
    pub url: String,
    state: TempDir,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl RealKeystone {
    /// Starts Keystone with tokens that live `expiration` seconds.
    pub fn start(expiration: u32) -> RealKeystone {
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = TempDir::new("keystone");
        let (code, stdout, stderr) = run_to_end(
            script(&state)
                .args(["start", "--port", TEST_PORT])
                .env("KEYSTONE_TOKEN_EXPIRATION", expiration.to_string()),
        );
        assert_eq!(code, Some(0), "scripts/keystone start: {stderr}");
        RealKeystone {
            url: stdout.trim().to_owned(),
            state,
            _one_at_a_time: guard,
        }
    }

    /// Settings for ringmaster's service user, believing a token for `cache` at most.
    pub fn settings(&self, cache: std::time::Duration) -> ringmaster::keystone::KeystoneSettings {
        ringmaster::keystone::KeystoneSettings {
            url: self.url.clone(),
            user: "placement".to_owned(),
            password: "placement-secret".to_owned(),
            project: "service".to_owned(),
            user_domain: "Default".to_owned(),
            project_domain: "Default".to_owned(),
            cache_lifetime: cache,
            tls: ringmaster::tls::client::ClientTls::system(),
            region: None,
        }
    }

    /// Logs `user` in to `project` with `password`; returns the token.
    pub async fn login(&self, user: &str, password: &str, project: &str) -> String {
        let body = serde_json::json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"id": "default"}, "password": password}}},
            "scope": {"project": {"name": project, "domain": {"id": "default"}}}}});
        let response = crate::helpers::http_client()
            .post(format!("{}/auth/tokens", self.url))
            .json(&body)
            .send()
            .await
            .expect("keystone answers");
        assert_eq!(response.status(), 201, "login of {user}");
        response.headers()["x-subject-token"]
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// Revokes `token` (as `admin`).
    pub async fn revoke(&self, token: &str) {
        let admin = self.login("admin", "admin-secret", "admin").await;
        let status = crate::helpers::http_client()
            .delete(format!("{}/auth/tokens", self.url))
            .header("x-auth-token", admin)
            .header("x-subject-token", token)
            .send()
            .await
            .expect("keystone answers")
            .status();
        assert_eq!(status, 204, "revoke");
    }
}

impl Drop for RealKeystone {
    fn drop(&mut self) {
        let _ = run_to_end(script(&self.state).arg("stop"));
    }
}

fn script(state: &TempDir) -> Command {
    let mut command = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/keystone"));
    command.env("KEYSTONE_STATE_DIR", state.path.join("state"));
    command
}
