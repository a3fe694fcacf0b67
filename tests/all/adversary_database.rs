//! The database away, as a load balancer's checks see it (issue 25, item 9): `/healthz` is
//! liveness and stays 200, `/readyz` is readiness and is 503 while PostgreSQL refuses
//! connections, is frozen (SIGSTOP) or is silent (its packets dropped) — each answered within
//! the check's own deadline, never after a pool's checkout timeout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use diesel::{Connection, PgConnection, RunQueryDsl};
use ringmaster::db::cluster::Cluster;

use crate::helpers::{
    RestartedServer, SilenceableProxy, TestDb, boot_instance, eventually, get_answer, pg_command,
    postmaster_pid, run_to_end, scratch_server, start_serve,
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
    let mut slowest = Duration::ZERO;
    for _ in 0..3 {
        for (path, status) in [("/healthz", 200), ("/readyz", 503)] {
            let asked = Instant::now();
            assert_eq!(check(address, path), Some(status), "{how}: {path}");
            slowest = slowest.max(asked.elapsed());
        }
    }
    eprintln!("{how}: the slowest check answered in {slowest:?}");
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
    let (mut serve, address) =
        start_serve(&proxy.url("postgres"), &["--database-grace", "5m"], "warn");
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

/// GET Placement's `path` with a token; the status and the JSON body.
fn placement_get(address: &str, path: &str) -> (u16, serde_json::Value, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {address}\r\nX-Auth-Token: admin\r\n\
         OpenStack-API-Version: placement 1.38\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (
        status,
        serde_json::from_str(body).unwrap_or_default(),
        head.to_owned(),
    )
}

/// Issue 25, item 3: the database goes away while a build deploys. The boot answers 503 (its
/// outcome unknown); the build is settled as soon as the database is back — not at the build
/// timeout (10 minutes) —, its claim released; a retry with the same uuid answers that
/// instance and books nothing; a retry that asks for something else is 409.
#[test]
fn a_build_cut_by_a_database_outage_is_settled_when_it_comes_back_and_a_retry_books_nothing() {
    let db = TestDb::new();
    let (_serve, address) = start_serve(db.url(), &["--hosts", "cmp-1", "--nodes", "1"], "warn");
    the_node_is_available_and_reported(&address);
    // The deploy will wait for this lock on the node's row, until its backend is ended.
    let mut holder = db.conn();
    diesel::sql_query("BEGIN").execute(&mut holder).unwrap();
    diesel::sql_query("SELECT uuid FROM ironic_nodes FOR UPDATE")
        .execute(&mut holder)
        .unwrap();
    let uuid = "d0000000-0000-4000-8000-000000000001";
    let booting = {
        let address = address.clone();
        std::thread::spawn(move || {
            boot_instance(
                &address,
                &serde_json::json!({"uuid": uuid, "name": "vm-1", "resource_class": "baremetal"}),
            )
        })
    };
    let mut admin = PgConnection::establish(scratch_server().admin_url()).unwrap();
    let name = db.name().to_owned();
    eventually(
        Duration::from_secs(30),
        "the deploy waiting for the lock",
        || {
            if booting.is_finished() {
                return Some(());
            }
            let waiting = ringmaster::db::count_rows(
                &mut admin,
                &format!(
                    "SELECT count(*) AS count FROM pg_stat_activity
                  WHERE datname = '{name}' AND wait_event_type = 'Lock'
                    AND query ILIKE '%ironic_nodes%'"
                ),
            )
            .unwrap();
            (waiting > 0).then_some(())
        },
    );
    // The database goes away for the process: no new connection, every session ended.
    for statement in [
        format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"),
        format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
              WHERE datname = '{name}' AND pid <> (SELECT pid FROM pg_stat_activity
                                                   WHERE query LIKE 'SELECT uuid FROM ironic_nodes FOR UPDATE%'
                                                   LIMIT 1)"
        ),
    ] {
        diesel::sql_query(statement).execute(&mut admin).unwrap();
    }
    let (status, answer) = booting.join().unwrap();
    assert_eq!(status, 503, "the outcome is unknown: {answer}");
    std::thread::sleep(Duration::from_secs(2));
    diesel::sql_query(format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .execute(&mut admin)
        .unwrap();
    diesel::sql_query("ROLLBACK").execute(&mut holder).unwrap();

    settled_at_once_and_a_retry_books_nothing(&db, &address, uuid);
}

fn the_node_is_available_and_reported(address: &str) {
    eventually(
        Duration::from_secs(60),
        "the node available and reported",
        || {
            let (_, nodes) = get_answer(address, "/api/v1/nodes");
            let (_, providers) = get_answer(address, "/api/v1/providers");
            (nodes[0]["host"] == "cmp-1"
                && nodes[0]["provision_state"] == "available"
                && providers[0]["inventory"]
                    .to_string()
                    .contains("CUSTOM_BAREMETAL"))
            .then_some(())
        },
    );
}

/// Settled within seconds of the database's return: error, claim released; the retry answers
/// the same instance and books nothing; another name with the same uuid is refused.
fn settled_at_once_and_a_retry_books_nothing(db: &TestDb, address: &str, uuid: &str) {
    let path = format!("/api/v1/instances/{uuid}");
    let settled = eventually(Duration::from_secs(20), "the build settled", || {
        let (status, instance) = get_answer(address, &path);
        (status == 200 && instance["vm_state"] != "building").then_some(instance)
    });
    assert_eq!(settled["vm_state"], "error", "{settled}");
    let allocations = |address: &str| {
        let (status, body, _) = placement_get(address, &format!("/placement/allocations/{uuid}"));
        assert_eq!(status, 200, "{body}");
        body["allocations"].as_object().unwrap().len()
    };
    assert_eq!(allocations(address), 0, "the claim is released");

    // The retry answers the same instance and books nothing.
    let (status, answer) = boot_instance(
        address,
        &serde_json::json!({"uuid": uuid, "name": "vm-1", "resource_class": "baremetal"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["uuid"], uuid);
    assert_eq!(answer["vm_state"], "error");
    assert_eq!(allocations(address), 0);
    let (_, nodes) = get_answer(address, "/api/v1/nodes");
    assert_eq!(nodes[0]["provision_state"], "available", "{nodes}");
    // Another name with the same uuid is refused.
    let (status, answer) = boot_instance(
        address,
        &serde_json::json!({"uuid": uuid, "name": "vm-2", "resource_class": "baremetal"}),
    );
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("vm-1"),
        "{answer}"
    );
    let violations = ringmaster::db::audit::check_invariants(&mut db.conn()).unwrap();
    assert!(violations.is_empty(), "{violations:#?}");
}
