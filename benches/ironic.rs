//! Ironic benchmark (issue 16): a real Ironic's fake-hardware nodes as the node source of five
//! hosts in one process, as `serve --ironic-url` runs them (the listing loop, passes reading
//! its outcome). Measures the listing (all nodes new, then idle) with its requests; each host's
//! tracker pass (first report, then idle) and the Ironic requests passes send (none); then ten
//! boots through the scheduler against deploys sent straight to Ironic by this program, one at
//! a time and then ten clients at once (boots per second against Ironic's own deploy rate).
//! Real PostgreSQL (a throwaway cluster), real actors, the system clock.
//!
//! Run: `scripts/ironic start && scripts/ironic enroll 1000`, then
//! `IRONIC_URL=http://127.0.0.1:6385 cargo bench --bench ironic`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ringmaster::actors::compute_host::UpdateAvailableResource;
use ringmaster::actors::rebalancer::RebalanceNow;
use ringmaster::actors::scheduler::Boot;
use ringmaster::actors::{ActorSettings, Actors};
use ringmaster::config::{DeploymentConfig, IronicSettings};
use ringmaster::db::build_pool;
use ringmaster::db::scratch::ScratchServer;
use ringmaster::domain::boot::BootRequest;
use ringmaster::domain::clock::SystemClock;
use ringmaster::ironic_api::{IronicApi, IronicAuth, NodeSelection, PatchOp};

const HOSTS: [&str; 5] = ["cmp-1", "cmp-2", "cmp-3", "cmp-4", "cmp-5"];
const BOOTS: usize = 10;
const POLL: Duration = Duration::from_millis(100);

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let Ok(url) = std::env::var("IRONIC_URL") else {
        eprintln!(
            "set IRONIC_URL to an Ironic with nodes: scripts/ironic start && scripts/ironic enroll 1000"
        );
        std::process::exit(2);
    };
    let server = ScratchServer::start_private(None)?;
    let db = server.create_database()?;
    let pool = build_pool(db.url(), 16)?;
    let mut settings = IronicSettings::new(&url);
    settings.poll_interval = POLL;
    let mut actors_settings = ActorSettings::driven_by_messages(chrono::Duration::seconds(30));
    // The listing loop runs (it lists at once, then every hour); passes are sent by hand.
    actors_settings.host.update_resources_interval = Duration::from_secs(3600);
    actors_settings.host.report_interval = Duration::from_secs(2);
    let config = DeploymentConfig {
        hosts: HOSTS.iter().map(|host| (*host).to_owned()).collect(),
        nodes: None,
        resource_class: "baremetal".to_owned(),
        archive_interval: None,
        actors: actors_settings,
        ironic: Some(settings),
    };
    let system = actix::System::new();
    system.block_on(async move {
        let actors =
            ringmaster::app::start_deployment(pool, Arc::new(SystemClock::new()), &config).await?;
        run(&actors, &url).await
    })
}

async fn run(actors: &Actors, url: &str) -> Result<(), Error> {
    let driver = actors.node_source.driver().ok_or("a real ironic")?.clone();
    let first = loop {
        let status = driver.status();
        if status.last_success.is_some() || status.error.is_some() {
            break status;
        }
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    };
    if let Some(error) = first.error {
        return Err(error.into());
    }
    let nodes = first.nodes;
    println!("nodes in Ironic: {nodes}, hosts: {}", HOSTS.len());
    println!("\n| step | time | Ironic requests |\n|---|---:|---:|");
    row(
        "first listing (all nodes new, mirrored)",
        Duration::from_millis(first.took_ms),
        first.requests as u64,
    );

    let started = Instant::now();
    let claimed = actors.rebalancer.send(RebalanceNow).await??;
    row(
        &format!("first claim ({} nodes)", claimed.claimed.len()),
        started.elapsed(),
        0,
    );
    for label in [
        "first pass of each host (reports every node)",
        "idle pass of each host (nothing changed)",
    ] {
        let before = driver.status().requests_total;
        let mut slowest = Duration::ZERO;
        for host in HOSTS {
            let address = actors.hosts.get(host).ok_or("host")?;
            let started = Instant::now();
            address.send(UpdateAvailableResource).await??;
            slowest = slowest.max(started.elapsed());
        }
        row(
            &format!("{label}, slowest"),
            slowest,
            driver.status().requests_total - before,
        );
    }
    let before = driver.status().requests_total;
    driver.list_once().await?;
    let idle = driver.status();
    row(
        &format!("idle listing ({} changed)", idle.changed),
        Duration::from_millis(idle.took_ms),
        idle.requests_total - before,
    );

    one_at_a_time(actors, url, &driver).await?;
    concurrent(actors, url).await
}

