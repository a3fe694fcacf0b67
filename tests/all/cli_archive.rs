//! `ringmaster db archive-deleted-rows` and `db purge`: Nova's words and exit codes.

use diesel::RunQueryDsl;

use crate::helpers::{TestDb, ringmaster, run_to_end};

fn run(db: &TestDb, args: &[&str]) -> (Option<i32>, String) {
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args(args)
            .env("DATABASE_URL", db.url())
            .env("RUST_LOG", "warn"),
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    (code, stdout)
}

fn deleted_services(db: &TestDb, count: usize) {
    for index in 0..count {
        diesel::sql_query(format!(
            "INSERT INTO services (uuid, host, \"binary\") VALUES (gen_random_uuid(), 'h{index}', 'b')"
        ))
        .execute(&mut db.conn())
        .unwrap();
    }
    diesel::sql_query("UPDATE services SET deleted = id, deleted_at = now()")
        .execute(&mut db.conn())
        .unwrap();
}

#[test]
fn archive_validates_max_rows_and_before_with_novas_words() {
    let db = TestDb::new();
    let archive = ["db", "archive-deleted-rows"];
    assert_eq!(
        run(&db, &[&archive[..], &["--max_rows", "-1"]].concat()),
        (
            Some(2),
            "Must supply a positive value for max_rows\n".to_owned()
        )
    );
    assert_eq!(
        run(&db, &[&archive[..], &["--max-rows", "2147483648"]].concat()),
        (Some(2), "max rows must be <= 2147483647\n".to_owned())
    );
    assert_eq!(
        run(&db, &[&archive[..], &["--before", "not-a-date"]].concat()),
        (
            Some(4),
            "Invalid value for --before: String does not contain a date: not-a-date\n".to_owned()
        )
    );
    assert_eq!(
        run(&db, &[&archive[..], &["--verbose"]].concat()),
        (Some(0), "Nothing was archived.\n".to_owned())
    );
}

