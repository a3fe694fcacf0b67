//! `ringmaster config show` (the effective settings, each with its source, secrets masked) and
//! `ringmaster config check FILE` (a file checked without starting anything).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use clap::{ArgAction, ArgMatches, FromArgMatches};

use super::CliError;
use super::config_file::{self, ConfigFile};
use super::config_keys::{self, ConfigKey, SECTIONS};
use super::invocation::{self, command};

/// Flags whose whole value is a secret.
const SECRET_FLAGS: &[&str] = &["admin-token"];

/// Prints the settings `serve` would run with.
pub fn show(matches: &ArgMatches, file: Option<&ConfigFile>) -> Result<ExitCode, CliError> {
    let serving = invocation::serving_matches(matches)
        .ok_or_else(|| CliError::Failed("config show: no settings to show".to_owned()))?;
    print!("{}", render(serving, file));
    Ok(ExitCode::SUCCESS)
}

/// The settings as a TOML document: each set key with its value and, in a comment, where it
/// came from; each unset key as a comment.
pub fn render(matches: &ArgMatches, file: Option<&ConfigFile>) -> String {
    let command = command();
    let mut out = String::from(
        "# ringmaster's effective settings: a flag beats the environment, which beats the \
         configuration file, which beats the default.\n",
    );
    let _ = match file {
        Some(file) => writeln!(out, "# configuration file: {}", file.path.display()),
        None => writeln!(out, "# configuration file: none"),
    };
    for section in SECTIONS {
        let _ = write!(out, "\n[{section}]\n");
        for key in config_keys::in_section(section) {
            let source = invocation::source(&command, matches, key.flag, file);
            match value_of(matches, &command, key) {
                Some(value) => {
                    let _ = writeln!(out, "{} = {value}  # {source}", key.name());
                }
                None => {
                    let _ = writeln!(out, "# {} is unset", key.name());
                }
            }
        }
    }
    out
}

/// The flag's value written as TOML, masked where it is secret; `None` when unset.
fn value_of(matches: &ArgMatches, command: &clap::Command, key: &ConfigKey) -> Option<String> {
    let id = key.id();
    let arg = config_file::flag_of(command, key)?;
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return matches
            .try_get_one::<bool>(&id)
            .ok()
            .flatten()
            .map(bool::to_string);
    }
    let raw: Vec<String> = matches
        .get_raw(&id)?
        .map(|value| value.to_string_lossy().into_owned())
        .collect();
    let integer = config_file::Kind::of(arg) == config_file::Kind::Integer;
    let written: Vec<String> = raw
        .iter()
        .map(|value| {
            let value = if SECRET_FLAGS.contains(&key.flag) {
                "****".to_owned()
            } else {
                super::secret_mask::mask_password(value)
            };
            if integer {
                value
            } else {
                toml::Value::String(value).to_string()
            }
        })
        .collect();
    Some(if matches!(arg.get_action(), ArgAction::Append) {
        format!("[{}]", written.join(", "))
    } else {
        written.join(", ")
    })
}

/// Checks `path` without starting anything: the file's keys, types and values, then every check
/// `serve` makes of its settings (flags that need or exclude each other, host names, the bind
/// address, the secret and TLS files), with the file laid over the environment as `serve` lays
/// it. Any refusal is one line naming the file; exit 1.
pub fn check(path: &Path) -> Result<ExitCode, CliError> {
    let base = command();
    let file = ConfigFile::read(path, &base)?;
    let refused = |message: String| CliError::Failed(format!("{}: {message}", path.display()));
    let matches = file
        .apply(base)
        .try_get_matches_from(["ringmaster", "serve"])
        .map_err(|error| refused(config_file::one_line(&error)))?;
    if let Some(serving) = invocation::serving_matches(&matches) {
        invocation::check_relations(serving, Some(&file))
            .map_err(|error| refused(error.to_string()))?;
    }
    let cli = super::Cli::from_arg_matches(&matches)
        .map_err(|error| refused(config_file::one_line(&error)))?;
    let super::Command::Serve(args) = cli.command else {
        return Err(refused("not a serve command line".to_owned()));
    };
    let source = super::database_source(&cli.database);
    let (checked, absent) = super::noting_absent_secrets(|| {
        super::serve_args::config(source, &cli.database, args)
            .map_err(CliError::from)
            .and_then(|config| super::startable(&config))
    });
    checked.map_err(|error| refused(error.to_string()))?;
    println!("{}: ok ({} settings)", path.display(), file.entries.len());
    if !absent.is_empty() {
        println!(
            "{}: not on this machine, and needed by serve where it runs: {}",
            path.display(),
            absent.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
