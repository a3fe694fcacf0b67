//! The admin API's listings and the dashboard's reads: pages, filters, totals, compression,
//! natural host order, usage and the timeline.

use ringmaster::actors::compute_host::Heartbeat;
use ringmaster::actors::rebalancer::RebalanceNow;
use serde_json::{Value, json};

use crate::helpers::{TestApp, get, listing_len, one_host_four_nodes, send};

/// Issue 13, item 5: nodes and instances come a page at a time (`limit`, `marker`) and
/// filtered (`host`, `state`, `resource_class`); without `limit` all of them, as before; bad
/// paging is a 400; answers are compressed when the client asks; hosts sort naturally.
#[actix_web::test]
async fn listings_page_filter_compress_and_sort_hosts_naturally() {
    let app = TestApp::spawn().await;
    let nodes = one_host_four_nodes(&app).await;
    let mut sorted = nodes.clone();
    sorted.sort();

    let all = get(&app, "/api/v1/nodes").await;
    assert_eq!(all.as_array().unwrap().len(), 4, "no limit: every node");
    let first = get(&app, "/api/v1/nodes?limit=3").await;
    let first: Vec<&str> = first
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(
        first,
        sorted[..3].iter().map(String::as_str).collect::<Vec<_>>()
    );
    let rest = get(&app, &format!("/api/v1/nodes?limit=3&marker={}", sorted[2])).await;
    assert_eq!(rest.as_array().unwrap().len(), 1);
    assert_eq!(rest[0]["uuid"], sorted[3].as_str());
    assert_eq!(
        listing_len(
            &app,
            "/api/v1/nodes?host=cmp-1&state=available&resource_class=baremetal"
        )
        .await,
        4
    );
    assert!(listing_len(&app, "/api/v1/nodes?host=cmp-9").await == 0);
    for bad in [
        "/api/v1/nodes?limit=0",
        "/api/v1/nodes?limit=10001",
        "/api/v1/nodes?marker=not-a-uuid",
        "/api/v1/instances?limit=-1",
        "/api/v1/instances?colour=red",
    ] {
        let (status, body) = send(&app, reqwest::Method::GET, bad, None).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "bad_request", "{bad}: {body}");
    }

    let (status, booted) = send(
        &app,
        reqwest::Method::POST,
        "/api/v1/instances",
        Some(json!({"name": "vm-1", "resource_class": "baremetal"})),
    )
    .await;
    assert_eq!(status, 201, "{booted}");
    assert_eq!(
        listing_len(&app, "/api/v1/instances?state=active&host=cmp-1&limit=10").await,
        1
    );
    assert!(listing_len(&app, "/api/v1/instances?state=error").await == 0);

    answers_are_compressed_when_asked(&app).await;
    hosts_sort_naturally(&app).await;
}

