//! The figures task: once the metrics are first scraped, reads the deployment's figures
//! (`db::figures`) every few seconds into a cache the metrics endpoint renders from, so a scrape
//! costs no database round trip — and a process nobody scrapes reads nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::db::figures::{AuditFigure, DeploymentFigures};
use crate::db::hosts::NodeCountCache;
use crate::db::{self, Pool};
use crate::domain::clock::SharedClock;

/// How often the figures are read.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// How often the invariants are audited for `ringmaster_audit_violations` (every check of
/// `ringmaster audit`: heavier than the rest of the figures).
pub const AUDIT_INTERVAL: Duration = Duration::from_secs(60);

/// The latest figures, shared by the task and the metrics endpoint.
#[derive(Debug, Clone, Default)]
pub struct FigureCache {
    latest: Arc<Mutex<Arc<DeploymentFigures>>>,
    started: Arc<AtomicBool>,
    audit: Arc<Mutex<Option<AuditFigure>>>,
}

/// Where the figures are read from.
#[derive(Clone)]
pub struct FigureSource {
    pub pool: Pool,
    pub clock: SharedClock,
    pub counts: Arc<NodeCountCache>,
}

impl FigureCache {
    /// The latest figures. The first call reads them (the one scrape that waits for the
    /// database) and starts the task that reads them again every `REFRESH_INTERVAL` for as
    /// long as the actix system runs; a failed read keeps the previous figures (their age
    /// shows in the metrics).
    pub async fn latest(&self, source: &FigureSource) -> Arc<DeploymentFigures> {
        if !self.started.swap(true, Ordering::SeqCst) {
            self.refresh(source).await;
            let (cache, source) = (self.clone(), source.clone());
            actix_rt::spawn(async move {
                loop {
                    actix_rt::time::sleep(REFRESH_INTERVAL).await;
                    cache.refresh(&source).await;
                }
            });
        }
        self.latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn refresh(&self, source: &FigureSource) {
        let now = source.clock.now();
        let counts = source.counts.clone();
        let last_audit = *self.audit.lock().unwrap_or_else(PoisonError::into_inner);
        let audit_due = last_audit.is_none_or(|audit| {
            (now - audit.read_at).to_std().unwrap_or(Duration::ZERO) >= AUDIT_INTERVAL
        });
        match db::run(&source.pool, move |conn| {
            let mut figures =
                db::read_snapshot(conn, |conn| db::figures::read(conn, &counts, now))?;
            if audit_due {
                match db::figures::audit(conn, now) {
                    Ok(audit) => figures.audit = Some(audit),
                    Err(error) => log::debug!("metrics audit not run: {error}"),
                }
            }
            Ok(figures)
        })
        .await
        {
            Ok(mut figures) => {
                match figures.audit {
                    Some(audit) => {
                        *self.audit.lock().unwrap_or_else(PoisonError::into_inner) = Some(audit)
                    }
                    None => figures.audit = last_audit,
                }
                *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(figures)
            }
            Err(error) => log::debug!("metrics figures not read: {error}"),
        }
    }
}
