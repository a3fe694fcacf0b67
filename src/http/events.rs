//! `GET /api/v1/events`: server-sent events that say what changed, typed, with the changed
//! rows or counts:
//!
//! * `host` — a host was added, enabled, disabled, drained or taken by a process (from the
//!   database), or its state changed (up, fenced, down, disabled: judged here every second);
//! * `nodes_moved` — one per move batch, with counts by old owner, new owner and reason;
//!   `nodes_claimed` — nodes got their first owner;
//! * `nodes` — nodes enrolled, changed (deployed, locked, in maintenance …) or deleted: the
//!   count and the first few;
//! * `instance` — an instance was created, changed state or was deleted;
//! * `archive` — an archive run finished;
//! * `audit` — the invariant audit's result changed (checked at most every ten seconds, and
//!   only after something happened);
//! * `resync` — this stream fell behind: fetch everything again.
//!
//! Heartbeats alone send nothing. Changes made by any process of the deployment reach every
//! process's streams: they travel as PostgreSQL notifications (`db::notify`), which one
//! listener per process (`EventHub`) fans out to its streams. A comment line every 15 seconds
//! keeps proxies from closing an idle stream; the browser's EventSource reconnects by itself
//! after a drop (`retry: 2000`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use actix_web::{HttpResponse, web};
use futures_util::stream;
use tokio::sync::broadcast;

use super::AppState;
use crate::db;

/// How often the listener asks for notifications, and hosts' states are judged.
const LISTEN_POLL: Duration = Duration::from_millis(250);
const HOST_POLL: Duration = Duration::from_secs(1);
/// The audit runs at most this often, and only after something happened.
const AUDIT_EVERY: Duration = Duration::from_secs(10);
const KEEPALIVE: Duration = Duration::from_secs(15);
/// How often a logged-in stream checks that its session and token still stand.
const RECHECK: Duration = Duration::from_secs(1);
/// Events a slow stream may lag behind before it is told to resync.
const BACKLOG: usize = 1024;

/// One event: its type and its JSON data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: String,
    pub data: String,
}

impl Event {
    /// Reads a notification's JSON: its `type` names the event; the data is sent compact.
    fn from_notification(payload: &str) -> Option<Event> {
        let value: serde_json::Value = serde_json::from_str(payload).ok()?;
        let kind = value.get("type")?.as_str()?.to_owned();
        Some(Event {
            kind,
            data: value.to_string(),
        })
    }

    fn local(kind: &str, data: serde_json::Value) -> Event {
        let mut data = data;
        if let Some(object) = data.as_object_mut() {
            object.insert("type".to_owned(), kind.into());
        }
        Event {
            kind: kind.to_owned(),
            data: data.to_string(),
        }
    }

    fn to_sse(&self) -> Bytes {
        Bytes::from(format!("event: {}\ndata: {}\n\n", self.kind, self.data))
    }
}

/// The events of this process's streams: started by the first stream, it listens for the
/// deployment's notifications and judges hosts' states and the audit, for every stream at
/// once, however many dashboards are open. It stops when the application goes away, or when
/// the process stops (`close`: every open stream ends, so a stop does not wait for them). It
/// also counts the open streams: at most `limits` of them, by the process and per client
/// address.
#[derive(Default)]
pub struct EventHub {
    sender: Mutex<Option<Arc<broadcast::Sender<Event>>>>,
    limits: crate::config::StreamLimits,
    open: Mutex<OpenStreams>,
    closed: std::sync::atomic::AtomicBool,
}

/// The streams open now, in all and by client address.
#[derive(Default)]
struct OpenStreams {
    total: usize,
    by_client: std::collections::HashMap<std::net::IpAddr, usize>,
}

/// One open stream, counted until it is dropped (the client went away).
pub struct StreamTicket {
    hub: Arc<EventHub>,
    client: Option<std::net::IpAddr>,
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        let mut open = self.hub.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.total = open.total.saturating_sub(1);
        if let Some(client) = self.client
            && let Some(count) = open.by_client.get_mut(&client)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.by_client.remove(&client);
            }
        }
    }
}

impl EventHub {
    /// A hub that serves at most `limits` streams at once.
    pub fn with_limits(limits: crate::config::StreamLimits) -> EventHub {
        EventHub {
            limits,
            ..EventHub::default()
        }
    }

