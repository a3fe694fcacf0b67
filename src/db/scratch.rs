//! Throwaway databases for tests and message scripts: each is a clone of a migrated template
//! (`CREATE DATABASE … TEMPLATE … STRATEGY FILE_COPY`, about 10 ms) and is dropped with its
//! handle. The server is a private throwaway cluster, or an existing server given by URL.

use diesel::RunQueryDsl;

use super::cluster::{Cluster, ClusterError};
use super::url::with_database;
use super::{DbError, connect, create_database_if_missing, migrate, with_advisory_lock};

/// Advisory-lock key that serializes template creation across processes.
const TEMPLATE_LOCK_KEY: i64 = 0x7269_6e67_7465_6d70; // "ringtemp"

/// A fingerprint of `migrations/`, so a template built from other migrations is never reused.
const SCHEMA_FINGERPRINT: &str = env!("RINGMASTER_SCHEMA_FINGERPRINT");

/// Says why a throwaway database could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ScratchError {
    fn from(error: diesel::result::Error) -> Self {
        ScratchError::Db(DbError::from(error))
    }
}

/// A PostgreSQL server that hands out throwaway databases.
#[derive(Debug)]
pub struct ScratchServer {
    admin_url: String,
    template: String,
    // Declared last: the cluster outlives everything that talks to it.
    _cluster: Option<Cluster>,
}

impl ScratchServer {
    /// Starts a private throwaway cluster and prepares the migrated template on it.
    pub fn start_private(bin_dir: Option<std::path::PathBuf>) -> Result<Self, ScratchError> {
        let cluster = Cluster::start_throwaway(bin_dir)?;
        let admin_url = cluster.url("postgres");
        Self::prepare(admin_url, Some(cluster))
    }

    /// Uses the server of `url` (whose user may create databases) and prepares the template.
    pub fn from_url(url: &str) -> Result<Self, ScratchError> {
        Self::prepare(url.to_owned(), None)
    }

    fn prepare(admin_url: String, cluster: Option<Cluster>) -> Result<Self, ScratchError> {
        let template = format!("ringmaster_template_{SCHEMA_FINGERPRINT}");
        let mut admin = connect(&admin_url)?;
        with_advisory_lock(&mut admin, TEMPLATE_LOCK_KEY, |admin| {
            create_database_if_missing(admin, &template, "template0")?;
            // A no-op on a complete template; it finishes one left half-made by a crash.
            migrate(&mut connect(&with_database(&admin_url, &template)?)?)
        })?;
        Ok(ScratchServer {
            admin_url,
            template,
            _cluster: cluster,
        })
    }

    /// Returns a new database holding the migrated schema and no rows.
    pub fn create_database(&self) -> Result<ScratchDb, ScratchError> {
        self.create(Some(&self.template))
    }

    /// Returns a new, empty database without any migration applied.
    pub fn create_empty_database(&self) -> Result<ScratchDb, ScratchError> {
        self.create(None)
    }

    /// Returns the URL of this server's maintenance database.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    fn create(&self, template: Option<&str>) -> Result<ScratchDb, ScratchError> {
        let name = format!("ringmaster_test_{}", uuid::Uuid::new_v4().simple());
        let source = match template {
            Some(template) => format!("TEMPLATE {template} STRATEGY FILE_COPY"),
            None => "TEMPLATE template0".to_owned(),
        };
        let mut admin = connect(&self.admin_url)?;
        diesel::sql_query(format!("CREATE DATABASE {name} {source}")).execute(&mut admin)?;
        Ok(ScratchDb {
            url: with_database(&self.admin_url, &name)?,
            name,
            admin_url: self.admin_url.clone(),
        })
    }
}

/// One throwaway database; dropping it drops the database, closing its connections.
#[derive(Debug)]
pub struct ScratchDb {
    url: String,
    name: String,
    admin_url: String,
}

impl ScratchDb {
    /// Returns the URL of this database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns this database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let dropped = connect(&self.admin_url).and_then(|mut admin| {
            diesel::sql_query(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&mut admin)
            .map_err(DbError::from)
        });
        if let Err(error) = dropped {
            log::warn!("could not drop throwaway database {}: {error}", self.name);
        }
    }
}
