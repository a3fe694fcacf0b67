//! The configuration file (`--config FILE`, TOML): read, checked against the flags it sets, and
//! laid under the command line as the flags' defaults, so that a flag beats the environment,
//! which beats the file, which beats the built-in default. Every error names the file, the line
//! and the key.

use std::any::TypeId;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, Command};
use toml::de::{DeTable, DeValue};

use super::config_keys::{self, ConfigKey, KEYS, SECTIONS};

/// Where the file is looked for when neither `--config` nor `RINGMASTER_CONFIG` names one.
pub const DEFAULT_PATH: &str = "/etc/ringmaster/ringmaster.toml";

/// A file that was read and checked.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub entries: Vec<FileEntry>,
}

/// One key the file sets.
#[derive(Debug, Clone)]
pub struct FileEntry {
    pub key: &'static ConfigKey,
    pub value: FileValue,
    /// 1-based.
    pub line: usize,
}

/// A value as the flag takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileValue {
    /// An on/off flag.
    Switch(bool),
    /// One value, or several for a flag that takes a list.
    Values(Vec<String>),
}

/// Why the file was not taken: its path, the line (where one is to blame) and what is wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|line| format!(":{line}")).unwrap_or_default())]
pub struct FileError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

/// What TOML type a flag's value is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Switch,
    Integer,
    Text,
}

impl Kind {
    pub fn of(arg: &Arg) -> Kind {
        const INTEGERS: [fn() -> TypeId; 8] = [
            TypeId::of::<u8>,
            TypeId::of::<u16>,
            TypeId::of::<u32>,
            TypeId::of::<u64>,
            TypeId::of::<usize>,
            TypeId::of::<i32>,
            TypeId::of::<i64>,
            TypeId::of::<isize>,
        ];
        let type_id = arg.get_value_parser().type_id();
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            Kind::Switch
        } else if INTEGERS.iter().any(|integer| type_id == integer()) {
            Kind::Integer
        } else {
            Kind::Text
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Switch => "a boolean (true or false)",
            Kind::Integer => "an integer",
            Kind::Text => "a string",
        }
    }
}

impl ConfigFile {
    /// Reads and checks the file at `path` against the flags of `command` (the whole command
    /// line, as `Cli::command()` gives it).
    pub fn read(path: &Path, command: &Command) -> Result<ConfigFile, FileError> {
        let text = read_bounded(path).map_err(|message| FileError {
            path: path.to_owned(),
            line: None,
            message,
        })?;
        Self::parse(path, &text, command)
    }

    /// Checks `text`, the contents of the file at `path`.
    pub fn parse(path: &Path, text: &str, command: &Command) -> Result<ConfigFile, FileError> {
        let fail = |line: Option<usize>, message: String| FileError {
            path: path.to_owned(),
            line,
            message,
        };
        let document = DeTable::parse(text).map_err(|error| {
            let line = error.span().map(|span| line_of(text, span.start));
            fail(line, error.message().trim().to_owned())
        })?;
        let mut entries: Vec<FileEntry> = Vec::new();
        for (section, body) in document.get_ref() {
            let at = Some(line_of(text, section.span().start));
            let section = section.get_ref().as_ref();
            let Some(body) = body.get_ref().as_table() else {
                return Err(fail(at, outside_section(section)));
            };
            if !SECTIONS.contains(&section) {
                let sections = SECTIONS.join(", ");
                let message = format!("unknown section [{section}] (the sections: {sections})");
                return Err(fail(at, message));
            }
            for (written, value) in body {
                let line = line_of(text, written.span().start);
                let written = written.get_ref().as_ref();
                let Some(key) = config_keys::in_section(section).find(|key| key.is_named(written))
                else {
                    return Err(fail(Some(line), unknown_key(section, written)));
                };
                if let Some(earlier) = entries.iter().find(|entry| entry.key == key) {
                    // Reported at the later of the two.
                    let message = format!("[{section}] {} is given twice", key.name());
                    return Err(fail(Some(line.max(earlier.line)), message));
                }
                let arg = flag_of(command, key).ok_or_else(|| {
                    let message = format!("[{section}] {written}: this build has no such flag");
                    fail(Some(line), message)
                })?;
                let value = convert(arg, value.get_ref())
                    .and_then(|value| check(arg, &value).map(|()| value))
                    .map_err(|message| {
                        fail(Some(line), format!("[{section}] {}: {message}", key.name()))
                    })?;
                entries.push(FileEntry { key, value, line });
            }
        }
        Ok(ConfigFile {
            path: path.to_owned(),
            entries,
        })
    }

    /// `command` with the file's values as the defaults of their flags.
    pub fn apply(&self, mut command: Command) -> Command {
        for entry in &self.entries {
            let id = entry.key.id();
            let set = |arg: Arg| match &entry.value {
                FileValue::Switch(on) => arg.default_value(if *on { "true" } else { "false" }),
                FileValue::Values(values) => arg.default_values(values.clone()),
            };
            if entry.key.global {
                command = command.mut_arg(&id, set);
            } else {
                for path in SERVING_COMMANDS {
                    command = mut_nested(command, path, &|sub: Command| sub.mut_arg(&id, set));
                }
            }
        }
        command
    }

