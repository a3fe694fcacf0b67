//! Failover benchmark: one of 10 hosts dies; how long from the rebalancer tick that detects
//! it to the commit of the last move, with 1,000 / 10,000 / 100,000 nodes in all, while every
//! surviving host's tracker pass runs in a loop (as in a real deployment). Also the
//! pure ring: planning a fresh 100-host × 100,000-node assignment, and building and querying
//! the tooz ring. Real PostgreSQL (a throwaway cluster), real actors, a manual clock.
//!
//! Run: `cargo bench --bench failover` (add `-- 1000 10000` to choose the sizes).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::DateTime;
use ringmaster::actors::ActorSettings;
use ringmaster::actors::compute_host::{Heartbeat, UpdateAvailableResource};
use ringmaster::actors::rebalancer::RebalanceNow;
use ringmaster::config::DeploymentConfig;
use ringmaster::db::ironic::{NewIronicNode, enroll_nodes};
use ringmaster::db::scratch::ScratchServer;
use ringmaster::db::{build_pool, connect};
use ringmaster::domain::clock::ManualClock;
use ringmaster::domain::ring::{
    NodeOwner, PlanInput, RingAlgorithm, TOOZ_PARTITIONS, ToozRing, plan,
};
use uuid::Uuid;

const HOSTS: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000, 10_000, 100_000]
    } else {
        sizes
    };
    ring_figures();
    let server = ScratchServer::start_private(None)?;
    println!("\n| nodes | moved | detection to last commit | first claim of all nodes |");
    println!("|---:|---:|---:|---:|");
    for nodes in sizes {
        let (moved, failover, claim) = failover(&server, nodes)?;
        println!(
            "| {nodes} | {moved} | {} | {} |",
            millis(failover),
            millis(claim)
        );
    }
    Ok(())
}

fn millis(duration: Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1_000.0)
}

fn ring_figures() {
    let hosts: Vec<String> = (1..=100).map(|index| format!("compute-{index}")).collect();
    let nodes: Vec<NodeOwner> = (0..100_000)
        .map(|_| NodeOwner {
            node: Uuid::new_v4().to_string(),
            owner: None,
        })
        .collect();
    let started = Instant::now();
    let planned = plan(PlanInput {
        algorithm: RingAlgorithm::Default,
        nodes: &nodes,
        eligible: &hosts,
        draining: &[],
        holding: &[],
        joining: &[],
        max_join_moves: 0,
    });
    let plan_time = started.elapsed();
    let mut load = std::collections::HashMap::new();
    for assignment in &planned {
        *load.entry(assignment.to.as_str()).or_insert(0usize) += 1;
    }
    let max = load.values().copied().max().unwrap_or(0);
    let started = Instant::now();
    let ring = ToozRing::new(&hosts, TOOZ_PARTITIONS);
    let build_time = started.elapsed();
    let started = Instant::now();
    let mut tooz_load = std::collections::HashMap::new();
    for node in &nodes {
        if let Some(owner) = ring.owner(node.node.as_bytes()) {
            *tooz_load.entry(owner).or_insert(0usize) += 1;
        }
    }
    let lookup_time = started.elapsed();
    let tooz_max = tooz_load.values().copied().max().unwrap_or(0);
    println!("| ring (100 hosts, 100,000 nodes) | time | max/mean load |");
    println!("|---|---:|---:|");
    println!(
        "| default: plan every node from scratch | {} | {:.3} |",
        millis(plan_time),
        max as f64 / 1_000.0
    );
    println!(
        "| tooz: build the ring / look up every node | {:.2} ms / {} | {:.3} |",
        build_time.as_secs_f64() * 1_000.0,
        millis(lookup_time),
        tooz_max as f64 / 1_000.0
    );
}

/// Returns (nodes moved, detection-to-commit time, time of the first claim of every node).
/// The hosts are real `ComputeHost` actors; while the failover runs, every surviving host's
/// tracker pass runs in a loop, as in a real deployment.
fn failover(
    server: &ScratchServer,
    nodes: usize,
) -> Result<(usize, Duration, Duration), Box<dyn std::error::Error>> {
    let db = server.create_database()?;
    let pool = build_pool(db.url(), 16)?;
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_800_000_000, 0).ok_or("time")?,
    ));
    let hosts: Vec<String> = (1..=HOSTS).map(|index| format!("cmp-{index}")).collect();
    {
        let mut conn = connect(db.url())?;
        let batch: Vec<NewIronicNode> = (0..nodes)
            .map(|_| NewIronicNode::enrolling(Uuid::new_v4(), None, "baremetal"))
            .collect();
        enroll_nodes(&mut conn, &batch)?;
    }
    let settings = ActorSettings::driven_by_messages(chrono::Duration::seconds(10));
    let system = actix::System::new();
    system.block_on(async move {
        let deployment = DeploymentConfig::actors_only(settings);
        let actors = ringmaster::app::start_deployment(pool, clock.clone(), &deployment).await?;
        for host in &hosts {
            actors.hosts.start(host).await?.send(Heartbeat).await??;
        }
        let started = Instant::now();
        let claimed = actors.rebalancer.send(RebalanceNow).await??;
        let claim_time = started.elapsed();
        assert_eq!(claimed.claimed.len(), nodes);
        for host in &hosts {
            let address = actors.hosts.get(host).ok_or("host")?;
            address.send(UpdateAvailableResource).await??;
        }

        // cmp-1 dies; the others heartbeat and keep passing while the failover runs.
        actors.hosts.crash(&hosts[0]);
        clock.advance(chrono::Duration::seconds(11));
        let survivors: Vec<_> = hosts[1..]
            .iter()
            .filter_map(|host| actors.hosts.get(host))
            .collect();
        for host in &survivors {
            host.send(Heartbeat).await??;
        }
        let passing = Arc::new(AtomicBool::new(true));
        let loops: Vec<_> = survivors
            .iter()
            .map(|host| {
                let (host, passing) = (host.clone(), passing.clone());
                actix_rt::spawn(async move {
                    // Ten passes a second per host: fifty times the rate of the default
                    // interval (10 s), so the move always meets passes in flight.
                    while passing.load(Ordering::Relaxed) {
                        if host.send(UpdateAvailableResource).await.is_err() {
                            break;
                        }
                        actix_rt::time::sleep(Duration::from_millis(100)).await;
                    }
                })
            })
            .collect();
        let started = Instant::now();
        let report = actors.rebalancer.send(RebalanceNow).await??;
        let failover_time = started.elapsed();
        passing.store(false, Ordering::Relaxed);
        for running in loops {
            running.await.ok();
        }
        Ok::<_, Box<dyn std::error::Error>>((report.moved.len(), failover_time, claim_time))
    })
}
