//! `GET /placement/allocation_candidates` (1.10+) for flat providers: every provider that alone
//! has room for all the requested resources and meets the trait and aggregate rules, in
//! provider order, at most `limit` (1.16), with the summaries Placement shapes per microversion
//! (traits 1.17, every class 1.27, parent and root 1.29, mappings 1.34).
//!
//! Granular request groups (`resources1`, 1.25+) and `same_subtree` (1.36) are answered with a
//! 400 that says they are not supported yet; nested and sharing providers are not combined.

use std::collections::BTreeSet;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::error::PlacementError;
use super::middleware::version_of;
use crate::db;
use crate::db::candidates::{CandidateProvider, CandidatesError};
use crate::domain::placement::Microversion;
use crate::domain::placement_filter::ProviderRules;
use crate::http::AppState;

/// A parsed allocation-candidates request.
#[derive(Debug, Default)]
struct CandidateRequest {
    rules: ProviderRules,
    limit: Option<usize>,
    root_rules: ProviderRules,
    in_tree: Option<Uuid>,
}

fn bad_query(detail: impl std::fmt::Display) -> PlacementError {
    PlacementError::bad_request(format!("Invalid query string parameters: {detail}"))
}

/// Says whether `key` is a request-group parameter with a suffix (`resources1`, `required_X`).
fn is_suffixed_group(key: &str) -> bool {
    ["resources", "required", "member_of", "in_tree"]
        .iter()
        .any(|prefix| {
            key.strip_prefix(prefix)
                .is_some_and(|rest| !rest.is_empty())
        })
}

fn parse(query: &str, version: Microversion) -> Result<CandidateRequest, PlacementError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|error| bad_query(format!("malformed query string: {error}")))?;
    let mut request = CandidateRequest::default();
    let mut has_resources = false;
    let (mut required, mut member_of, mut root_required) = (Vec::new(), Vec::new(), Vec::new());
    for (key, value) in &pairs {
        match key.as_str() {
            "resources" => {
                has_resources = true;
                request
                    .rules
                    .parse_resources(value)
                    .map_err(PlacementError::bad_request)?
            }
            "limit" if version.at_least(1, 16) => {
                let valid = value.starts_with(|c: char| ('1'..='9').contains(&c))
                    && value.chars().all(|c| c.is_ascii_digit());
                if !valid {
                    return Err(bad_query(format!(
                        "'{value}' does not match '^[1-9][0-9]*$'\n\nFailed validating \
                         'pattern' in schema['properties']['limit']"
                    )));
                }
                request.limit = Some(value.parse().unwrap_or(usize::MAX));
            }
            "required" if version.at_least(1, 17) => required.push(value.as_str()),
            "member_of" if version.at_least(1, 21) => member_of.push(value.as_str()),
            "group_policy" if version.at_least(1, 25) => {
                if !matches!(value.as_str(), "none" | "isolate") {
                    return Err(bad_query(format!(
                        "'{value}' is not one of ['none', 'isolate']"
                    )));
                }
            }
            "in_tree" if version.at_least(1, 31) => {
                request.in_tree = Some(Uuid::parse_str(value).map_err(|_| {
                    PlacementError::bad_request(format!(
                        "Invalid query string parameters: Expected 'in_tree' parameter to be \
                         a format of uuid. Got: {value}"
                    ))
                })?)
            }
            "root_required" if version.at_least(1, 35) => root_required.push(value.as_str()),
            key if version.at_least(1, 25) && (is_suffixed_group(key) || key == "same_subtree") => {
                return Err(PlacementError::bad_request(format!(
                    "Granular request groups and same_subtree are not supported yet \
                     (parameter '{key}')."
                )));
            }
            other => {
                return Err(bad_query(format!(
                    "Additional properties are not allowed ('{other}' was unexpected)"
                )));
            }
        }
    }
    request
        .rules
        .parse_member_of(&member_of, version)
        .and_then(|()| request.rules.parse_required(&required, version))
        .map_err(PlacementError::bad_request)?;
    if root_required.len() > 1 {
        return Err(PlacementError::bad_request(
            "Query parameter 'root_required' may be specified only once.",
        ));
    }
    // root_required does not take the any-of form: parsed as 1.38 parsed `required`.
    let before_any_of = Microversion {
        major: 1,
        minor: 38,
    };
    request
        .root_rules
        .parse_required(&root_required, before_any_of)
        .map_err(|error| {
            PlacementError::bad_request(error.replace("'required'", "'root_required'"))
        })?;
    if !has_resources {
        return Err(if version.at_least(1, 25) {
            PlacementError::bad_request(
                "At least one request group (`resources` or `resources{$S}`) is required.",
            )
        } else {
            bad_query("'resources' is a required property")
        });
    }
    if version.at_least(1, 22) {
        let conflicts = request.rules.conflicting_traits();
        if !conflicts.is_empty() {
            return Err(PlacementError::bad_request(format!(
                "Conflicting required and forbidden traits found in the following traits \
                 keys: {}",
                conflicts.join(", ")
            )));
        }
    }
    Ok(request)
}

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
    let asked = parse(request.query_string(), version)?;
    let classes: Vec<String> = asked
        .rules
        .resources
        .iter()
        .map(|(class, _)| class.clone())
        .collect();
    let mut trait_names = asked.rules.trait_names();
    trait_names.extend(asked.root_rules.trait_names());
    let with_traits = version.at_least(1, 17) || !trait_names.is_empty();
    let with_aggregates =
        !asked.rules.aggregates_any.is_empty() || !asked.rules.forbidden_aggregates.is_empty();
    let in_tree = asked.in_tree;
    let found = db::run(&state.pool, move |conn| {
        let missing = db::provider_links::missing_traits(conn, &trait_names)?;
        if !missing.is_empty() {
            return Ok(Err(PlacementError::bad_request(format!(
                "No such trait(s): {}.",
                missing.join(", ")
            ))));
        }
        let tree_root = match in_tree {
            Some(uuid) => match db::providers::get_provider(conn, uuid)? {
                Some(provider) => Some(provider.root_uuid),
                None => {
                    return Ok(Err(PlacementError::bad_request(format!(
                        "Invalid query string parameters: No such resource provider {uuid}."
                    ))));
                }
            },
            None => None,
        };
        match db::candidates::candidate_providers(conn, &classes, with_traits, with_aggregates) {
            Ok(providers) => Ok(Ok((providers, tree_root))),
            Err(CandidatesError::UnknownClass(class)) => {
                Ok(Err(PlacementError::bad_request(format!(
                    "Invalid resource class in resources parameter: No such resource class {class}."
                ))))
            }
            Err(CandidatesError::Db(error)) => Err(error),
        }
    })
    .await??;
    let (providers, tree_root) = found;
    let chosen: Vec<&CandidateProvider> = providers
        .iter()
        .filter(|provider| tree_root.is_none_or(|root| provider.root == root))
        .filter(|provider| asked.rules.admits(&provider.facts))
        .filter(|provider| {
            // Flat providers are their own root; a nested candidate's root traits are not
            // loaded, so root rules only pass where they are empty.
            asked.root_rules.is_empty()
                || (provider.root == provider.uuid && asked.root_rules.admits(&provider.facts))
        })
        .take(asked.limit.unwrap_or(usize::MAX))
        .collect();
    Ok(HttpResponse::Ok().json(render(&chosen, &asked.rules, version)))
}

