//! `GET /healthz` (liveness: the process serves) and `GET /readyz` (readiness: its database
//! answers). A load balancer that ejects on liveness would eject every process during a
//! database failover, which ringmaster rides out: so `/healthz` never waits for the database,
//! and `/readyz` answers within a second whether the database refuses connections, is frozen
//! or is silent — one probe at a time, shared by every caller, so a flood of checks opens no
//! more than one connection.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use actix_web::{HttpResponse, web};
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

use super::AppState;
use super::dto::HealthResponse;
use super::error::ApiError;
use crate::db::{self, Pool};

/// How long a readiness check waits for the database before it answers 503.
const READY_WAIT: Duration = Duration::from_millis(900);
/// How long the probe waits for a pooled connection (less than `READY_WAIT`).
const CHECKOUT_WAIT: Duration = Duration::from_millis(800);

/// Returns 200 `{"status": "ok"}` while the process serves, whatever its database does.
pub async fn get_health() -> HttpResponse {
    HttpResponse::Ok().json(HealthResponse { status: "ok" })
}

/// Returns 200 `{"status": "ready"}` when the database answered within a second, 503 in the
/// admin API's envelope otherwise.
pub async fn get_ready(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if state.readiness.check(&state.pool).await {
        Ok(HttpResponse::Ok().json(HealthResponse { status: "ready" }))
    } else {
        Err(ApiError::Db(db::DbError::Unavailable(
            "the database did not answer within a second".to_owned(),
        )))
    }
}

type Probe = Shared<BoxFuture<'static, bool>>;

/// The one database probe of the process's readiness checks: started by a check when none
/// runs; every check waits for it at most `READY_WAIT`. A probe
/// stuck on a frozen database stays the one probe until it returns.
#[derive(Default)]
pub struct Readiness {
    probe: Mutex<Option<Probe>>,
}

impl Readiness {
    /// Says whether the database answers, within `READY_WAIT`.
    pub async fn check(&self, pool: &Pool) -> bool {
        let probe = {
            let mut current = self.probe.lock().unwrap_or_else(PoisonError::into_inner);
            match current.as_ref() {
                Some(probe) if probe.peek().is_none() => probe.clone(),
                _ => {
                    let pool = pool.clone();
                    let probe = async move {
                        actix_rt::task::spawn_blocking(move || {
                            db::ping_within(&pool, CHECKOUT_WAIT).is_ok()
                        })
                        .await
                        .unwrap_or(false)
                    }
                    .boxed()
                    .shared();
                    *current = Some(probe.clone());
                    probe
                }
            }
        };
        actix_rt::time::timeout(READY_WAIT, probe)
            .await
            .unwrap_or(false)
    }
}
