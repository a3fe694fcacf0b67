//! Issue 18 from the command line: `upgrade check`, the versions processes record, destructive
//! commands that refuse and ask, backup and restore of the embedded database, completions and
//! the man page.

use std::process::Command;
use std::time::Duration;

use diesel::RunQueryDsl;
use diesel::prelude::*;
use serde_json::Value;

use crate::helpers::{
    Running, TempDir, TestDb, address_of, assert_one_error_line, eventually, http, http_json,
    ringmaster, rows_in, run_to_end, start_demo_with,
};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn run(db: &TestDb, args: &[&str]) -> (Option<i32>, String, Vec<String>) {
    let (code, stdout, stderr) = run_to_end(ringmaster().args(args).env("DATABASE_URL", db.url()));
    (code, stdout, lines(&stderr))
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

/// The result lines of an `upgrade check` report, as (check, result).
fn results(stdout: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = stdout
        .lines()
        .map(|line| line.trim_matches(|c| c == '|' || c == ' '))
        .collect();
    lines
        .windows(2)
        .filter_map(|pair| {
            let check = pair[0].strip_prefix("Check: ")?;
            let result = pair[1].strip_prefix("Result: ")?;
            Some((check.to_owned(), result.to_owned()))
        })
        .collect()
}

/// `upgrade check` says 0 when all is well, 1 for a warning (a process of another version,
/// migrations pending), 2 for a failure (an unknown migration, a broken invariant, no database).
#[test]
fn upgrade_check_exits_0_1_or_2() {
    let db = TestDb::new();
    let (code, stdout, stderr) = run(&db, &["upgrade", "check"]);
    assert_eq!(code, Some(0), "{stdout}{stderr:?}");
    assert_eq!(
        results(&stdout),
        ["Database", "Migrations", "Invariants", "Processes"]
            .map(|check| (check.to_owned(), "Success".to_owned()))
    );

    a_live_process_of_another_version_is_a_warning(&db);
    let mut conn = db.conn();
    pending_migrations_are_a_warning_and_db_version_applies_none(&db, &mut conn);

    // A migration this binary does not know: a failure.
    diesel::sql_query(
        "INSERT INTO __diesel_schema_migrations (version, run_on) VALUES ('29991231000000', now())",
    )
    .execute(&mut conn)
    .unwrap();
    let (code, stdout, _) = run(&db, &["upgrade", "check"]);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout.contains("migration 29991231000000 was applied by a newer ringmaster"),
        "{stdout}"
    );
    // `upgrade check` applied nothing.
    assert_eq!(
        rows_in(
            &mut conn,
            "__diesel_schema_migrations WHERE version = '29991231000000'"
        ),
        1
    );

    // A database that does not answer: a failure, not an error line.
    let (code, stdout, _) = run_to_end(
        ringmaster()
            .args(["upgrade", "check"])
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
    );
    assert_eq!(code, Some(2), "{stdout}");
    assert_eq!(
        results(&stdout),
        vec![("Database".to_owned(), "Failure".to_owned())]
    );
}

