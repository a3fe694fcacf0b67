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

use crate::helpers::{TestApp, create_bare_metal_flavor, eventually_async, one_host_four_nodes};

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

/// The templates, the app they are compared with, and the keys found missing so far.
struct Samples {
    root: PathBuf,
    app: TestApp,
    failures: Vec<String>,
}

impl Samples {
    /// Notes each key of template `file` that `answer` lacks.
    fn check(&mut self, file: &str, answer: &Value) {
        let mut out = Vec::new();
        missing(&template(&self.root, file), answer, "", &mut out);
        self.failures
            .extend(out.into_iter().map(|key| format!("{file}: {key}")));
    }

    /// GETs `path` at `version` (asserting 200) and checks it against template `file`.
    async fn read(&mut self, version: &str, path: &str, file: &str) -> Value {
        let (status, _, body) = self
            .app
            .compute(Method::GET, path)
            .version(version)
            .send()
            .await;
        assert_eq!(status, 200, "{path}: {body}");
        self.check(file, &body);
        body
    }

    /// Sends `body` to `path` at `version` and checks the answer against template `file`.
    async fn write(
        &mut self,
        (method, path): (Method, &str),
        version: &str,
        body: Value,
        file: &str,
    ) -> Value {
        let (_, _, answer) = self
            .app
            .compute(method, path)
            .version(version)
            .json(body)
            .send()
            .await;
        self.check(file, &answer);
        answer
    }
}

async fn versions_and_servers(samples: &mut Samples, flavor: &str) {
    let versions: Value = samples.app.get("/compute").await.json().await.unwrap();
    samples.check("versions/versions-get-resp.json.tpl", &versions);
    let version: Value = samples.app.get("/compute/v2.1").await.json().await.unwrap();
    samples.check("versions/v21-version-get-resp.json.tpl", &version);
    let server = json!({"server": {"name": "sample", "flavorRef": flavor, "networks": "none",
                                   "imageRef": "6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1"}});
    let created = samples
        .write(
            (Method::POST, "/servers"),
            "2.100",
            server,
            "servers/v2.100/server-create-resp.json.tpl",
        )
        .await;
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    let app = &samples.app;
    eventually_async(Duration::from_secs(30), "ACTIVE", || async {
        let (_, _, shown) = app
            .compute(Method::GET, &format!("/servers/{id}"))
            .version("2.100")
            .send()
            .await;
        (shown["server"]["status"] == "ACTIVE").then_some(())
    })
    .await;
    for (path, file) in [
        (format!("/servers/{id}"), "server-get-resp"),
        ("/servers/detail?limit=1".to_owned(), "servers-details-resp"),
        ("/servers?limit=1".to_owned(), "servers-list-resp"),
    ] {
        samples
            .read("2.100", &path, &format!("servers/v2.100/{file}.json.tpl"))
            .await;
    }
}

async fn flavors(samples: &mut Samples, flavor: &str) {
    let sample = json!({"flavor": {"name": "sample", "ram": 1024, "vcpus": 2, "disk": 10, "id": "s1",
                                   "rxtx_factor": 2.0, "description": "test description"}});
    let file = "flavor-manage/v2.61/flavor-create-post-resp.json.tpl";
    samples
        .write((Method::POST, "/flavors"), "2.61", sample, file)
        .await;
    for (path, file) in [
        (
            format!("/flavors/{flavor}"),
            "flavors/v2.61/flavor-get-resp",
        ),
        (
            "/flavors/detail?limit=1".to_owned(),
            "flavors/v2.61/flavors-detail-resp",
        ),
        (
            "/flavors?limit=1".to_owned(),
            "flavors/v2.61/flavors-list-resp",
        ),
        (
            format!("/flavors/{flavor}/os-extra_specs"),
            "flavor-extra-specs/flavor-extra-specs-list-resp",
        ),
    ] {
        samples
            .read("2.61", &path, &format!("{file}.json.tpl"))
            .await;
    }
    let (_, _, spec) = samples
        .app
        .compute(
            Method::GET,
            &format!("/flavors/{flavor}/os-extra_specs/resources:VCPU"),
        )
        .version("2.61")
        .send()
        .await;
    samples.check(
        "flavor-extra-specs/flavor-extra-specs-get-resp.json.tpl",
        &json!({"hw:numa_nodes": spec["resources:VCPU"]}),
    );
}

async fn services_and_hypervisors(samples: &mut Samples) {
    let services = samples
        .read(
            "2.53",
            "/os-services",
            "os-services/v2.53/services-list-get-resp.json.tpl",
        )
        .await;
    let service = services["services"][0]["id"].as_str().unwrap().to_owned();
    let path = format!("/os-services/{service}");
    for (body, file) in [
        (
            json!({"status": "disabled", "disabled_reason": "maintenance"}),
            "service-disable-log-put-resp",
        ),
        (json!({"status": "enabled"}), "service-enable-put-resp"),
        (json!({"forced_down": false}), "service-force-down-put-resp"),
    ] {
        let file = format!("os-services/v2.53/{file}.json.tpl");
        samples
            .write((Method::PUT, &path), "2.53", body, &file)
            .await;
    }
    let hypervisors = "os-hypervisors/v2.88";
    samples
        .read(
            "2.88",
            "/os-hypervisors?limit=1",
            &format!("{hypervisors}/hypervisors-list-resp.json.tpl"),
        )
        .await;
    let detail = samples
        .read(
            "2.88",
            "/os-hypervisors/detail?limit=1",
            &format!("{hypervisors}/hypervisors-detail-resp.json.tpl"),
        )
        .await;
    let node = detail["hypervisors"][0]["id"].as_str().unwrap().to_owned();
    let file = format!("{hypervisors}/hypervisors-show-resp.json.tpl");
    samples
        .read("2.88", &format!("/os-hypervisors/{node}"), &file)
        .await;
}

async fn keypairs_limits_and_quotas(samples: &mut Samples) {
    let key = json!({"keypair": {"name": "sample", "public_key": crate::helpers::KEY}});
    let file = "os-keypairs/v2.92/keypairs-import-post-resp.json.tpl";
    samples
        .write((Method::POST, "/os-keypairs"), "2.92", key, file)
        .await;
    samples
        .read("2.57", "/limits", "limits/v2.57/limit-get-resp.json.tpl")
        .await;
    let file = "os-quota-sets/v2.57/quotas-show-get-resp.json.tpl";
    samples.read("2.57", "/os-quota-sets/admin", file).await;
}

#[actix_web::test]
async fn every_key_of_nova_s_samples_is_answered() {
    let root = samples();
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    let mut samples = Samples {
        root,
        app,
        failures: Vec::new(),
    };
    versions_and_servers(&mut samples, &flavor).await;
    flavors(&mut samples, &flavor).await;
    services_and_hypervisors(&mut samples).await;
    keypairs_limits_and_quotas(&mut samples).await;
    assert!(
        samples.failures.is_empty(),
        "keys of Nova's samples missing:\n{}",
        samples.failures.join("\n")
    );
}
