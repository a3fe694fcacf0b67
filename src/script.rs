//! Message scripts: YAML files of steps — set up hosts and nodes, send actor messages, advance
//! the manual clock, run ticks, call the HTTP API, save values and expect facts — replayed on
//! real actors and a real database, with every invariant audited after every step
//! (docs/scripts.md).

pub mod capture;
pub mod format;
pub mod runner;

use crate::db::scratch::ScratchServer;

/// What a `script run` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RunSummary {
    pub passed: usize,
    pub failed: usize,
}

/// Runs each script of `paths` on a fresh database of `server`, `repeat` times (at least
/// once), printing one line per script and the summary `N passed, M failed`. A script that
/// does not parse fails before anything of it runs; one whose steps give anything else on a
/// later run than on the first fails naming the step (a script is a replay).
pub fn run_files(
    paths: &[std::path::PathBuf],
    server: &ScratchServer,
    repeat: usize,
) -> RunSummary {
    let mut summary = RunSummary::default();
    for path in paths {
        let shown = path.display().to_string();
        match run_file(path, &shown, server, repeat.max(1)) {
            Ok(steps) if repeat > 1 => {
                summary.passed += 1;
                println!("PASS {shown} ({steps} steps, {repeat} runs alike)");
            }
            Ok(steps) => {
                summary.passed += 1;
                println!("PASS {shown} ({steps} steps)");
            }
            Err(failure) => {
                summary.failed += 1;
                println!("FAIL {failure}");
            }
        }
    }
    println!("{} passed, {} failed", summary.passed, summary.failed);
    summary
}

fn run_file(
    path: &std::path::Path,
    shown: &str,
    server: &ScratchServer,
    repeat: usize,
) -> Result<usize, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{shown}: cannot read: {error}"))?;
    let script = format::parse(shown, &text)?;
    let mut first: Option<Vec<serde_json::Value>> = None;
    for attempt in 1..=repeat {
        let database = server
            .create_database()
            .map_err(|error| format!("{shown}: cannot create its database: {error}"))?;
        let url = database.url().to_owned();
        let copy = script.clone();
        let transcript =
            actix::System::new().block_on(async move { runner::run(&copy, &url).await })?;
        match &first {
            None => first = Some(transcript),
            Some(expected) => {
                if let Some(step) =
                    (0..expected.len()).find(|i| transcript.get(*i) != expected.get(*i))
                {
                    let line = script.steps.get(step).map_or(0, |(line, _)| *line);
                    return Err(format!(
                        "{shown}:{line}: step {} gave another result on run {attempt} than on \
                         run 1: {} instead of {}",
                        step + 1,
                        transcript.get(step).cloned().unwrap_or_default(),
                        expected[step]
                    ));
                }
            }
        }
    }
    Ok(first.map_or(0, |transcript| transcript.len()))
}
