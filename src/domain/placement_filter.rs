//! What a provider list or an allocation-candidates request asks of a provider — resources it
//! must have room for, traits it must (or must not) have, aggregates it must (or must not) be
//! in — parsed from Placement's query syntax with Placement's error wording, and the check of
//! one provider against it. Pure.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::placement::Microversion;

/// One resource class of one provider, as the filters and the provider summaries see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassFacts {
    /// (total − reserved) × allocation_ratio.
    pub limit: f64,
    pub used: i64,
    pub min_unit: i64,
    pub max_unit: i64,
    pub step_size: i64,
}

impl ClassFacts {
    /// Says whether `amount` more fits: room, min_unit, max_unit and step_size.
    pub fn fits(&self, amount: i64) -> bool {
        (self.used + amount) as f64 <= self.limit
            && amount >= self.min_unit
            && amount <= self.max_unit
            && amount % self.step_size.max(1) == 0
    }

    /// The capacity Placement reports: the limit rounded down.
    pub fn capacity(&self) -> i64 {
        self.limit.floor() as i64
    }
}

/// What the filters look at for one provider.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderFacts {
    pub traits: BTreeSet<String>,
    pub aggregates: BTreeSet<Uuid>,
    pub classes: BTreeMap<String, ClassFacts>,
}

/// Everything asked of one provider: every rule must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderRules {
    /// Each inner list: at least one of its traits must be present.
    pub traits_any: Vec<Vec<String>>,
    pub forbidden_traits: Vec<String>,
    /// Each inner list: the provider must be in at least one of its aggregates.
    pub aggregates_any: Vec<Vec<Uuid>>,
    pub forbidden_aggregates: Vec<Uuid>,
    pub resources: Vec<(String, i64)>,
}

impl ProviderRules {
    pub fn is_empty(&self) -> bool {
        self.traits_any.is_empty()
            && self.forbidden_traits.is_empty()
            && self.aggregates_any.is_empty()
            && self.forbidden_aggregates.is_empty()
            && self.resources.is_empty()
    }