#[test]
fn archive_reports_a_table_and_exits_1_when_rows_moved() {
    let db = TestDb::new();
    deleted_services(&db, 3);
    let (code, stdout) = run(
        &db,
        &["db", "archive-deleted-rows", "--max_rows", "2", "--verbose"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        stdout,
        "+----------+-------------------------+\n\
         | Table    | Number of Rows Archived |\n\
         +----------+-------------------------+\n\
         | services | 2                       |\n\
         +----------+-------------------------+\n"
    );
    let (code, stdout) = run(
        &db,
        &[
            "db",
            "archive-deleted-rows",
            "--until-complete",
            "--verbose",
            "--purge",
        ],
    );
    assert_eq!(code, Some(1));
    assert!(
        stdout.starts_with("Archiving....complete\n"),
        "Nova: two dots, one per batch, then .complete: {stdout}"
    );
    assert!(
        stdout.contains("| services | 1                       |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Rows were archived, running purge...\n"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("Deleted 3 rows from shadow_services based on timestamp column deleted_at\n"),
        "{stdout}"
    );
    assert_eq!(
        run(&db, &["db", "archive-deleted-rows"]).0,
        Some(0),
        "nothing left"
    );
}

#[test]
fn purge_exit_codes_and_words() {
    let db = TestDb::new();
    assert_eq!(
        run(&db, &["db", "purge"]),
        (Some(1), "Either --before or --all is required\n".to_owned())
    );
    assert_eq!(
        run(&db, &["db", "purge", "--before", "bogus"]),
        (
            Some(2),
            "Invalid value for --before: String does not contain a date: bogus\n".to_owned()
        )
    );
    assert_eq!(
        run(&db, &["db", "purge", "--all"]),
        (Some(3), String::new()),
        "nothing to delete"
    );
    deleted_services(&db, 2);
    assert_eq!(run(&db, &["db", "archive-deleted-rows"]).0, Some(1));
    assert_eq!(
        run(&db, &["db", "purge", "--before", "2000-01-01"]).0,
        Some(3),
        "nothing that old"
    );
    assert_eq!(
        run(&db, &["db", "purge", "--all", "--verbose"]),
        (
            Some(0),
            "Deleted 2 rows from shadow_services based on timestamp column deleted_at\n".to_owned()
        )
    );
}

#[test]
fn ctrl_c_stops_an_until_complete_run_between_batches() {
    let db = TestDb::new();
    deleted_services(&db, 6);
    let mut command = ringmaster();
    command
        .args([
            "db",
            "archive-deleted-rows",
            "--until-complete",
            "--verbose",
            "--max_rows",
            "1",
            "--sleep",
            "1",
        ])
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn");
    let mut running = crate::helpers::Running::spawn(command);
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    running.interrupt();
    let (code, _) = running.wait_exit(std::time::Duration::from_secs(20));
    assert_eq!(code, Some(1), "rows were archived before the stop");
    let stdout = running.stdout_text();
    assert!(stdout.starts_with("Archiving.."), "{stdout}");
    assert!(stdout.contains(".stopped\n"), "{stdout}");
    let archived = stdout
        .lines()
        .find_map(|line| line.strip_prefix("| services | "))
        .unwrap();
    let archived: i64 = archived
        .trim_end_matches(['|', ' '])
        .trim()
        .parse()
        .unwrap();
    assert!(
        (1..6).contains(&archived),
        "stopped part way: {archived} of 6"
    );
}

/// Issue 14, item 3: `--before` takes what Nova's dateutil parser takes for the dates people
/// write; Nova's own functional test purges with "oct 21 2015" and finds nothing (exit 3).
#[test]
fn before_takes_the_dates_people_write() {
    let db = TestDb::new();
    deleted_services(&db, 1);
    let (code, stdout) = run(&db, &["db", "purge", "--before", "oct 21 2015"]);
    assert_eq!(code, Some(3), "nothing deleted: {stdout}");
    for before in [
        "2015-10-21",
        "Oct 21 2015",
        "21 Oct 2015 12:00:00",
        "2015-10-21T12:00:00Z",
        // dateutil reads these three as 2015-10-21 (a two-digit year within 50 years).
        "21/10/2015",
        "2015.10.21",
        "Oct 21 15",
    ] {
        let (code, stdout) = run(
            &db,
            &[
                "db",
                "archive-deleted-rows",
                "--before",
                before,
                "--verbose",
            ],
        );
        assert_eq!(
            code,
            Some(0),
            "{before}: nothing deleted that long ago: {stdout}"
        );
    }
    let (code, stdout) = run(&db, &["db", "archive-deleted-rows", "--before", "soonish"]);
    assert_eq!(code, Some(4), "{stdout}");
    assert_eq!(
        stdout.trim(),
        "Invalid value for --before: String does not contain a date: soonish"
    );
    let (code, _) = run(&db, &["db", "purge", "--before", "soonish"]);
    assert_eq!(code, Some(2));
}

/// Issue 14, item 5: nova-manage's spellings run unchanged: `db archive_deleted_rows`,
/// `--all-cells`, `db sync`, and `db version`.
#[test]
fn nova_manage_spellings_run_unchanged() {
    let db = TestDb::new();
    deleted_services(&db, 2);
    let (code, stdout) = run(
        &db,
        &[
            "db",
            "archive_deleted_rows",
            "--all-cells",
            "--max_rows",
            "1",
            "--verbose",
        ],
    );
    assert_eq!(code, Some(1), "rows archived: {stdout}");
    assert!(stdout.contains("| services | 1"), "{stdout}");
    let (code, stdout) = run(&db, &["db", "sync"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("up to date"), "{stdout}");
    let (code, stdout) = run(&db, &["db", "version"]);
    assert_eq!(code, Some(0));
    let version = stdout.trim();
    assert_eq!(version.len(), 14, "a migration version: {version}");
    assert!(version.chars().all(|c| c.is_ascii_digit()), "{version}");
}

/// Issue 14, item 6: a long archive on a terminal shows how far it got (rows moved, rows/s,
/// tables done); off a terminal it prints Nova's dots (the tests above).
#[test]
fn a_long_archive_on_a_terminal_shows_progress() {
    let db = TestDb::new();
    deleted_services(&db, 5);
    let binary = env!("CARGO_BIN_EXE_ringmaster");
    // `script` gives the command a terminal.
    let (code, stdout, stderr) = run_to_end(
        std::process::Command::new("script")
            .args(["-qec"])
            .arg(format!(
                "{binary} db archive-deleted-rows --until-complete --verbose --max_rows 2"
            ))
            .arg("/dev/null")
            .env("DATABASE_URL", db.url())
            .env("RUST_LOG", "warn"),
    );
    assert_eq!(code, Some(1), "rows archived: {stdout} {stderr}");
    assert!(stdout.contains("Archiving: 5 rows"), "{stdout}");
    assert!(stdout.contains("rows/s"), "{stdout}");
    assert!(stdout.contains("of 1 tables done"), "{stdout}");
    assert!(
        !stdout.contains("Archiving.."),
        "no dots on a terminal: {stdout}"
    );
}
