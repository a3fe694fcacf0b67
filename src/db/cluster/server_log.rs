//! The embedded PostgreSQL's log, read from its stderr and written to ringmaster's own log
//! (target `postgres`): one log for the operator (journald, or `--log-file` with its rotation),
//! and nothing that grows beside the data directory. The last lines are kept to say why a
//! server did not start.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, PipeReader};
use std::sync::{Arc, Mutex, PoisonError};

/// How many of the last lines are kept for a start failure's message.
const TAIL_LINES: usize = 20;

/// The settings that make the server write its log to stderr, each line as `[pid] LEVEL:  …`
/// (ringmaster's log adds the time).
pub const SERVER_LOG_SETTINGS: [&str; 6] = [
    "-c",
    "logging_collector=off",
    "-c",
    "log_destination=stderr",
    "-c",
    "log_line_prefix=[%p] ",
];

/// The last lines the server wrote.
#[derive(Debug, Clone, Default)]
pub struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    /// The last three lines, folded into one.
    pub fn summary(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let last: Vec<&str> = lines
            .iter()
            .skip(lines.len().saturating_sub(3))
            .map(String::as_str)
            .collect();
        if last.is_empty() {
            "the server wrote nothing to its log".to_owned()
        } else {
            super::super::error::one_line(&last.join(" "))
        }
    }

    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }
}

/// Forwards the server's lines to the log on a thread of its own, until the server and its
/// keeper have closed the pipe.
pub fn forward(reader: PipeReader, tail: Tail) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("postgres-log".to_owned())
        .spawn(move || {
            let mut level = log::Level::Info;
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { break };
                level = level_of(&line).unwrap_or(level);
                log::log!(target: "postgres", level, "{line}");
                tail.push(line);
            }
        })
        .map(|_| ())
}

/// The level of a line `[pid] SEVERITY:  message`; `None` for a line that continues the one
/// before (DETAIL, HINT, STATEMENT, …, or a line without a severity). A statement's ERROR is
/// for debugging here: the client that ran it gets the error and handles or reports it (a
/// Placement 409 is a unique violation the server logs as an ERROR).
///
/// A FATAL ends one session, not the server: a warning, and for the readiness probe's own
/// connection while the server starts or stops ("the database system is starting up"), debug.
fn level_of(line: &str) -> Option<log::Level> {
    let rest = line.split_once("] ").map_or(line, |(_, rest)| rest);
    let (severity, message) = rest.split_once(':')?;
    match severity {
        "PANIC" => Some(log::Level::Error),
        "FATAL" if message.trim_start().starts_with("the database system is") => {
            Some(log::Level::Debug)
        }
        "FATAL" => Some(log::Level::Warn),
        "WARNING" => Some(log::Level::Warn),
        "ERROR" => Some(log::Level::Debug),
        "LOG" | "INFO" | "NOTICE" => Some(log::Level::Info),
        _ if severity.starts_with("DEBUG") => Some(log::Level::Debug),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_severity_has_its_level_and_continuations_keep_the_one_before() {
        use log::Level::{Debug, Error, Info, Warn};
        let cases = [
            (
                "LOG:  database system is ready to accept connections",
                Some(Info),
            ),
            ("PANIC:  could not write", Some(Error)),
            ("FATAL:  password authentication failed", Some(Warn)),
            ("FATAL:  the database system is starting up", Some(Debug)),
            ("WARNING:  no transaction in progress", Some(Warn)),
            ("ERROR:  deadlock detected", Some(Debug)),
            ("DEBUG2:  checkpointer", Some(Debug)),
            ("DETAIL:  Process 1 waits for ShareLock", None),
        ];
        for (line, level) in cases {
            assert_eq!(level_of(&format!("[12] {line}")), level, "{line}");
        }
        assert_eq!(level_of("\tcontinued"), None);
    }

    #[test]
    fn the_tail_keeps_the_last_lines() {
        let tail = Tail::default();
        assert_eq!(tail.summary(), "the server wrote nothing to its log");
        for n in 0..30 {
            tail.push(format!("line {n}"));
        }
        assert_eq!(tail.summary(), "line 27 line 28 line 29");
    }
}
