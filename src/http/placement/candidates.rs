//! `GET /placement/allocation_candidates` (1.10+): the query parsed as Placement parses it —
//! the unsuffixed group and granular groups (`resources1`, 1.25; any suffix, 1.33), `limit`
//! (1.16), `required` (1.17; forbidden 1.22; `in:` 1.39), `member_of` (1.21), `group_policy`
//! (1.25), `in_tree` (1.31), `root_required` (1.35), `same_subtree` and resourceless groups
//! (1.36) — answered by `domain::candidates` over the kept snapshot, in Placement's shapes per
//! microversion (a list before 1.12; traits 1.17; every class 1.27; parent and root 1.29,
//! nested trees; mappings 1.34).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use uuid::Uuid;

mod query;

use super::error::PlacementError;
use super::middleware::version_of;
use crate::db;
use crate::domain::candidates as engine;
use crate::domain::placement::Microversion;
use crate::http::AppState;

/// Lists allocation candidates.
pub async fn list_candidates(
    request: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PlacementError> {
    let version = version_of(&request);
    if !version.at_least(1, 10) {
        return Err(PlacementError::not_found(
            "The resource could not be found.",
        ));
    }
    let asked = query::parse(request.query_string(), version)?;
    let cache = state.candidates.clone();
    let snapshot = db::run(&state.pool, move |conn| {
        db::placement::candidates::snapshot(conn, &cache)
    })
    .await?;
    let trait_exists = |name: &String| snapshot.traits.contains_key(name);
    if let Some(name) = asked
        .root_required
        .iter()
        .chain(&asked.root_forbidden)
        .find(|name| !trait_exists(name))
    {
        return Err(PlacementError::bad_request(format!(
            "No such trait(s): {name}."
        )));
    }
    for group in &asked.groups {
        if let Some((class, _)) = group
            .resources
            .iter()
            .find(|(class, _)| !snapshot.classes.contains(class))
        {
            return Err(PlacementError::bad_request(format!(
                "Invalid resource class in resources parameter: No such resource class {class}."
            )));
        }
        if let Some(name) = group
            .required
            .iter()
            .flatten()
            .chain(&group.forbidden)
            .find(|name| !trait_exists(name))
        {
            return Err(PlacementError::bad_request(format!(
                "No such trait(s): {name}."
            )));
        }
    }
    let outcome = generate(&state, snapshot.clone(), asked.clone()).await?;
    let requested: BTreeSet<&str> = asked
        .groups
        .iter()
        .flat_map(|group| group.resources.iter().map(|(class, _)| class.as_str()))
        .collect();
    let body =
        serde_json::to_vec(&render(&snapshot, &outcome, &requested, version)).map_err(|_| {
            PlacementError::new(
                actix_web::http::StatusCode::INTERNAL_SERVER_ERROR,
                "The server could not render the candidates.",
            )
        })?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}

/// Generates the candidates off the request workers, within the candidate settings' cap and
/// deadline: a request still computing at the deadline is 503 (nothing is kept); one cut at
/// the cap is counted and logged.
async fn generate(
    state: &AppState,
    snapshot: std::sync::Arc<db::placement::candidates::PlacementSnapshot>,
    asked: engine::Request,
) -> Result<engine::Outcome, PlacementError> {
    let settings = state.placement.candidates;
    let generation = engine::Generation {
        cap: settings.cap,
        strategy: settings.strategy,
        sample_seed: settings
            .randomize
            .then(|| uuid::Uuid::new_v4().as_u64_pair().0),
    };
    let deadline = Instant::now() + settings.timeout;
    let computed = actix_rt::task::spawn_blocking(move || {
        engine::generate(&snapshot.providers, &asked, &generation, &|| {
            Instant::now() >= deadline
        })
    })
    .await
    .map_err(|_| unavailable("The allocation candidates could not be computed."))?;
    let Ok(outcome) = computed else {
        log::warn!(
            "allocation candidates not computed within {} (--placement-candidates-timeout): \
             answered 503",
            humantime::format_duration(settings.timeout)
        );
        return Err(unavailable(&format!(
            "The allocation candidates could not be computed within {}: ask for fewer \
             groups, a limit, in_tree or member_of.",
            humantime::format_duration(settings.timeout)
        )));
    };
    if outcome.truncated {
        crate::metrics::count_candidates_truncated();
        log::warn!(
            "allocation candidates cut at {} (--placement-max-allocation-candidates): more \
             may exist than were answered",
            outcome.candidates.len()
        );
    }
    Ok(outcome)
}

fn unavailable(message: &str) -> PlacementError {
    PlacementError::new(
        actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
        message.to_owned(),
    )
}

/// A provider's amounts in one allocation request, per class.
type Amounts<'a> = BTreeMap<&'a str, i64>;

#[derive(Serialize)]
struct ProviderAmounts<'a> {
    resources: Amounts<'a>,
}

