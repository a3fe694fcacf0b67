//! Flavor extra specs as Nova validates them from microversion 2.86: a key Nova knows is
//! checked against its value rule; a key in a namespace Nova knows but under a name it does not
//! is refused; any other key (no namespace, or one nobody claims) passes. The rules are Nova
//! 34.0.0's (`extra_specs.txt`, written by scripts/nova-extra-specs.py), with the `resources`
//! and `trait` namespaces checked against Placement's standard classes and traits (or
//! `CUSTOM_…`). Every microversion checks the shape: keys of 1–255 of `[a-zA-Z0-9-_:. ]`,
//! values of at most 255 characters.

use std::sync::OnceLock;

use regex::Regex;

use crate::domain::placement::{is_custom_name, standard_resource_classes, standard_traits};

const NOVA_RULES: &str = include_str!("extra_specs.txt");

/// The request group suffix of `resources` and `trait` keys (`resources1`, `trait_gpu`).
const GROUP: &str = "([a-zA-Z0-9_-]{1,64})?";

/// What a known key's value must be.
#[derive(Debug)]
enum Rule {
    Int { min: Option<i64>, max: Option<i64> },
    Bool,
    Str,
    Enum(Vec<String>),
    Pattern(Regex),
}

struct Validator {
    name: Regex,
    rule: Rule,
}

struct Catalogue {
    validators: Vec<Validator>,
    /// The namespaces Nova claims (a regex for each: `resources` carries its group).
    namespaces: Vec<Regex>,
}

fn whole(pattern: &str) -> Option<Regex> {
    Regex::new(&format!("^(?:{pattern})$")).ok()
}

fn rule(kind: &str, constraint: &str) -> Option<Rule> {
    if let Some(values) = constraint.strip_prefix("enum:") {
        return Some(Rule::Enum(values.split('|').map(str::to_owned).collect()));
    }
    if let Some(pattern) = constraint.strip_prefix("pattern:") {
        return whole(pattern).map(Rule::Pattern);
    }
    match kind {
        "int" => {
            let (min, max) = constraint
                .strip_prefix("range:")
                .and_then(|range| range.split_once(".."))
                .map(|(min, max)| (min.parse().ok(), max.parse().ok()))
                .unwrap_or((None, None));
            Some(Rule::Int { min, max })
        }
        "bool" => Some(Rule::Bool),
        _ => Some(Rule::Str),
    }
}

fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let mut validators: Vec<Validator> = NOVA_RULES
            .lines()
            .filter_map(|line| {
                let mut fields = line.splitn(3, '\t');
                let (name, kind, constraint) = (fields.next()?, fields.next()?, fields.next()?);
                Some(Validator {
                    name: whole(name)?,
                    rule: rule(kind, constraint)?,
                })
            })
            .collect();
        let resource_classes = standard_resource_classes()
            .chain(["CUSTOM_[A-Z0-9_]+"])
            .collect::<Vec<_>>()
            .join("|");
        let traits = standard_traits()
            .chain(["CUSTOM_[A-Z0-9_]+"])
            .collect::<Vec<_>>()
            .join("|");
        validators.extend(
            whole(&format!("resources{GROUP}:(?:{resource_classes})")).map(|name| Validator {
                name,
                rule: Rule::Int {
                    min: None,
                    max: None,
                },
            }),
        );
        validators.extend(
            whole(&format!("trait{GROUP}:(?:{traits})")).map(|name| Validator {
                name,
                rule: Rule::Enum(vec!["required".to_owned(), "forbidden".to_owned()]),
            }),
        );
        let mut namespaces: Vec<String> = NOVA_RULES
            .lines()
            .filter_map(|line| line.split('\t').next()?.split_once(':'))
            .map(|(namespace, _)| namespace.to_owned())
            .collect();
        namespaces.extend([format!("resources{GROUP}"), format!("trait{GROUP}")]);
        namespaces.sort();
        namespaces.dedup();
        Catalogue {
            validators,
            namespaces: namespaces.iter().filter_map(|n| whole(n)).collect(),
        }
    })
}

