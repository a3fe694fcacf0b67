//! Logging: env_logger, levels from `--log-level`, else `RUST_LOG`, else `info`; lines as text
//! (env_logger's own format) or JSON (`--log-format json`: one object per line with the same
//! fields — timestamp, level, target, message — plus a record's key-values, such as an access
//! log's `request_id`, `method`, `path`, `status` and `duration_ms`). Lines go to stderr (journald
//! under systemd) or to `--log-file`, rotated by size. The levels can change while the process
//! runs (SIGHUP reads them again from the configuration file).

mod rotating;

use std::io::Write;
use std::path::PathBuf;
use std::sync::{OnceLock, PoisonError, RwLock};

use log::kv::{Key, Value, VisitSource};

pub use self::rotating::{ByteSize, RotatingFile};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// env_logger's lines: `[timestamp LEVEL target] message`.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Where and how the process logs.
#[derive(Debug, Clone, Default)]
pub struct LogSettings {
    pub format: LogFormat,
    /// env_logger's filter syntax; `None`: RUST_LOG, else info.
    pub level: Option<String>,
    /// A file instead of stderr, rotated at `file_size` bytes keeping `file_count` old files.
    pub file: Option<PathBuf>,
    pub file_size: u64,
    pub file_count: u32,
    /// A one-shot command: the embedded PostgreSQL's routine lines (start, stop, checkpoints)
    /// stay below the default level; a service's log keeps them.
    pub one_shot: bool,
}

/// The env_logger builder for `format`, its filter from `RUST_LOG` or `default_filter`.
pub fn builder(format: LogFormat, default_filter: &str) -> env_logger::Builder {
    let mut builder =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_filter));
    formatted(&mut builder, format);
    builder
}

fn formatted(builder: &mut env_logger::Builder, format: LogFormat) {
    if format == LogFormat::Json {
        builder.format(|out, record| {
            let line = json_line(
                &chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                record,
            );
            writeln!(out, "{line}")
        });
    }
}

/// The process's logger: env_logger behind a lock, so that its levels can be replaced.
struct Reloadable {
    current: RwLock<env_logger::Logger>,
    output: Output,
}

/// What stays when the levels change: the format, the file, the default levels.
struct Output {
    format: LogFormat,
    file: Option<RotatingFile>,
    default_filter: &'static str,
}

impl Output {
    fn build(&self, level: Option<&str>) -> env_logger::Logger {
        let mut builder = match level {
            // The given levels replace RUST_LOG's, all of them.
            Some(level) => {
                let mut builder = env_logger::Builder::new();
                builder.parse_filters(level);
                formatted(&mut builder, self.format);
                builder
            }
            None => builder(self.format, self.default_filter),
        };
        if let Some(file) = &self.file {
            builder
                .target(env_logger::Target::Pipe(Box::new(file.clone())))
                .write_style(env_logger::WriteStyle::Never);
        }
        builder.build()
    }
}

impl log::Log for Reloadable {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        current.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        current.log(record);
    }

    fn flush(&self) {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        current.flush();
    }
}

static LOGGER: OnceLock<Reloadable> = OnceLock::new();

/// Installs the process's logger; an error says why the log file cannot be written.
pub fn init(settings: &LogSettings) -> Result<(), String> {
    let file = match &settings.file {
        Some(path) => Some(
            RotatingFile::open(path, settings.file_size, settings.file_count)
                .map_err(|error| format!("cannot write --log-file {}: {error}", path.display()))?,
        ),
        None => None,
    };
    let output = Output {
        format: settings.format,
        file,
        default_filter: if settings.one_shot {
            "info,postgres=warn"
        } else {
            "info"
        },
    };
    let built = output.build(settings.level.as_deref());
    let filter = built.filter();
    let logger = Reloadable {
        current: RwLock::new(built),
        output,
    };
    if LOGGER.set(logger).is_err() {
        return Ok(());
    }
    if let Some(logger) = LOGGER.get()
        && log::set_logger(logger).is_ok()
    {
        log::set_max_level(filter);
    }
    Ok(())
}

/// Replaces the levels (`None`: RUST_LOG, else info) of the logger `init` installed.
pub fn set_level(level: Option<&str>) {
    let Some(logger) = LOGGER.get() else {
        return;
    };
    let built = logger.output.build(level);
    log::set_max_level(built.filter());
    *logger
        .current
        .write()
        .unwrap_or_else(PoisonError::into_inner) = built;
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
