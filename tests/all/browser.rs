//! The dashboard in a real browser: headless Chromium driven over WebDriver (chromedriver)
//! against a running `ringmaster demo`. It loads, shows 3 hosts and 12 nodes, crashes a host
//! from the UI (accepting the confirmation), sees the host's nodes change owner on the ring and
//! in the table within seconds while the audit banner stays green, and saves a screenshot to
//! `target/dashboard-screenshot.png`.
//!
//! The WebDriver calls are plain JSON over HTTP (reqwest), which is all this test needs.
//! Without chromium and chromedriver the test is skipped, except under CI=true, where it fails.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

struct Driver {
    process: Child,
    base: String,
    client: reqwest::Client,
    session: String,
}

impl Driver {
    async fn start(profile: &std::path::Path) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Its own process group, so that Drop can stop Chromium with it.
        let process = Command::new(CHROMEDRIVER)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while client.get(format!("{base}/status")).send().await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            actix_rt::time::sleep(Duration::from_millis(100)).await;
        }
        let mut driver = Driver {
            process,
            base,
            client,
            session: String::new(),
        };
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1300",
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .chain([format!("--user-data-dir={}", profile.display())])
        .collect::<Vec<_>>();
        let created = driver
            .call(
                reqwest::Method::POST,
                "/session",
                json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
                }}}),
            )
            .await;
        driver.session = created["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        driver
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let mut request = self.client.request(method, url);
        if !body.is_null() {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        assert!(
            answer["value"].get("error").is_none(),
            "webdriver {path}: {answer}"
        );
        answer["value"].clone()
    }

    async fn script(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    async fn click(&self, selector: &str) {
        let element = self
            .call(
                reqwest::Method::POST,
                "/element",
                json!({"using": "css selector", "value": selector}),
            )
            .await;
        let id = element
            .as_object()
            .and_then(|map| map.values().next())
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            json!({}),
        )
        .await;
    }

    async fn screenshot(&self) -> Vec<u8> {
        let encoded = self
            .call(reqwest::Method::GET, "/screenshot", Value::Null)
            .await;
        decode_base64(encoded.as_str().unwrap())
    }

    /// Ends the session: chromedriver closes Chromium.
    async fn quit(self) {
        let url = format!("{}/session/{}", self.base, self.session);
        let _ = self.client.delete(url).send().await;
    }
}

impl Drop for Driver {
    /// Stops chromedriver and whatever Chromium it still runs (a test that failed midway).
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.process.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let bits = chunk.iter().enumerate().fold(0u32, |acc, (i, c)| {
            acc | (u32::from(value(*c)) << (18 - 6 * i))
        });
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

/// What the page shows, read in one script.
const STATE: &str = r#"
    const nodes = [...document.querySelectorAll('#nodes tbody tr')];
    const dots = [...document.querySelectorAll('#ring circle.ring-node')];
    return {
        hosts: document.querySelectorAll('#hosts tbody tr').length,
        nodes: nodes.length,
        dots: dots.length,
        rowsOnCmp1: nodes.filter((row) => row.dataset.owner === 'cmp-1').length,
        dotsOnCmp1: dots.filter((dot) => dot.dataset.owner === 'cmp-1').length,
        audit: document.querySelector('#audit').className,
        auditText: document.querySelector('#audit').textContent,
    };
"#;

async fn wait_for(
    driver: &Driver,
    what: &str,
    timeout: Duration,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let state = driver.script(STATE).await;
        assert!(
            state["audit"]
                .as_str()
                .is_some_and(|class| !class.contains("bad")),
            "the audit banner turned red: {}",
            state["auditText"]
        );
        if check(&state) {
            return state;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {state}"
        );
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
}

#[actix_web::test]
async fn the_dashboard_shows_a_crash_move_nodes_on_the_ring_and_in_the_table() {
    if !std::path::Path::new(CHROMIUM).exists() || !std::path::Path::new(CHROMEDRIVER).exists() {
        assert!(
            std::env::var("CI").map_or(true, |ci| ci != "true"),
            "CI needs chromium and chromium-driver (scripts/bootstrap --with-browser installs them)"
        );
        eprintln!("skipping the browser test: chromium or chromedriver is not installed");
        return;
    }
    let (dir, mut demo, address) = crate::helpers::start_demo("browser");

    let driver = Driver::start(&dir.path.join("chrome-profile")).await;
    driver
        .call(
            reqwest::Method::POST,
            "/url",
            json!({"url": format!("http://{address}/")}),
        )
        .await;
    let before = wait_for(
        &driver,
        "3 hosts and 12 owned nodes",
        Duration::from_secs(30),
        |state| {
            state["hosts"] == 3
                && state["nodes"] == 12
                && state["dots"] == 12
                && state["audit"].as_str() == Some("banner ok")
        },
    )
    .await;
    assert!(
        before["rowsOnCmp1"].as_u64().unwrap() > 0,
        "cmp-1 owns nodes before the crash: {before}"
    );

    driver
        .click("button[data-action=crash][data-host=cmp-1]")
        .await;
    driver
        .call(reqwest::Method::POST, "/alert/accept", json!({}))
        .await;

    let after = wait_for(
        &driver,
        "cmp-1's nodes to move",
        Duration::from_secs(20),
        |state| state["rowsOnCmp1"] == 0 && state["dotsOnCmp1"] == 0 && state["nodes"] == 12,
    )
    .await;
    assert_eq!(
        after["audit"], "banner ok",
        "the audit banner stays green: {after}"
    );
    actix_rt::time::sleep(Duration::from_millis(1_200)).await;

    let screenshot = driver.screenshot().await;
    assert!(screenshot.starts_with(b"\x89PNG"), "a PNG screenshot");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshot.png");
    std::fs::write(&path, screenshot).unwrap();
    eprintln!("dashboard screenshot: {}", path.display());
    driver.quit().await;
    demo.interrupt();
    demo.wait_exit(Duration::from_secs(30));
}
