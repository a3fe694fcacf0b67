//! The dashboard's empty states and per-state actions in a real browser (issue 30): with no
//! node, instance, move or archive run every table and panel says so (one row, no placeholder
//! rows); a host shows only the actions that can succeed in its state — Crash and Drain while it
//! runs here, Start once it is down, Enable once it is drained — and with a real Ironic (a
//! stand-in serving its listing) the enroll form and the lock buttons give way to a hint that
//! names `openstack baremetal`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{Driver, require_browser};
use crate::helpers::{FAST, StandinIronic, TempDir, TestDb, start_serve};

/// What the page shows of its empty states and actions, read in one script.
const STATE: &str = r#"
    const rows = (id) => [...document.querySelectorAll(`#${id} tbody tr`)]
        .filter((row) => !row.classList.contains('spacer')).map((row) => row.textContent);
    const texts = (selector) => [...document.querySelectorAll(selector)].map((item) => item.textContent);
    const cmp1 = [...document.querySelectorAll('#hosts tbody tr')].find((row) => row.dataset.key === 'cmp-1');
    return {
        hosts: rows('hosts'), nodes: rows('nodes'), instances: rows('instances'),
        usage: rows('usage'), archive: rows('archive-runs'),
        timeline: texts('#moves li'), legend: texts('#legend li'),
        state: cmp1 ? cmp1.cells[1].textContent : null,
        actions: [...document.querySelectorAll('#hosts tbody button')].map((b) => b.dataset.action),
        enrollHidden: document.querySelector('#enroll').hidden,
        hintHidden: document.querySelector('#ironic-hint').hidden,
        hint: document.querySelector('#ironic-hint').textContent,
        lockButtons: document.querySelectorAll('#nodes tbody button').length,
        nodesTotal: document.querySelector('#nodes-count').textContent,
    };
"#;

/// Reads `STATE` until `check` holds (at most `timeout`); returns what it read last.
async fn until(driver: &Driver, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = driver.script(STATE).await;
        if check(&state) {
            return state;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {state}"
        );
        actix_rt::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn open(dir: &TempDir, address: &str) -> Driver {
    let driver = Driver::start(&dir.path.join("chrome-profile")).await;
    driver.goto(&format!("http://{address}/")).await;
    driver
}

/// Clicks host cmp-1's `action` (accepting a confirmation when one is asked).
async fn act(driver: &Driver, action: &str, confirm: bool) {
    driver
        .click(&format!("button[data-action={action}][data-host=cmp-1]"))
        .await;
    if confirm {
        driver.accept_alert().await;
    }
}

fn one_row(state: &Value, table: &str, text: &str) -> bool {
    state[table] == json!([text])
}

#[actix_web::test]
#[cfg_attr(
    missing_browser,
    ignore = "needs chromium and chromium-driver (scripts/bootstrap --with-browser); CI=true runs it"
)]
async fn an_empty_deployment_says_none_and_a_host_offers_only_what_can_succeed() {
    require_browser();
    let db = TestDb::new();
    let mut args = vec!["--hosts", "cmp-1"];
    args.extend(FAST);
    let (mut serve, address) = start_serve(db.url(), &args, "warn");
    let dir = TempDir::new("browser-states");
    let driver = open(&dir, &address).await;
    // Each panel says it is empty, in one row and no placeholder.
    let empty = until(&driver, "every panel empty", |state| {
        state["state"] == "up"
            && one_row(state, "nodes", "no nodes")
            && one_row(state, "instances", "no instances")
            && one_row(state, "usage", "no inventory")
            && one_row(state, "archive", "No archive runs yet")
            && state["timeline"] == json!(["No failovers, drains or joins yet"])
            && state["legend"] == json!(["No nodes yet"])
    })
    .await;
    assert_eq!(empty["nodesTotal"], "(0)");
    assert_eq!(
        empty["actions"],
        json!(["crash", "drain"]),
        "an up host of this process"
    );

    act(&driver, "crash", true).await;
    let down = until(&driver, "cmp-1 down", |state| state["state"] == "down").await;
    assert_eq!(
        down["actions"],
        json!(["start", "drain"]),
        "a crashed host: {down}"
    );
    act(&driver, "start", false).await;
    let up = until(&driver, "cmp-1 up again", |state| {
        state["state"] == "up" && state["actions"] == json!(["crash", "drain"])
    })
    .await;
    assert!(up["hintHidden"].as_bool().unwrap() && !up["enrollHidden"].as_bool().unwrap());
    act(&driver, "drain", true).await;
    let drained = until(&driver, "cmp-1 drained", |state| {
        state["state"] == "disabled"
    })
    .await;
    assert_eq!(drained["actions"], json!(["crash", "enable"]), "{drained}");
    driver.quit().await;
    serve.interrupt();
    serve.wait_exit(Duration::from_secs(30));
}

#[actix_web::test]
#[cfg_attr(
    missing_browser,
    ignore = "needs chromium and chromium-driver (scripts/bootstrap --with-browser); CI=true runs it"
)]
async fn with_a_real_ironic_nodes_are_managed_there_and_the_page_says_how() {
    require_browser();
    let ironic = StandinIronic::start(3);
    let db = TestDb::new();
    let mut args = vec!["--hosts", "cmp-1", "--ironic-url", ironic.url.as_str()];
    args.extend(FAST);
    let (mut serve, address) = start_serve(db.url(), &args, "warn");
    let dir = TempDir::new("browser-ironic");
    let driver = open(&dir, &address).await;
    let state = until(&driver, "three nodes of the real Ironic", |state| {
        state["nodesTotal"] == "(3)" && state["nodes"].as_array().is_some_and(|n| n.len() == 3)
    })
    .await;
    assert!(
        state["enrollHidden"].as_bool().unwrap(),
        "no enroll form: {state}"
    );
    assert!(!state["hintHidden"].as_bool().unwrap(), "{state}");
    assert!(
        state["hint"]
            .as_str()
            .unwrap()
            .contains("openstack baremetal node"),
        "{state}"
    );
    assert_eq!(state["lockButtons"], 0, "no lock buttons: {state}");
    driver.quit().await;
    serve.interrupt();
    serve.wait_exit(Duration::from_secs(30));
}
