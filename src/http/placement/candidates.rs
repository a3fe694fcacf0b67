//! `GET /placement/allocation_candidates` (1.10+): the query parsed as Placement parses it —
//! the unsuffixed group and granular groups (`resources1`, 1.25; any suffix, 1.33), `limit`
//! (1.16), `required` (1.17; forbidden 1.22; `in:` 1.39), `member_of` (1.21), `group_policy`
//! (1.25), `in_tree` (1.31), `root_required` (1.35), `same_subtree` and resourceless groups
//! (1.36) — answered by `domain::candidates` over the kept snapshot, in Placement's shapes per
//! microversion (a list before 1.12; traits 1.17; every class 1.27; parent and root 1.29,
//! nested trees; mappings 1.34).

use std::collections::{BTreeMap, BTreeSet};

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use uuid::Uuid;

use super::error::PlacementError;
use super::middleware::version_of;
use crate::db;
use crate::domain::candidates::{self as engine, Group, Request};
use crate::domain::placement::Microversion;
use crate::domain::placement_filter::ProviderRules;
use crate::http::AppState;

fn bad_query(detail: impl std::fmt::Display) -> PlacementError {
    PlacementError::bad_request(format!("Invalid query string parameters: {detail}"))
}

const BAD_VALUE: &str = "placement.query.bad_value";
const DUPLICATE_KEY: &str = "placement.query.duplicate_key";
const MISSING_VALUE: &str = "placement.query.missing_value";

const GROUP_KEYS: [&str; 4] = ["resources", "required", "member_of", "in_tree"];

/// Splits a group key into its prefix and suffix when the version allows it.
fn group_key(key: &str, version: Microversion) -> Option<(&'static str, &str)> {
    GROUP_KEYS.iter().find_map(|prefix| {
        let suffix = key.strip_prefix(prefix)?;
        if *prefix == "in_tree" && !version.at_least(1, 31) {
            return None;
        }
        let allowed = if suffix.is_empty() {
            true
        } else if version.at_least(1, 33) {
            suffix.len() <= 64
                && suffix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        } else if version.at_least(1, 25) {
            suffix.starts_with(|c: char| ('1'..='9').contains(&c))
                && suffix.chars().all(|c| c.is_ascii_digit())
        } else {
            false
        };
        allowed.then_some((*prefix, suffix))
    })
}

/// Checks the parameter names and simple values as Placement's JSON schema for `version`.
fn check_schema(pairs: &[(String, String)], version: Microversion) -> Result<(), PlacementError> {
    for (key, value) in pairs {
        let known = match key.as_str() {
            "limit" => version.at_least(1, 16),
            "required" => version.at_least(1, 17),
            "member_of" => version.at_least(1, 21),
            "group_policy" => version.at_least(1, 25),
            "root_required" => version.at_least(1, 35),
            "same_subtree" => version.at_least(1, 36),
            "resources" => true,
            other => group_key(other, version).is_some(),
        };
        if !known {
            // From 1.25 the schema has pattern properties, and jsonschema words it so.
            return Err(bad_query(if version.at_least(1, 25) {
                let suffix = if version.at_least(1, 33) {
                    "[a-zA-Z0-9_-]{1,64}"
                } else {
                    "[1-9][0-9]*"
                };
                let mut prefixes = vec!["member_of", "required", "resources"];
                if version.at_least(1, 31) {
                    prefixes.insert(0, "in_tree");
                }
                let patterns: Vec<String> = prefixes
                    .iter()
                    .map(|prefix| format!("'^{prefix}({suffix})?$'"))
                    .collect();
                format!(
                    "'{key}' does not match any of the regexes: {}",
                    patterns.join(", ")
                )
            } else {
                format!("Additional properties are not allowed ('{key}' was unexpected)")
            }));
        }
        if key == "limit"
            && !(value.starts_with(|c: char| ('1'..='9').contains(&c))
                && value.chars().all(|c| c.is_ascii_digit()))
        {
            return Err(bad_query(format!(
                "'{value}' does not match '^[1-9][0-9]*$'\n\nFailed validating 'pattern' in \
                 schema['properties']['limit']"
            )));
        }
        if key == "group_policy" && !matches!(value.as_str(), "none" | "isolate") {
            return Err(bad_query(format!(
                "'{value}' is not one of ['none', 'isolate']"
            )));
        }
    }
    if !version.at_least(1, 25) && !pairs.iter().any(|(key, _)| key == "resources") {
        return Err(bad_query("'resources' is a required property"));
    }
    Ok(())
}

/// One request group being read: its rules and whether it named resources.
#[derive(Default)]
struct Reading {
    suffix: String,
    rules: ProviderRules,
    has_resources: bool,
    in_tree: Option<Uuid>,
}

