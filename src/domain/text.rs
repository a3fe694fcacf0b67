//! Rules for text a client sends: where a NUL character hides in a JSON document (no name,
//! value or key of ringmaster may hold one: PostgreSQL text cannot), and base64.

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

/// Decodes standard base64 (with its padding); `None` for anything else.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = text.trim_end_matches('=');
    if !text.len().is_multiple_of(4) || text.len() - body.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in body.bytes() {
        buffer = (buffer << 6) | value(byte)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
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
}