async fn answers_are_compressed_when_asked(app: &TestApp) {
    let compressed = app
        .client
        .get(app.url("/api/v1/nodes"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(
        compressed.headers()["content-encoding"],
        "gzip",
        "compressed when asked"
    );
    let plain = app
        .client
        .get(app.url("/api/v1/nodes"))
        .send()
        .await
        .unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
}

async fn hosts_sort_naturally(app: &TestApp) {
    for host in ["cmp-10", "cmp-2"] {
        let (status, _) = send(
            app,
            reqwest::Method::POST,
            "/api/v1/hosts",
            Some(json!({"host": host})),
        )
        .await;
        assert_eq!(status, 201);
    }
    let hosts: Vec<String> = get(app, "/api/v1/hosts")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|host| host["host"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(hosts, vec!["cmp-1", "cmp-2", "cmp-10"], "natural order");
}

/// Issue 13, item 7: what the dashboard reads at 100,000 nodes without reading them all — a
/// page at any `offset` with the total in `X-Total-Count`, a `search`, usage summed per
/// resource class, the ring's node total, and a timeline with one entry per failover.
#[actix_web::test]
async fn the_dashboard_reads_pages_totals_usage_and_a_timeline() {
    let app = TestApp::spawn().await;
    let nodes = one_host_four_nodes(&app).await;
    let mut sorted = nodes.clone();
    sorted.sort();

    let page = app
        .client
        .get(app.url("/api/v1/nodes?limit=2&offset=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.headers()["x-total-count"], "4", "the total of a page");
    let page: Value = page.json().await.unwrap();
    let uuids: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(uuids, [sorted[1].as_str(), sorted[2].as_str()]);
    let unpaged = app
        .client
        .get(app.url("/api/v1/nodes"))
        .send()
        .await
        .unwrap();
    assert!(unpaged.headers().get("x-total-count").is_none());
    let prefix = &sorted[3][..8];
    let found = get(&app, &format!("/api/v1/nodes?search={prefix}")).await;
    assert_eq!(
        found.as_array().unwrap().len(),
        1,
        "a uuid prefix finds its node"
    );
    assert_eq!(
        listing_len(&app, "/api/v1/nodes?search=cmp-1").await,
        4,
        "a host name finds its nodes"
    );
    assert!(
        listing_len(&app, "/api/v1/nodes?search=%25").await == 0,
        "a LIKE wildcard is taken literally"
    );
    for bad in [
        "/api/v1/nodes?offset=-1",
        "/api/v1/timeline?limit=0",
        "/api/v1/timeline?limit=201",
    ] {
        let (status, body) = send(&app, reqwest::Method::GET, bad, None).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }

    let (status, booted) = send(
        &app,
        reqwest::Method::POST,
        "/api/v1/instances",
        Some(json!({"name": "vm-1", "resource_class": "baremetal"})),
    )
    .await;
    assert_eq!(status, 201, "{booted}");
    let instances = app
        .client
        .get(app.url("/api/v1/instances?limit=1&search=vm-"))
        .send()
        .await
        .unwrap();
    assert_eq!(instances.headers()["x-total-count"], "1");
    assert_eq!(
        get(&app, "/api/v1/usage").await,
        json!([{"resource_class": "CUSTOM_BAREMETAL", "total": 4, "reserved": 0, "used": 1, "providers": 4}])
    );
    let ring = get(&app, "/api/v1/ring").await;
    assert_eq!(ring["nodes"], 4);

    a_join_and_a_drain_are_one_timeline_entry_each(&app).await;
}

/// cmp-2 joins and takes its share; cmp-1 drains and cmp-2 takes the rest: one entry each.
async fn a_join_and_a_drain_are_one_timeline_entry_each(app: &TestApp) {
    let (status, _) = send(
        app,
        reqwest::Method::POST,
        "/api/v1/hosts",
        Some(json!({"host": "cmp-2"})),
    )
    .await;
    assert_eq!(status, 201);
    let second = app.actors.hosts.get("cmp-2").unwrap();
    assert!(second.send(Heartbeat).await.unwrap().unwrap());
    app.actors
        .rebalancer
        .send(RebalanceNow)
        .await
        .unwrap()
        .unwrap();
    let ring = get(app, "/api/v1/ring").await;
    let joined = ring["counts"]["cmp-2"].as_i64().unwrap_or(0);
    let (status, _) = send(
        app,
        reqwest::Method::POST,
        "/api/v1/hosts/cmp-1/drain",
        None,
    )
    .await;
    assert_eq!(status, 202);
    app.actors
        .rebalancer
        .send(RebalanceNow)
        .await
        .unwrap()
        .unwrap();
    let timeline = get(app, "/api/v1/timeline").await;
    let summaries: Vec<&str> = timeline
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["summary"].as_str().unwrap())
        .collect();
    let moved = 4 - joined;
    let noun = if moved == 1 { "node" } else { "nodes" };
    assert_eq!(
        summaries[0],
        format!("cmp-1 drained: {moved} {noun} → cmp-2 {moved}"),
        "{timeline}"
    );
    if joined > 0 {
        assert_eq!(
            summaries[1],
            format!(
                "cmp-2 joined: {joined} {} ← cmp-1 {joined}",
                if joined == 1 { "node" } else { "nodes" }
            )
        );
    }
    assert_eq!(
        timeline[0]["hosts"],
        json!([{"host": "cmp-2", "nodes": moved}])
    );
}
