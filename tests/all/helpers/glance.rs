//! A real OpenStack Glance for a test (`scripts/glance`, on a port and state folder of its own,
//! without Keystone), stopped when dropped; one test at a time uses it.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use serde_json::{Value, json};

use super::process::{TempDir, run_to_end};

const TEST_PORT: &str = "19393";

/// One test's Glance.
pub struct RealGlance {
    /// Its endpoint, `http://127.0.0.1:PORT`.
    pub url: String,
    state: TempDir,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl RealGlance {
    pub fn start() -> RealGlance {
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = TempDir::new("glance");
        let (code, stdout, stderr) =
            run_to_end(script(&state).args(["start", "--port", TEST_PORT]));
        assert_eq!(code, Some(0), "scripts/glance start: {stderr}");
        RealGlance {
            url: stdout.trim().to_owned(),
            state,
            _one_at_a_time: guard,
        }
    }

    /// Creates an image with `properties` (name, visibility, `trait:…`); with `data`, uploads
    /// it (the image becomes active), else it stays queued. Returns its id.
    pub async fn image(&self, properties: Value, data: Option<&[u8]>) -> String {
        let mut body = json!({"disk_format": "raw", "container_format": "bare"});
        for (key, value) in properties.as_object().expect("properties").iter() {
            body[key] = value.clone();
        }
        let client = crate::helpers::http_client();
        let created: Value = client
            .post(format!("{}/v2/images", self.url))
            .json(&body)
            .send()
            .await
            .expect("glance answers")
            .json()
            .await
            .expect("an image");
        let id = created["id"].as_str().expect("an id").to_owned();
        if let Some(data) = data {
            let status = client
                .put(format!("{}/v2/images/{id}/file", self.url))
                .header("content-type", "application/octet-stream")
                .body(data.to_vec())
                .send()
                .await
                .expect("glance answers")
                .status();
            assert_eq!(status, 204, "upload of {id}");
        }
        id
    }

    /// Image `id` as Glance shows it.
    pub async fn show(&self, id: &str) -> Value {
        reqwest::get(format!("{}/v2/images/{id}", self.url))
            .await
            .expect("glance answers")
            .json()
            .await
            .expect("an image")
    }

    /// Stops Glance now (the image service goes away under a running ringmaster).
    pub fn stop(&self) {
        let _ = run_to_end(script(&self.state).arg("stop"));
    }
}

impl Drop for RealGlance {
    fn drop(&mut self) {
        self.stop();
    }
}

fn script(state: &TempDir) -> Command {
    let mut command = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/glance"));
    command.env("GLANCE_STATE_DIR", state.path.join("state"));
    command
}
