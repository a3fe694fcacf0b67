//! The configuration file (`--config`, issue 29): one setting from each of the four sources (the
//! stronger wins), every error form (one line naming the file, the line and the key; exit 1;
//! nothing started), `config show` masking secrets, `config check` (making every check `serve`
//! makes, and bounded); and a `serve` configured by
//! the file alone, whose log file stays bounded, carries the embedded PostgreSQL's lines and
//! takes new levels on SIGHUP.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::helpers::{
    Running, TempDir, address_of, assert_one_error_line, http, ringmaster, run_to_end,
};

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The `bind = …` line of `config show` with this file, environment and flag.
fn shown_bind(file: Option<&Path>, env: Option<&str>, flag: Option<&str>) -> String {
    let mut command = ringmaster();
    if let Some(file) = file {
        command.env("RINGMASTER_CONFIG", file);
    }
    if let Some(bind) = env {
        command.env("RINGMASTER_BIND", bind);
    }
    command.args(["config", "show"]);
    if let Some(bind) = flag {
        command.args(["--bind", bind]);
    }
    let (code, stdout, stderr) = run_to_end(&mut command);
    assert_eq!(code, Some(0), "{stderr}");
    stdout
        .lines()
        .find(|line| line.starts_with("bind = "))
        .unwrap_or_else(|| panic!("a bind line: {stdout}"))
        .to_owned()
}

#[test]
fn one_setting_from_all_four_sources_the_stronger_wins() {
    let dir = TempDir::new("config-precedence");
    let file = write(
        &dir,
        "ringmaster.toml",
        "# bind from the file\n[http]\nbind = \"127.0.0.1:1001\"\n",
    );
    let at = format!("{}:3", file.display());
    assert_eq!(
        shown_bind(None, None, None),
        "bind = \"127.0.0.1:8080\"  # default"
    );
    assert_eq!(
        shown_bind(Some(&file), None, None),
        format!("bind = \"127.0.0.1:1001\"  # file {at}")
    );
    assert_eq!(
        shown_bind(Some(&file), Some("127.0.0.1:1002"), None),
        "bind = \"127.0.0.1:1002\"  # environment RINGMASTER_BIND"
    );
    assert_eq!(
        shown_bind(Some(&file), Some("127.0.0.1:1002"), Some("127.0.0.1:1003")),
        "bind = \"127.0.0.1:1003\"  # flag --bind"
    );
    // --config beats RINGMASTER_CONFIG, and an empty name means no file.
    let other = write(&dir, "other.toml", "[http]\nbind = \"127.0.0.1:1004\"\n");
    let (_, stdout, _) = run_to_end(
        ringmaster()
            .env("RINGMASTER_CONFIG", &file)
            .arg("--config")
            .arg(&other)
            .args(["config", "show"]),
    );
    assert!(stdout.contains("bind = \"127.0.0.1:1004\""), "{stdout}");
    let (_, stdout, _) = run_to_end(ringmaster().args(["--config=", "config", "show"]));
    assert!(stdout.contains("# configuration file: none"), "{stdout}");
}

/// Broken files: (text, the line named, what the error says).
const FILE_ERRORS: &[(&str, &str, &str)] = &[
    ("[http]\nbind = \"127.0.0.1:0\n", ":2:", "string"),
    ("[htp]\nbind = \"x\"\n", ":1:", "unknown section [htp]"),
    (
        "bind = \"x\"\n",
        ":1:",
        "bind is outside any section: it belongs under [http]",
    ),
    (
        "[http]\n\nbnd = \"x\"\n",
        ":3:",
        "unknown key bnd in [http]",
    ),
    ("[http]\nurl = \"x\"\n", ":2:", "unknown key url in [http]"),
    (
        "[http]\nbind = 8080\n",
        ":2:",
        "[http] bind: expected a string, found an integer",
    ),
    (
        "[hosts]\nnodes = \"ten\"\n",
        ":2:",
        "[hosts] nodes: expected an integer",
    ),
    (
        "[http]\nmetrics-public = \"yes\"\n",
        ":2:",
        "expected a boolean",
    ),
    (
        "[hosts]\nservice-down-time = \"10 parsecs\"\n",
        ":2:",
        "[hosts] service-down-time: invalid value '10 parsecs'",
    ),
    (
        "[http]\nmax-event-streams = 0\n",
        ":2:",
        "[http] max-event-streams: invalid value '0'",
    ),
    (
        "[hosts]\nring = \"round\"\n",
        ":2:",
        "[hosts] ring: invalid value 'round'",
    ),
    (
        "[ironic]\nurl = \"http://a\"\nironic-url = \"http://b\"\n",
        ":3:",
        "[ironic] url is given twice",
    ),
    (
        "[http]\nbind = [\"a\", \"b\"]\n",
        ":2:",
        "expected a string, found an array",
    ),
];

