//! Every response key of Nova 34.0.0's API samples is in ringmaster's answer (issue 26): the
//! templates are read from the nova wheel (`scripts/nova-samples` fetches it), at the
//! microversion each was written for — servers at 2.100, flavors and their extra specs at 2.61,
//! os-services at 2.53, os-hypervisors at 2.88, key pairs at 2.92, limits and quotas at 2.57,
//! and the version documents. Keys are compared object by object; what is user data in the
//! samples (metadata, addresses, extra specs, image properties, hints) is not walked into.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::api_admin::one_host_four_nodes;
use crate::compute_flavors::create_bare_metal_flavor;
use crate::helpers::{TestApp, eventually_async};

/// The keys whose values are maps of the user's own keys in the samples.
const USER_MAPS: &[&str] = &[
    "addresses",
    "metadata",
    "extra_specs",
    "properties",
    "scheduler_hints",
    "quota_set_",
];

fn samples() -> PathBuf {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/nova-samples");
    let output = std::process::Command::new(script)
        .output()
        .expect("scripts/nova-samples runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// A template as JSON: each `"%(name)s"` a string, each bare `%(name)s` a number.
fn template(root: &std::path::Path, file: &str) -> Value {
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let quoted = regex::Regex::new(r#""[^"]*%\([a-z_0-9]+\)s[^"]*""#).unwrap();
    let text = quoted.replace_all(&text, "\"x\"");
    let bare = regex::Regex::new(r"%\([a-z_0-9]+\)s").unwrap();
    serde_json::from_str(&bare.replace_all(&text, "0")).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The paths of `sample`'s keys that `answer` lacks.
fn missing(sample: &Value, answer: &Value, path: &str, out: &mut Vec<String>) {
    match (sample, answer) {
        (Value::Object(wanted), Value::Object(given)) => {
            for (key, value) in wanted {
                let here = format!("{path}/{key}");
                match given.get(key) {
                    None => out.push(here),
                    Some(_) if USER_MAPS.contains(&key.as_str()) => {}
                    Some(inner) => missing(value, inner, &here, out),
                }
            }
        }
        (Value::Array(wanted), Value::Array(given)) => {
            if let (Some(first), Some(ours)) = (wanted.first(), given.first()) {
                missing(first, ours, &format!("{path}[0]"), out);
            }
        }
        _ => {}
    }
}

fn check(root: &std::path::Path, file: &str, answer: &Value, failures: &mut Vec<String>) {
    let mut out = Vec::new();
    missing(&template(root, file), answer, "", &mut out);
    failures.extend(out.into_iter().map(|key| format!("{file}: {key}")));
}

async fn get(app: &TestApp, version: &str, path: &str) -> Value {
    let (status, _, body) = app.compute(Method::GET, path).version(version).send().await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

#[actix_web::test]
async fn every_key_of_nova_s_samples_is_answered() {
    let root = samples();
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let mut failures = Vec::new();

    let versions: Value = app.get("/compute").await.json().await.unwrap();
    check(
        &root,
        "versions/versions-get-resp.json.tpl",
        &versions,
        &mut failures,
    );
    let version: Value = app.get("/compute/v2.1").await.json().await.unwrap();
    check(
        &root,
        "versions/v21-version-get-resp.json.tpl",
        &version,
        &mut failures,
    );

    let (_, _, created) = app
        .compute(Method::POST, "/servers")
        .version("2.100")
        .json(
            json!({"server": {"name": "sample", "imageRef": "6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1",
                                "flavorRef": flavor, "networks": "none"}}),
        )
        .send()
        .await;
    check(
        &root,
        "servers/v2.100/server-create-resp.json.tpl",
        &created,
        &mut failures,
    );
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    eventually_async(Duration::from_secs(30), "ACTIVE", || async {
        (get(&app, "2.100", &format!("/servers/{id}")).await["server"]["status"] == "ACTIVE")
            .then_some(())
    })
    .await;
    let shown = get(&app, "2.100", &format!("/servers/{id}")).await;
    check(
        &root,
        "servers/v2.100/server-get-resp.json.tpl",
        &shown,
        &mut failures,
    );
    let detail = get(&app, "2.100", "/servers/detail?limit=1").await;
    check(
        &root,
        "servers/v2.100/servers-details-resp.json.tpl",
        &detail,
        &mut failures,
    );
    let list = get(&app, "2.100", "/servers?limit=1").await;
    check(
        &root,
        "servers/v2.100/servers-list-resp.json.tpl",
        &list,
        &mut failures,
    );

    let (_, _, made) = app
        .compute(Method::POST, "/flavors")
        .version("2.61")
        .json(
            json!({"flavor": {"name": "sample", "ram": 1024, "vcpus": 2, "disk": 10, "id": "s1",
                                "rxtx_factor": 2.0, "description": "test description"}}),
        )
        .send()
        .await;
    check(
        &root,
        "flavor-manage/v2.61/flavor-create-post-resp.json.tpl",
        &made,
        &mut failures,
    );
    let shown = get(&app, "2.61", &format!("/flavors/{flavor}")).await;
    check(
        &root,
        "flavors/v2.61/flavor-get-resp.json.tpl",
        &shown,
        &mut failures,
    );
    let detail = get(&app, "2.61", "/flavors/detail?limit=1").await;
    check(
        &root,
        "flavors/v2.61/flavors-detail-resp.json.tpl",
        &detail,
        &mut failures,
    );
    let list = get(&app, "2.61", "/flavors?limit=1").await;
    check(
        &root,
        "flavors/v2.61/flavors-list-resp.json.tpl",
        &list,
        &mut failures,
    );
    let specs = get(&app, "2.61", &format!("/flavors/{flavor}/os-extra_specs")).await;
    check(
        &root,
        "flavor-extra-specs/flavor-extra-specs-list-resp.json.tpl",
        &specs,
        &mut failures,
    );
    let spec = get(
        &app,
        "2.61",
        &format!("/flavors/{flavor}/os-extra_specs/resources:VCPU"),
    )
    .await;
    check(
        &root,
        "flavor-extra-specs/flavor-extra-specs-get-resp.json.tpl",
        &json!({"hw:numa_nodes": spec["resources:VCPU"]}),
        &mut failures,
    );

    let services = get(&app, "2.53", "/os-services").await;
    check(
        &root,
        "os-services/v2.53/services-list-get-resp.json.tpl",
        &services,
        &mut failures,
    );
    let service = services["services"][0]["id"].as_str().unwrap().to_owned();
    for (body, file) in [
        (
            json!({"status": "disabled", "disabled_reason": "maintenance"}),
            "service-disable-log-put-resp",
        ),
        (json!({"status": "enabled"}), "service-enable-put-resp"),
        (json!({"forced_down": false}), "service-force-down-put-resp"),
    ] {
        let (_, _, answer) = app
            .compute(Method::PUT, &format!("/os-services/{service}"))
            .version("2.53")
            .json(body)
            .send()
            .await;
        check(
            &root,
            &format!("os-services/v2.53/{file}.json.tpl"),
            &answer,
            &mut failures,
        );
    }

    let list = get(&app, "2.88", "/os-hypervisors?limit=1").await;
    check(
        &root,
        "os-hypervisors/v2.88/hypervisors-list-resp.json.tpl",
        &list,
        &mut failures,
    );
    let detail = get(&app, "2.88", "/os-hypervisors/detail?limit=1").await;
    check(
        &root,
        "os-hypervisors/v2.88/hypervisors-detail-resp.json.tpl",
        &detail,
        &mut failures,
    );
    let node = detail["hypervisors"][0]["id"].as_str().unwrap().to_owned();
    let shown = get(&app, "2.88", &format!("/os-hypervisors/{node}")).await;
    check(
        &root,
        "os-hypervisors/v2.88/hypervisors-show-resp.json.tpl",
        &shown,
        &mut failures,
    );

    let (_, _, imported) = app
        .compute(Method::POST, "/os-keypairs")
        .version("2.92")
        .json(json!({"keypair": {"name": "sample", "public_key": crate::compute_keypairs::KEY}}))
        .send()
        .await;
    check(
        &root,
        "os-keypairs/v2.92/keypairs-import-post-resp.json.tpl",
        &imported,
        &mut failures,
    );
    let limits = get(&app, "2.57", "/limits").await;
    check(
        &root,
        "limits/v2.57/limit-get-resp.json.tpl",
        &limits,
        &mut failures,
    );
    let quotas = get(&app, "2.57", "/os-quota-sets/admin").await;
    check(
        &root,
        "os-quota-sets/v2.57/quotas-show-get-resp.json.tpl",
        &quotas,
        &mut failures,
    );

    assert!(
        failures.is_empty(),
        "keys of Nova's samples missing:\n{}",
        failures.join("\n")
    );
}
