//! The figures task: once the metrics are first scraped, reads the deployment's figures
//! (`db::figures`) every few seconds into a cache the metrics endpoint renders from, so a scrape
//! costs no database round trip — and a process nobody scrapes reads nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::db::figures::DeploymentFigures;
use crate::db::hosts::NodeCountCache;
use crate::db::{self, Pool};
use crate::domain::clock::SharedClock;

/// How often the figures are read.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(5);

/// The latest figures, shared by the task and the metrics endpoint.
#[derive(Debug, Clone, Default)]
pub struct FigureCache {
    latest: Arc<Mutex<Arc<DeploymentFigures>>>,
    started: Arc<AtomicBool>,
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
        match db::run(&source.pool, move |conn| {
            db::figures::read(conn, &counts, now)
        })
        .await
        {
            Ok(figures) => {
                *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(figures)
            }
            Err(error) => log::debug!("metrics figures not read: {error}"),
        }
    }
}
