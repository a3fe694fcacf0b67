//! `GET /placement/allocation_candidates` (1.10+) for flat providers: every provider that alone
//! has room for all the requested resources and meets the trait and aggregate rules, in
//! provider order, at most `limit` (1.16), with the summaries Placement shapes per microversion
//! (traits 1.17, every class 1.27, parent and root 1.29, mappings 1.34).
//!
//! Granular request groups (`resources1`, 1.25+) and `same_subtree` (1.36) are answered with a
//! 400 that says they are not supported yet; nested and sharing providers are not combined.

use std::collections::{BTreeMap, BTreeSet};

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use uuid::Uuid;

use super::error::PlacementError;
use super::middleware::version_of;
use crate::db;
use crate::db::candidates::CandidateProvider;
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
        let has_traits = !request.rules.traits_any.is_empty();
        let has_aggregates = !request.rules.aggregates_any.is_empty()
            || !request.rules.forbidden_aggregates.is_empty();
        return Err(if !version.at_least(1, 25) {
            bad_query("'resources' is a required property")
        } else if version.at_least(1, 36) {
            PlacementError::bad_request(
                "There must be at least one resources or resources[$S] parameter.",
            )
        } else if has_traits {
            PlacementError::bad_request(
                "All traits parameters must be associated with resources.  Found the following \
                 orphaned traits keys: required",
            )
        } else if has_aggregates {
            PlacementError::bad_request(
                "All member_of parameters must be associated with resources. Found the \
                 following orphaned member_of keys: member_of",
            )
        } else {
            PlacementError::bad_request(
                "At least one request group (`resources` or `resources{$S}`) is required.",
            )
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
    let cache = state.candidates.clone();
    let snapshot = db::run(&state.pool, move |conn| {
        db::candidates::snapshot(conn, &cache)
    })
    .await?;
    if let Some((class, _)) = asked
        .rules
        .resources
        .iter()
        .find(|(class, _)| !snapshot.classes.contains(class))
    {
        return Err(PlacementError::bad_request(format!(
            "Invalid resource class in resources parameter: No such resource class {class}."
        )));
    }
    let mut names = asked.rules.trait_names();
    names.extend(asked.root_rules.trait_names());
    let mut missing: Vec<String> = names
        .into_iter()
        .filter(|name| !snapshot.traits.contains(name))
        .collect();
    if !missing.is_empty() {
        missing.sort();
        missing.dedup();
        return Err(PlacementError::bad_request(format!(
            "No such trait(s): {}.",
            missing.join(", ")
        )));
    }
    let tree_root = match asked.in_tree {
        Some(uuid) => Some(match snapshot.roots.get(&uuid) {
            Some(root) => *root,
            // Creating a provider does not renew the snapshot (it has no inventory yet).
            None => db::run(&state.pool, move |conn| {
                db::providers::get_provider(conn, uuid)
            })
            .await?
            .map(|provider| provider.root_uuid)
            .ok_or_else(|| {
                PlacementError::bad_request(format!(
                    "Invalid query string parameters: No such resource provider {uuid}."
                ))
            })?,
        }),
        None => None,
    };
    let chosen: Vec<&CandidateProvider> = snapshot
        .providers
        .iter()
        .filter(|provider| tree_root.is_none_or(|root| provider.root == root))
        .filter(|provider| asked.rules.admits(&provider.facts))
        .filter(|provider| {
            // Flat providers are their own root; a nested candidate's root traits are not
            // combined yet, so root rules only pass where they are empty.
            asked.root_rules.is_empty()
                || (provider.root == provider.uuid && asked.root_rules.admits(&provider.facts))
        })
        .take(asked.limit.unwrap_or(usize::MAX))
        .collect();
    let amounts: Amounts = asked
        .rules
        .resources
        .iter()
        .map(|(class, amount)| (class.as_str(), *amount))
        .collect();
    let body = serde_json::to_vec(&render(&chosen, &amounts, version)).map_err(|_| {
        PlacementError::new(
            actix_web::http::StatusCode::INTERNAL_SERVER_ERROR,
            "The server could not render the candidates.",
        )
    })?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}

/// The amounts of one allocation request, per class.
type Amounts<'a> = BTreeMap<&'a str, i64>;

#[derive(Serialize)]
struct ProviderAmounts<'a> {
    resources: &'a Amounts<'a>,
}

#[derive(Serialize)]
struct ListedAmounts<'a> {
    resource_provider: Listed,
    resources: &'a Amounts<'a>,
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
        allocations: [ListedAmounts<'a>; 1],
    },
    Keyed {
        allocations: BTreeMap<Uuid, ProviderAmounts<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        mappings: Option<BTreeMap<&'static str, [Uuid; 1]>>,
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
    traits: Option<&'a BTreeSet<String>>,
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
    chosen: &[&'a CandidateProvider],
    amounts: &'a Amounts<'a>,
    version: Microversion,
) -> Candidates<'a> {
    let mut requests = Vec::with_capacity(chosen.len());
    let mut summaries = BTreeMap::new();
    for provider in chosen {
        requests.push(if version.at_least(1, 12) {
            AllocationRequest::Keyed {
                allocations: BTreeMap::from([(
                    provider.uuid,
                    ProviderAmounts { resources: amounts },
                )]),
                mappings: version
                    .at_least(1, 34)
                    .then(|| BTreeMap::from([("", [provider.uuid])])),
            }
        } else {
            AllocationRequest::Listed {
                allocations: [ListedAmounts {
                    resource_provider: Listed {
                        uuid: provider.uuid,
                    },
                    resources: amounts,
                }],
            }
        });
        let resources = provider
            .facts
            .classes
            .iter()
            .filter(|(class, _)| version.at_least(1, 27) || amounts.contains_key(class.as_str()))
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
        let nested = version.at_least(1, 29);
        summaries.insert(
            provider.uuid,
            Summary {
                resources,
                traits: version.at_least(1, 17).then_some(&provider.facts.traits),
                parent_provider_uuid: nested.then_some(provider.parent),
                root_provider_uuid: nested.then_some(provider.root),
            },
        );
    }
    Candidates {
        allocation_requests: requests,
        provider_summaries: summaries,
    }
}
