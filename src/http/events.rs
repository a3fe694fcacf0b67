//! `GET /api/v1/events`: server-sent events. Every half second the stream compares the
//! deployment's state fingerprint with the last one sent and, when it changed, sends
//! `event: change`; a comment line every 15 seconds keeps proxies from closing an idle stream.
//! The dashboard refetches what it shows on each change; the browser's EventSource reconnects
//! by itself after a drop (`retry: 2000`).

use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use actix_web::{HttpResponse, web};
use futures_util::stream;

use super::AppState;
use crate::db;

const POLL: Duration = Duration::from_millis(500);
const KEEPALIVE: Duration = Duration::from_secs(15);

struct Cursor {
    state: AppState,
    last: Option<String>,
    last_sent: Instant,
    first: bool,
}

/// Streams `change` events to the dashboard.
pub async fn stream_events(state: web::Data<AppState>) -> HttpResponse {
    let cursor = Cursor {
        state: state.get_ref().clone(),
        last: None,
        last_sent: Instant::now(),
        first: true,
    };
    let events = stream::unfold(cursor, |mut cursor| async move {
        if cursor.first {
            cursor.first = false;
            return Some((
                Ok::<_, actix_web::Error>(Bytes::from_static(b"retry: 2000\n\n")),
                cursor,
            ));
        }
        loop {
            actix::clock::sleep(POLL).await;
            match db::run(&cursor.state.pool, db::events::state_fingerprint).await {
                Ok(fingerprint) if cursor.last.as_ref() != Some(&fingerprint) => {
                    let payload = serde_json::json!({ "fingerprint": fingerprint }).to_string();
                    cursor.last = Some(fingerprint);
                    cursor.last_sent = Instant::now();
                    let event = format!("event: change\ndata: {payload}\n\n");
                    return Some((Ok(Bytes::from(event)), cursor));
                }
                Ok(_) => {}
                Err(error) => log::debug!("event stream: {error}"),
            }
            if cursor.last_sent.elapsed() > KEEPALIVE {
                cursor.last_sent = Instant::now();
                return Some((Ok(Bytes::from_static(b": keepalive\n\n")), cursor));
            }
        }
    });
    HttpResponse::Ok()
        .insert_header(("content-type", "text/event-stream"))
        .insert_header(("cache-control", "no-cache"))
        .streaming(events)
}
