//! The relay of PostgreSQL notifications to this process's hosts: one thread listening on
//! the channels that wake a host, reconnecting with backoff. Each channel, what raises it and
//! what its host does (docs/architecture.md lists them with the other wake-ups):
//!
//! - `ringmaster_spawns` (`db::spawns::SPAWN_CHANNEL`): raised by the `spawn_requests` insert
//!   trigger (migration 14) when a process places a boot on a host another process runs; the
//!   payload is the host, which takes its requests (`TakeSpawns`).
//! - `ringmaster_refresh` (`db::notify::REFRESH_CHANNEL`): raised by `db::notify::refresh_nodes`
//!   when the Ironic listing holder saw nodes change; the payload names the host and the nodes,
//!   which it reports at once (`RefreshNodes`).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError, Weak};

use actix::prelude::*;

use super::compute_host::{self, ComputeHost};
use crate::db::{self, Pool};
use crate::domain::identity::NodeUuid;

/// How often the spawn relay asks for notifications.
const RELAY_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// The channels the relay listens on.
const RELAY_CHANNELS: &[&str] = &[db::spawns::SPAWN_CHANNEL, db::notify::REFRESH_CHANNEL];

/// Wakes this process's hosts when another process places a boot on them
/// (`db::spawns::SPAWN_CHANNEL`, its payload the host: the host takes its requests) or when the
/// Ironic listing holder changed nodes they own (`db::notify::REFRESH_CHANNEL`: the host
/// reports them), on a thread of its own, reconnecting with backoff. Each time it starts
/// listening it wakes every host once, for the requests written while nobody listened. Ends
/// when the process's hosts go away.
pub(super) fn start(pool: Pool, hosts: Weak<Mutex<BTreeMap<String, Addr<ComputeHost>>>>) {
    std::thread::spawn(move || {
        let mut listener: Option<db::notify::Listener> = None;
        let mut backoff = std::time::Duration::ZERO;
        loop {
            std::thread::sleep(backoff);
            let woken = match listener.as_mut() {
                Some(open) => open.poll_channels(),
                None => db::notify::Listener::open(&pool, RELAY_CHANNELS).map(|opened| {
                    listener = Some(opened);
                    Vec::new()
                }),
            };
            let Some(hosts) = hosts.upgrade() else { break };
            let hosts = hosts.lock().unwrap_or_else(PoisonError::into_inner);
            let events = match woken {
                Ok(events) if backoff == RELAY_POLL => events,
                // Just (re)connected: every host looks once.
                Ok(_) => {
                    for host in hosts.values().filter(|host| host.connected()) {
                        host.do_send(compute_host::TakeSpawns);
                    }
                    backoff = RELAY_POLL;
                    continue;
                }
                Err(error) => {
                    log::debug!("spawn relay has no connection: {error}");
                    listener = None;
                    backoff =
                        (backoff * 2).clamp(RELAY_POLL * 2, std::time::Duration::from_secs(5));
                    continue;
                }
            };
            backoff = RELAY_POLL;
            for (channel, payload) in events {
                relay_one(&hosts, &channel, &payload);
            }
        }
    });
}

/// Hands one notification to the host it names, if that host runs here.
fn relay_one(hosts: &BTreeMap<String, Addr<ComputeHost>>, channel: &str, payload: &str) {
    #[derive(serde::Deserialize)]
    struct Refresh {
        host: String,
        nodes: Vec<NodeUuid>,
    }
    if channel == db::spawns::SPAWN_CHANNEL {
        if let Some(host) = hosts.get(payload).filter(|host| host.connected()) {
            host.do_send(compute_host::TakeSpawns);
        }
        return;
    }
    match serde_json::from_str::<Refresh>(payload) {
        Ok(refresh) => {
            if let Some(host) = hosts.get(&refresh.host).filter(|host| host.connected()) {
                host.do_send(compute_host::RefreshNodes {
                    nodes: refresh.nodes,
                });
            }
        }
        Err(error) => log::debug!("a refresh notification was not understood: {error}"),
    }
}
