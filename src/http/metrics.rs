//! `GET /metrics`: Prometheus's text exposition format, from what the process holds (the
//! figures task's latest read, the rebalancer's ring, the pools) — no database round trip but
//! the first scrape's, which starts the figures task.

use actix_web::{HttpResponse, web};

use super::AppState;
use crate::actors::figures::FigureSource;
use crate::metrics::{Gauges, ProcessView};

/// Renders the metrics.
pub async fn get_metrics(state: web::Data<AppState>) -> HttpResponse {
    let now = state.actors.clock.now();
    let ring = state.actors.ring.view(now);
    let source = FigureSource {
        pool: state.pool.clone(),
        clock: state.actors.clock.clone(),
        counts: state.node_counts.clone(),
    };
    let figures = state.figures.latest(&source).await;
    let local = state.actors.hosts.names();
    let view = ProcessView {
        figures: &figures,
        now,
        liveness: state.actors.settings.host.liveness,
        local: &local,
        leader: ring.leader,
        ring_version: ring.version,
        ring_members: ring.members.len(),
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
