//! The binary on a real database: the embedded cluster by default, and what happens when the
//! database goes away under a running server.

use std::time::Duration;

use ringmaster::db::cluster::Cluster;

use crate::helpers::{
    Running, TempDir, address_of, assert_one_error_line, http, ringmaster, run_to_end,
};

const START: Duration = Duration::from_secs(60);

fn postmaster_pid(data_dir: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(data_dir.join("postmaster.pid"))
        .ok()
        .and_then(|text| text.lines().next().map(str::to_owned))
}

#[test]
fn demo_runs_on_its_own_postgresql_and_stops_it_on_ctrl_c() {
    let dir = TempDir::new("demo");
    let data_dir = dir.path.join("pg");
    let mut command = ringmaster();
    command
        .args(["demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir);
    let mut demo = Running::spawn(command);
    let address = address_of(&demo.wait_for_stdout("listening on http://", START));

    assert_eq!(
        http(&address, "GET", "/healthz"),
        (200, r#"{"status":"ok"}"#.to_owned())
    );
    let server_pid = postmaster_pid(&data_dir).expect("the embedded server runs");

    // A second command on the same data directory joins the running server.
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args(["db", "migrate", "--data-dir"])
            .arg(&data_dir),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "database schema is up to date");
    assert!(
        stderr.contains("joining the PostgreSQL server already running"),
        "{stderr}"
    );
    assert_eq!(
        postmaster_pid(&data_dir),
        Some(server_pid),
        "no second server was started"
    );
    assert_eq!(http(&address, "GET", "/healthz").0, 200);

    demo.interrupt();
    let (code, stderr) = demo.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr:#?}");
    assert!(
        postmaster_pid(&data_dir).is_none(),
        "the embedded server is stopped on exit"
    );
    assert!(!data_dir.join(".s.PGSQL.5432").exists());
}

#[test]
fn serve_exits_with_one_error_line_when_its_database_stays_away_past_the_grace() {
    let mut cluster = Cluster::start_throwaway(None).unwrap();
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--database-grace", "2s"])
        .env("DATABASE_URL", cluster.url("postgres"));
    let mut serve = Running::spawn(command);
    let address = address_of(&serve.wait_for_stdout("listening on http://", START));
    assert_eq!(http(&address, "GET", "/healthz").0, 200);

    cluster.stop();
    let (code, stderr) = serve.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(1));
    assert_one_error_line(&stderr, "lost the database");
}

#[test]
fn flags_come_from_ringmaster_environment_variables() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let mut command = ringmaster();
    command
        .arg("serve")
        .env("DATABASE_URL", cluster.url("postgres"))
        .env("RINGMASTER_BIND", "127.0.0.1:0")
        .env("RINGMASTER_ADMIN_TOKEN", "from-the-environment");
    let mut serve = Running::spawn(command);
    let address = address_of(&serve.wait_for_stdout("listening on http://", START));
    assert_eq!(
        http(&address, "POST", "/api/v1/hosts").0,
        401,
        "the token came from the environment"
    );
    assert_eq!(
        http(&address, "GET", "/api/v1/hosts").0,
        401,
        "reads need the token too (issue 27)"
    );
    assert_eq!(http(&address, "GET", "/healthz").0, 200);
}

#[test]
fn audit_reports_ok_and_exits_non_zero_on_a_violation() {
    let db = crate::helpers::TestDb::new();
    let (code, stdout, stderr) =
        run_to_end(ringmaster().arg("audit").env("DATABASE_URL", db.url()));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "audit: ok, every invariant holds");

    use diesel::RunQueryDsl;
    diesel::sql_query(
        "INSERT INTO ironic_nodes (uuid, resource_class, provision_state)
         VALUES ('11111111-1111-1111-1111-111111111111', 'baremetal', 'available')",
    )
    .execute(&mut db.conn())
    .unwrap();
    let (code, stdout, _) = run_to_end(ringmaster().arg("audit").env("DATABASE_URL", db.url()));
    assert_eq!(code, Some(1));
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        vec![
            "invariant 1: ironic node 11111111-1111-1111-1111-111111111111 has 0 live compute nodes",
            "audit: 1 violations"
        ]
    );
}

/// A binary older than the database's schema refuses to start (one line, exit 1) rather than
/// run statements against a schema it does not know (issue 18).
#[test]
fn a_database_migrated_by_a_newer_binary_is_refused_in_one_line() {
    use diesel::RunQueryDsl;
    let db = crate::helpers::TestDb::new();
    diesel::sql_query(
        "INSERT INTO __diesel_schema_migrations (version, run_on) VALUES ('29991231000000', now())",
    )
    .execute(&mut db.conn())
    .unwrap();
    for command in [
        &["db", "version"][..],
        &["serve", "--bind", "127.0.0.1:0"][..],
    ] {
        let (code, _, stderr) = crate::helpers::run_to_end(
            crate::helpers::ringmaster()
                .args(command)
                .env("DATABASE_URL", db.url()),
        );
        assert_eq!(code, Some(1), "{command:?}: {stderr}");
        let lines: Vec<String> = stderr.lines().map(str::to_owned).collect();
        crate::helpers::assert_one_error_line(
            &lines,
            "migration 29991231000000 that this binary does not know",
        );
    }
}

#[test]
fn serve_waits_at_start_for_a_database_that_is_away_and_not_for_one_that_refuses_it() {
    let cluster = Cluster::start_throwaway(None).unwrap();
    let proxy = crate::helpers::SilenceableProxy::start(cluster.data_dir().join(".s.PGSQL.5432"));

    // Away at the start (no primary yet in a failover, say): the start waits for it.
    proxy.silence(true);
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--database-grace", "2m"])
        .env("DATABASE_URL", proxy.url("postgres"))
        .env("RUST_LOG", "warn");
    let mut serve = Running::spawn(command);
    std::thread::sleep(Duration::from_secs(7));
    proxy.silence(false);
    let address = address_of(&serve.wait_for_stdout("listening on http://", START));
    assert_eq!(http(&address, "GET", "/healthz").0, 200);
    drop(serve);

    // Refused (no such database): no waiting, one error line naming it.
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--database-grace", "10m"])
        .env("DATABASE_URL", cluster.url("no_such_database"));
    let mut serve = Running::spawn(command);
    let (code, stderr) = serve.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(1), "{stderr:#?}");
    assert_one_error_line(&stderr, "no_such_database");
}
