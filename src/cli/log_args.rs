//! The logging flags: format, levels, and a file with rotation for those without journald.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use clap::parser::ValueSource;

use super::config_file::ConfigFile;

use crate::logging::{ByteSize, LogFormat, LogSettings};

/// How and where the process logs; every command takes these.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log lines as text or as JSON objects.
    #[arg(
        long,
        env = "RINGMASTER_LOG_FORMAT",
        global = true,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Log levels in env_logger's syntax (`info`, `info,ringmaster::access=warn`); when unset,
    /// RUST_LOG, else info. Read again from the configuration file on SIGHUP.
    #[arg(
        long,
        env = "RINGMASTER_LOG_LEVEL",
        global = true,
        value_name = "FILTER"
    )]
    pub log_level: Option<String>,
    /// Write the log to this file instead of stderr (under systemd, leave it unset: journald
    /// takes stderr); it is rotated by size (--log-file-size, --log-file-count).
    #[arg(long, env = "RINGMASTER_LOG_FILE", global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Size at which --log-file is rotated: FILE becomes FILE.1, FILE.1 becomes FILE.2, ….
    #[arg(
        long,
        env = "RINGMASTER_LOG_FILE_SIZE",
        global = true,
        default_value = "10MiB",
        value_name = "SIZE"
    )]
    pub log_file_size: ByteSize,
    /// Rotated files kept beside --log-file (the oldest beyond them is deleted).
    #[arg(long, env = "RINGMASTER_LOG_FILE_COUNT", global = true, default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub log_file_count: u32,
}

impl LogArgs {
    /// The settings the logger is built from; `one_shot` for a command that is not a service.
    pub fn settings(&self, one_shot: bool) -> LogSettings {
        LogSettings {
            format: self.log_format,
            level: self.log_level.clone(),
            file: self.log_file.clone(),
            file_size: self.log_file_size.0,
            file_count: self.log_file_count,
            one_shot,
        }
    }
}

/// What SIGHUP does for the log levels: when they come from the configuration file (or from no
/// source), it reads the file again and takes its `[log] level` (none there: RUST_LOG, else
/// info); when a flag or the environment gives them, they stay. `None` when there is no file.
pub fn level_reload(
    matches: &clap::ArgMatches,
    file: Option<ConfigFile>,
) -> Option<Arc<dyn Fn() + Send + Sync>> {
    let file = file?;
    let serving = super::invocation::serving_matches(matches)?;
    let fixed = matches!(
        serving.value_source("log_level"),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    );
    Some(Arc::new(move || {
        if fixed {
            log::info!(
                "SIGHUP: the log levels come from --log-level or RINGMASTER_LOG_LEVEL and stay"
            );
            return;
        }
        match ConfigFile::read(&file.path, &super::command()) {
            Ok(again) => {
                let level = again
                    .entry("log_level")
                    .and_then(|entry| match &entry.value {
                        super::config_file::FileValue::Values(values) => values.first().cloned(),
                        super::config_file::FileValue::Switch(_) => None,
                    });
                crate::logging::set_level(level.as_deref());
                log::info!(
                    "SIGHUP: log levels {} (from {})",
                    level.as_deref().unwrap_or("from RUST_LOG, else info"),
                    file.path.display()
                );
            }
            Err(error) => log::warn!("SIGHUP: keeping the log levels: {error}"),
        }
    }))
}