fn parse(query: &str, version: Microversion) -> Result<Request, PlacementError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|error| bad_query(format!("malformed query string: {error}")))?;
    check_schema(&pairs, version)?;
    let first = |name: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let all = |name: &str| -> Vec<&str> {
        pairs
            .iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .collect()
    };
    let limit = first("limit").map(|value| value.parse().unwrap_or(usize::MAX));
    let group_policy = first("group_policy");
    let root_required = all("root_required");
    if root_required.len() > 1 {
        return Err(PlacementError::bad_request(
            "Query parameter 'root_required' may be specified only once.",
        )
        .with_code(DUPLICATE_KEY));
    }
    let mut root = ProviderRules::default();
    // root_required takes neither the any-of form nor repeats: parsed as 1.38 parsed `required`.
    let before_any_of = Microversion {
        major: 1,
        minor: 38,
    };
    root.parse_required(&root_required, before_any_of)
        .map_err(PlacementError::bad_request)?;
    let root_required: Vec<String> = root.traits_any.iter().flatten().cloned().collect();
    let conflicts: Vec<String> = root
        .forbidden_traits
        .iter()
        .filter(|name| root_required.contains(name))
        .cloned()
        .collect();
    if !conflicts.is_empty() {
        return Err(PlacementError::bad_request(format!(
            "Conflicting required and forbidden traits found in root_required: {}",
            conflicts.join(", ")
        ))
        .with_code(BAD_VALUE));
    }
    let mut same_subtrees = Vec::new();
    for value in all("same_subtree") {
        let suffixes: BTreeSet<String> = value.split(',').map(|s| s.trim().to_owned()).collect();
        if suffixes.contains("") {
            return Err(PlacementError::bad_request(
                "Empty string (unsuffixed group) can not be specified in `same_subtree` ",
            )
            .with_code(BAD_VALUE));
        }
        same_subtrees.push(suffixes.into_iter().collect::<Vec<String>>());
    }

    let mut groups: Vec<Reading> = Vec::new();
    for (key, value) in &pairs {
        let Some((prefix, suffix)) = group_key(key, version) else {
            continue;
        };
        let position = match groups.iter().position(|group| group.suffix == suffix) {
            Some(position) => position,
            None => {
                groups.push(Reading {
                    suffix: suffix.to_owned(),
                    ..Reading::default()
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[position];
        match prefix {
            "resources" => {
                let mut rules = ProviderRules::default();
                rules
                    .parse_resources(value)
                    .map_err(PlacementError::bad_request)?;
                group.rules.resources = rules.resources;
                group.has_resources = true;
            }
            "required" => {
                let mut rules = ProviderRules::default();
                rules
                    .parse_required(&all(key), version)
                    .map_err(PlacementError::bad_request)?;
                group.rules.traits_any = rules.traits_any;
                group.rules.forbidden_traits = rules.forbidden_traits;
            }
            "member_of" => {
                let mut rules = ProviderRules::default();
                rules.parse_member_of(&all(key), version).map_err(|error| {
                    PlacementError::bad_request(error.replacen(
                        "member_of parameters",
                        &format!("member_of{suffix} parameters"),
                        1,
                    ))
                })?;
                group.rules.aggregates_any = rules.aggregates_any;
                group.rules.forbidden_aggregates = rules.forbidden_aggregates;
            }
            _ => {
                group.in_tree = Some(Uuid::parse_str(value.trim()).map_err(|_| {
                    bad_query(format!(
                        "Expected 'in_tree' parameter to be a format of uuid. Got: {value}"
                    ))
                })?)
            }
        }
    }
    check_groups(&groups, &same_subtrees, version)?;
    let numbered = groups
        .iter()
        .filter(|group| !group.suffix.is_empty())
        .count();
    if group_policy.is_none() && numbered > 1 {
        return Err(PlacementError::bad_request(
            "The \"group_policy\" parameter is required when specifying more than one \
             \"resources{N}\" parameter.",
        ));
    }
    Ok(Request {
        groups: groups
            .into_iter()
            .map(|group| Group {
                suffix: group.suffix,
                resources: group.rules.resources,
                required: group.rules.traits_any,
                forbidden: group.rules.forbidden_traits,
                member_of: group.rules.aggregates_any,
                forbidden_aggregates: group.rules.forbidden_aggregates,
                in_tree: group.in_tree,
            })
            .collect(),
        limit,
        isolate: group_policy == Some("isolate"),
        root_required,
        root_forbidden: root.forbidden_traits,
        same_subtrees,
        nested_aware: version.at_least(1, 29),
    })
}

/// Placement's checks of the groups as a whole (`RequestGroup.dict_from_request`).
fn check_groups(
    groups: &[Reading],
    same_subtrees: &[Vec<String>],
    version: Microversion,
) -> Result<(), PlacementError> {
    let python_list = |items: &[&str]| {
        format!(
            "[{}]",
            items
                .iter()
                .map(|item| format!("'{item}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    if version.at_least(1, 36) {
        let resourceless: Vec<&str> = groups
            .iter()
            .filter(|group| !group.has_resources)
            .map(|group| group.suffix.as_str())
            .collect();
        if resourceless.len() == groups.len() {
            return Err(PlacementError::bad_request(
                "There must be at least one resources or resources[$S] parameter.",
            )
            .with_code(MISSING_VALUE));
        }
        let in_subtrees: BTreeSet<&str> =
            same_subtrees.iter().flatten().map(String::as_str).collect();
        let bad: Vec<&str> = resourceless
            .iter()
            .filter(|suffix| !in_subtrees.contains(*suffix))
            .copied()
            .collect();
        if !bad.is_empty() {
            return Err(PlacementError::bad_request(format!(
                "Resourceless suffixed group request should be specified in `same_subtree` \
                 query param: bad group(s) - {}.",
                python_list(&bad)
            ))
            .with_code(BAD_VALUE));
        }
        let known: Vec<&str> = groups.iter().map(|group| group.suffix.as_str()).collect();
        let missing: Vec<&str> = same_subtrees
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|suffix| !known.contains(suffix))
            .collect();
        if !missing.is_empty() {
            return Err(PlacementError::bad_request(format!(
                "Real suffixes should be specified in `same_subtree`: {} not found in {}.",
                python_list(&missing),
                python_list(&known)
            ))
            .with_code(BAD_VALUE));
        }
    } else {
        let orphans = |pick: fn(&Reading) -> bool, prefix: &str| -> Vec<String> {
            groups
                .iter()
                .filter(|group| !group.has_resources && pick(group))
                .map(|group| format!("{prefix}{}", group.suffix))
                .collect()
        };
        let traits = orphans(|group| !group.rules.traits_any.is_empty(), "required");
        if !traits.is_empty() {
            return Err(PlacementError::bad_request(format!(
                "All traits parameters must be associated with resources.  Found the \
                 following orphaned traits keys: {}",
                traits.join(", ")
            )));
        }
        let aggregates = orphans(
            |group| {
                !group.rules.aggregates_any.is_empty()
                    || !group.rules.forbidden_aggregates.is_empty()
            },
            "member_of",
        );
        if !aggregates.is_empty() {
            return Err(PlacementError::bad_request(format!(
                "All member_of parameters must be associated with resources. Found the \
                 following orphaned member_of keys: {}",
                aggregates.join(", ")
            )));
        }
        if !groups.iter().all(|group| group.has_resources) {
            return Err(PlacementError::bad_request(
                "All request groups must specify resources.",
            ));
        }
        if groups.is_empty() {
            return Err(PlacementError::bad_request(
                "At least one request group (`resources` or `resources{$S}`) is required.",
            ));
        }
    }
    if version.at_least(1, 22) {
        let mut conflicts: Vec<String> = groups
            .iter()
            .flat_map(|group| {
                group
                    .rules
                    .traits_any
                    .iter()
                    .filter(|any| {
                        any.iter()
                            .all(|name| group.rules.forbidden_traits.contains(name))
                    })
                    .map(|any| {
                        let mut names = any.clone();
                        names.sort();
                        format!("required{}: ({})", group.suffix, names.join(", "))
                    })
            })
            .collect();
        conflicts.sort();
        if !conflicts.is_empty() {
            return Err(PlacementError::bad_request(format!(
                "Conflicting required and forbidden traits found in the following traits \
                 keys: {}",
                conflicts.join(", ")
            )));
        }
    }
    Ok(())
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
    let outcome = engine::candidates(&snapshot.providers, &asked);
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
    let providers = &snapshot.providers;
    let mut requests = Vec::with_capacity(outcome.candidates.len());
    for candidate in &outcome.candidates {
        let mut by_provider: BTreeMap<usize, Amounts<'a>> = BTreeMap::new();
        for ((provider, class), amount) in &candidate.amounts {
            by_provider
                .entry(*provider)
                .or_default()
                .insert(class.as_str(), *amount);
        }
        requests.push(if version.at_least(1, 12) {
            AllocationRequest::Keyed {
                allocations: by_provider
                    .into_iter()
                    .map(|(provider, resources)| {
                        (providers[provider].uuid, ProviderAmounts { resources })
                    })
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
        } else {
            AllocationRequest::Listed {
                allocations: by_provider
                    .into_iter()
                    .map(|(provider, resources)| ListedAmounts {
                        resource_provider: Listed {
                            uuid: providers[provider].uuid,
                        },
                        resources,
                    })
                    .collect(),
            }
        });
    }
    let nested = version.at_least(1, 29);
    let summaries = outcome
        .summaries
        .iter()
        .map(|index| {
            let provider = &providers[*index];
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
            (
                provider.uuid,
                Summary {
                    resources,
                    traits: version.at_least(1, 17).then(|| {
                        let mut traits: Vec<&str> =
                            provider.facts.traits.iter().map(String::as_str).collect();
                        traits.sort_by_key(|name| snapshot.traits.get(*name).copied());
                        traits
                    }),
                    parent_provider_uuid: nested
                        .then(|| provider.parent.map(|parent| providers[parent].uuid)),
                    root_provider_uuid: nested.then(|| providers[provider.root].uuid),
                },
            )
        })
        .collect();
    Candidates {
        allocation_requests: requests,
        provider_summaries: summaries,
    }
}