    /// Ends every open stream and refuses new ones: the process is stopping. The streams end
    /// when the channel closes, which dropping its one sender does (the listener and the
    /// watcher hold it only for a moment at a time).
    pub fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(sender);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Counts a new stream of `client`; `None` (and nothing counted) when the process or that
    /// client already has as many as it may.
    fn admit(self: &Arc<Self>, client: Option<std::net::IpAddr>) -> Option<StreamTicket> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let of_client = client.map_or(0, |client| {
            open.by_client.get(&client).copied().unwrap_or(0)
        });
        if open.total >= self.limits.per_process || of_client >= self.limits.per_client {
            return None;
        }
        open.total += 1;
        if let Some(client) = client {
            *open.by_client.entry(client).or_insert(0) += 1;
        }
        Some(StreamTicket {
            hub: self.clone(),
            client,
        })
    }

    /// Returns a receiver of every event from now on, starting the hub if needed.
    pub fn subscribe(&self, state: &AppState) -> broadcast::Receiver<Event> {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        if self.is_closed() {
            // Stopping: a receiver whose channel is closed already ends its stream at once.
            return broadcast::channel(1).1;
        }
        if let Some(running) = sender.as_ref() {
            return running.subscribe();
        }
        let (created, receiver) = broadcast::channel(BACKLOG);
        let created = Arc::new(created);
        let activity = Arc::new(Mutex::new(Some(Instant::now())));
        listen(
            state.pool.clone(),
            Arc::downgrade(&created),
            activity.clone(),
        );
        actix_rt::spawn(watch(state.clone(), Arc::downgrade(&created), activity));
        *sender = Some(created);
        receiver
    }
}

/// Forwards the deployment's notifications to the hub, on a thread of its own (blocking), and
/// notes that something happened (for the audit). Reconnects with backoff; ends with the hub.
fn listen(
    pool: db::Pool,
    hub: Weak<broadcast::Sender<Event>>,
    activity: Arc<Mutex<Option<Instant>>>,
) {
    std::thread::spawn(move || {
        let mut listener = None;
        let mut backoff = LISTEN_POLL;
        // Why notifications were missed, until a listening connection is up: at first the
        // streams that started the hub read before it listened, later one was lost. Every
        // stream then reads everything once, for what it missed.
        let mut missed = Some("the event listener started after the stream");
        while let Some(sender) = hub.upgrade() {
            drop(sender);
            std::thread::sleep(backoff);
            let open = match listener.as_mut() {
                Some(open) => open,
                None => match db::notify::Listener::open(&pool, &[db::notify::CHANNEL]) {
                    Ok(opened) => {
                        if let Some(reason) = missed.take()
                            && let Some(sender) = hub.upgrade()
                        {
                            log::info!("event listener up ({reason}): streams resync");
                            let _ = sender.send(Event::local(
                                "resync",
                                serde_json::json!({ "reason": reason }),
                            ));
                        }
                        listener.insert(opened)
                    }
                    Err(error) => {
                        log::debug!("event listener cannot connect: {error}");
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                },
            };
            match open.poll() {
                Ok(payloads) => {
                    backoff = LISTEN_POLL;
                    let Some(sender) = hub.upgrade() else { break };
                    for payload in payloads {
                        if let Some(event) = Event::from_notification(&payload) {
                            *activity.lock().unwrap_or_else(PoisonError::into_inner) =
                                Some(Instant::now());
                            // No receiver now is fine: nobody is watching.
                            let _ = sender.send(event);
                        }
                    }
                }
                Err(error) => {
                    log::debug!("event listener lost its connection: {error}");
                    listener = None;
                    missed = Some("the database connection was restored");
                }
            }
        }
    });
}

/// Judges hosts' states every second and sends a `host` event for each that changed; runs
/// the audit after something happened (at most every ten seconds) and sends an `audit` event
/// when its result changed. Ends with the hub.
async fn watch(
    state: AppState,
    hub: Weak<broadcast::Sender<Event>>,
    activity: Arc<Mutex<Option<Instant>>>,
) {
    let mut states: Option<BTreeMap<String, &'static str>> = None;
    let mut audited: Option<(Instant, serde_json::Value)> = None;
    loop {
        actix::clock::sleep(HOST_POLL).await;
        let Some(sender) = hub.upgrade() else { return };
        let judge = state.actors.judge();
        let now = state.actors.clock.now();
        if let Ok(hosts) = db::run(&state.pool, db::hosts::list_hosts).await {
            let current: BTreeMap<String, &'static str> = hosts
                .iter()
                .map(|host| (host.name.clone(), judge.state(host, now).as_str()))
                .collect();
            if let Some(previous) = &states {
                for host in &hosts {
                    let state_now = current.get(&host.name).copied().unwrap_or("down");
                    let before = previous.get(&host.name).copied();
                    if before != Some(state_now) {
                        let _ = sender.send(Event::local(
                            "host",
                            serde_json::json!({
                                "host": host.name, "state": state_now, "previous": before,
                                "last_seen_up": host.last_seen_up,
                            }),
                        ));
                    }
                }
            }
            states = Some(current);
        }
        let happened = *activity.lock().unwrap_or_else(PoisonError::into_inner);
        let due = match (&audited, happened) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some((at, _)), Some(when)) => when > *at && at.elapsed() >= AUDIT_EVERY,
        };
        if due {
            let started = Instant::now();
            let clock = state.actors.settings.audit_clock(now);
            if let Ok(violations) = db::run(&state.pool, move |conn| {
                db::audit::check_invariants_at(conn, clock)
            })
            .await
            {
                let summary = super::deployment::audit_summary(&violations);
                let changed = audited.as_ref().map(|(_, last)| last) != Some(&summary);
                if changed && audited.is_some() {
                    let _ = sender.send(Event::local("audit", summary.clone()));
                }
                audited = Some((started, summary));
            }
        }
    }
}