    /// The entry that sets the flag with clap id `id`.
    pub fn entry(&self, id: &str) -> Option<&FileEntry> {
        self.entries.iter().find(|entry| entry.key.id() == id)
    }
}

/// The largest configuration file taken: a real one is a few kilobytes, and what is parsed is
/// held in memory several times over.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The file's text: a regular file of at most `MAX_FILE_BYTES`, of which no more is read.
fn read_bounded(path: &Path) -> Result<String, String> {
    use crate::files::Refusal;
    let bytes =
        crate::files::read_bounded(path, MAX_FILE_BYTES).map_err(|refusal| match refusal {
            Refusal::Io(error) => format!("cannot read the configuration file: {error}"),
            Refusal::NotRegular => "the configuration file is not a regular file".to_owned(),
            Refusal::TooLarge => format!(
                "the configuration file is larger than {} KiB, the most taken",
                MAX_FILE_BYTES / 1024
            ),
        })?;
    String::from_utf8(bytes)
        .map_err(|_| "cannot read the configuration file: it is not UTF-8 text".to_owned())
}

/// The commands that take `serve`'s flags.
pub const SERVING_COMMANDS: &[&[&str]] = &[&["serve"], &["demo"], &["config", "show"]];

fn mut_nested(command: Command, path: &[&str], f: &dyn Fn(Command) -> Command) -> Command {
    match path.split_first() {
        None => f(command),
        Some((first, rest)) => command.mut_subcommand(first, |sub| mut_nested(sub, rest, f)),
    }
}

/// The flag `key` sets, in `command`.
pub fn flag_of<'a>(command: &'a Command, key: &ConfigKey) -> Option<&'a Arg> {
    let holder = if key.global {
        Some(command)
    } else {
        command.find_subcommand("serve")
    };
    holder?
        .get_arguments()
        .find(|arg| arg.get_long() == Some(key.flag))
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(0, |before| before.matches('\n').count())
        + 1
}

fn outside_section(written: &str) -> String {
    match KEYS.iter().find(|key| key.is_named(written)) {
        Some(key) => format!(
            "{written} is outside any section: it belongs under [{}]",
            key.section
        ),
        None => format!("unknown key {written} outside any section"),
    }
}

fn unknown_key(section: &str, written: &str) -> String {
    let names: Vec<&str> = config_keys::in_section(section)
        .map(ConfigKey::name)
        .collect();
    let elsewhere = KEYS
        .iter()
        .find(|key| key.is_named(written))
        .map(|key| format!("; {written} belongs under [{}]", key.section))
        .unwrap_or_default();
    format!(
        "unknown key {written} in [{section}] (its keys: {}){elsewhere}",
        names.join(", ")
    )
}

/// The file's value as the flag's values, or what is wrong with its type.
fn convert(arg: &Arg, value: &DeValue<'_>) -> Result<FileValue, String> {
    let kind = Kind::of(arg);
    let list = matches!(arg.get_action(), ArgAction::Append);
    match (kind, value) {
        (Kind::Switch, DeValue::Boolean(on)) => Ok(FileValue::Switch(*on)),
        (_, DeValue::Array(items)) if list => items
            .iter()
            .map(|item| scalar(kind, item.get_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map(FileValue::Values),
        (Kind::Text, DeValue::String(text)) if list => {
            Ok(FileValue::Values(match arg.get_value_delimiter() {
                Some(delimiter) => text.split(delimiter).map(str::to_owned).collect(),
                None => vec![text.to_string()],
            }))
        }
        _ => scalar(kind, value).map(|one| FileValue::Values(vec![one])),
    }
    .map_err(|found| {
        let expected = if list {
            format!("{} or an array of them", kind.name())
        } else {
            kind.name().to_owned()
        };
        format!("expected {expected}, found {found}")
    })
}

/// One value as text, or the TOML type found instead.
fn scalar(kind: Kind, value: &DeValue<'_>) -> Result<String, &'static str> {
    match (kind, value) {
        (Kind::Text, DeValue::String(text)) => Ok(text.to_string()),
        (Kind::Integer, DeValue::Integer(integer)) => {
            i128::from_str_radix(integer.as_str(), integer.radix())
                .map(|number| number.to_string())
                .map_err(|_| "an integer out of range")
        }
        (_, other) => Err(article(other.type_str())),
    }
}

fn article(type_name: &'static str) -> &'static str {
    match type_name {
        "string" => "a string",
        "integer" => "an integer",
        "float" => "a float",
        "boolean" => "a boolean",
        "datetime" => "a date-time",
        "array" => "an array",
        _ => "a table",
    }
}

/// Runs the flag's own parser on each value: what the flag refuses, the file refuses, in the
/// same words.
fn check(arg: &Arg, value: &FileValue) -> Result<(), String> {
    let (FileValue::Values(values), Some(long)) = (value, arg.get_long()) else {
        return Ok(());
    };
    let probe = arg.clone().env(None).required(false).global(false);
    let words = values.iter().map(|value| format!("--{long}={value}"));
    Command::new("ringmaster")
        .no_binary_name(true)
        .color(clap::ColorChoice::Never)
        .arg(probe)
        .try_get_matches_from(words)
        .map(|_| ())
        .map_err(|error| one_line(&error))
}

/// clap's error as one line, without its `error: ` prefix.
pub(super) fn one_line(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}
