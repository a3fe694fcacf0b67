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
        ironic: state.actors.node_source.driver().map(|driver| {
            let status = driver.status();
            crate::metrics::IronicView {
                lists_here: status.lists_here,
                seconds: status.took_ms as f64 / 1000.0,
                pages: status.requests,
                changed: status.changed,
                held: status.held,
                interval_seconds: state
                    .actors
                    .settings
                    .host
                    .update_resources_interval
                    .as_secs_f64(),
                success_age_seconds: status
                    .last_success
                    .map_or(-1.0, |at| (now - at).num_milliseconds() as f64 / 1000.0),
            }
        }),
    };
    let mut gauges = Gauges::new();
    gauges.add_view(&view);
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(gauges.render())
}
