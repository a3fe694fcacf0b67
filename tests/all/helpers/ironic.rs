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
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = TempDir::new("ironic");
        let (code, stdout, stderr) =
            run_to_end(script(&state).args(["start", "--port", TEST_PORT]));
        assert_eq!(code, Some(0), "scripts/ironic start: {stderr}");
        RealIronic {
            url: stdout.trim().to_owned(),
            state,
            _one_at_a_time: guard,
        }
    }

    /// Enrolls `count` fake-hardware nodes and makes them available; returns their uuids.
    pub fn enroll(&self, count: usize) -> Vec<uuid::Uuid> {
        let (code, stdout, stderr) =
            run_to_end(script(&self.state).args(["enroll", &count.to_string()]));
        assert_eq!(code, Some(0), "scripts/ironic enroll: {stderr}");
        stdout
            .lines()
            .map(|line| line.trim().parse().unwrap())
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
