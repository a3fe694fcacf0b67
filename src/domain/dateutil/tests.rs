use super::*;

/// The vectors python-dateutil wrote (scripts/dateutil_vectors.py).
const VECTORS: &str = include_str!("../../../tests/data/dateutil_vectors.json");

#[test]
fn every_text_is_read_as_dateutil_reads_it_or_refused_as_it_refuses_it() {
    let document: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
    let default = document["default"].as_str().unwrap();
    let today = NaiveDate::parse_from_str(&default[..10], "%Y-%m-%d").unwrap();
    assert_eq!(document["year"].as_i64(), Some(i64::from(today.year())));
    let vectors = document["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 300, "{} vectors", vectors.len());
    let mut wrong = Vec::new();
    for vector in vectors {
        let text = vector["text"].as_str().unwrap();
        let expected = vector["utc"].as_str();
        let read = parse(text, today);
        let got = read
            .as_ref()
            .ok()
            .map(|instant| instant.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string());
        if got.as_deref() != expected {
            wrong.push(format!(
                "{text:?}: dateutil {expected:?}, ringmaster {read:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        vectors.len(),
        wrong.join("\n")
    );
}

#[test]
fn refusals_say_why_as_dateutil_does() {
    let today = NaiveDate::from_ymd_opt(2026, 6, 15).unwrap();
    assert_eq!(
        parse("soon", today),
        Err("String does not contain a date: soon".to_owned())
    );
    assert_eq!(
        parse("2015-02-30", today),
        Err("day is out of range for month: 2015-02-30".to_owned())
    );
    assert_eq!(
        parse("Oct Nov 2015", today),
        Err("Unknown string format: Oct Nov 2015".to_owned())
    );
}
