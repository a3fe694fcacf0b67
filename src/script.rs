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

/// Runs each script of `paths` on a fresh database of `server`, printing one line per script
/// and the summary `N passed, M failed`. A script that does not parse fails before anything
/// of it runs.
pub fn run_files(paths: &[std::path::PathBuf], server: &ScratchServer) -> RunSummary {
    let mut summary = RunSummary::default();
    for path in paths {
        let shown = path.display().to_string();
        match run_file(path, &shown, server) {
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

fn run_file(path: &std::path::Path, shown: &str, server: &ScratchServer) -> Result<usize, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{shown}: cannot read: {error}"))?;
    let script = format::parse(shown, &text)?;
    let database = server
        .create_database()
        .map_err(|error| format!("{shown}: cannot create its database: {error}"))?;
    let url = database.url().to_owned();
    actix::System::new().block_on(async move { runner::run(&script, &url).await })
}
