//! `GET /healthz` (liveness: the process serves) and `GET /readyz` (readiness: its database
//! answers, and a boot can be placed — some node is owned by a host that is up and enabled —
//! or the deployment has no node to wait for; once placeable, readiness follows the database
//! alone, so that a deployment's later host outage does not eject every API process). A load balancer that ejects on liveness would eject every process during a
//! database failover, which ringmaster rides out: so `/healthz` never waits for the database,
//! and `/readyz` answers within a second whether the database refuses connections, is frozen
//! or is silent — one probe at a time, shared by every caller, so a flood of checks opens no
//! more than one connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

use super::AppState;
use super::dto::HealthResponse;
use super::error::ApiError;
use crate::db::{self, Pool};
use crate::domain::rebalance::HostJudge;

/// How long a readiness check waits for the database before it answers 503.
const READY_WAIT: Duration = Duration::from_millis(900);
/// How long the probe waits for a pooled connection (less than `READY_WAIT`).
const CHECKOUT_WAIT: Duration = Duration::from_millis(800);

/// Returns 200 `{"status": "ok"}` while the process serves, whatever its database does.
pub async fn get_health() -> HttpResponse {
    HttpResponse::Ok().json(HealthResponse { status: "ok" })
}

/// Returns 200 `{"status": "ready"}` when the database answered within a second and a boot can
/// be placed; 503 in the admin API's envelope otherwise, saying which.
pub async fn get_ready(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let judge = state.actors.judge();
    let now = state.actors.clock.now();
    match state.readiness.check(&state.pool, judge, now).await {
        Probed::Ready => Ok(HttpResponse::Ok().json(HealthResponse { status: "ready" })),
        Probed::NoDatabase => Err(ApiError::Db(db::DbError::Unavailable(
            "the database did not answer within a second".to_owned(),
        ))),
        Probed::Unplaceable { nodes } => Err(ApiError::Refused {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!(
                "not ready: none of the deployment's {nodes} nodes is yet owned, its inventory \
                 reported, by a compute host that is up and enabled, so a boot cannot be \
                 placed; the hosts take their nodes within a rebalance interval of their start"
            ),
        }),
    }
}

/// What the readiness probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probed {
    Ready,
    /// The database did not answer within `READY_WAIT`.
    NoDatabase,
    /// The deployment has nodes, and no host that may take a boot owns one.
    Unplaceable {
        nodes: i64,
    },
}

type Probe = Shared<BoxFuture<'static, Probed>>;

/// The one database probe of the process's readiness checks: started by a check when none
/// runs; every check waits for it at most `READY_WAIT`. A probe
/// stuck on a frozen database stays the one probe until it returns.
#[derive(Default)]
pub struct Readiness {
    probe: Mutex<Option<Probe>>,
    /// Set once a boot could be placed: from then on only the database is asked.
    placeable: Arc<AtomicBool>,
}

impl Readiness {
    /// Says whether the database answers and a boot can be placed (hosts judged by `judge` at
    /// `now`), within `READY_WAIT`.
    pub async fn check(&self, pool: &Pool, judge: HostJudge, now: DateTime<Utc>) -> Probed {
        let probe = {
            let mut current = self.probe.lock().unwrap_or_else(PoisonError::into_inner);
            match current.as_ref() {
                Some(probe) if probe.peek().is_none() => probe.clone(),
                _ => {
                    let pool = pool.clone();
                    let placeable = self.placeable.clone();
                    let probe = async move {
                        actix_rt::task::spawn_blocking(move || {
                            probe_once(&pool, &placeable, &judge, now)
                        })
                        .await
                        .unwrap_or(Probed::NoDatabase)
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
            .unwrap_or(Probed::NoDatabase)
    }
}

/// One probe: a connection within `CHECKOUT_WAIT` that answers, then (until a boot could be
/// placed once) whether one can be.
fn probe_once(
    pool: &Pool,
    placeable: &AtomicBool,
    judge: &HostJudge,
    now: DateTime<Utc>,
) -> Probed {
    let Ok(mut conn) = db::answering_within(pool, CHECKOUT_WAIT) else {
        return Probed::NoDatabase;
    };
    if placeable.load(Ordering::Relaxed) {
        return Probed::Ready;
    }
    match db::hosts::placeable_nodes(&mut conn, judge, now) {
        Err(_) => Probed::NoDatabase,
        Ok(found) if found.owned => {
            placeable.store(true, Ordering::Relaxed);
            Probed::Ready
        }
        Ok(found) if found.nodes == 0 => Probed::Ready,
        Ok(found) => Probed::Unplaceable { nodes: found.nodes },
    }
}