#[test]
fn every_error_in_a_file_is_one_line_naming_the_file_the_line_and_the_key() {
    let dir = TempDir::new("config-errors");
    for (text, line, needle) in FILE_ERRORS {
        let file = write(&dir, "bad.toml", text);
        let at = format!("{}{line}", file.display());
        for args in [&["serve"][..], &["config", "show"][..]] {
            let (code, stdout, stderr) = run_to_end(
                ringmaster()
                    .arg("--config")
                    .arg(&file)
                    .args(args)
                    .env("DATABASE_URL", "not a url at all"),
            );
            assert_eq!(code, Some(1), "{text:?}: {stderr}");
            assert!(stdout.is_empty(), "nothing started or shown: {stdout}");
            let stderr: Vec<String> = stderr.lines().map(str::to_owned).collect();
            assert_one_error_line(&stderr, &at);
            assert_one_error_line(&stderr, needle);
        }
        let (code, _, stderr) = run_to_end(ringmaster().args(["config", "check"]).arg(&file));
        assert_eq!(code, Some(1), "{text:?}: {stderr}");
        assert!(stderr.contains(&at) && stderr.contains(needle), "{stderr}");
    }
    check_refuses(
        Path::new("/nonexistent/r.toml"),
        "/nonexistent/r.toml: cannot read the configuration file",
    );
}

/// `config check FILE` exits 1 saying `says`.
fn check_refuses(file: &Path, says: &str) {
    let (code, _, stderr) = run_to_end(ringmaster().args(["config", "check"]).arg(file));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(says), "{says}: {stderr}");
}

