//! Rules for text a client sends: where a NUL character hides in a JSON document (no name,
//! value or key of ringmaster may hold one: PostgreSQL text cannot).

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
