//! Listing benchmark (issue 31): what one listing of Ironic costs ringmaster, with 1 % of the
//! nodes changed per interval, against the stand-in Ironic of the test suite (100,000 nodes
//! by default, `NODES=` to change) or a real Ironic (`IRONIC_URL=`). For each listing: its
//! time, Ironic's share (the driver's wait for the pages' bytes), ringmaster's side (the rest:
//! parse, compare, write), pages and nodes written; then the same listing the way issue
//! 16 compared it (every page kept, the whole mirror read and compared), and the memory the
//! listing holder keeps. Real PostgreSQL (a throwaway cluster), the system clock.
//!
//! Run: `cargo bench --bench ironic_listing`, or `scripts/ironic start && scripts/ironic enroll
//! 10000`, then `IRONIC_URL=http://127.0.0.1:6385 cargo bench --bench ironic_listing`.

#[path = "../tests/all/helpers/standin_ironic.rs"]
#[allow(dead_code, clippy::expect_used, clippy::unwrap_used)]
mod standin_ironic;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ringmaster::actors::node_source::IronicDriver;
use ringmaster::config::IronicSettings;
use ringmaster::db::build_pool;
use ringmaster::db::scratch::ScratchServer;
use ringmaster::domain::clock::SystemClock;
use ringmaster::ironic_api::{IronicApi, IronicAuth, NodeSelection};
use uuid::Uuid;

type Error = Box<dyn std::error::Error>;

/// Listings with 1 % of the nodes changed before each.
const ROUNDS: usize = 5;
/// The fields ringmaster asks for (as `IronicApi` does at API 1.82).
const FIELDS: &str = "uuid,name,resource_class,provision_state,power_state,maintenance,\
                      last_error,instance_uuid,reservation,traits,properties,conductor_group,\
                      network_data,shard";

/// Where the nodes come from, and how 1 % of them is changed.
enum Source {
    Standin(standin_ironic::StandinIronic),
    Real(String),
}

fn main() -> Result<(), Error> {
    let source = match std::env::var("IRONIC_URL") {
        Ok(url) => Source::Real(url),
        Err(_) => {
            let nodes = std::env::var("NODES")
                .ok()
                .and_then(|nodes| nodes.parse().ok())
                .unwrap_or(100_000);
            Source::Standin(standin_ironic::StandinIronic::start(nodes))
        }
    };
    let server = ScratchServer::start_private(None)?;
    let db = server.create_database()?;
    let pool = build_pool(db.url(), 8)?;
    let system = actix::System::new();
    system.block_on(async move {
        let url = match &source {
            Source::Standin(standin) => standin.url.clone(),
            Source::Real(url) => url.clone(),
        };
        let driver = IronicDriver::new(
            IronicSettings::new(&url),
            None,
            pool.clone(),
            Arc::new(SystemClock::new()),
        );
        run(&driver, &source, &url, &pool).await
    })
}

async fn run(
    driver: &IronicDriver,
    source: &Source,
    url: &str,
    pool: &ringmaster::db::Pool,
) -> Result<(), Error> {
    ringmaster::tls::install_default_provider();
    let http = reqwest::Client::new();
    println!("| listing | time | Ironic's share | ringmaster's side | pages | nodes written |");
    println!("|---|---:|---:|---:|---:|---:|");
    let first = listing(driver, "first (every node new)").await?;
    let nodes = driver.status().nodes;
    listing(driver, "idle (nothing changed)").await?;
    let mut sides = Vec::new();
    for round in 0..ROUNDS {
        let changed = change(source, url, &http, round, nodes / 100).await?;
        let side = listing(driver, &format!("1 % changed ({changed} nodes)")).await?;
        sides.push(side);
    }
    sides.sort();
    let memory = driver.listing_memory().await;
    println!(
        "\n{nodes} nodes. ringmaster's side of a listing with 1 % changed: median {} ms, \
         slowest {} ms (first listing {} ms); memory kept between listings: {:.2} MB",
        sides[sides.len() / 2].as_millis(),
        sides.last().map_or(0, Duration::as_millis),
        first.as_millis(),
        memory as f64 / 1e6
    );
    change(source, url, &http, ROUNDS, nodes / 100).await?;
    issue_16_compare(url, pool, &http).await
}

/// Lists once through the driver: prints the row and returns ringmaster's side.
async fn listing(driver: &IronicDriver, label: &str) -> Result<Duration, Error> {
    let started = Instant::now();
    let written = driver.list_once().await?;
    let took = started.elapsed();
    let status = driver.status();
    let pages = status.requests;
    let fetch = Duration::from_millis(status.ironic_ms);
    let side = took.saturating_sub(fetch);
    println!(
        "| {label} | {} ms | {} ms | {} ms | {pages} | {} |",
        took.as_millis(),
        fetch.as_millis(),
        side.as_millis(),
        written.len()
    );
    Ok(side)
}

