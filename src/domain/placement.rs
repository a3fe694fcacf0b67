//! Placement's fixed vocabulary and its microversions: the standard resource classes and traits
//! (generated from os-resource-classes 1.1.0 and os-traits 3.9.0 by
//! scripts/placement_standards.py), and `OpenStack-API-Version` negotiation. Pure.

use std::fmt;

const STANDARD_RESOURCE_CLASSES: &str = include_str!("placement/standard_resource_classes.txt");
const STANDARD_TRAITS: &str = include_str!("placement/standard_traits.txt");

fn data_lines(text: &'static str) -> impl Iterator<Item = &'static str> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
}

/// Returns the standard resource classes in id order (a class's id is its index).
pub fn standard_resource_classes() -> impl Iterator<Item = &'static str> {
    data_lines(STANDARD_RESOURCE_CLASSES)
}

/// Returns the standard traits, sorted.
pub fn standard_traits() -> impl Iterator<Item = &'static str> {
    data_lines(STANDARD_TRAITS)
}

/// Says whether `name` matches Placement's `^[A-Z0-9_]+$` (resource classes, traits, consumer
/// types).
pub fn is_class_or_trait_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Says whether `name` matches `^CUSTOM_[A-Z0-9_]+$`.
pub fn is_custom_name(name: &str) -> bool {
    name.strip_prefix("CUSTOM_")
        .is_some_and(is_class_or_trait_name)
}

/// Which of Placement's policy configurations ringmaster follows (the profiles of Placement's
/// gabbi fixtures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PolicyProfile {
    /// `enforce_new_defaults=false`: the deprecated rules are honoured too (admin may do what
    /// a service may).
    #[default]
    Legacy,
    /// `enforce_new_defaults=true`: the new rules only (the reshaper is for services).
    SecureRbac,
    /// Every rule but the base admin rule is `@`: any authenticated caller may do anything.
    Open,
}

impl std::str::FromStr for PolicyProfile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "legacy" => Ok(PolicyProfile::Legacy),
            "secure-rbac" => Ok(PolicyProfile::SecureRbac),
            "open" => Ok(PolicyProfile::Open),
            other => Err(format!(
                "unknown Placement policy {other:?}: use legacy, secure-rbac or open"
            )),
        }
    }
}

/// A Placement API microversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Microversion {
    pub major: u16,
    pub minor: u16,
}

impl Microversion {
    /// The oldest version ringmaster speaks (and the default without a header).
    pub const MIN: Microversion = Microversion { major: 1, minor: 0 };
    /// The newest version ringmaster speaks, as Placement 16.0.0.
    pub const MAX: Microversion = Microversion {
        major: 1,
        minor: 39,
    };

    /// Returns whether this version is at least `major.minor`.
    pub fn at_least(self, major: u16, minor: u16) -> bool {
        self >= Microversion { major, minor }
    }
}

impl fmt::Display for Microversion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

/// Why a version header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionError {
    /// Not a version at all: Placement answers 400.
    Invalid(String),
    /// A version outside MIN..=MAX: Placement answers 406.
    Unacceptable(Microversion),
}

/// The version `service` asks for in `OpenStack-API-Version` header values (`placement 1.20`,
/// `compute latest`, possibly among other services' entries, comma-separated): the first.
pub fn service_version<'a>(header_values: &[&'a str], service: &str) -> Option<&'a str> {
    header_values
        .iter()
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .find_map(|entry| {
            let (named, version) = entry.split_once(char::is_whitespace)?;
            named.eq_ignore_ascii_case(service).then(|| version.trim())
        })
}

/// Chooses the microversion of a request from its `OpenStack-API-Version` header values
/// (`placement 1.20`, `placement latest`, possibly among other services' entries).
pub fn negotiate(header_values: &[&str]) -> Result<Microversion, VersionError> {
    let requested = service_version(header_values, "placement");
    let Some(requested) = requested else {
        return Ok(Microversion::MIN);
    };
    if requested.eq_ignore_ascii_case("latest") {
        return Ok(Microversion::MAX);
    }
    let parsed = requested
        .split_once('.')
        .and_then(|(major, minor)| {
            Some(Microversion {
                major: major.parse().ok()?,
                minor: minor.parse().ok()?,
            })
        })
        .ok_or_else(|| VersionError::Invalid(requested.to_owned()))?;
    if (Microversion::MIN..=Microversion::MAX).contains(&parsed) {
        Ok(parsed)
    } else {
        Err(VersionError::Unacceptable(parsed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_names_are_those_of_the_pinned_packages() {
        let classes: Vec<&str> = standard_resource_classes().collect();
        assert_eq!(classes.len(), 21);
        assert_eq!(&classes[..3], ["VCPU", "MEMORY_MB", "DISK_GB"]);
        let traits: Vec<&str> = standard_traits().collect();
        assert_eq!(traits.len(), 377);
        assert!(traits.contains(&"HW_CPU_X86_AVX2"));
        assert!(traits.contains(&"MISC_SHARES_VIA_AGGREGATE"));
    }

    #[test]
    fn versions_negotiate_as_placement_does() {
        assert_eq!(negotiate(&[]), Ok(Microversion::MIN));
        assert_eq!(
            negotiate(&["placement 1.20"]),
            Ok(Microversion {
                major: 1,
                minor: 20
            })
        );
        assert_eq!(
            negotiate(&["compute 2.1, placement latest"]),
            Ok(Microversion::MAX)
        );
        assert_eq!(negotiate(&["compute 2.60"]), Ok(Microversion::MIN));
        assert_eq!(
            negotiate(&["placement 1.40"]),
            Err(VersionError::Unacceptable(Microversion {
                major: 1,
                minor: 40
            }))
        );
        assert_eq!(
            negotiate(&["placement 2.0"]),
            Err(VersionError::Unacceptable(Microversion {
                major: 2,
                minor: 0
            }))
        );
        assert_eq!(
            negotiate(&["placement one"]),
            Err(VersionError::Invalid("one".to_owned()))
        );
        assert!(
            Microversion {
                major: 1,
                minor: 28
            }
            .at_least(1, 28)
        );
        assert_eq!(Microversion::MAX.to_string(), "1.39");
    }
}

/// What a write expects of the generation it carries (a consumer's, before it is replaced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationCheck {
    /// Not compared (Placement before 1.28).
    Skip,
    /// There must be none yet: the consumer is new.
    MustBeNew,
    /// It must be this one.
    Is(i64),
}

impl GenerationCheck {
    /// Says whether `stored` (`None`: nothing stored yet) is what this check expects.
    pub fn accepts(self, stored: Option<i64>) -> bool {
        match self {
            GenerationCheck::Skip => true,
            GenerationCheck::MustBeNew => stored.is_none(),
            GenerationCheck::Is(expected) => stored == Some(expected),
        }
    }

    /// The generation expected, as Placement reports it in a conflict (`None`: none).
    pub fn expected(self) -> Option<i64> {
        match self {
            GenerationCheck::Is(expected) => Some(expected),
            GenerationCheck::Skip | GenerationCheck::MustBeNew => None,
        }
    }
}
