//! The query of `GET /allocation_candidates`, parsed and checked as Placement parses it for
//! the request's microversion: the schema, `root_required`, `same_subtree`, the request groups
//! and the checks of the groups as a whole.

use std::collections::BTreeSet;

use uuid::Uuid;

use super::super::error::PlacementError;
use crate::domain::candidates::{Group, Request};
use crate::domain::placement::Microversion;
use crate::domain::placement_filter::ProviderRules;

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

/// Parses the query of `GET /allocation_candidates` as Placement does for `version`.
pub(super) fn parse(query: &str, version: Microversion) -> Result<Request, PlacementError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|error| bad_query(format!("malformed query string: {error}")))?;
    check_schema(&pairs, version)?;
    let first = |name: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let limit = first("limit").map(|value| value.parse().unwrap_or(usize::MAX));
    let group_policy = first("group_policy");
    let root = parse_root_required(&all_values(&pairs, "root_required"))?;
    let same_subtrees = parse_same_subtrees(&all_values(&pairs, "same_subtree"))?;
    let groups = read_groups(&pairs, version)?;
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
        groups: groups.into_iter().map(Reading::into_group).collect(),
        limit,
        isolate: group_policy == Some("isolate"),
        root_required: root.traits_any.iter().flatten().cloned().collect(),
        root_forbidden: root.forbidden_traits,
        same_subtrees,
        nested_aware: version.at_least(1, 29),
    })
}

/// Every value of parameter `name`, in order.
fn all_values<'a>(pairs: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .collect()
}

/// `root_required` (1.35): once at most, no any-of form (parsed as 1.38 parsed `required`), no
/// trait both required and forbidden.
fn parse_root_required(values: &[&str]) -> Result<ProviderRules, PlacementError> {
    if values.len() > 1 {
        return Err(PlacementError::bad_request(
            "Query parameter 'root_required' may be specified only once.",
        )
        .with_code(DUPLICATE_KEY));
    }
    let mut root = ProviderRules::default();
    let before_any_of = Microversion {
        major: 1,
        minor: 38,
    };
    root.parse_required(values, before_any_of)
        .map_err(PlacementError::bad_request)?;
    let required: Vec<&String> = root.traits_any.iter().flatten().collect();
    let conflicts: Vec<String> = root
        .forbidden_traits
        .iter()
        .filter(|name| required.contains(name))
        .cloned()
        .collect();
    if !conflicts.is_empty() {
        return Err(PlacementError::bad_request(format!(
            "Conflicting required and forbidden traits found in root_required: {}",
            conflicts.join(", ")
        ))
        .with_code(BAD_VALUE));
    }
    Ok(root)
}

/// `same_subtree` (1.36): each value a comma-separated set of group suffixes, none empty.
fn parse_same_subtrees(values: &[&str]) -> Result<Vec<Vec<String>>, PlacementError> {
    values
        .iter()
        .map(|value| {
            let suffixes: BTreeSet<String> =
                value.split(',').map(|s| s.trim().to_owned()).collect();
            if suffixes.contains("") {
                return Err(PlacementError::bad_request(
                    "Empty string (unsuffixed group) can not be specified in `same_subtree` ",
                )
                .with_code(BAD_VALUE));
            }
            Ok(suffixes.into_iter().collect())
        })
        .collect()
}

/// The most request groups one query may have (the unsuffixed one included): beyond, 400.
/// Each group multiplies the combinations a request can ask for; Nova asks for a handful.
pub const MAX_GROUPS: usize = 32;