struct Cursor {
    receiver: broadcast::Receiver<Event>,
    last_sent: Instant,
    first: bool,
    /// What to check again while the stream is open (a session, a Keystone token).
    recheck: Option<(crate::http::session::Recheck, web::Data<AppState>)>,
    /// When the session and token were last checked.
    last_check: Instant,
    /// Set once the stream is told its session ended: the next step ends it.
    ended: bool,
    /// Counts this stream as open while it lives.
    _ticket: StreamTicket,
}

/// Streams the typed events to a dashboard; 503 when the process, or this client, has as many
/// streams open as it may.
pub async fn stream_events(
    state: web::Data<AppState>,
    request: actix_web::HttpRequest,
) -> Result<HttpResponse, super::error::ApiError> {
    if state.events.is_closed() {
        return Err(super::error::ApiError::Refused {
            status: actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            message: "this process is stopping: connect to another one".to_owned(),
        });
    }
    let client = request.peer_addr().map(|address| address.ip());
    let Some(ticket) = state.events.admit(client) else {
        return Err(super::error::ApiError::Refused {
            status: actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            message: format!(
                "too many event streams open (at most {} in all, {} per client): close one, or \
                 poll",
                state.events.limits.per_process, state.events.limits.per_client
            ),
        });
    };
    let recheck = crate::http::session::Recheck::of(&request, &state);
    let cursor = Cursor {
        receiver: state.events.subscribe(state.get_ref()),
        last_sent: Instant::now(),
        first: true,
        recheck: recheck.map(|recheck| (recheck, state.clone())),
        last_check: Instant::now(),
        ended: false,
        _ticket: ticket,
    };
    let events = stream::unfold(cursor, next_chunk);
    Ok(HttpResponse::Ok()
        .insert_header(("content-type", "text/event-stream"))
        .insert_header(("cache-control", "no-cache"))
        // Never compressed: a compressor would hold events back until its buffer fills.
        .insert_header(actix_web::http::header::ContentEncoding::Identity)
        .streaming(events))
}

/// The stream's next piece: the retry hint first, then each event (or a resync), a keepalive
/// after a quiet `KEEPALIVE`, `session-ended` once its session or token no longer stands; `None`
/// ends the stream.
async fn next_chunk(mut cursor: Cursor) -> Option<(Result<Bytes, actix_web::Error>, Cursor)> {
    if cursor.first {
        cursor.first = false;
        return Some((
            Ok::<_, actix_web::Error>(Bytes::from_static(b"retry: 2000\n\n")),
            cursor,
        ));
    }
    if cursor.ended {
        return None;
    }
    let received = loop {
        if let Some((recheck, state)) = &cursor.recheck
            && cursor.last_check.elapsed() >= RECHECK
        {
            cursor.last_check = Instant::now();
            if !recheck.still_allowed(state).await {
                cursor.ended = true;
                let ended = Event::local("session-ended", serde_json::json!({}));
                return Some((Ok(ended.to_sse()), cursor));
            }
        }
        let keepalive = KEEPALIVE.saturating_sub(cursor.last_sent.elapsed());
        let wait = match cursor.recheck {
            Some(_) => keepalive.min(RECHECK.saturating_sub(cursor.last_check.elapsed())),
            None => keepalive,
        };
        let received = actix_rt::time::timeout(wait, cursor.receiver.recv()).await;
        if received.is_ok() || cursor.last_sent.elapsed() >= KEEPALIVE {
            break received;
        }
    };
    cursor.last_sent = Instant::now();
    let bytes = match received {
        Ok(Ok(event)) => event.to_sse(),
        Ok(Err(broadcast::error::RecvError::Lagged(missed))) => {
            Event::local("resync", serde_json::json!({ "missed": missed })).to_sse()
        }
        Ok(Err(broadcast::error::RecvError::Closed)) => return None,
        Err(_) => Bytes::from_static(b": keepalive\n\n"),
    };
    Some((Ok(bytes), cursor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_becomes_an_event_of_its_type() {
        let event = Event::from_notification(r#"{"type" : "nodes_moved", "count" : 3}"#).unwrap();
        assert_eq!(event.kind, "nodes_moved");
        assert_eq!(
            event.to_sse(),
            Bytes::from("event: nodes_moved\ndata: {\"count\":3,\"type\":\"nodes_moved\"}\n\n")
        );
        assert!(Event::from_notification("not json").is_none());
        assert!(Event::from_notification(r#"{"count":3}"#).is_none());
    }

    #[test]
    fn a_local_event_carries_its_type() {
        let event = Event::local("host", serde_json::json!({"host": "cmp-1"}));
        assert_eq!(event.kind, "host");
        let data: serde_json::Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(data["type"], "host");
        assert_eq!(data["host"], "cmp-1");
    }
}
