//! `ringmaster config show` (the effective settings, each with its source, secrets masked) and
//! `ringmaster config check FILE` (a file checked without starting anything).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use clap::{ArgAction, ArgMatches};

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
                mask_password(value)
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

/// A URL's password replaced by `****` (`postgres://user:****@host/db`).
pub fn mask_password(value: &str) -> String {
    let Some((scheme, rest)) = value.split_once("://") else {
        return value.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return value.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:****@{host}{tail}"),
        None => value.to_owned(),
    }
}

/// Checks `path` without starting anything.
pub fn check(path: &Path) -> Result<ExitCode, CliError> {
    let file = ConfigFile::read(path, &command())?;
    println!("{}: ok ({} settings)", path.display(), file.entries.len());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_password_is_masked_and_nothing_else_is() {
        assert_eq!(
            mask_password("postgres://ringmaster:s3cret@db.example.org:5432/ringmaster?x=1"),
            "postgres://ringmaster:****@db.example.org:5432/ringmaster?x=1"
        );
        assert_eq!(
            mask_password("postgres://ringmaster@db/ringmaster"),
            "postgres://ringmaster@db/ringmaster"
        );
        assert_eq!(mask_password("127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(mask_password("http://a/b@c"), "http://a/b@c");
    }
}
