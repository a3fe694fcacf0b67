//! The figures task: reads the deployment's figures (`db::figures`) every few seconds into a
//! cache the metrics endpoint renders from, so a scrape costs no database round trip.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::db::figures::DeploymentFigures;
use crate::db::{self, Pool};
use crate::domain::clock::SharedClock;

/// How often the figures are read.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(5);

/// The latest figures, shared by the task and the metrics endpoint.
#[derive(Debug, Clone, Default)]
pub struct FigureCache(Arc<Mutex<Arc<DeploymentFigures>>>);

impl FigureCache {
    /// The latest figures (empty before the first read).
    pub fn latest(&self) -> Arc<DeploymentFigures> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn store(&self, figures: DeploymentFigures) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(figures);
    }

    /// Reads the figures now, then every `interval`, for as long as the actix system runs. A
    /// failed read keeps the previous figures (their age shows in the metrics).
    pub fn keep_fresh(&self, pool: Pool, clock: SharedClock, interval: Duration) {
        let cache = self.clone();
        actix_rt::spawn(async move {
            loop {
                let now = clock.now();
                match db::run(&pool, move |conn| db::figures::read(conn, now)).await {
                    Ok(figures) => cache.store(figures),
                    Err(error) => log::debug!("metrics figures not read: {error}"),
                }
                actix_rt::time::sleep(interval).await;
            }
        });
    }
}