#[derive(Serialize)]
struct ListedAmounts<'a> {
    resource_provider: Listed,
    resources: Amounts<'a>,
}

#[derive(Serialize)]
struct Listed {
    uuid: Uuid,
}

/// One allocation request: a list before 1.12, keyed by provider from 1.12.
#[derive(Serialize)]
#[serde(untagged)]
enum AllocationRequest<'a> {
    Listed {
        allocations: Vec<ListedAmounts<'a>>,
    },
    Keyed {
        allocations: BTreeMap<Uuid, ProviderAmounts<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        mappings: Option<BTreeMap<&'a str, Vec<Uuid>>>,
    },
}

#[derive(Serialize)]
struct Capacity {
    capacity: i64,
    used: i64,
}

#[derive(Serialize)]
struct Summary<'a> {
    resources: BTreeMap<&'a str, Capacity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    traits: Option<Vec<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_provider_uuid: Option<Option<Uuid>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    root_provider_uuid: Option<Uuid>,
}

#[derive(Serialize)]
struct Candidates<'a> {
    allocation_requests: Vec<AllocationRequest<'a>>,
    provider_summaries: BTreeMap<Uuid, Summary<'a>>,
}

fn render<'a>(
    snapshot: &'a db::placement::candidates::PlacementSnapshot,
    outcome: &'a engine::Outcome,
    requested: &BTreeSet<&str>,
    version: Microversion,
) -> Candidates<'a> {
    Candidates {
        allocation_requests: outcome
            .candidates
            .iter()
            .map(|candidate| allocation_request(snapshot, candidate, version))
            .collect(),
        provider_summaries: outcome
            .summaries
            .iter()
            .map(|index| summary(snapshot, *index, requested, version))
            .collect(),
    }
}

/// One candidate as an allocation request: keyed by provider from 1.12 (with the groups'
/// mappings from 1.34), a list before.
fn allocation_request<'a>(
    snapshot: &'a db::placement::candidates::PlacementSnapshot,
    candidate: &'a engine::Candidate,
    version: Microversion,
) -> AllocationRequest<'a> {
    let providers = &snapshot.providers;
    let mut by_provider: BTreeMap<usize, Amounts<'a>> = BTreeMap::new();
    for ((provider, class), amount) in &candidate.amounts {
        by_provider
            .entry(*provider)
            .or_default()
            .insert(class.as_str(), *amount);
    }
    if !version.at_least(1, 12) {
        return AllocationRequest::Listed {
            allocations: by_provider
                .into_iter()
                .map(|(provider, resources)| ListedAmounts {
                    resource_provider: Listed {
                        uuid: providers[provider].uuid,
                    },
                    resources,
                })
                .collect(),
        };
    }
    AllocationRequest::Keyed {
        allocations: by_provider
            .into_iter()
            .map(|(provider, resources)| (providers[provider].uuid, ProviderAmounts { resources }))
            .collect(),
        mappings: version.at_least(1, 34).then(|| {
            candidate
                .mappings
                .iter()
                .map(|(suffix, chosen)| {
                    (
                        suffix.as_str(),
                        chosen.iter().map(|p| providers[*p].uuid).collect(),
                    )
                })
                .collect()
        }),
    }
}

/// The summary of provider `index`: its capacity and use (every class from 1.27, the requested
/// ones before), its traits (1.17) and its tree (1.29).
fn summary<'a>(
    snapshot: &'a db::placement::candidates::PlacementSnapshot,
    index: usize,
    requested: &BTreeSet<&str>,
    version: Microversion,
) -> (Uuid, Summary<'a>) {
    let providers = &snapshot.providers;
    let provider = &providers[index];
    let nested = version.at_least(1, 29);
    let resources = provider
        .facts
        .classes
        .iter()
        .filter(|(class, _)| version.at_least(1, 27) || requested.contains(class.as_str()))
        .map(|(class, facts)| {
            (
                class.as_str(),
                Capacity {
                    capacity: facts.capacity(),
                    used: facts.used,
                },
            )
        })
        .collect();
    let summary = Summary {
        resources,
        traits: version.at_least(1, 17).then(|| {
            let mut traits: Vec<&str> = provider.facts.traits.iter().map(String::as_str).collect();
            traits.sort_by_key(|name| snapshot.traits.get(*name).copied());
            traits
        }),
        parent_provider_uuid: nested.then(|| provider.parent.map(|parent| providers[parent].uuid)),
        root_provider_uuid: nested.then(|| providers[provider.root].uuid),
    };
    (provider.uuid, summary)
}