/// Boots through the scheduler (deploy polled every 100 ms) against deploys sent straight
/// to Ironic by this program (polled every 20 ms), one at a time.
async fn one_at_a_time(
    actors: &Actors,
    url: &str,
    driver: &ringmaster::actors::node_source::IronicDriver,
) -> Result<(), Error> {
    let mut boots = Vec::new();
    let before = driver.status().requests_total;
    for index in 0..BOOTS {
        let started = Instant::now();
        let instance = actors
            .scheduler
            .send(bench_boot(format!("vm-{index}")))
            .await??;
        if instance.vm_state.as_str() != "active" {
            return Err(format!("boot {index} ended {}", instance.vm_state.as_str()).into());
        }
        boots.push(started.elapsed());
    }
    let boot_requests = driver.status().requests_total - before;
    let direct = direct_deploys(url).await?;
    println!(
        "\n| {BOOTS} deploys | median | slowest |\n|---|---:|---:|\n| boot through ringmaster (claim, Ironic deploy, polled every {} ms; {boot_requests} Ironic requests in all) | {} | {} |\n| deploy sent straight to Ironic (polled every 20 ms) | {} | {} |",
        POLL.as_millis(),
        millis(median(&mut boots)),
        millis(*boots.iter().max().ok_or("boots")?),
        millis(median(&mut direct.clone())),
        millis(*direct.iter().max().ok_or("deploys")?),
    );
    Ok(())
}

/// Clients booting at once, and boots per client.
const CLIENTS: usize = 10;
const PER_CLIENT: usize = 3;

/// `CLIENTS` clients at once, `PER_CLIENT` boots each, through the scheduler; against the same
/// number of deploys sent straight to Ironic by `CLIENTS` tasks at once (polled every 20 ms).
async fn concurrent(actors: &Actors, url: &str) -> Result<(), Error> {
    let started = Instant::now();
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let scheduler = actors.scheduler.clone();
        clients.push(actix_rt::spawn(async move {
            let mut active = 0;
            for index in 0..PER_CLIENT {
                let booted = scheduler
                    .send(bench_boot(format!("client-{client}-{index}")))
                    .await;
                if matches!(&booted, Ok(Ok(instance)) if instance.vm_state.as_str() == "active") {
                    active += 1;
                }
            }
            active
        }));
    }
    let mut active = 0;
    for client in clients {
        active += client.await.unwrap_or(0);
    }
    let through = started.elapsed();
    let (api, free) = free_nodes(url, CLIENTS * PER_CLIENT).await?;
    let started = Instant::now();
    let mut deployers = Vec::new();
    for chunk in free.chunks(PER_CLIENT) {
        let (api, chunk) = (api.clone(), chunk.to_vec());
        deployers.push(actix_rt::spawn(async move {
            let mut deployed = 0;
            for node in chunk {
                if deploy_straight(&api, node).await.is_ok() {
                    deployed += 1;
                }
            }
            deployed
        }));
    }
    let mut deployed = 0;
    for deployer in deployers {
        deployed += deployer.await.unwrap_or(0);
    }
    let straight = started.elapsed();
    let rate = |count: usize, took: Duration| count as f64 / took.as_secs_f64();
    println!(
        "\n| {CLIENTS} clients at once, {PER_CLIENT} each | done | time | per second |\n|---|---:|---:|---:|\n| boots through ringmaster | {active} | {} | {:.2} |\n| deploys sent straight to Ironic | {deployed} | {} | {:.2} |",
        millis(through),
        rate(active, through),
        millis(straight),
        rate(deployed, straight),
    );
    Ok(())
}

/// A connection to the Ironic at `url` and up to `count` of its nodes nobody uses (the last
/// listed first).
async fn free_nodes(url: &str, count: usize) -> Result<(IronicApi, Vec<uuid::Uuid>), Error> {
    let api = IronicApi::connect(
        url,
        IronicAuth::None,
        &ringmaster::tls::client::ClientTls::system(),
    )
    .await?;
    let (nodes, _) = api.list_nodes(&NodeSelection::default()).await?;
    let free = nodes
        .iter()
        .filter(|node| node.provision_state == "available" && node.instance_uuid.is_none())
        .rev()
        .take(count)
        .map(|node| node.uuid)
        .collect();
    Ok((api, free))
}

/// One deploy through Ironic's API alone: patch, `active`, poll every 20 ms until active.
async fn deploy_straight(api: &IronicApi, node: uuid::Uuid) -> Result<(), Error> {
    api.patch_node(
        node,
        &[
            PatchOp::add("/instance_uuid", serde_json::json!(uuid::Uuid::new_v4())),
            PatchOp::add(
                "/instance_info/image_source",
                serde_json::json!("http://127.0.0.1/i"),
            ),
        ],
    )
    .await?;
    api.set_provision_state(node, "active").await?;
    while api.get_node(node).await?.provision_state != "active" {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Deploys on nodes nobody uses through Ironic's API alone: patch, `active`, poll; then tears
/// each down again. Returns each deploy's time.
async fn direct_deploys(url: &str) -> Result<Vec<Duration>, Error> {
    let (api, free) = free_nodes(url, BOOTS).await?;
    let mut times = Vec::new();
    for node in free {
        let started = Instant::now();
        deploy_straight(&api, node).await?;
        times.push(started.elapsed());
        api.set_provision_state(node, "deleted").await?;
    }
    Ok(times)
}

fn row(step: &str, time: Duration, requests: u64) {
    println!("| {step} | {} | {requests} |", millis(time));
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn millis(duration: Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1_000.0)
}

/// A boot of one `baremetal` node named `name`, answered when its build settles.
fn bench_boot(name: String) -> Boot {
    Boot {
        uuid: None,
        name,
        project: "bench".to_owned(),
        user: "bench".to_owned(),
        request: BootRequest::of_class("baremetal", 0),
        answer_when_claimed: false,
    }
}
