//! `GET /metrics`: Prometheus's text exposition format, from what the process holds (the
//! figures task's latest read, the rebalancer's ring, the pools) — no database round trip but
//! the first scrape's, which starts the figures task.

use actix_web::{HttpResponse, web};

use super::AppState;
use crate::actors::figures::FigureSource;
use crate::actors::rebalancer::GetRing;
use crate::metrics::{Gauges, ProcessView};

/// How long a scrape waits for the rebalancer's ring (without it: leader 0, ring version 0).
const RING_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Renders the metrics.
pub async fn get_metrics(state: web::Data<AppState>) -> HttpResponse {
    // A rebalancer busy with a long tick does not hold the scrape up for long.
    let ring = actix_rt::time::timeout(RING_WAIT, state.actors.rebalancer.send(GetRing))
        .await
        .ok()
        .and_then(Result::ok);
    let source = FigureSource {
        pool: state.pool.clone(),
        clock: state.actors.clock.clone(),
        counts: state.node_counts.clone(),
    };
    let figures = state.figures.latest(&source).await;
    let local = state.actors.hosts.names();
    let view = ProcessView {
        figures: &figures,
        now: state.actors.clock.now(),
        liveness: state.actors.settings.host.liveness,
        local: &local,
        leader: ring.as_ref().is_some_and(|ring| ring.leader),
        ring_version: ring.as_ref().map_or(0, |ring| ring.version),
        ring_members: ring.as_ref().map_or(0, |ring| ring.members.len()),
        pools: vec![
            ("api", crate::db::pool_figures(&state.pool)),
            ("background", crate::db::pool_figures(&state.actors.pool())),
        ],
    };
    let mut gauges = Gauges::new();
    gauges.add_view(&view);
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(gauges.render())
}