/// Reads every page of the listing as bytes (Ironic's time and the transfer, no parsing).
async fn fetch_only(http: &reqwest::Client, url: &str) -> Result<Duration, Error> {
    #[derive(serde::Deserialize)]
    struct Last {
        uuid: Uuid,
    }
    #[derive(serde::Deserialize)]
    struct Page {
        nodes: Vec<Last>,
        next: Option<String>,
    }
    let mut fetched = Duration::ZERO;
    let mut marker: Option<Uuid> = None;
    loop {
        let mut page_url = format!("{url}/v1/nodes?fields={FIELDS}&limit=1000");
        if let Some(marker) = marker {
            page_url.push_str(&format!("&marker={marker}"));
        }
        let started = Instant::now();
        let body = http
            .get(&page_url)
            .header("X-OpenStack-Ironic-API-Version", "1.82")
            .send()
            .await?
            .bytes()
            .await?;
        fetched += started.elapsed();
        // Only the marker is read, outside the time.
        let page: Page = serde_json::from_slice(&body)?;
        match (page.nodes.last(), page.next) {
            (Some(last), Some(_)) if page.nodes.len() == 1000 => marker = Some(last.uuid),
            _ => return Ok(fetched),
        }
    }
}

/// Changes `count` nodes: the stand-in flips their power; a real Ironic sets (or, every other
/// round, unsets) their maintenance.
async fn change(
    source: &Source,
    url: &str,
    http: &reqwest::Client,
    round: usize,
    count: usize,
) -> Result<usize, Error> {
    match source {
        Source::Standin(standin) => Ok(standin.change((round % 2) * count, count).len()),
        Source::Real(_) => {
            let api = IronicApi::connect(
                url,
                IronicAuth::None,
                &ringmaster::tls::client::ClientTls::system(),
            )
            .await?;
            let (nodes, _) = api.list_nodes(&NodeSelection::default()).await?;
            let on = round.is_multiple_of(2);
            for node in nodes.iter().take(count) {
                let request = http
                    .request(
                        if on {
                            reqwest::Method::PUT
                        } else {
                            reqwest::Method::DELETE
                        },
                        format!("{url}/v1/nodes/{}/maintenance", node.uuid),
                    )
                    .header("X-OpenStack-Ironic-API-Version", "1.82");
                let request = if on {
                    request.json(&serde_json::json!({"reason": "bench"}))
                } else {
                    request
                };
                let status = request.send().await?.status();
                if status.as_u16() != 202 {
                    return Err(format!("maintenance of {}: {status}", node.uuid).into());
                }
            }
            Ok(count)
        }
    }
}

/// The listing as issue 16 compared it: every page kept, the whole mirror read, compared.
async fn issue_16_compare(
    url: &str,
    pool: &ringmaster::db::Pool,
    http: &reqwest::Client,
) -> Result<(), Error> {
    let api = IronicApi::connect(
        url,
        IronicAuth::None,
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await?;
    let started = Instant::now();
    let (records, _) = api.list_nodes(&NodeSelection::default()).await?;
    let listed = started.elapsed();
    let fetch = fetch_only(http, url).await?;
    let nodes = records.len();
    let pool = pool.clone();
    let started = Instant::now();
    let current = ringmaster::db::run(&pool, |conn| {
        ringmaster::db::ironic_mirror::mirrored_nodes(conn)
    })
    .await?;
    let read = started.elapsed();
    let started = Instant::now();
    let kept: Vec<_> = records
        .into_iter()
        .filter_map(|record| {
            Some(ringmaster::domain::mirror::ListedNode {
                uuid: record.uuid,
                name: record.name,
                resource_class: record.resource_class?,
                provision_state: record.provision_state,
                power_state: record.power_state,
                maintenance: record.maintenance,
                last_error: record.last_error,
                instance_uuid: record.instance_uuid,
                reservation: record.reservation,
                traits: record.traits,
                cpus: 8,
                memory_mb: 16_384,
                local_gb: 100,
                addresses: None,
                conductor_group: record.conductor_group.unwrap_or_default(),
                shard: record.shard,
            })
        })
        .collect();
    ringmaster::domain::mirror::compare(&current, kept)?;
    let compared = started.elapsed();
    println!(
        "\nIssue 16's way, {nodes} nodes: pages parsed and kept {} ms (Ironic's share \
         {} ms), whole mirror read {} ms, compared {} ms: ringmaster's side {} ms",
        listed.as_millis(),
        fetch.as_millis(),
        read.as_millis(),
        compared.as_millis(),
        (listed.saturating_sub(fetch) + read + compared).as_millis()
    );
    Ok(())
}
