//! Compute API microversions: `OpenStack-API-Version: compute 2.N` (or the legacy
//! `X-OpenStack-Nova-API-Version: 2.N`), 2.1 when neither is sent, `latest` the newest. A
//! malformed version is Nova's 400, one outside 2.1–2.100 its 406.

use std::fmt;

/// One microversion of the Compute API: major 2, minor `minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeVersion {
    pub major: u32,
    pub minor: u32,
}

impl ComputeVersion {
    pub const MIN: ComputeVersion = ComputeVersion { major: 2, minor: 1 };
    pub const MAX: ComputeVersion = ComputeVersion {
        major: 2,
        minor: 100,
    };

    /// Says whether this version is 2.`minor` or later.
    pub const fn at_least(self, minor: u32) -> bool {
        self.major > 2 || (self.major == 2 && self.minor >= minor)
    }
}

impl fmt::Display for ComputeVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

/// Why a version header was refused, with Nova's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// 400.
    #[error("API Version String {0} is of invalid format. Must be of format MajorNum.MinorNum.")]
    Invalid(String),
    /// 406.
    #[error(
        "Version {0} is not supported by the API. Minimum is {min} and maximum is {max}.",
        min = ComputeVersion::MIN,
        max = ComputeVersion::MAX
    )]
    Unsupported(ComputeVersion),
}

/// Chooses a request's microversion from its `OpenStack-API-Version` values (`compute 2.60`,
/// possibly among other services' entries) and, when they name no compute version, its
/// `X-OpenStack-Nova-API-Version` values.
pub fn negotiate(standard: &[&str], legacy: &[&str]) -> Result<ComputeVersion, VersionError> {
    let asked = crate::domain::placement::service_version(standard, "compute").or_else(|| {
        legacy
            .iter()
            .map(|value| value.trim())
            .find(|value| !value.is_empty())
    });
    let Some(asked) = asked else {
        return Ok(ComputeVersion::MIN);
    };
    if asked.eq_ignore_ascii_case("latest") {
        return Ok(ComputeVersion::MAX);
    }
    let parsed = asked
        .split_once('.')
        .and_then(|(major, minor)| {
            let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
            (digits(major) && digits(minor)).then_some(())?;
            Some(ComputeVersion {
                major: major.parse().ok()?,
                minor: minor.parse().ok()?,
            })
        })
        .ok_or_else(|| VersionError::Invalid(asked.to_owned()))?;
    if (ComputeVersion::MIN..=ComputeVersion::MAX).contains(&parsed) {
        Ok(parsed)
    } else {
        Err(VersionError::Unsupported(parsed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(minor: u32) -> ComputeVersion {
        ComputeVersion { major: 2, minor }
    }

    #[test]
    fn the_standard_header_wins_and_the_default_is_the_minimum() {
        assert_eq!(negotiate(&[], &[]), Ok(version(1)));
        assert_eq!(negotiate(&["compute 2.60"], &["2.3"]), Ok(version(60)));
        assert_eq!(
            negotiate(&["placement 1.3, compute 2.61"], &[]),
            Ok(version(61))
        );
        assert_eq!(negotiate(&["placement 1.3"], &["2.53"]), Ok(version(53)));
        assert_eq!(negotiate(&["compute latest"], &[]), Ok(ComputeVersion::MAX));
    }

    #[test]
    fn malformed_is_400_and_outside_the_range_406() {
        for bad in ["2", "two.one", "2.", ".1", "2.1.1", "-2.1", "2.+1"] {
            assert!(
                matches!(
                    negotiate(&[&format!("compute {bad}")], &[]),
                    Err(VersionError::Invalid(_))
                ),
                "{bad}"
            );
        }
        let refused = negotiate(&["compute 2.101"], &[]);
        assert_eq!(refused, Err(VersionError::Unsupported(version(101))));
        assert_eq!(
            refused.unwrap_err().to_string(),
            "Version 2.101 is not supported by the API. Minimum is 2.1 and maximum is 2.100."
        );
        assert!(matches!(
            negotiate(&["compute 3.0"], &[]),
            Err(VersionError::Unsupported(_))
        ));
        assert!(matches!(
            negotiate(&["compute 2.0"], &[]),
            Err(VersionError::Unsupported(_))
        ));
    }
}
