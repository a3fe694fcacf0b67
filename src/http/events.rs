//! `GET /api/v1/events`: server-sent events. Every half second the stream compares the
//! deployment's state fingerprint with the last one sent and, when it changed, sends
//! `event: change`; a comment line every 15 seconds keeps proxies from closing an idle stream.
//! The fingerprint is read once per interval for all streams of a process (`SharedFingerprint`),
//! however many dashboards are open.
//! The dashboard refetches what it shows on each change; the browser's EventSource reconnects
//! by itself after a drop (`retry: 2000`).

use std::future::Future;
use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use actix_web::{HttpResponse, web};
use futures_util::stream;

use super::AppState;
use crate::db::{self, DbError};

const POLL: Duration = Duration::from_millis(500);
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The state fingerprint as last read, shared by every event stream of a process: a reader
/// finding it younger than `fresh` takes it; otherwise one reader queries while the others
/// wait for that answer.
pub struct SharedFingerprint {
    fresh: Duration,
    last: futures_util::lock::Mutex<Option<(Instant, String)>>,
}

impl Default for SharedFingerprint {
    fn default() -> Self {
        SharedFingerprint::new(POLL - Duration::from_millis(100))
    }
}

impl SharedFingerprint {
    pub fn new(fresh: Duration) -> SharedFingerprint {
        SharedFingerprint {
            fresh,
            last: futures_util::lock::Mutex::new(None),
        }
    }

    /// The current fingerprint, from `fetch` only when the shared one is not fresh.
    pub async fn current<F, Fut>(&self, fetch: F) -> Result<String, DbError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<String, DbError>>,
    {
        let mut last = self.last.lock().await;
        if let Some((read_at, fingerprint)) = last.as_ref()
            && read_at.elapsed() < self.fresh
        {
            return Ok(fingerprint.clone());
        }
        let fingerprint = fetch().await?;
        *last = Some((Instant::now(), fingerprint.clone()));
        Ok(fingerprint)
    }
}

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
            let pool = cursor.state.pool.clone();
            let current = cursor
                .state
                .fingerprint
                .current(|| async move { db::run(&pool, db::events::state_fingerprint).await })
                .await;
            match current {
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
        // Never compressed: a compressor would hold events back until its buffer fills.
        .insert_header(actix_web::http::header::ContentEncoding::Identity)
        .streaming(events)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Twenty streams asking at once cost one read; a stale fingerprint is read again.
    #[actix_web::test]
    async fn streams_share_one_read_per_interval() {
        let shared = Arc::new(SharedFingerprint::new(Duration::from_millis(200)));
        let reads = Arc::new(AtomicUsize::new(0));
        let ask = |shared: Arc<SharedFingerprint>, reads: Arc<AtomicUsize>| async move {
            shared
                .current(|| async move {
                    let n = reads.fetch_add(1, Ordering::SeqCst);
                    actix::clock::sleep(Duration::from_millis(20)).await;
                    Ok(format!("state-{n}"))
                })
                .await
        };
        let answers =
            futures_util::future::join_all((0..20).map(|_| ask(shared.clone(), reads.clone())))
                .await;
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "one read for twenty streams"
        );
        assert!(
            answers
                .iter()
                .all(|answer| answer.as_deref().ok() == Some("state-0"))
        );

        actix::clock::sleep(Duration::from_millis(250)).await;
        let later = ask(shared.clone(), reads.clone()).await;
        assert_eq!(
            later.ok().as_deref(),
            Some("state-1"),
            "a stale one is read again"
        );

        let failing = SharedFingerprint::new(Duration::from_millis(200));
        let failed = failing
            .current(|| async { Err(DbError::Unavailable("down".to_owned())) })
            .await;
        assert!(failed.is_err(), "a failed read is reported, not cached");
    }
}