#[test]
fn flags_that_need_or_exclude_each_other_are_checked_whatever_their_source() {
    let dir = TempDir::new("config-relations");
    let user = write(
        &dir,
        "user.toml",
        "[ironic]\nurl = \"http://127.0.0.1:6385\"\nuser = \"ringmaster\"\n",
    );
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .arg("--config")
            .arg(&user)
            .arg("serve")
            .env("DATABASE_URL", "not a url"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--ironic-user (file {}:3) needs --ironic-password-file",
            user.display()
        )),
        "{stderr}"
    );
    // The password file from the command line completes the file's user.
    let secret = write(&dir, "password", "s3cret\n");
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .arg("--config")
            .arg(&user)
            .args(["config", "show", "--ironic-password-file"])
            .arg(&secret),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let token = write(
        &dir,
        "token.toml",
        "[http]\nadmin-token-file = \"/etc/ringmaster/admin-token\"\n",
    );
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .arg("--config")
            .arg(&token)
            .args(["config", "show"])
            .env("RINGMASTER_ADMIN_TOKEN", "t0ken"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--admin-token (environment RINGMASTER_ADMIN_TOKEN) and --admin-token-file (file"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("t0ken"), "{stderr}");
}

/// Files whose every key is good alone, and which `serve` refuses: each with what it says.
const REFUSED_AT_START: &[(&str, &str)] = &[
    (
        "[http]\nadmin-token = \"t0ken-t0ken\"\nadmin-token-file = \"/etc/ringmaster/token\"\n",
        ":2) and --admin-token-file (file ",
    ),
    (
        "[hosts]\nhosts = [\"cmp-1\", \"cmp-1\"]\n",
        "host \"cmp-1\" is given twice in --hosts",
    ),
    (
        "[hosts]\nhosts = [\"../etc\"]\n",
        "invalid host name \"../etc\"",
    ),
    ("[hosts]\nhosts = [\"a b\"]\n", "invalid host name \"a b\""),
    (
        "[hosts]\nhosts = [\"cmp-1\", \"\"]\n",
        "invalid host name \"\"",
    ),
    ("[http]\nbind = \"0.0.0.0:8080\"\n", "admin token"),
];

#[test]
fn config_check_refuses_what_serve_refuses_and_a_file_too_large_to_be_one() {
    let dir = TempDir::new("config-check-start");
    for (text, needle) in REFUSED_AT_START {
        let file = write(&dir, "refused.toml", text);
        let (code, stdout, stderr) = run_to_end(
            ringmaster()
                .arg("--config")
                .arg(&file)
                .arg("serve")
                .env("DATABASE_URL", "not a url at all"),
        );
        assert_eq!(code, Some(2), "serve refuses {text:?}: {stderr}");
        assert!(stdout.is_empty() && stderr.contains(needle), "{stderr}");
        let (code, stdout, stderr) = run_to_end(ringmaster().args(["config", "check"]).arg(&file));
        assert_eq!(code, Some(1), "config check refuses {text:?}: {stdout}");
        assert!(!stdout.contains("ok"), "{stdout}");
        let stderr: Vec<String> = stderr.lines().map(str::to_owned).collect();
        assert_one_error_line(&stderr, &format!("{}: ", file.display()));
        assert_one_error_line(&stderr, needle);
    }
    // A million hosts (18 MB) is refused by its size, before it is parsed.
    let mut huge = String::from("[hosts]\nhosts = [");
    for n in 0..1_000_000 {
        huge.push_str(&format!("\"h{n:07}\","));
    }
    huge.push_str("]\n");
    let file = write(&dir, "huge.toml", &huge);
    for args in [&["config", "check"][..], &["serve", "--config"][..]] {
        let (code, _, stderr) = run_to_end(ringmaster().args(args).arg(&file));
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: the configuration file is larger than 1024 KiB, the most taken",
                file.display()
            )),
            "{stderr}"
        );
    }
    check_refuses(
        Path::new("/dev/zero"),
        "/dev/zero: the configuration file is not a regular file",
    );
}

/// A secret file not on this machine (written at install time) is named, not refused; one that
/// is there is read as `serve` reads it, bounded.
#[test]
fn config_check_names_an_absent_secret_file_and_refuses_a_bad_one() {
    let dir = TempDir::new("config-check-secrets");
    let absent = write(
        &dir,
        "absent.toml",
        "[http]\nadmin-token-file = \"/nonexistent/admin-token\"\n",
    );
    let (code, stdout, stderr) = run_to_end(ringmaster().args(["config", "check"]).arg(&absent));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("not on this machine, and needed by serve where it runs: --admin-token-file /nonexistent/admin-token"),
        "{stdout}"
    );
    let empty = write(&dir, "empty-token", "\n");
    let large = write(&dir, "large-token", &"t".repeat(70_000));
    for (secret, says) in [
        (Path::new("/dev/zero"), "not a regular file"),
        (&dir.path, "not a regular file"),
        (&large, "larger than 64 KiB"),
        (&empty, "is empty"),
    ] {
        let named = write(
            &dir,
            "named.toml",
            &format!("[http]\nadmin-token-file = \"{}\"\n", secret.display()),
        );
        check_refuses(
            &named,
            &format!(
                "--admin-token-file {}{}",
                secret.display(),
                if says == "is empty" { " " } else { ": " }
            ),
        );
        check_refuses(&named, says);
    }
}

