//! Logging: env_logger, levels from `RUST_LOG` (default `info`), lines as text (env_logger's
//! own format) or JSON (`--log-format json`: one object per line with the same fields —
//! timestamp, level, target, message — plus a record's key-values, such as an access log's
//! `request_id`, `method`, `path`, `status` and `duration_ms`).

use std::io::Write;

use log::kv::{Key, Value, VisitSource};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// env_logger's lines: `[timestamp LEVEL target] message`.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The env_logger builder for `format`, its filter from `RUST_LOG` or `default_filter`.
pub fn builder(format: LogFormat, default_filter: &str) -> env_logger::Builder {
    let mut builder =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_filter));
    if format == LogFormat::Json {
        builder.format(|out, record| {
            let line = json_line(
                &chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                record,
            );
            writeln!(out, "{line}")
        });
    }
    builder
}

/// Installs the logger for `format` (default level info).
pub fn init(format: LogFormat) {
    builder(format, "info").init();
}

/// One record as a JSON object: timestamp, level, target, message and its key-values.
pub fn json_line(timestamp: &str, record: &log::Record<'_>) -> String {
    let mut object = serde_json::Map::new();
    object.insert("timestamp".into(), timestamp.into());
    object.insert("level".into(), record.level().as_str().into());
    object.insert("target".into(), record.target().into());
    object.insert("message".into(), record.args().to_string().into());
    let mut fields = Fields(&mut object);
    // A visitor that never fails: the error type is only the trait's.
    let _visited = record.key_values().visit(&mut fields);
    serde_json::Value::Object(object).to_string()
}

/// A command's final error line as a JSON log line (level ERROR, target ringmaster).
pub fn error_line(message: &str) -> String {
    serde_json::json!({
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "level": "ERROR",
        "target": "ringmaster",
        "message": message,
    })
    .to_string()
}

struct Fields<'a>(&'a mut serde_json::Map<String, serde_json::Value>);

impl<'kvs> VisitSource<'kvs> for Fields<'_> {
    fn visit_pair(&mut self, key: Key<'kvs>, value: Value<'kvs>) -> Result<(), log::kv::Error> {
        let value = if let Some(number) = value.to_u64() {
            serde_json::Value::from(number)
        } else if let Some(number) = value.to_f64() {
            serde_json::Value::from(number)
        } else {
            serde_json::Value::from(value.to_string())
        };
        self.0.insert(key.as_str().to_owned(), value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_line_carries_the_fields_and_key_values() {
        let status = 200u16;
        let line = json_line(
            "2026-12-02T00:00:00.000000Z",
            &log::Record::builder()
                .level(log::Level::Info)
                .target("ringmaster::access")
                .args(format_args!("GET /healthz 200"))
                .key_values(&[("request_id", "req-1")])
                .build(),
        );
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["level"], "INFO");
        assert_eq!(parsed["target"], "ringmaster::access");
        assert_eq!(parsed["message"], format!("GET /healthz {status}"));
        assert_eq!(parsed["request_id"], "req-1");
        assert_eq!(parsed["timestamp"], "2026-12-02T00:00:00.000000Z");
    }
}
