//! Driving the `ringmaster` binary: a command with no inherited settings, a running process
//! whose output is collected, the demo with fast timings, and plain HTTP/1.0 requests to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// A folder for one test under /dev/shm (or the temp dir), removed when dropped, a failed
/// test's unwinding included (`tempfile`).
pub struct TempDir {
    pub path: std::path::PathBuf,
    _folder: tempfile::TempDir,
}

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let folder = tempfile::Builder::new()
            .prefix(&format!("ringmaster-test-{label}-"))
            .tempdir_in(base)
            .unwrap();
        TempDir {
            path: folder.path().to_owned(),
            _folder: folder,
        }
    }
}

/// Builds a command for the `ringmaster` binary with no database settings inherited.
pub fn ringmaster() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ringmaster"));
    for (name, _) in std::env::vars() {
        if name.starts_with("RINGMASTER_") || name == "DATABASE_URL" {
            command.env_remove(name);
        }
    }
    command.env("RUST_LOG", "info");
    // No configuration file unless a test gives one (not /etc/ringmaster's).
    command.env("RINGMASTER_CONFIG", "");
    command
}

/// A running `ringmaster` process whose stdout and stderr are collected line by line.
pub struct Running {
    pub child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    pub stderr_lines: Vec<String>,
}

impl Running {
    pub fn spawn(mut command: Command) -> Running {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ringmaster");
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
            stderr_lines: Vec::new(),
        }
    }

    /// Waits for the first stdout line containing `needle`.
    pub fn wait_for_stdout(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stdout.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        self.collect_stderr();
        panic!(
            "no stdout line with {needle:?}; stderr: {:#?}",
            self.stderr_lines
        );
    }

    /// Waits for the process to exit and returns its exit code and all stderr lines.
    pub fn wait_exit(&mut self, timeout: Duration) -> (Option<i32>, Vec<String>) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Give the reader threads a moment to drain the pipes.
                std::thread::sleep(Duration::from_millis(100));
                self.collect_stderr();
                return (status.code(), self.stderr_lines.clone());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                self.collect_stderr();
                panic!(
                    "ringmaster did not exit within {timeout:?}; stderr: {:#?}",
                    self.stderr_lines
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for a stderr line containing `needle` (lines read so far count too); returns it.
    pub fn wait_for_stderr(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            self.collect_stderr();
            if let Some(line) = self.stderr_lines.iter().find(|line| line.contains(needle)) {
                return line.clone();
            }
            if Instant::now() > deadline {
                panic!(
                    "no stderr line with {needle:?} within {timeout:?}: {:#?}",
                    self.stderr_lines
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn collect_stderr(&mut self) {
        while let Ok(line) = self.stderr.try_recv() {
            self.stderr_lines.push(line);
        }
    }

    /// Returns what the process wrote to stdout so far, lines joined with newlines.
    pub fn stdout_text(&mut self) -> String {
        let mut text = String::new();
        while let Ok(line) = self.stdout.try_recv() {
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    /// Sends SIGINT, as Ctrl-C does.
    pub fn interrupt(&self) {
        self.signal(nix::sys::signal::Signal::SIGINT);
    }

    /// Sends `signal` (SIGTERM: as systemd and container runtimes stop a service).
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn lines_of(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Runs a finished command and returns (exit code, stdout, stderr).
pub fn run_to_end(command: &mut Command) -> (Option<i32>, String, String) {
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("run ringmaster");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `command` with `input` on its standard input, to its end; returns what it wrote.
pub fn run_with_input(command: &mut Command, input: &str) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{command:?}: {error}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Asserts that stderr holds exactly one error line, mentioning `needle`, and no panic.
pub fn assert_one_error_line(stderr: &[String], needle: &str) {
    let errors: Vec<&String> = stderr
        .iter()
        .filter(|line| line.to_lowercase().contains("error"))
        .collect();
    assert!(
        !stderr
            .iter()
            .any(|line| line.contains("panicked") || line.contains("RUST_BACKTRACE")),
        "no panic expected: {stderr:#?}"
    );
    assert_eq!(
        errors.len(),
        1,
        "exactly one error line expected: {stderr:#?}"
    );
    assert!(errors[0].starts_with("ringmaster: error: "), "{stderr:#?}");
    assert!(
        errors[0].contains(needle),
        "error line should mention {needle:?}: {stderr:#?}"
    );
}

/// Sends one HTTP/1.0 request and returns the status code and body.
pub fn http(address: &str, method: &str, path: &str) -> (u16, String) {
    http_json(address, method, path, "")
}

/// Starts `demo` with the FAST timings on a data directory of its own; returns the folder
/// (removed on drop), the process and its `host:port`.
pub fn start_demo(label: &str) -> (TempDir, Running, String) {
    start_demo_with(label, &[])
}

/// `start_demo` with more arguments (`--hosts`, `--nodes` …).
pub fn start_demo_with(label: &str, extra: &[&str]) -> (TempDir, Running, String) {
    let dir = TempDir::new(label);
    let mut command = ringmaster();
    command
        .args(["demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path.join("pg"))
        .args(FAST)
        .args(extra)
        .env("RUST_LOG", "warn");
    let mut demo = Running::spawn(command);
    let address =
        address_of(&demo.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    (dir, demo, address)
}

/// Starts `serve` on a random loopback port over the database at `url`, with more arguments;
/// returns the process and its `host:port` once it listens.
pub fn start_serve(url: &str, extra: &[&str], log: &str) -> (Running, String) {
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(extra)
        .env("DATABASE_URL", url)
        .env("RUST_LOG", log);
    let mut serve = Running::spawn(command);
    let address =
        address_of(&serve.wait_for_stdout("listening on http://", Duration::from_secs(60)));
    (serve, address)
}

/// Returns `host:port` from the "listening on http://host:port/" line.
pub fn address_of(line: &str) -> String {
    line.rsplit("://")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned()
}

/// Flags that make a `serve`/`demo` process react within a couple of seconds.
pub const FAST: [&str; 8] = [
    "--report-interval",
    "200ms",
    "--service-down-time",
    "2s",
    "--rebalance-interval",
    "200ms",
    "--update-resources-interval",
    "500ms",
];

/// Sends one HTTP/1.0 request with a JSON body and returns the status code and body.
pub fn http_json(address: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let (status, _, body) = exchange(address, method, path, body);
    (status, body)
}

/// Sends one HTTP/1.0 request with a JSON body; returns the status code, the response head
/// (lower-cased) and the body.
pub fn exchange(address: &str, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_lowercase(), body.to_owned())
}

/// The value of header `name` (lower case) in a head `exchange` returned.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

/// Waits until `count` providers of a `ringmaster` process at `address` have their node's
/// inventory (one CUSTOM_BAREMETAL) reported: its nodes can be booted on.
pub fn wait_for_reported_providers(address: &str, count: usize) {
    super::eventually(
        Duration::from_secs(30),
        &format!("{count} providers with inventory"),
        || {
            let (_, body) = http(address, "GET", "/api/v1/providers");
            let providers: serde_json::Value = serde_json::from_str(&body).ok()?;
            (providers
                .as_array()?
                .iter()
                .filter(|provider| provider["inventory"]["CUSTOM_BAREMETAL"]["total"] == 1)
                .count()
                == count)
                .then_some(())
        },
    );
}
