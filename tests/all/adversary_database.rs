//! The database away, as a load balancer's checks see it (issue 25, item 9): `/healthz` is
//! liveness and stays 200, `/readyz` is readiness and is 503 while PostgreSQL refuses
//! connections, is frozen (SIGSTOP) or is silent (its packets dropped) — each answered within
//! the check's own deadline, never after a pool's checkout timeout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use ringmaster::db::cluster::Cluster;

use crate::helpers::{
    RestartedServer, Running, SilenceableProxy, address_of, eventually, pg_command, postmaster_pid,
    ringmaster, run_to_end,
};

/// The longest a check may take here: the server's deadline is one second; the rest is slack
/// for a loaded machine (the measured figures are in the closing note of issue 25).
const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// GET `path`; the status, or `None` when no answer came within `ANSWER_WITHIN`.
fn check(address: &str, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(ANSWER_WITHIN)).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").ok()?;
    let mut answer = String::new();
    let started = Instant::now();
    stream.read_to_string(&mut answer).ok()?;
    if started.elapsed() > ANSWER_WITHIN {
        return None;
    }
    answer.split(' ').nth(1)?.parse().ok()
}

/// Three checks in a row while the database is away: liveness 200, readiness 503, each in
/// time.
fn assert_away(address: &str, how: &str) {
    for _ in 0..3 {
        assert_eq!(check(address, "/healthz"), Some(200), "{how}: /healthz");
        assert_eq!(check(address, "/readyz"), Some(503), "{how}: /readyz");
    }
}

fn wait_ready(address: &str, what: &str) {
    eventually(Duration::from_secs(30), what, || {
        (check(address, "/readyz") == Some(200)).then_some(())
    });
}

/// The postmaster of the cluster in `data_dir` and its children (the backends).
fn server_processes(data_dir: &std::path::Path) -> Vec<i32> {
    let postmaster = postmaster_pid(data_dir);
    let mut pids = vec![postmaster];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the comm may hold spaces, so read after its ')'.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<i32>().ok());
        if parent == Some(postmaster)
            && let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>()
        {
            pids.push(pid);
        }
    }
    pids
}

fn signal_all(pids: &[i32], signal: nix::sys::signal::Signal) {
    for pid in pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), signal);
    }
}

#[test]
fn readiness_answers_in_time_whether_the_database_refuses_freezes_or_goes_silent() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let data_dir = cluster.data_dir().to_path_buf();
    let proxy = SilenceableProxy::start(data_dir.join(".s.PGSQL.5432"));
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--database-grace", "5m"])
        .env("DATABASE_URL", proxy.url("postgres"))
        .env("RUST_LOG", "warn");
    let mut serve = Running::spawn(command);
    let address =
        address_of(&serve.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    wait_ready(&address, "ready at start");

    // Silent: no packet answered.
    proxy.silence(true);
    assert_away(&address, "silent");
    proxy.silence(false);
    wait_ready(&address, "ready after the silence");

    // Frozen: the server and every backend stopped.
    let frozen = server_processes(&data_dir);
    signal_all(&frozen, nix::sys::signal::Signal::SIGSTOP);
    assert_away(&address, "frozen");
    signal_all(&frozen, nix::sys::signal::Signal::SIGCONT);
    wait_ready(&address, "ready after the freeze");

    // Refused: the server stopped (its socket gone).
    let dir = data_dir.to_string_lossy().into_owned();
    let (code, _, stderr) =
        run_to_end(pg_command("pg_ctl").args(["stop", "-m", "fast", "-D", &dir]));
    assert_eq!(code, Some(0), "pg_ctl stop: {stderr}");
    assert_away(&address, "stopped");
    let restarted = RestartedServer::start(&data_dir);
    wait_ready(&address, "ready after the restart");
    serve.interrupt();
    let _ = serve.wait_exit(Duration::from_secs(30));
    drop(restarted);
}
