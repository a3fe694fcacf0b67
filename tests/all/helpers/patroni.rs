//! A real Patroni cluster (issue 28): `scripts/patroni` runs etcd and three PostgreSQL 15
//! members in synchronous strict mode on loopback ports, one cluster at a time. Its timings are
//! shorter than Patroni's defaults (ttl 12 s, loop_wait 2 s, retry_timeout 4 s: a hard failover
//! in about 12 s instead of 30–40 s); the script's own defaults are Patroni's.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::{TempDir, run_to_end};

/// The first of the ports the test cluster takes (etcd, PostgreSQL, Patroni's REST API).
const PORT_BASE: &str = "17500";

/// A running cluster; stopped (and its directory removed) when dropped.
pub struct RealPatroni {
    /// The multi-host URL of database `ringmaster`, read-write members only.
    pub url: String,
    state: TempDir,
    _one_at_a_time: MutexGuard<'static, ()>,
}

/// One loss of the primary, as `scripts/patroni` reports it.
#[derive(Debug, Clone)]
pub struct Promotion {
    pub lost: String,
    pub leader: String,
    /// Unix times, in seconds.
    pub lost_at: f64,
    pub promoted_at: f64,
}

/// Fails the test, naming what is missing, unless a cluster can start here (`scripts/patroni
/// check`: etcd installed, Patroni's venv made). Where etcd or python3's venv is missing at
/// build time the Patroni tests are ignored with their reason (`cfg(missing_patroni)`,
/// build.rs), except under CI=true, where they run and this fails them.
pub fn require_patroni() {
    let checked = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/patroni"))
        .arg("check")
        .output();
    let why = match checked {
        Ok(output) if output.status.success() => return,
        Ok(output) => String::from_utf8_lossy(&output.stderr).trim().to_string(),
        Err(error) => error.to_string(),
    };
    panic!(
        "the Patroni tests need scripts/bootstrap --with-patroni, then scripts/patroni check: {why}"
    );
}

impl RealPatroni {
    pub fn start() -> RealPatroni {
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = TempDir::new("patroni");
        let (code, stdout, stderr) = run_to_end(script(&state).args([
            "start",
            "--ttl",
            "12",
            "--loop-wait",
            "2",
            "--retry-timeout",
            "4",
        ]));
        assert_eq!(code, Some(0), "scripts/patroni start: {stderr}");
        RealPatroni {
            url: stdout.trim().to_owned(),
            state,
            _one_at_a_time: guard,
        }
    }

    /// `patronictl switchover` to the synchronous standby; returns once the old leader follows.
    pub fn switchover(&self) -> Promotion {
        self.promotion(&["switchover"])
    }

    /// A hard failover: the leader's Patroni and PostgreSQL SIGKILLed (or, `silent`, stopped
    /// with their packets dropped); returns once a standby is promoted.
    pub fn failover(&self, silent: bool) -> Promotion {
        if silent {
            self.promotion(&["failover", "--silent"])
        } else {
            self.promotion(&["failover"])
        }
    }

    /// Brings back the members failed over, as replicas.
    pub fn recover(&self) {
        let (code, _, stderr) = run_to_end(script(&self.state).arg("recover"));
        assert_eq!(code, Some(0), "scripts/patroni recover: {stderr}");
    }

    /// `patronictl list`, for messages.
    pub fn status(&self) -> String {
        run_to_end(script(&self.state).arg("status")).1
    }

    fn promotion(&self, args: &[&str]) -> Promotion {
        let (code, stdout, stderr) = run_to_end(script(&self.state).args(args));
        assert_eq!(code, Some(0), "scripts/patroni {args:?}: {stderr}");
        let line: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
        Promotion {
            lost: line["lost"].as_str().unwrap().to_owned(),
            leader: line["leader"].as_str().unwrap().to_owned(),
            lost_at: line["lost_at"].as_f64().unwrap(),
            promoted_at: line["promoted_at"].as_f64().unwrap(),
        }
    }
}

impl Drop for RealPatroni {
    fn drop(&mut self) {
        let _ = run_to_end(script(&self.state).arg("stop"));
    }
}

fn script(state: &TempDir) -> Command {
    let mut command = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/patroni"));
    command
        .env("PATRONI_STATE_DIR", state.path.join("cluster"))
        .env("PATRONI_PORT_BASE", PORT_BASE);
    command
}