#[test]
fn config_show_masks_secrets_and_config_check_passes_a_good_file() {
    let dir = TempDir::new("config-show");
    let password = write(&dir, "keystone-password", "hunter4\n");
    let file = write(
        &dir,
        "ringmaster.toml",
        &format!(
            "[http]\nbind = \"0.0.0.0:8080\"\nadmin-token = \"s3cret-admin-token\"\n\
             [keystone]\nauth-strategy = \"keystone\"\nurl = \"https://admin:hunter3@keystone.example.org:5000/v3\"\n\
             user = \"ringmaster\"\npassword-file = \"{}\"\n\
             [hosts]\nhosts = [\"cmp-1\", \"cmp-2\"]\nservice-down-time = \"20s\"\n[log]\nformat = \"json\"\n",
            password.display()
        ),
    );
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .arg("--config")
            .arg(&file)
            .args(["config", "show"])
            .env(
                "DATABASE_URL",
                "postgres://ringmaster:hunter2@db.example.org/ringmaster",
            ),
    );
    assert_eq!(code, Some(0), "{stderr}");
    for secret in ["s3cret-admin-token", "hunter2", "hunter3"] {
        assert!(!stdout.contains(secret), "{secret} shown: {stdout}");
    }
    assert!(
        stdout.contains("admin-token = \"****\"  # file"),
        "{stdout}"
    );
    assert!(stdout.contains("url = \"postgres://ringmaster:****@db.example.org/ringmaster\"  # environment DATABASE_URL"), "{stdout}");
    assert!(
        stdout.contains("hosts = [\"cmp-1\", \"cmp-2\"]  # file"),
        "{stdout}"
    );
    assert!(stdout.contains("# tls-cert is unset"), "{stdout}");
    let (code, stdout, stderr) = run_to_end(ringmaster().args(["config", "check"]).arg(&file));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(": ok (9 settings)"), "{stdout}");
    // What `config show` prints is itself a good file.
    let (_, shown, _) = run_to_end(
        ringmaster()
            .arg("--config")
            .arg(&file)
            .args(["config", "show"]),
    );
    let again = write(&dir, "shown.toml", &shown);
    let (code, _, stderr) = run_to_end(ringmaster().args(["config", "check"]).arg(&again));
    assert_eq!(code, Some(0), "{stderr}");
}

/// The log file's contents (all its rotated files), and their names.
fn log_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            (entry.file_name().to_string_lossy().into_owned(), text)
        })
        .collect();
    files.sort();
    files
}

