//! `/api/v1/ring`, `/api/v1/moves`, `/api/v1/timeline`, `/api/v1/audit`, `/api/v1/providers`
//! and `/api/v1/usage`: the state of
//! the deployment as a whole.

use std::collections::BTreeMap;

use actix_web::{HttpResponse, web};

use super::AppState;
use super::dto::{
    AuditResponse, InventoryResponse, MovesQuery, ProviderResponse, RingResponse, TimelineQuery,
    ViolationGroup, ViolationResponse,
};
use super::error::ApiError;
use crate::db;

/// Returns the ring: version, algorithm, members, node counts per host and the nodes in all
/// (those no host owns are the difference).
pub async fn get_ring(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let ring = state.actors.ring.view(state.actors.clock.now());
    let cache = state.node_counts.clone();
    let (counts, nodes, unserved_groups) = db::run(&state.pool, move |conn| {
        let counts = cache.get(conn)?;
        let nodes = db::node_views::count_node_views(conn, &db::node_views::NodeFilter::default())?;
        Ok((counts, nodes, db::node_groups::unserved(conn)?))
    })
    .await?;
    Ok(HttpResponse::Ok().json(RingResponse {
        nodes,
        version: ring.version,
        algorithm: ring.algorithm,
        members: ring.members,
        counts: counts.into_iter().collect(),
        leader: ring.leader,
        lease_epoch: ring.lease_epoch,
        node_source: super::nodes::node_source_view(&state.actors.node_source),
        unserved_groups,
    }))
}

/// Lists the latest moves, newest first (`limit`, default 100, at most 10,000).
pub async fn list_moves(
    state: web::Data<AppState>,
    query: web::Query<MovesQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(100);
    if !(1..=10_000).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to 10000, not {limit}"
        )));
    }
    let moves = db::run(&state.pool, move |conn| {
        db::node_views::list_moves(conn, limit)
    })
    .await?;
    // A move is answered as the audit log records it (`db::node_views::MoveRow`).
    Ok(HttpResponse::Ok().json(moves))
}

/// The timeline of moves: one entry per failover, drain or join, newest first (`limit`,
/// default 20, at most 200), each said in one line ("cmp-5 down: 5,037 nodes → cmp-1 262, …").
pub async fn get_timeline(
    state: web::Data<AppState>,
    query: web::Query<TimelineQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(20);
    let Ok(limit @ 1..=200) = usize::try_from(limit) else {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to 200, not {limit}"
        )));
    };
    let entries = db::run(&state.pool, move |conn| {
        db::timeline::recent_entries(conn, limit)
    })
    .await?;
    Ok(HttpResponse::Ok().json(entries))
}

/// Capacity and use per resource class, summed over every provider (what a dashboard shows
/// without reading 100,000 providers).
pub async fn get_usage(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let usage = db::run(&state.pool, db::placement::usages::usage_by_class).await?;
    Ok(HttpResponse::Ok().json(usage))
}

/// Checks every invariant of docs/design.md against the database.
pub async fn get_audit(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let clock = state.actors.settings.audit_clock(state.actors.clock.now());
    let violations = db::run(&state.pool, move |conn| {
        db::audit::check_invariants_at(conn, clock)
    })
    .await?;
    Ok(HttpResponse::Ok().json(audit_response(&violations)))
}

/// How many of an invariant's violations an audit answer names.
const FIRST_VIOLATIONS: usize = 5;

fn audit_response(violations: &[db::audit::Violation]) -> AuditResponse {
    let mut groups: Vec<ViolationGroup> = Vec::new();
    for violation in violations {
        match groups
            .iter_mut()
            .find(|group| group.invariant == violation.invariant)
        {
            Some(group) => {
                group.count += 1;
                if group.first.len() < FIRST_VIOLATIONS {
                    group.first.push(violation.message.clone());
                }
            }
            None => groups.push(ViolationGroup {
                invariant: violation.invariant,
                count: 1,
                first: vec![violation.message.clone()],
            }),
        }
    }
    groups.sort_by_key(|group| group.invariant);
    AuditResponse {
        ok: violations.is_empty(),
        violations: violations
            .iter()
            .map(|violation| ViolationResponse {
                invariant: violation.invariant,
                message: violation.message.clone(),
            })
            .collect(),
        by_invariant: groups,
    }
}

/// The audit as an `audit` event carries it: ok, and the violations grouped by invariant.
pub fn audit_summary(violations: &[db::audit::Violation]) -> serde_json::Value {
    let response = audit_response(violations);
    serde_json::json!({ "ok": response.ok, "by_invariant": response.by_invariant })
}

/// Lists resource providers with their inventory and usages.
pub async fn list_providers(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let rows = db::run(&state.pool, db::placement::usages::list_provider_usages).await?;
    let mut providers: Vec<ProviderResponse> = Vec::new();
    for row in rows {
        if providers.last().map(|last| last.uuid) != Some(row.uuid) {
            providers.push(ProviderResponse {
                uuid: row.uuid,
                name: row.name.clone(),
                generation: row.generation,
                inventory: BTreeMap::new(),
                usages: BTreeMap::new(),
            });
        }
        if let (Some(provider), Some(class), Some(total), Some(reserved)) = (
            providers.last_mut(),
            row.resource_class,
            row.total,
            row.reserved,
        ) {
            provider.usages.insert(class.clone(), row.used);
            provider
                .inventory
                .insert(class, InventoryResponse { total, reserved });
        }
    }
    Ok(HttpResponse::Ok().json(providers))
}
