//! `demo`'s own flag and check: a data directory is the demo's until another node source
//! takes its nodes from elsewhere. A database whose nodes came from the simulated Ironic, run
//! with `--ironic-url` (or the other way round), would keep the other source's instances as
//! ghosts on nodes nobody serves: the demo says so and offers `--fresh`.

use clap::Args;

use super::{CliError, ServeArgs};
use crate::config::DatabaseSource;
use crate::db::cluster;
use crate::db::database::Database;
use crate::db::ironic::{self, NodeSources};

/// `demo`'s flags: `serve`'s and `--fresh`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Begin on an empty database: the embedded data directory (--data-dir) is removed first
    /// (refused while a process uses it). Needed to switch a data directory between the
    /// simulated Ironic and a real one (--ironic-url).
    #[arg(long)]
    pub fresh: bool,
}

/// `--fresh`: removes the embedded data directory before anything opens it.
pub fn make_fresh(source: &DatabaseSource) -> Result<(), CliError> {
    match source {
        DatabaseSource::Embedded(options) => {
            if cluster::remove_data_dir(options)
                .map_err(|error| CliError::Refused(error.to_string()))?
            {
                log::info!(
                    "demo --fresh: removed the data directory {}",
                    options.data_dir.display()
                );
            }
            Ok(())
        }
        DatabaseSource::Url(_) => Err(CliError::Refused(
            "--fresh empties only the embedded database (--data-dir): with --database-url, drop \
             and create the database yourself"
                .to_owned(),
        )),
    }
}

/// Refuses a database whose nodes come from the other node source than this demo's
/// (`real_ironic`: the URL of `--ironic-url`).
pub fn check_node_source(database: &Database, real_ironic: Option<&str>) -> Result<(), CliError> {
    let mut conn = database
        .pool
        .get()
        .map_err(|error| CliError::Failed(format!("cannot use the database: {error}")))?;
    let found = ironic::node_sources(&mut conn).map_err(CliError::Startup)?;
    match mismatch(found, real_ironic) {
        Some(message) => Err(CliError::Refused(message)),
        None => Ok(()),
    }
}

fn mismatch(found: NodeSources, real_ironic: Option<&str>) -> Option<String> {
    let (held, wanted) = match real_ironic {
        Some(url) if found.simulated > 0 => (
            format!("{} nodes of the simulated Ironic", found.simulated),
            format!("takes its nodes from the Ironic at {url}"),
        ),
        None if found.mirrored > 0 => (
            format!("{} nodes of a real Ironic", found.mirrored),
            "runs the simulated Ironic (no --ironic-url)".to_owned(),
        ),
        _ => return None,
    };
    Some(format!(
        "this data directory's database holds {held} and {} live instances, and this demo \
         {wanted}: they would stay behind as ghosts. Start with --fresh to begin again on an \
         empty database (the data directory is removed), or give another --data-dir",
        found.instances
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_other_sources_nodes_are_refused() {
        let simulated = NodeSources {
            simulated: 12,
            mirrored: 0,
            instances: 3,
        };
        assert_eq!(mismatch(simulated, None), None);
        let refused = mismatch(simulated, Some("http://ironic:6385")).unwrap();
        assert!(
            refused.contains("12 nodes of the simulated Ironic and 3 live instances"),
            "{refused}"
        );
        assert!(refused.contains("--fresh"), "{refused}");
        let mirrored = NodeSources {
            simulated: 0,
            mirrored: 5,
            instances: 0,
        };
        assert_eq!(mismatch(mirrored, Some("http://ironic:6385")), None);
        assert!(
            mismatch(mirrored, None)
                .unwrap()
                .contains("5 nodes of a real Ironic")
        );
        assert_eq!(
            mismatch(NodeSources::default(), Some("http://ironic:6385")),
            None
        );
    }
}