fn wait_for_log(dir: &Path, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log_files(dir).iter().any(|(_, text)| text.contains(needle)) {
        assert!(
            Instant::now() < deadline,
            "no log line with {needle:?}: {:#?}",
            log_files(dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn serve_configured_by_the_file_logs_to_a_bounded_file_and_rereads_its_levels_on_sighup() {
    let dir = TempDir::new("config-serve");
    let logs = dir.path.join("log");
    std::fs::create_dir_all(&logs).unwrap();
    let settings = |level: &str| {
        format!(
            "[database]\ndata-dir = \"{}\"\n[http]\nbind = \"127.0.0.1:0\"\n[hosts]\nhosts = [\"cmp-1\"]\n\
             [log]\nfile = \"{}\"\nfile-size = \"16KiB\"\nfile-count = 2\nlevel = \"{level}\"\n",
            dir.path.join("pg").display(),
            logs.join("ringmaster.log").display()
        )
    };
    let file = write(&dir, "ringmaster.toml", &settings("info"));
    let mut command = ringmaster();
    command.arg("--config").arg(&file).arg("serve");
    let mut serve = Running::spawn(command);
    let listening = serve.wait_for_stdout("listening on http://", Duration::from_secs(60));
    let address = address_of(&listening);
    // The embedded PostgreSQL's own lines are in ringmaster's log, not in a file of their own.
    wait_for_log(&logs, "postgres] [");
    wait_for_log(&logs, "database system is ready to accept connections");
    assert!(!dir.path.join("pg.log").exists());
    for _ in 0..20 {
        assert_eq!(http(&address, "GET", "/api/v1/ring").0, 200);
    }
    assert!(
        !log_files(&logs)
            .iter()
            .any(|(_, text)| text.contains("ringmaster::access")),
        "access lines are at DEBUG, below info"
    );
    std::fs::write(&file, settings("debug")).unwrap();
    serve.signal(nix::sys::signal::Signal::SIGHUP);
    wait_for_log(&logs, "SIGHUP: log levels debug");
    for _ in 0..400 {
        assert_eq!(http(&address, "GET", "/api/v1/ring").0, 200);
    }
    wait_for_log(&logs, "ringmaster::access");
    let files = log_files(&logs);
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["ringmaster.log", "ringmaster.log.1", "ringmaster.log.2"],
        "rotated, two kept"
    );
    for (name, text) in &files {
        assert!(
            text.len() <= 16 * 1024,
            "{name} grew past 16 KiB: {}",
            text.len()
        );
    }
    // A file broken since the start: SIGHUP keeps the levels in use and says why.
    std::fs::write(&file, "[log]\nlevel = 3\n").unwrap();
    serve.signal(nix::sys::signal::Signal::SIGHUP);
    wait_for_log(&logs, "SIGHUP: keeping the log levels:");
    wait_for_log(&logs, "[log] level: expected a string, found an integer");
    serve.interrupt();
    let (code, _) = serve.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0));
    assert!(log_files(&logs).len() <= 3);
}

#[test]
fn help_names_each_environment_variable_without_a_stray_value() {
    for args in [&["--help"][..], &["serve", "--help"][..]] {
        let (code, stdout, _) = run_to_end(
            ringmaster()
                .args(args)
                .env("RINGMASTER_BIND", "127.0.0.1:9"),
        );
        assert_eq!(code, Some(0));
        assert!(!stdout.contains("=]"), "{args:?}: {stdout}");
        assert!(
            !stdout.contains("127.0.0.1:9"),
            "no value of the environment shown: {stdout}"
        );
    }
    let (_, stdout, _) = run_to_end(ringmaster().arg("--help"));
    assert!(stdout.contains("[env: RINGMASTER_DATA_DIR]"), "{stdout}");
    assert!(stdout.contains("[env: RINGMASTER_CONFIG]"), "{stdout}");
}

/// Issue 44, item 8: `config show` masks a database password in every form libpq takes (and
/// `ringmaster audit` accepts): the URL's user, a `password=` query parameter, a key/value
/// connection string's `password` quoted or not.
#[test]
fn config_show_masks_a_database_password_in_every_form() {
    for (url, shown) in [
        (
            "postgres://ringmaster:hunter2@db.example.org/ringmaster",
            "postgres://ringmaster:****@db.example.org/ringmaster",
        ),
        (
            "postgresql://ringmaster@db.example.org/ringmaster?password=hunter2&sslmode=require",
            "postgresql://ringmaster@db.example.org/ringmaster?password=****&sslmode=require",
        ),
        (
            "host=db.example.org user=ringmaster password=hunter2 dbname=ringmaster",
            "host=db.example.org user=ringmaster password=**** dbname=ringmaster",
        ),
        (
            "host=db.example.org password = 'hunter2 \\' x' dbname=ringmaster",
            "host=db.example.org password = **** dbname=ringmaster",
        ),
    ] {
        let (code, stdout, stderr) = run_to_end(
            ringmaster()
                .args(["config", "show"])
                .env("DATABASE_URL", url),
        );
        assert_eq!(code, Some(0), "{stderr}");
        assert!(
            !stdout.contains("hunter2"),
            "password shown for {url}: {stdout}"
        );
        let line = stdout
            .lines()
            .find(|line| line.starts_with("url = "))
            .unwrap_or_else(|| panic!("no url line: {stdout}"));
        let value: toml::Value = toml::from_str(line.split("  #").next().unwrap()).unwrap();
        assert_eq!(value["url"].as_str(), Some(shown), "{line}");
    }
}