/// Says whether `key` has the shape every microversion takes.
pub fn check_key(key: &str) -> Result<(), String> {
    let fits = !key.is_empty()
        && key.len() <= 255
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_:. ".contains(&b));
    if fits {
        Ok(())
    } else {
        Err(format!(
            "Invalid input for field/attribute extra_specs. Value: {key}. \
             '{key}' does not match '^[a-zA-Z0-9-_:. ]{{1,255}}$'"
        ))
    }
}

/// Says whether `value` has the shape every microversion takes.
pub fn check_value_length(value: &str) -> Result<(), String> {
    if value.chars().count() <= 255 {
        Ok(())
    } else {
        Err("extra_specs value has more than 255 characters.".to_owned())
    }
}

/// Nova's `bool_from_string(strict=True)`.
pub fn bool_like(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "t" | "true" | "on" | "y" | "yes" => Some(true),
        "0" | "f" | "false" | "off" | "n" | "no" => Some(false),
        _ => None,
    }
}

/// Validates one extra spec as Nova does from 2.86, with its messages.
pub fn validate(key: &str, value: &str) -> Result<(), String> {
    let catalogue = catalogue();
    if let Some(validator) = catalogue.validators.iter().find(|v| v.name.is_match(key)) {
        return check(&validator.rule, value);
    }
    let Some((namespace, _)) = key.split_once(':') else {
        return Ok(());
    };
    if catalogue.namespaces.iter().any(|n| n.is_match(namespace)) {
        return Err(format!(
            "Validation failed; extra spec '{key}' does not appear to be a valid extra spec."
        ));
    }
    Ok(())
}

fn check(rule: &Rule, value: &str) -> Result<(), String> {
    match rule {
        Rule::Int { min, max } => {
            let Ok(number) = value.trim().parse::<i64>() else {
                return Err(format!(
                    "Validation failed; '{value}' is not a valid integer value."
                ));
            };
            if let Some(max) = max.filter(|max| *max < number) {
                return Err(format!(
                    "Validation failed; '{value}' is greater than the max value of '{max}'."
                ));
            }
            if let Some(min) = min.filter(|min| *min > number) {
                return Err(format!(
                    "Validation failed; '{value}' is less than the min value of '{min}'."
                ));
            }
            Ok(())
        }
        Rule::Bool => bool_like(value).map(|_| ()).ok_or_else(|| {
            format!("Validation failed; '{value}' is not a valid boolean-like value.")
        }),
        Rule::Str => Ok(()),
        Rule::Enum(values) if values.iter().any(|v| v == value) => Ok(()),
        Rule::Enum(values) => Err(format!(
            "Validation failed; '{value}' is not one of: {}.",
            values.join(", ")
        )),
        Rule::Pattern(pattern) if pattern.is_match(value) => Ok(()),
        Rule::Pattern(pattern) => {
            let shown = pattern.as_str();
            let shown = shown
                .strip_prefix("^(?:")
                .and_then(|s| s.strip_suffix(")$"))
                .unwrap_or(shown);
            Err(format!(
                "Validation failed; '{value}' is not of the format '{shown}'."
            ))
        }
    }
}

/// The resources and traits a flavor's extra specs ask of Placement, over all request groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlacementRequest {
    /// `(class, amount)` of every `resources[N]:CLASS` with an amount above 0.
    pub resources: Vec<(String, i64)>,
    pub required_traits: Vec<String>,
    pub forbidden_traits: Vec<String>,
}

/// Reads the Placement request of a flavor's extra specs (keys Nova's scheduler reads:
/// `resources[N]:CLASS=amount`, `trait[N]:NAME=required|forbidden`). Specs whose values do not
/// read are skipped (validation refuses them from 2.86; earlier, Nova's scheduler ignores
/// them too).
pub fn placement_request<'a>(
    specs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> PlacementRequest {
    let mut request = PlacementRequest::default();
    for (key, value) in specs {
        let Some((namespace, name)) = key.split_once(':') else {
            continue;
        };
        if namespace.starts_with("resources") {
            if let Ok(amount) = value.trim().parse::<i64>()
                && amount > 0
                && crate::domain::placement::is_class_or_trait_name(name)
            {
                request.resources.push((name.to_owned(), amount));
            }
        } else if namespace.starts_with("trait") && is_trait_name(name) {
            match value {
                "required" => request.required_traits.push(name.to_owned()),
                "forbidden" => request.forbidden_traits.push(name.to_owned()),
                _ => {}
            }
        }
    }
    request.required_traits.sort();
    request.required_traits.dedup();
    request.forbidden_traits.sort();
    request.forbidden_traits.dedup();
    request
}

