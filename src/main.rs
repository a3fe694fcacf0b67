//! The `ringmaster` binary: parses the command line, sets up logging, runs the command and
//! turns its error into one line on stderr and an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = ringmaster::cli::Cli::parse();
    if cli.runs_scripts() {
        // Scripts can expect log lines: capture them (stderr shows warnings unless RUST_LOG says).
        ringmaster::script::capture::install();
    } else {
        ringmaster::logging::init(cli.log_format);
    }
    match ringmaster::cli::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!(
                "ringmaster: error: {}",
                ringmaster::db::error::one_line(&error.to_string())
            );
            error.exit_code()
        }
    }
}