/// A live process of an older version: a warning naming it; gone, it is not counted.
fn a_live_process_of_another_version_is_a_warning(db: &TestDb) {
    let holder = uuid::Uuid::new_v4();
    let mut presence = PgConnection::establish(db.url()).unwrap();
    diesel::sql_query(format!("SET application_name = 'ringmaster {holder}'"))
        .execute(&mut presence)
        .unwrap();
    diesel::sql_query(format!(
        "INSERT INTO ringmaster_processes (holder, version, hostname, pid, started_at)
         VALUES ('{holder}', '0.0.9', 'old-box', 4242, now())"
    ))
    .execute(&mut db.conn())
    .unwrap();
    let (code, stdout, _) = run(db, &["upgrade", "check"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(results(&stdout).contains(&("Processes".to_owned(), "Warning".to_owned())));
    assert!(
        stdout.contains("0.0.9 on old-box (pid 4242, no hosts)"),
        "{stdout}"
    );
    drop(presence);
    let (code, stdout, _) = run(db, &["upgrade", "check"]);
    assert_eq!(code, Some(0), "a process gone is not counted: {stdout}");
}

/// The newest migration not applied yet: a warning (the invariants are not checked); `db
/// version` reads without migrating: the older version, a warning naming what is pending.
fn pending_migrations_are_a_warning_and_db_version_applies_none(
    db: &TestDb,
    conn: &mut PgConnection,
) {
    let (_, newest, _) = run(db, &["db", "version"]);
    let newest = newest.trim().to_owned();
    diesel::sql_query(
        "DELETE FROM __diesel_schema_migrations
          WHERE version = (SELECT max(version) FROM __diesel_schema_migrations)",
    )
    .execute(conn)
    .unwrap();
    let (code, stdout, _) = run(db, &["upgrade", "check"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("1 pending"), "{stdout}");

    // `db version` reads without migrating: the older version, a warning naming what is pending.
    let (code, stdout, stderr) = run(db, &["db", "version"]);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!(
        stdout.trim() < newest.as_str(),
        "the version before {newest}: {stdout}"
    );
    let pending = format!("1 migrations pending ({newest})");
    assert!(
        stderr.iter().any(|line| line.contains(&pending)),
        "{stderr:?}"
    );
    let still_missing = format!("__diesel_schema_migrations WHERE version = '{newest}'");
    assert_eq!(
        rows_in(conn, &still_missing),
        0,
        "db version applied nothing"
    );
}

/// An empty database (nothing migrated) is "not initialized", not a raw SQL error.
#[test]
fn upgrade_check_on_an_empty_database_says_it_is_not_initialized() {
    let db = TestDb::empty();
    let (code, stdout, stderr) = run(&db, &["upgrade", "check"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("not initialized"), "{stdout}");
    assert!(!stdout.contains("does not exist"), "{stdout}");
    assert!(
        !stderr.iter().any(|line| line.contains("does not exist")),
        "{stderr:?}"
    );
    assert_eq!(
        results(&stdout),
        [
            ("Database", "Success"),
            ("Migrations", "Warning"),
            ("Invariants", "Warning"),
            ("Processes", "Warning")
        ]
        .map(|(check, result)| (check.to_owned(), result.to_owned()))
        .to_vec()
    );
}

#[test]
fn upgrade_check_fails_on_a_broken_invariant() {
    let db = TestDb::new();
    diesel::sql_query(
        "INSERT INTO ironic_nodes (uuid, resource_class, provision_state)
         VALUES ('11111111-1111-1111-1111-111111111111', 'baremetal', 'available')",
    )
    .execute(&mut db.conn())
    .unwrap();
    let (code, stdout, _) = run(&db, &["upgrade", "check"]);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(results(&stdout).contains(&("Invariants".to_owned(), "Failure".to_owned())));
    assert!(stdout.contains("1 violations"), "{stdout}");
}

/// Runs `command` (a shell line) on a pseudo-terminal (util-linux `script`), typing `answer`.
fn on_terminal(command: &str, answer: &str) -> (Option<i32>, String) {
    let mut script = Command::new("script");
    script.args(["-qec", command, "/dev/null"]);
    let output = crate::helpers::run_with_input(&mut script, answer);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// `db reset-placement` and `db purge --all` refuse while a host heartbeats (issue 18: it wiped
/// 2,012 providers of a running deployment), unless --force; on a terminal they ask, unless
/// --yes. Each process shows its version.
#[test]
fn destructive_commands_refuse_a_live_deployment_and_ask_on_a_terminal() {
    let db = TestDb::new();
    let mut command = ringmaster();
    command
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--hosts",
            "cmp-1,cmp-2",
            "--nodes",
            "6",
        ])
        .args(["--update-resources-interval", "1s"])
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn");
    let mut serve = Running::spawn(command);
    let address =
        address_of(&serve.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    let mut conn = db.conn();
    eventually(Duration::from_secs(30), "6 providers", || {
        (rows_in(&mut conn, "resource_providers") == 6).then_some(())
    });
    let (_, hosts) = http(&address, "GET", "/api/v1/hosts");
    let hosts: Value = serde_json::from_str(&hosts).unwrap();
    for host in hosts.as_array().unwrap() {
        assert_eq!(host["version"], VERSION, "{hosts}");
    }

    for args in [
        &["db", "reset-placement"][..],
        &["db", "purge", "--all"][..],
    ] {
        let (code, stdout, stderr) = run(&db, args);
        assert_eq!(code, Some(1), "{args:?}: {stdout}");
        assert_one_error_line(&stderr, "the deployment is live: 2 compute host(s) running");
        assert!(stderr[0].contains("--force"), "{stderr:?}");
    }
    assert_eq!(
        rows_in(&mut conn, "resource_providers"),
        6,
        "nothing was deleted"
    );

    // On a terminal: asked; anything but "yes" changes nothing.
    let binary = env!("CARGO_BIN_EXE_ringmaster");
    let line = format!(
        "DATABASE_URL='{}' {binary} db reset-placement --force",
        db.url()
    );
    let (code, shown) = on_terminal(&line, "no\n");
    assert_eq!(code, Some(1), "{shown}");
    assert!(shown.contains("Type yes to go on"), "{shown}");
    assert!(
        shown.contains("not confirmed: nothing was changed"),
        "{shown}"
    );
    assert_eq!(rows_in(&mut conn, "resource_providers"), 6);

    let (code, shown) = on_terminal(&format!("{line} --yes"), "");
    assert_eq!(code, Some(0), "--yes does not ask: {shown}");
    assert!(!shown.contains("Type yes"), "{shown}");

    // Stopped, the deployment is not live: no flag needed (and no terminal here, so no question).
    serve.interrupt();
    serve.wait_exit(Duration::from_secs(30));
    let (code, stdout, stderr) = run(&db, &["db", "reset-placement"]);
    assert_eq!(code, Some(0), "{stdout}{stderr:?}");
    assert_eq!(rows_in(&mut conn, "resource_providers"), 0);
}

/// `db dump` of a running demo's embedded database, `db restore` into a fresh data directory:
/// the same nodes, instances and allocations, and the audit passes.
#[test]
fn a_dump_restores_into_a_fresh_data_dir_and_passes_the_audit() {
    let (dir, mut demo, address) = start_demo_with("dump", &["--nodes", "8"]);
    crate::helpers::wait_for_reported_providers(&address, 8);
    for index in 0..3 {
        let (status, body) = http_json(
            &address,
            "POST",
            "/api/v1/instances",
            &format!(r#"{{"name": "kept-{index}", "resource_class": "baremetal"}}"#),
        );
        assert_eq!(status, 201, "{body}");
    }
    let source = dir.path.join("pg");
    let file = dir.path.join("ringmaster.dump");
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args(["db", "dump"])
            .arg(&file)
            .arg("--data-dir")
            .arg(&source),
    );
    assert_eq!(code, Some(0), "{stdout}{stderr:?}");
    assert!(stdout.starts_with("dumped the database to "), "{stdout}");

    let fresh = TempDir::new("restored");
    let target = fresh.path.join("pg");
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args(["db", "restore"])
            .arg(&file)
            .arg("--data-dir")
            .arg(&target),
    );
    assert_eq!(code, Some(0), "{stdout}{stderr:?}");
    assert!(
        stdout.contains("audit: ok, every invariant holds"),
        "{stdout}"
    );

    let (code, stdout, _) = run_to_end(ringmaster().arg("audit").arg("--data-dir").arg(&target));
    assert_eq!(code, Some(0), "{stdout}");
    let restored = live_counts(&target);
    assert_eq!(
        restored,
        vec![8, 3, 3, 8],
        "nodes, instances, allocations, providers"
    );
    assert_eq!(live_counts(&source), restored, "the same as the source");

    // A file that is not a dump: a clear error, the restored database untouched.
    let garbage = fresh.path.join("garbage.dump");
    std::fs::write(&garbage, "not a dump").unwrap();
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .args(["db", "restore"])
            .arg(&garbage)
            .arg("--data-dir")
            .arg(&target),
    );
    assert_eq!(code, Some(1));
    assert_one_error_line(&lines(&stderr), "pg_restore cannot read");
    assert_eq!(live_counts(&target), restored);
    demo.interrupt();
    demo.wait_exit(Duration::from_secs(30));
}

/// Live compute nodes, active instances, allocations and providers of the database of
/// `data_dir` (its server started, or joined).
fn live_counts(data_dir: &std::path::Path) -> Vec<i64> {
    let cluster =
        ringmaster::db::cluster::Cluster::start_or_join(&ringmaster::db::cluster::ClusterOptions {
            data_dir: data_dir.to_path_buf(),
            bin_dir: None,
            throwaway: false,
        })
        .unwrap();
    let mut conn = PgConnection::establish(&cluster.url("ringmaster")).unwrap();
    let counts: Vec<i64> = [
        "compute_nodes WHERE deleted = 0",
        "instances WHERE deleted = 0 AND vm_state = 'active'",
        "allocations",
        "resource_providers",
    ]
    .iter()
    .map(|table| rows_in(&mut conn, table))
    .collect();
    drop(conn);
    counts
}

#[test]
fn completions_and_the_man_page_come_from_the_command_line_definition() {
    let (code, stdout, _) = run_to_end(ringmaster().args(["completions", "bash"]));
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("_ringmaster()"),
        "a bash completion function"
    );
    assert!(
        stdout.contains("reset-placement"),
        "subcommands are completed"
    );
    let (code, stdout, _) = run_to_end(ringmaster().args(["completions", "zsh"]));
    assert_eq!(code, Some(0));
    assert!(
        stdout.starts_with("#compdef ringmaster"),
        "{}",
        &stdout[..40]
    );
    let (code, stdout, _) = run_to_end(ringmaster().arg("man"));
    assert_eq!(code, Some(0));
    assert!(stdout.contains(".TH ringmaster"), "a roff man page");
    assert!(stdout.contains("upgrade"), "it lists the subcommands");
    let (code, _, stderr) = run_to_end(ringmaster().args(["completions", "tcsh"]));
    assert_eq!(code, Some(2), "{stderr:?}");
}

/// `ringmaster man DIR` writes a page per command; `man -l` renders each, and the page of
/// `serve` names every flag `serve --help` shows.
#[test]
fn every_command_has_a_man_page_that_man_renders() {
    let dir = TempDir::new("man");
    let (code, stdout, stderr) = run_to_end(ringmaster().arg("man").arg(&dir.path));
    assert_eq!(code, Some(0), "{stderr}");
    let mut pages: Vec<String> = std::fs::read_dir(&dir.path)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    assert_eq!(
        stdout.lines().count(),
        pages.len(),
        "each page written is named: {stdout}"
    );
    for page in [
        "ringmaster.1",
        "ringmaster-serve.1",
        "ringmaster-demo.1",
        "ringmaster-db-archive-deleted-rows.1",
        "ringmaster-db-migrate.1",
        "ringmaster-config-show.1",
        "ringmaster-config-check.1",
        "ringmaster-upgrade-check.1",
        "ringmaster-script-run.1",
        "ringmaster-man.1",
    ] {
        assert!(pages.iter().any(|name| name == page), "{page} in {pages:?}");
    }
    assert!(!pages.iter().any(|name| name.contains("help")), "{pages:?}");
    for page in &pages {
        let rendered = std::process::Command::new("man")
            .arg("-l")
            .arg(dir.path.join(page))
            .env("MANWIDTH", "100")
            .output()
            .expect("man-db's man (scripts/bootstrap installs it)");
        let text = String::from_utf8_lossy(&rendered.stdout);
        assert!(
            rendered.status.success(),
            "{page}: {}",
            String::from_utf8_lossy(&rendered.stderr)
        );
        assert!(text.contains("NAME"), "{page} renders: {text}");
    }
    let (_, help, _) = run_to_end(ringmaster().args(["serve", "--help"]));
    let serve_page = std::fs::read_to_string(dir.path.join("ringmaster-serve.1")).unwrap();
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .map(|word| word.trim_end_matches([',', '.', ')', ':']))
        .collect();
    assert!(flags.len() > 60, "{flags:?}");
    for flag in flags {
        // roff writes `-` as `\-`.
        let written = flag.replace('-', "\\-");
        assert!(
            serve_page.contains(&written),
            "{flag} in ringmaster-serve.1"
        );
    }
}
