//! The `ringmaster` binary: parses the command line, sets up logging, runs the command and
//! turns its error into one line on stderr and an exit code.

use std::process::ExitCode;

use ringmaster::logging::LogFormat;

/// jemalloc with its background threads gives freed memory back to the system within seconds
/// of a load's end, idle or not, where glibc's malloc kept it in per-thread arenas: after
/// floods of 2,000 event streams the process stayed at 2.5x its memory at rest.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    ringmaster::tls::install_default_provider();
    let invocation = match ringmaster::cli::parse() {
        Ok(invocation) => invocation,
        Err(error) => return fail(&error, LogFormat::Text),
    };
    let settings = invocation
        .cli
        .log
        .settings(!invocation.cli.runs_a_service());
    if invocation.cli.runs_scripts() {
        // Scripts can expect log lines: capture them (stderr shows warnings unless RUST_LOG says).
        ringmaster::script::capture::install();
    } else if let Err(error) = ringmaster::logging::init(&settings) {
        eprintln!("ringmaster: error: {error}");
        return ExitCode::FAILURE;
    }
    match ringmaster::cli::run(invocation) {
        Ok(code) => code,
        Err(error) => fail(&error, settings.format),
    }
}

/// Writes the command's error as one line on stderr (JSON with JSON logs) and gives its exit
/// code.
fn fail(error: &ringmaster::cli::CliError, format: LogFormat) -> ExitCode {
    let line = format!(
        "ringmaster: error: {}",
        ringmaster::db::error::one_line(&error.to_string())
    );
    match format {
        LogFormat::Text => eprintln!("{line}"),
        LogFormat::Json => eprintln!("{}", ringmaster::logging::error_line(&line)),
    }
    error.exit_code()
}
