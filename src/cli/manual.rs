//! `ringmaster man DIR`: the man pages, `ringmaster.1` and one page per command
//! (`ringmaster-serve.1`, `ringmaster-db-archive-deleted-rows.1`, …), written by clap_mangen
//! from the same definitions as `--help`.

use std::path::Path;
use std::process::ExitCode;

use super::{CliError, command};

/// Writes every page into `dir` and prints each page's path; without `dir`, prints the page
/// of `ringmaster` itself.
pub fn write(dir: Option<&Path>) -> Result<ExitCode, CliError> {
    let Some(dir) = dir else {
        clap_mangen::Man::new(command())
            .render(&mut std::io::stdout())
            .map_err(|error| CliError::Failed(format!("cannot write the man page: {error}")))?;
        return Ok(ExitCode::SUCCESS);
    };
    let failed = |error: std::io::Error| {
        CliError::Failed(format!(
            "cannot write the man pages to {}: {error}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut root = command();
    root.build();
    let mut written = Vec::new();
    write_tree(&root, "ringmaster", dir, &mut written).map_err(failed)?;
    for path in written {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `command` (named `name`) and its subcommands' pages.
fn write_tree(
    command: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<std::path::PathBuf>,
) -> std::io::Result<()> {
    let page = command.clone().name(name.to_owned());
    let path = dir.join(format!("{name}.1"));
    let mut buffer = Vec::new();
    clap_mangen::Man::new(page).render(&mut buffer)?;
    std::fs::write(&path, buffer)?;
    written.push(path);
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" || sub.is_hide_set() {
            continue;
        }
        write_tree(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
