//! Checks of request values that serde cannot express; each failure names the field.

use super::error::ApiError;
use crate::domain::identity::HostName;

/// Checks a host name: 1–255 characters of letters, digits, `.`, `-` and `_`.
pub fn host_name(name: &str) -> Result<HostName, ApiError> {
    identifier("host name", name, 255)?;
    Ok(HostName::from(name))
}

/// Checks an Ironic resource class: 1–80 characters of letters, digits, `.`, `-` and `_`.
pub fn resource_class(class: &str) -> Result<(), ApiError> {
    identifier("resource_class", class, 80)
}

/// Checks a node name: 1–255 characters, none of them a control character.
pub fn node_name(name: &str) -> Result<(), ApiError> {
    let length = name.chars().count();
    if (1..=255).contains(&length) && !name.chars().any(char::is_control) {
        return Ok(());
    }
    Err(ApiError::BadRequest(format!(
        "invalid node name {:?}: use 1-255 characters, no control characters (it has {length})",
        name.chars().take(40).collect::<String>()
    )))
}

fn identifier(what: &str, value: &str, max_len: usize) -> Result<(), ApiError> {
    let valid = !value.is_empty()
        && value.len() <= max_len
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if valid {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "invalid {what} {value:?}: use 1-{max_len} letters, digits, '.', '-' or '_'"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(host_name("cmp-1.example_a").is_ok());
        assert!(host_name("").is_err());
        assert!(host_name("a b").is_err());
        assert!(resource_class("baremetal-gold").is_ok());
        assert!(resource_class(&"x".repeat(81)).is_err());
        assert!(node_name("node-1").is_ok());
        assert!(node_name(&"n".repeat(256)).is_err());
        assert!(node_name("a\tb").is_err());
    }
}
