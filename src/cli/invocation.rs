//! From the process's arguments to a parsed command: finds the configuration file, lays its
//! values under the flags, parses, and checks the flags that need or exclude each other whatever
//! each value's source (clap's own checks see only the command line and the environment).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use super::config_file::{self, ConfigFile};
use super::config_keys::{self, CONFLICTS, REQUIRES};
use super::{Cli, CliError};
use crate::config::ConfigError;

/// A parsed command line with what it was parsed from.
#[derive(Debug)]
pub struct Invocation {
    pub cli: Cli,
    pub matches: ArgMatches,
    /// The configuration file read, if any.
    pub file: Option<ConfigFile>,
}

/// The command line's definition, as help, man pages and completions show it: no environment
/// variable's value is shown (`[env: NAME]`), since some hold secrets and an unset one showed as
/// `NAME=`.
pub fn command() -> clap::Command {
    hide_env_values(Cli::command())
}

fn hide_env_values(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| arg.hide_env_values(true))
        .mut_subcommands(hide_env_values)
}

/// Parses the process's arguments; clap's own errors (and --help, --version) end the process
/// as clap does.
pub fn parse() -> Result<Invocation, CliError> {
    parse_from(std::env::args_os().collect())
}

/// Parses `args` (the program's name first).
pub fn parse_from(args: Vec<OsString>) -> Result<Invocation, CliError> {
    let base = command();
    let file = match config_path(&args) {
        Some(path) => Some(ConfigFile::read(&path, &base)?),
        None => None,
    };
    let command = match &file {
        Some(file) => file.apply(base),
        None => base,
    };
    let matches = command
        .try_get_matches_from(args)
        .unwrap_or_else(|error| error.exit());
    if let Some(serving) = serving_matches(&matches) {
        check_relations(serving, file.as_ref())?;
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    Ok(Invocation { cli, matches, file })
}

/// The file named by `--config` (or `--config=`), else by RINGMASTER_CONFIG, else the default
/// path when a file is there. An empty name means no file.
fn config_path(args: &[OsString]) -> Option<PathBuf> {
    let mut named: Option<OsString> = None;
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        if word == "--config" {
            named = words.next().cloned();
        } else if let Some(value) = word
            .to_str()
            .and_then(|word| word.strip_prefix("--config="))
        {
            named = Some(value.into());
        }
    }
    let named = named.or_else(|| std::env::var_os("RINGMASTER_CONFIG"));
    match named {
        Some(name) if name.is_empty() => None,
        Some(name) => Some(PathBuf::from(name)),
        None => {
            let default = PathBuf::from(config_file::DEFAULT_PATH);
            default.is_file().then_some(default)
        }
    }
}

/// The matches that hold `serve`'s flags (serve, demo, config show).
pub fn serving_matches(matches: &ArgMatches) -> Option<&ArgMatches> {
    match matches.subcommand()? {
        ("serve" | "demo", serving) => Some(serving),
        ("config", config) => match config.subcommand()? {
            ("show", serving) => Some(serving),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn check_relations(
    matches: &ArgMatches,
    file: Option<&ConfigFile>,
) -> Result<(), ConfigError> {
    for (flag, needed) in REQUIRES {
        if is_given(matches, flag) && !is_given(matches, needed) {
            return Err(ConfigError::Invalid(format!(
                "--{flag} ({}) needs --{needed}",
                source(&command(), matches, flag, file)
            )));
        }
    }
    for (one, other) in CONFLICTS {
        if is_given(matches, one) && is_given(matches, other) {
            return Err(ConfigError::Invalid(format!(
                "--{one} ({}) and --{other} ({}) exclude each other: give one",
                source(&command(), matches, one, file),
                source(&command(), matches, other, file)
            )));
        }
    }
    Ok(())
}

/// Whether the flag has a value (a switch: is on), from whatever source.
fn is_given(matches: &ArgMatches, flag: &str) -> bool {
    let id = flag.replace('-', "_");
    match matches.try_get_one::<bool>(&id) {
        Ok(Some(on)) => *on,
        _ => matches.value_source(&id).is_some(),
    }
}

/// Where the flag's value came from, in words: `flag --x`, `environment NAME`,
/// `file PATH:LINE`, `default` (or `unset`).
/// `command` is the command line's definition (`command()`), where the variable's name is.
pub fn source(
    command: &clap::Command,
    matches: &ArgMatches,
    flag: &str,
    file: Option<&ConfigFile>,
) -> String {
    let id = flag.replace('-', "_");
    match matches.value_source(&id) {
        Some(ValueSource::CommandLine) => format!("flag --{flag}"),
        Some(ValueSource::EnvVariable) => {
            let name = config_keys::of_flag(flag)
                .and_then(|key| config_file::flag_of(command, key))
                .and_then(|arg| arg.get_env().map(|env| env.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "variable".to_owned());
            format!("environment {name}")
        }
        Some(_) => match file.and_then(|file| file.entry(&id).map(|entry| (file, entry))) {
            Some((file, entry)) => format!("file {}:{}", file.path.display(), entry.line),
            None => "default".to_owned(),
        },
        None => "unset".to_owned(),
    }
}
