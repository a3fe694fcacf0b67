//! Rules for text a client sends: where a NUL character hides in a JSON document (no name,
//! value or key of ringmaster may hold one: PostgreSQL text cannot), and base64.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

/// The path (`nodes[0].name`; empty for the document itself) of the first key or string in
/// `value` that holds a NUL character.
pub fn nul_path(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => text.contains('\0').then(String::new),
        Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
            nul_path(item).map(|rest| join(&format!("[{index}]"), &rest))
        }),
        Value::Object(fields) => fields.iter().find_map(|(key, item)| {
            if key.contains('\0') {
                return Some(key.replace('\0', "\\u0000"));
            }
            nul_path(item).map(|rest| join(key, &rest))
        }),
        _ => None,
    }
}

fn join(head: &str, rest: &str) -> String {
    if rest.is_empty() {
        head.to_owned()
    } else if rest.starts_with('[') {
        format!("{head}{rest}")
    } else {
        format!("{head}.{rest}")
    }
}

/// Standard base64 with its padding, trailing bits taken as Python's `base64` takes them.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// Decodes standard base64 (with its padding); `None` for anything else.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    BASE64.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_characters_are_found_by_path() {
        assert_eq!(nul_path(&json!("a\u{0}")).as_deref(), Some(""));
        assert_eq!(
            nul_path(&json!({"a": [1, {"b": "x\u{0}"}]})).as_deref(),
            Some("a[1].b")
        );
        assert_eq!(
            nul_path(&json!({"allocations": {"p\u{0}": 1}})).as_deref(),
            Some("allocations.p\\u0000")
        );
        assert_eq!(nul_path(&json!({"a": "b", "c": [1, 2]})), None);
    }

    #[test]
    fn base64_is_standard_with_its_padding() {
        assert_eq!(decode_base64("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(
            decode_base64("aGl=").as_deref(),
            Some(&b"hi"[..]),
            "trailing bits"
        );
        assert_eq!(decode_base64("").as_deref(), Some(&b""[..]));
        for refused in ["aGk", "aG=k", "a===", "aGk=\n", "aGk_", "-_8="] {
            assert_eq!(decode_base64(refused), None, "{refused:?}");
        }
    }
}
