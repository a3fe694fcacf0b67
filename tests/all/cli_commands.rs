//! The command line refuses what it cannot do with one clear line and a distinct exit code.

use crate::helpers::{TempDir, assert_one_error_line, ringmaster, run_to_end};

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

#[test]
fn a_non_loopback_bind_without_an_admin_token_is_refused() {
    let (code, _, stderr) = run_to_end(ringmaster().args(["serve", "--bind", "0.0.0.0:0"]));
    assert_eq!(code, Some(2));
    assert_one_error_line(&lines(&stderr), "RINGMASTER_ADMIN_TOKEN");
}

#[test]
fn missing_server_binaries_name_the_package_and_the_alternative() {
    let empty = TempDir::new("nobin");
    let data = TempDir::new("nobin-data");
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .args(["db", "migrate"])
            .arg("--pg-bin-dir")
            .arg(&empty.path)
            .arg("--data-dir")
            .arg(data.path.join("pg")),
    );
    assert_eq!(code, Some(1));
    let stderr = lines(&stderr);
    assert_one_error_line(&stderr, "apt-get install postgresql");
    assert_one_error_line(&stderr, "DATABASE_URL");
}

#[test]
fn a_bad_database_url_is_one_error_line() {
    for url in [
        "postgresql://postgres@/ringmaster?host=/nonexistent-ringmaster-socket-dir",
        "not a url at all",
    ] {
        let (code, _, stderr) = run_to_end(
            ringmaster()
                .args(["serve", "--bind", "127.0.0.1:0"])
                .env("DATABASE_URL", url),
        );
        assert_eq!(code, Some(1), "{url}");
        assert_one_error_line(&lines(&stderr), "cannot use the database");
    }
}

/// A short down time needs no hand-picked heartbeat interval (the default shrinks to fit);
/// an explicit one that would let a live host fence itself is refused, naming both flags.
#[test]
fn heartbeat_and_down_time_flags_fit_together() {
    let (code, _, stderr) = run_to_end(ringmaster().args([
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--service-down-time",
        "4s",
        "--report-interval",
        "2s",
    ]));
    assert_eq!(code, Some(2));
    assert_one_error_line(
        &lines(&stderr),
        "--report-interval (2s) must be above zero and at most 3/8 of --service-down-time (4s)",
    );
    // Alone, a 4 s down time passes the flag checks: the database is what fails next.
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--service-down-time",
                "4s",
            ])
            .env("DATABASE_URL", "not a url at all"),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert_one_error_line(&lines(&stderr), "cannot use the database");
}

/// The real-Ironic flags are checked before anything starts, each error naming its flag: a
/// URL that is not http or https (one wording for every URL flag), a password file or CA file
/// that cannot be read, a filter without an Ironic, a user without a password file.
#[test]
fn ironic_flags_are_checked_by_name() {
    let url = " is not an http:// or https:// URL with a host";
    let cases = [
        (
            "--ironic-url ftp://ironic",
            format!("--ironic-url \"ftp://ironic\"{url}"),
        ),
        (
            "--glance-url https://",
            format!("--glance-url \"https://\"{url}"),
        ),
        (
            "--auth-strategy keystone --keystone-url ldap://keystone",
            format!("--keystone-url \"ldap://keystone\"{url}"),
        ),
        (
            "--ironic-url https://127.0.0.1:6385 --ironic-cafile /nonexistent/ca.pem",
            "--ironic-cafile /nonexistent/ca.pem".to_owned(),
        ),
        (
            "--ironic-url http://127.0.0.1:6385 --ironic-user ringmaster \
             --ironic-password-file /nonexistent/ironic-password",
            "--ironic-password-file /nonexistent/ironic-password".to_owned(),
        ),
        (
            "--ironic-conductor-group rack-1",
            "--ironic-conductor-group needs --ironic-url".to_owned(),
        ),
        (
            "--ironic-url http://127.0.0.1:6385 --ironic-user ringmaster",
            "--ironic-password-file".to_owned(),
        ),
        (
            "--ironic-url https://127.0.0.1:6385 --ironic-certfile /nonexistent/client.pem",
            "--ironic-keyfile".to_owned(),
        ),
    ];
    for (flags, needle) in cases {
        let (code, _, stderr) = run_to_end(
            ringmaster()
                .args(["serve", "--bind", "127.0.0.1:0"])
                .args(flags.split_whitespace())
                .env("DATABASE_URL", "not a url at all"),
        );
        assert_eq!(code, Some(2), "{flags}: {stderr}");
        assert!(stderr.contains(&needle), "{flags}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
