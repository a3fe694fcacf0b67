//! A real OpenStack Keystone for a test (`scripts/keystone`, on a port and state folder of its
//! own), stopped when dropped; one test at a time uses it. Its users: `admin` (admin),
//! `placement` (ringmaster's service user) and `reader` (reader).

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use super::process::{TempDir, run_to_end};

const TEST_PORT: &str = "15357";

/// One test's Keystone.
pub struct RealKeystone {
    /// The identity endpoint, `http://127.0.0.1:PORT/v3`.
    pub url: String,
    /// The CA of its certificate, when it serves https.
    cafile: Option<std::path::PathBuf>,
    state: TempDir,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl RealKeystone {
    /// Starts Keystone with tokens that live `expiration` seconds.
    pub fn start(expiration: u32) -> RealKeystone {
        RealKeystone::start_with(expiration, None)
    }

    /// Starts Keystone on https with `tls` (certificate, key, and the CA that signed them).
    pub fn start_tls(cert: &Path, key: &Path, cafile: &Path) -> RealKeystone {
        RealKeystone::start_with(3600, Some((cert, key, cafile)))
    }

    fn start_with(expiration: u32, tls: Option<(&Path, &Path, &Path)>) -> RealKeystone {
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = TempDir::new("keystone");
        let cafile = tls.map(|(_, _, cafile)| cafile.to_owned());
        let mut command = script(&state, cafile.as_deref());
        command
            .args(["start", "--port", TEST_PORT])
            .env("KEYSTONE_TOKEN_EXPIRATION", expiration.to_string());
        if let Some((cert, key, _)) = tls {
            command.arg("--tls").arg(cert).arg(key);
        }
        let (code, stdout, stderr) = run_to_end(&mut command);
        if code != Some(0) {
            // Nothing may keep the port: the next test's Keystone would not start.
            let _ = run_to_end(script(&state, cafile.as_deref()).arg("stop"));
        }
        assert_eq!(code, Some(0), "scripts/keystone start: {stderr}");
        RealKeystone {
            url: stdout.trim().to_owned(),
            cafile,
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
            tls: ringmaster::tls::client::ClientTls::load(
                ringmaster::tls::client::ClientTlsSettings {
                    cafile: self.cafile.clone(),
                    ..Default::default()
                },
            )
            .unwrap(),
            region: None,
        }
    }

    /// Logs `user` in to `project` with `password`; returns the token.
    pub async fn login(&self, user: &str, password: &str, project: &str) -> String {
        let body = serde_json::json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"id": "default"}, "password": password}}},
            "scope": {"project": {"name": project, "domain": {"id": "default"}}}}});
        let response = self
            .client()
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
        let status = self
            .client()
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

impl RealKeystone {
    /// A client trusting its CA (or the system's store).
    fn client(&self) -> reqwest::Client {
        ringmaster::tls::client::ClientTls::load(ringmaster::tls::client::ClientTlsSettings {
            cafile: self.cafile.clone(),
            ..Default::default()
        })
        .unwrap()
        .http_client(std::time::Duration::from_secs(30))
        .unwrap()
    }

    /// Registers services in the catalog (`scripts/keystone catalog`'s options: `--baremetal
    /// URL` …).
    pub fn catalog(&self, options: &[&str]) {
        let (code, _, stderr) = run_to_end(
            script(&self.state, self.cafile.as_deref())
                .arg("catalog")
                .args(options),
        );
        assert_eq!(code, Some(0), "scripts/keystone catalog: {stderr}");
    }
}

impl Drop for RealKeystone {
    fn drop(&mut self) {
        let _ = run_to_end(script(&self.state, self.cafile.as_deref()).arg("stop"));
    }
}

fn script(state: &TempDir, cafile: Option<&Path>) -> Command {
    let mut command = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/keystone"));
    command.env("KEYSTONE_STATE_DIR", state.path.join("state"));
    if let Some(cafile) = cafile {
        command.env("KEYSTONE_CAFILE", cafile);
    }
    command
}