/// Reads the request groups, in the order their suffixes first appear.
fn read_groups(
    pairs: &[(String, String)],
    version: Microversion,
) -> Result<Vec<Reading>, PlacementError> {
    let mut groups: Vec<Reading> = Vec::new();
    for (key, value) in pairs {
        let Some((prefix, suffix)) = group_key(key, version) else {
            continue;
        };
        let position = match groups.iter().position(|group| group.suffix == suffix) {
            Some(position) => position,
            None if groups.len() >= MAX_GROUPS => {
                return Err(bad_query(format!(
                    "Too many request groups: at most {MAX_GROUPS} are allowed (each suffix of \
                     resources, required, member_of or in_tree makes one)."
                )));
            }
            None => {
                groups.push(Reading {
                    suffix: suffix.to_owned(),
                    ..Reading::default()
                });
                groups.len() - 1
            }
        };
        let values = all_values(pairs, key);
        groups[position].read(prefix, value, &values, version)?;
    }
    Ok(groups)
}

impl Reading {
    /// Reads one parameter of the group: `value` (the first of `values`, all given for it).
    fn read(
        &mut self,
        prefix: &str,
        value: &str,
        values: &[&str],
        version: Microversion,
    ) -> Result<(), PlacementError> {
        let mut rules = ProviderRules::default();
        match prefix {
            "resources" => {
                rules
                    .parse_resources(value)
                    .map_err(PlacementError::bad_request)?;
                self.rules.resources = rules.resources;
                self.has_resources = true;
            }
            "required" => {
                rules
                    .parse_required(values, version)
                    .map_err(PlacementError::bad_request)?;
                self.rules.traits_any = rules.traits_any;
                self.rules.forbidden_traits = rules.forbidden_traits;
            }
            "member_of" => {
                rules.parse_member_of(values, version).map_err(|error| {
                    PlacementError::bad_request(error.replacen(
                        "member_of parameters",
                        &format!("member_of{} parameters", self.suffix),
                        1,
                    ))
                })?;
                self.rules.aggregates_any = rules.aggregates_any;
                self.rules.forbidden_aggregates = rules.forbidden_aggregates;
            }
            _ => {
                self.in_tree = Some(Uuid::parse_str(value.trim()).map_err(|_| {
                    bad_query(format!(
                        "Expected 'in_tree' parameter to be a format of uuid. Got: {value}"
                    ))
                })?)
            }
        }
        Ok(())
    }

    fn into_group(self) -> Group {
        Group {
            suffix: self.suffix,
            resources: self.rules.resources,
            required: self.rules.traits_any,
            forbidden: self.rules.forbidden_traits,
            member_of: self.rules.aggregates_any,
            forbidden_aggregates: self.rules.forbidden_aggregates,
            in_tree: self.in_tree,
        }
    }
}

/// Placement's checks of the groups as a whole (`RequestGroup.dict_from_request`).
fn check_groups(
    groups: &[Reading],
    same_subtrees: &[Vec<String>],
    version: Microversion,
) -> Result<(), PlacementError> {
    if version.at_least(1, 36) {
        check_resourceless_groups(groups, same_subtrees)?;
    } else {
        check_groups_have_resources(groups)?;
    }
    if version.at_least(1, 22) {
        check_forbidden_conflicts(groups)?;
    }
    Ok(())
}

/// A list as Python prints it: `['a', 'b']`.
fn python_list(items: &[&str]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|item| format!("'{item}'"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// From 1.36: some group has resources, every resourceless group is in a `same_subtree`, and
/// every suffix a `same_subtree` names is a group.
fn check_resourceless_groups(
    groups: &[Reading],
    same_subtrees: &[Vec<String>],
) -> Result<(), PlacementError> {
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
    let in_subtrees: BTreeSet<&str> = same_subtrees.iter().flatten().map(String::as_str).collect();
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
    Ok(())
}

/// Before 1.36: every group has resources, and there is one.
fn check_groups_have_resources(groups: &[Reading]) -> Result<(), PlacementError> {
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
            !group.rules.aggregates_any.is_empty() || !group.rules.forbidden_aggregates.is_empty()
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
    Ok(())
}

/// From 1.22: no any-of set of required traits is wholly forbidden in its group.
fn check_forbidden_conflicts(groups: &[Reading]) -> Result<(), PlacementError> {
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
    Ok(())
}