fn is_trait_name(name: &str) -> bool {
    is_custom_name(name) || crate::domain::placement::is_class_or_trait_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys_are_checked_against_their_rule() {
        assert_eq!(validate("hw:cpu_policy", "dedicated"), Ok(()));
        assert_eq!(
            validate("hw:cpu_policy", "mine").unwrap_err(),
            "Validation failed; 'mine' is not one of: dedicated, shared, mixed."
        );
        assert_eq!(validate("hw:numa_nodes", "2"), Ok(()));
        assert!(
            validate("hw:numa_nodes", "two")
                .unwrap_err()
                .contains("not a valid integer")
        );
        assert_eq!(validate("hw:numa_cpus.0", "0-3"), Ok(()));
        assert!(
            validate("hw:numa_cpus.0", "zero")
                .unwrap_err()
                .contains("is not of the format")
        );
        assert_eq!(validate("hw:boot_menu", "Yes"), Ok(()));
        assert!(
            validate("hw:boot_menu", "maybe")
                .unwrap_err()
                .contains("boolean-like")
        );
        assert_eq!(validate("group_policy", "isolate"), Ok(()));
        assert!(validate("group_policy", "all").is_err());
    }

    #[test]
    fn resources_and_traits_take_groups_standard_names_and_custom_ones() {
        assert_eq!(validate("resources:CUSTOM_BAREMETAL", "1"), Ok(()));
        assert_eq!(validate("resources:VCPU", "0"), Ok(()));
        assert_eq!(validate("resources1:MEMORY_MB", "1024"), Ok(()));
        assert!(validate("resources:VCPU", "one").is_err());
        assert!(
            validate("resources:NOT_A_CLASS", "1")
                .unwrap_err()
                .contains("does not appear")
        );
        assert_eq!(validate("trait:CUSTOM_RAID", "required"), Ok(()));
        assert_eq!(validate("trait_gpu:HW_CPU_X86_AVX2", "forbidden"), Ok(()));
        assert!(
            validate("trait:CUSTOM_RAID", "wanted")
                .unwrap_err()
                .contains("not one of")
        );
        assert!(validate("trait:HW_NOT_A_TRAIT", "required").is_err());
    }

    #[test]
    fn unknown_names_in_known_namespaces_are_refused_and_other_keys_pass() {
        assert!(
            validate("hw:not_a_thing", "1")
                .unwrap_err()
                .contains("does not appear")
        );
        assert!(validate("capabilities:not_a_field", "1").is_err());
        assert_eq!(validate("capabilities:cpu_info", "x86"), Ok(()));
        assert_eq!(validate("my_own:key", "anything"), Ok(()));
        assert_eq!(validate("no_namespace", "anything"), Ok(()));
    }

    #[test]
    fn every_rule_of_nova_is_read() {
        let rules = NOVA_RULES.lines().count();
        assert_eq!(
            catalogue().validators.len(),
            rules + 2,
            "each line is one rule"
        );
        assert!(check_key("resources:CUSTOM_X").is_ok());
        assert!(check_key("bad/key").is_err());
        assert!(check_key("").is_err());
        assert!(check_value_length(&"x".repeat(256)).is_err());
    }

    #[test]
    fn a_bare_metal_flavor_asks_its_class_and_traits() {
        let specs = [
            ("resources:CUSTOM_BAREMETAL", "1"),
            ("resources:VCPU", "0"),
            ("resources:MEMORY_MB", "0"),
            ("trait:CUSTOM_RAID", "required"),
            ("trait1:CUSTOM_SLOW", "forbidden"),
            ("capabilities:boot_mode", "uefi"),
        ];
        let request = placement_request(specs);
        assert_eq!(request.resources, vec![("CUSTOM_BAREMETAL".to_owned(), 1)]);
        assert_eq!(request.required_traits, vec!["CUSTOM_RAID"]);
        assert_eq!(request.forbidden_traits, vec!["CUSTOM_SLOW"]);
    }
}
