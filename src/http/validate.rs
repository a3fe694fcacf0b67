//! Checks of request values that serde cannot express; each failure names the field.

use super::error::ApiError;

/// Checks a host name: 1–255 characters of letters, digits, `.`, `-` and `_`.
pub fn host_name(name: &str) -> Result<(), ApiError> {
    let valid = !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if valid {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "invalid host name {name:?}: use 1-255 letters, digits, '.', '-' or '_'"
        )))
    }
}

/// Checks an Ironic resource class: 1–80 characters of letters, digits, `.`, `-` and `_`.
pub fn resource_class(class: &str) -> Result<(), ApiError> {
    let valid = !class.is_empty()
        && class.len() <= 80
        && class
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if valid {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "invalid resource_class {class:?}: use 1-80 letters, digits, '.', '-' or '_'"
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
    }
}