    /// Every trait name the rules mention (to check they exist).
    pub fn trait_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.traits_any.iter().flatten().cloned().collect();
        names.extend(self.forbidden_traits.iter().cloned());
        names
    }

    /// Says whether one provider meets every rule.
    pub fn admits(&self, facts: &ProviderFacts) -> bool {
        self.traits_any
            .iter()
            .all(|group| group.iter().any(|name| facts.traits.contains(name)))
            && !self
                .forbidden_traits
                .iter()
                .any(|name| facts.traits.contains(name))
            && self
                .aggregates_any
                .iter()
                .all(|group| group.iter().any(|uuid| facts.aggregates.contains(uuid)))
            && !self
                .forbidden_aggregates
                .iter()
                .any(|uuid| facts.aggregates.contains(uuid))
            && self.resources.iter().all(|(class, amount)| {
                facts
                    .classes
                    .get(class)
                    .is_some_and(|class| class.fits(*amount))
            })
    }

    /// Parses `resources=VCPU:2,MEMORY_MB:1024` (Placement's wording for every refusal).
    pub fn parse_resources(&mut self, value: &str) -> Result<(), String> {
        let form = "Badly formed resources parameter. Expected resources query string \
                    parameter in form: ?resources=VCPU:2,MEMORY_MB:1024.";
        if value.trim().is_empty() {
            return Err(format!("{form} Got: empty string."));
        }
        for item in value.split(',') {
            let mut parts = item.split(':');
            let (Some(class), Some(amount), None) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(format!("{form} Got: {item}."));
            };
            let amount: i64 = amount.trim().parse().map_err(|_| {
                format!(
                    "Requested resource {class} expected positive integer amount. Got: {amount}."
                )
            })?;
            if amount < 1 {
                return Err(format!(
                    "Requested resource {class} requires amount >= 1. Got: {amount}."
                ));
            }
            self.resources.retain(|(known, _)| known != class);
            self.resources.push((class.to_owned(), amount));
        }
        Ok(())
    }

    /// Parses every `required` value (`A,!B`; forbidden from 1.22; `in:A,B` any-of and
    /// repeated parameters from 1.39 — before, only the last one counts).
    pub fn parse_required(&mut self, values: &[&str], version: Microversion) -> Result<(), String> {
        let allow_forbidden = version.at_least(1, 22);
        let allow_any = version.at_least(1, 39);
        let values = if allow_any {
            values
        } else {
            &values[values.len().saturating_sub(1)..]
        };
        for value in values {
            self.parse_one_required(value, allow_forbidden, allow_any)?;
        }
        Ok(())
    }

    fn parse_one_required(
        &mut self,
        value: &str,
        allow_forbidden: bool,
        allow_any: bool,
    ) -> Result<(), String> {
        const PREFIX: &str = "Invalid query string parameters:";
        if let Some(list) = value.strip_prefix("in:") {
            if !allow_any {
                return Err(format!(
                    "{PREFIX} The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since \
                     microversion 1.39. Got: {value}"
                ));
            }
            let names: BTreeSet<String> =
                list.split(',').map(|name| name.trim().to_owned()).collect();
            if names.iter().any(String::is_empty) {
                return Err(format!(
                    "{PREFIX} Expected 'required' parameter value of the form: \
                     in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: {value}"
                ));
            }
            if names.iter().any(|name| name.starts_with('!')) {
                return Err(format!(
                    "{PREFIX} The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support \
                     forbidden traits. Got: {value}"
                ));
            }
            self.traits_any.push(names.into_iter().collect());
            return Ok(());
        }
        let names: Vec<&str> = value.split(',').map(str::trim).collect();
        if names.iter().any(|name| name.is_empty() || *name == "!") {
            let form = if allow_forbidden {
                "HW_CPU_X86_VMX,!CUSTOM_MAGIC"
            } else {
                "HW_CPU_X86_VMX,CUSTOM_MAGIC"
            };
            return Err(format!(
                "{PREFIX} Expected 'required' parameter value of the form: {form}. \
                 Got an empty trait in: {value}"
            ));
        }
        let forbidden: Vec<&str> = names
            .iter()
            .filter_map(|name| name.strip_prefix('!'))
            .collect();
        if !forbidden.is_empty() && !allow_forbidden {
            return Err(format!(
                "{PREFIX} Expected 'required' parameter value of the form: \
                 HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}"
            ));
        }
        for name in names {
            match name.strip_prefix('!') {
                Some(forbidden) => {
                    let forbidden = forbidden.trim_start_matches('!').to_owned();
                    if !self.forbidden_traits.contains(&forbidden) {
                        self.forbidden_traits.push(forbidden);
                    }
                }
                None => self.traits_any.push(vec![name.to_owned()]),
            }
        }
        Ok(())
    }

    /// Parses every `member_of` value: a UUID, `in:A,B`, and `!`-forbidden ones from 1.32;
    /// several parameters from 1.24.
    pub fn parse_member_of(
        &mut self,
        values: &[&str],
        version: Microversion,
    ) -> Result<(), String> {
        if values.len() > 1 && !version.at_least(1, 24) {
            return Err("Multiple member_of parameters are not supported".to_owned());
        }
        for value in values {
            if value.contains(',') && !(value.starts_with("in:") || value.starts_with("!in:")) {
                return Err(format!(
                    "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' \
                     keyword using the valid microversion. Got: {value}"
                ));
            }
            let (forbidden, list) = if let Some(list) = value.strip_prefix("!in:") {
                (true, list)
            } else if let Some(list) = value.strip_prefix('!') {
                (true, list)
            } else if let Some(list) = value.strip_prefix("in:") {
                (false, list)
            } else {
                (false, *value)
            };
            let uuids = list
                .split(',')
                .map(|text| {
                    Uuid::parse_str(text).map_err(|_| {
                        format!(
                            "Invalid query string parameters: Expected 'member_of' parameter \
                             to contain valid UUID(s). Got: {text}"
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if forbidden {
                if !version.at_least(1, 32) {
                    return Err("Forbidden member_of parameters are not supported in the \
                                specified microversion"
                        .to_owned());
                }
                self.forbidden_aggregates.extend(uuids);
            } else {
                self.aggregates_any.push(uuids);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LATEST: Microversion = Microversion::MAX;

    fn class(limit: f64, used: i64) -> ClassFacts {
        ClassFacts {
            limit,
            used,
            min_unit: 1,
            max_unit: 8,
            step_size: 2,
        }
    }

    #[test]
    fn a_class_fits_only_within_room_units_and_steps() {
        let vcpu = class(10.0, 4);
        assert!(vcpu.fits(6));
        assert!(!vcpu.fits(8), "over the limit");
        assert!(!vcpu.fits(3), "not a multiple of the step");
        assert!(!class(100.0, 0).fits(10), "over max_unit");
        assert_eq!(class(7.5, 0).capacity(), 7);
    }

    #[test]
    fn resources_are_parsed_with_placement_s_wording() {
        let mut rules = ProviderRules::default();
        rules.parse_resources("VCPU:2,MEMORY_MB:1024").unwrap();
        assert_eq!(
            rules.resources,
            vec![("VCPU".to_owned(), 2), ("MEMORY_MB".to_owned(), 1024)]
        );
        let refused = |text: &str| ProviderRules::default().parse_resources(text).unwrap_err();
        assert!(refused("").ends_with("Got: empty string."));
        assert!(refused("DISK_GB:500,").ends_with("Got: ."));
        assert_eq!(
            refused("VCPU:fred"),
            "Requested resource VCPU expected positive integer amount. Got: fred."
        );
        assert_eq!(
            refused("VCPU:-2"),
            "Requested resource VCPU requires amount >= 1. Got: -2."
        );
    }

    #[test]
    fn traits_and_aggregates_are_required_forbidden_or_any_of() {
        let mut rules = ProviderRules::default();
        rules.parse_required(&["A,!B", "in:C,D"], LATEST).unwrap();
        let aggregate = Uuid::from_u128(7);
        rules
            .parse_member_of(&[&format!("!{aggregate}")], LATEST)
            .unwrap();
        let mut facts = ProviderFacts::default();
        facts.traits.extend(["A".to_owned(), "D".to_owned()]);
        assert!(rules.admits(&facts));
        facts.traits.insert("B".to_owned());
        assert!(!rules.admits(&facts), "forbidden trait B");
        facts.traits.remove("B");
        facts.aggregates.insert(aggregate);
        assert!(!rules.admits(&facts), "forbidden aggregate");
        let old = Microversion {
            major: 1,
            minor: 21,
        };
        assert!(
            ProviderRules::default()
                .parse_required(&["!B"], old)
                .is_err()
        );
        assert!(
            ProviderRules::default()
                .parse_member_of(&["nope"], old)
                .is_err()
        );
        let mut last_only = ProviderRules::default();
        last_only.parse_required(&["A", "B"], old).unwrap();
        assert_eq!(last_only.traits_any, vec![vec!["B".to_owned()]]);
    }
}
