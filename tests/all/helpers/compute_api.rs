//! The Compute API as the tests call it: a bare-metal flavor, a server created and waited for,
//! a second host, and the image and key the tests boot with.

use std::time::Duration;

use reqwest::Method;
use ringmaster::actors::compute_host::Heartbeat;
use serde_json::{Value, json};

use super::{TestApp, eventually_async, send};

/// The image the tests boot (the simulated Glance knows it; a real one is given it).
pub const IMAGE: &str = "6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1";

/// A valid ed25519 public key for the key-pair tests.
pub const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHd2L1V8kQ3cY0b0G0b4r0wJ3mHq8m0b2R0b4o5h9T0q me@example";

/// The one number `sql` counts in the test's database.
pub fn rows(app: &TestApp, sql: &str) -> i64 {
    ringmaster::db::count_rows(&mut app.db.conn(), sql).unwrap()
}

/// Creates a bare-metal flavor as Ironic's install guide does; returns its id.
pub async fn create_bare_metal_flavor(app: &TestApp, name: &str, class: &str) -> String {
    let (status, _, body) = app
        .compute(Method::POST, "/flavors")
        .json(json!({"flavor": {"name": name, "ram": 1024, "vcpus": 1, "disk": 10, "id": null}}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    let id = body["flavor"]["id"].as_str().unwrap().to_owned();
    let (status, _, body) = app
        .compute(Method::POST, &format!("/flavors/{id}/os-extra_specs"))
        .version("2.86")
        .json(json!({"extra_specs": {
            format!("resources:{class}"): "1",
            "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0",
        }}))
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    id
}

/// `POST /servers` at 2.37 with `body` as `token`; the status and the answer.
pub async fn create_server(app: &TestApp, token: &str, body: Value) -> (u16, Value) {
    let (status, _, answer) = app
        .compute(Method::POST, "/servers")
        .version("2.37")
        .token(Some(token))
        .json(body)
        .send()
        .await;
    (status, answer)
}

/// `POST /servers` at `version` as `token`: a server named "s" of `flavor` booting `IMAGE`,
/// with `extra`'s keys added to its body; the status and the answer.
pub async fn create_server_at(
    app: &TestApp,
    version: &str,
    token: &str,
    extra: Value,
    flavor: &str,
) -> (u16, Value) {
    let mut server =
        json!({"name": "s", "imageRef": IMAGE, "flavorRef": flavor, "networks": "none"});
    for (key, value) in extra.as_object().unwrap() {
        server[key] = value.clone();
    }
    let (status, _, body) = app
        .compute(Method::POST, "/servers")
        .version(version)
        .token(token)
        .json(json!({"server": server}))
        .send()
        .await;
    (status, body)
}

/// Waits until server `id` has `status`; returns it as `token` sees it at 2.100.
pub async fn wait_for_status(app: &TestApp, token: &str, id: &str, status: &str) -> Value {
    eventually_async(
        Duration::from_secs(30),
        &format!("server {id} {status}"),
        || async {
            let (code, _, body) = app
                .compute(Method::GET, &format!("/servers/{id}"))
                .version("2.100")
                .token(Some(token))
                .send()
                .await;
            (code == 200 && body["server"]["status"] == status).then_some(body["server"].clone())
        },
    )
    .await
}

/// Starts compute host `cmp-2` in the app's process and has it heartbeat once.
pub async fn second_host(
    app: &TestApp,
) -> actix::Addr<ringmaster::actors::compute_host::ComputeHost> {
    let (status, _) = send(
        app,
        Method::POST,
        "/api/v1/hosts",
        Some(json!({"host": "cmp-2"})),
    )
    .await;
    assert_eq!(status, 201);
    let second = app.actors.hosts.get("cmp-2").unwrap();
    assert!(second.send(Heartbeat).await.unwrap().unwrap());
    second
}