fn render(chosen: &[&CandidateProvider], rules: &ProviderRules, version: Microversion) -> Value {
    let requested: BTreeSet<&str> = rules
        .resources
        .iter()
        .map(|(class, _)| class.as_str())
        .collect();
    let mut requests = Vec::with_capacity(chosen.len());
    let mut summaries = Map::new();
    for provider in chosen {
        let uuid = provider.uuid.to_string();
        let resources: Map<String, Value> = rules
            .resources
            .iter()
            .map(|(class, amount)| (class.clone(), json!(amount)))
            .collect();
        let mut entry = if version.at_least(1, 12) {
            json!({"allocations": {uuid.clone(): {"resources": resources}}})
        } else {
            json!({"allocations": [{"resource_provider": {"uuid": uuid}, "resources": resources}]})
        };
        if version.at_least(1, 34) {
            entry["mappings"] = json!({"": [uuid]});
        }
        requests.push(entry);
        let classes: Map<String, Value> = provider
            .facts
            .classes
            .iter()
            .filter(|(class, _)| version.at_least(1, 27) || requested.contains(class.as_str()))
            .map(|(class, facts)| {
                (
                    class.clone(),
                    json!({"capacity": facts.capacity(), "used": facts.used}),
                )
            })
            .collect();
        let mut summary = json!({ "resources": classes });
        if version.at_least(1, 17) {
            summary["traits"] = json!(provider.facts.traits);
        }
        if version.at_least(1, 29) {
            summary["parent_provider_uuid"] = json!(provider.parent);
            summary["root_provider_uuid"] = json!(provider.root);
        }
        summaries.insert(uuid, summary);
    }
    json!({"allocation_requests": requests, "provider_summaries": summaries})
}
