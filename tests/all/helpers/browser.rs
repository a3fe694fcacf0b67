//! A browser for the dashboard's tests: a chromedriver of the test's own and a headless
//! Chromium session in it, driven with fantoccini (a maintained WebDriver client) over plain
//! HTTP. Where Chromium or ChromeDriver is missing the browser tests are ignored with their
//! reason (`cfg(missing_browser)`, build.rs), except under CI=true, where they run
//! and `require_browser` fails them.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A chromedriver of this test's own, a Chromium session in it (fantoccini's client) and a
/// plain HTTP client for the tests' own calls to ringmaster.
pub struct Driver {
    process: Child,
    browser: fantoccini::Client,
    pub http: reqwest::Client,
}

impl Driver {
    pub async fn start(profile: &std::path::Path) -> Driver {
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
        let http = super::http_client();
        super::eventually_async(Duration::from_secs(20), "chromedriver to start", || {
            let status = http.get(format!("{base}/status")).send();
            async move { status.await.ok().map(|_| ()) }
        })
        .await;
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
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        let options = json!({"binary": CHROMIUM, "args": args});
        capabilities.insert("goog:chromeOptions".into(), options);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let browser = fantoccini::ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&base)
            .await
            .expect("a Chromium session");
        Driver {
            process,
            browser,
            http,
        }
    }

    /// Opens `url` in the page.
    pub async fn goto(&self, url: &str) {
        self.browser.goto(url).await.expect("the page opened");
    }

    /// Accepts the confirmation the page asks.
    pub async fn accept_alert(&self) {
        self.browser
            .accept_alert()
            .await
            .expect("a confirmation to accept");
    }

    /// Runs `script` in the page; its return value.
    pub async fn script(&self, script: &str) -> Value {
        self.browser
            .execute(script, Vec::new())
            .await
            .unwrap_or_else(|error| panic!("the page's script failed: {error}"))
    }

    /// Clicks the element `selector` finds. The page redraws a table when an event comes (a
    /// resync, a host's state): an element found just before is then gone, and it is found
    /// again, as a user would click the button now on the page.
    pub async fn click(&self, selector: &str) {
        for _ in 0..10 {
            let element = self
                .browser
                .find(fantoccini::Locator::Css(selector))
                .await
                .unwrap_or_else(|error| panic!("{selector}: {error}"));
            match element.click().await {
                Ok(()) => return,
                Err(error) if error.is_stale_element_reference() => {
                    actix_rt::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("clicking {selector}: {error}"),
            }
        }
        panic!("{selector}: redrawn under every click");
    }

    /// What the page shows, as PNG.
    pub async fn screenshot(&self) -> Vec<u8> {
        self.browser.screenshot().await.expect("a screenshot")
    }

    /// Ends the session: chromedriver closes Chromium.
    pub async fn quit(self) {
        let _ = self.browser.clone().close().await;
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

/// Fails the test, naming what to install, if Chromium or ChromeDriver is missing: a test that
/// runs (CI=true, or the tools found at build time) never passes without them.
pub fn require_browser() {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            std::path::Path::new(tool).exists(),
            "{tool} is missing: the browser tests need chromium and chromium-driver \
             (scripts/bootstrap --with-browser installs them)"
        );
    }
}
