//! `demo --fresh`: the embedded cluster's data directory removed before the start, so that
//! the demo begins on an empty database — only a folder that is a PostgreSQL data directory
//! (or is absent), and only while no server runs on it.

use std::fs;

use super::{ClusterError, ClusterOptions, io_error, lock_startup, server_answers};

/// Removes the data directory of `options`; says whether there was one. Refused while a server
/// answers on it (another process uses it) and for a folder that is not a data directory.
pub fn remove_data_dir(options: &ClusterOptions) -> Result<bool, ClusterError> {
    let data_dir = super::absolute(&options.data_dir)?;
    if !data_dir.exists() {
        return Ok(false);
    }
    if let Some(parent) = data_dir.parent() {
        fs::create_dir_all(parent).map_err(io_error("cannot create", parent))?;
    }
    let _startup_lock = lock_startup(&data_dir)?;
    if server_answers(&data_dir) {
        return Err(ClusterError::Fresh(format!(
            "a PostgreSQL server runs on {}: stop the process that uses it first",
            data_dir.display()
        )));
    }
    if !data_dir.join("PG_VERSION").exists() {
        return Err(ClusterError::Fresh(format!(
            "{} is not a PostgreSQL data directory: nothing removed",
            data_dir.display()
        )));
    }
    fs::remove_dir_all(&data_dir).map_err(io_error("cannot remove", &data_dir))?;
    Ok(true)
}
