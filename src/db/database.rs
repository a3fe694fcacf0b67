//! Opening the database a process runs on: the embedded cluster or a server by URL, then
//! migrations, then the pool; and `DatabaseProbe`, which notices when the server goes away.

use super::cluster::{Cluster, ClusterError, ClusterOptions};
use super::{DbError, Pool, build_pool, connect, create_database_if_missing, migrate, ping};

/// The database of the embedded cluster.
pub const EMBEDDED_DATABASE: &str = "ringmaster";

/// Says why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("cannot use the database: {0}")]
    Db(#[from] DbError),
}

/// An open, migrated database: a pool and, for the embedded cluster, the cluster handle
/// (dropped last, which stops a server this process started).
#[derive(Debug)]
pub struct Database {
    pub pool: Pool,
    url: String,
    pub migrations_applied: Vec<String>,
    cluster: Option<Cluster>,
}

impl Database {
    /// Connects to the server at `url`, applies pending migrations and builds the pool.
    pub fn open_url(url: &str, pool_size: u32) -> Result<Database, OpenError> {
        Self::finish(url.to_owned(), pool_size, None, true)
    }

    /// Opens the database at `url` as it is, without applying migrations (`upgrade check`,
    /// `db dump`, `db restore`); one connection.
    pub fn open_url_as_is(url: &str) -> Result<Database, OpenError> {
        Self::finish(url.to_owned(), 1, None, false)
    }

    /// Opens the embedded cluster's database as it is (starting the cluster when none runs),
    /// without applying migrations; one connection.
    pub fn open_embedded_as_is(options: &ClusterOptions) -> Result<Database, OpenError> {
        let cluster = Self::embedded_cluster(options)?;
        Self::finish(cluster.url(EMBEDDED_DATABASE), 1, Some(cluster), false)
    }

    /// Starts or joins the embedded cluster, creates its database if needed, applies pending
    /// migrations and builds the pool.
    pub fn open_embedded(options: &ClusterOptions, pool_size: u32) -> Result<Database, OpenError> {
        let cluster = Self::embedded_cluster(options)?;
        Self::finish(
            cluster.url(EMBEDDED_DATABASE),
            pool_size,
            Some(cluster),
            true,
        )
    }

    /// Starts or joins the embedded cluster and creates its database if needed.
    fn embedded_cluster(options: &ClusterOptions) -> Result<Cluster, OpenError> {
        let cluster = Cluster::start_or_join(options)?;
        let mut admin = connect(&cluster.url("postgres"))?;
        create_database_if_missing(&mut admin, EMBEDDED_DATABASE, "template0")?;
        Ok(cluster)
    }

    fn finish(
        url: String,
        pool_size: u32,
        cluster: Option<Cluster>,
        migrating: bool,
    ) -> Result<Database, OpenError> {
        let mut conn = connect(&url)?;
        let migrations_applied = if migrating {
            migrate(&mut conn)?
        } else {
            Vec::new()
        };
        // A server this process has just started on its own data directory: the hosts its
        // last run held are free at once (a restart after a stop or a crash), not after the
        // grace a failover's new primary gets.
        if migrating && cluster.as_ref().is_some_and(Cluster::is_owner) {
            super::presence::record_private_server(&mut conn)?;
        }
        let pool = build_pool(&url, pool_size)?;
        Ok(Database {
            pool,
            url,
            migrations_applied,
            cluster,
        })
    }

    /// Builds a second pool of at most `size` connections on this database: the background
    /// work's own share, so that it never takes the connections the API answers with.
    pub fn background_pool(&self, size: u32) -> Result<Pool, DbError> {
        build_pool(&self.url, size)
    }

    /// The database's URL (a socket URL for the embedded cluster).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns a probe on this database.
    pub fn probe(&self) -> DatabaseProbe {
        DatabaseProbe {
            url: self.url.clone(),
            conn: None,
        }
    }

    /// Says whether this process started the embedded server it runs on.
    pub fn owns_server(&self) -> bool {
        self.cluster.as_ref().is_some_and(Cluster::is_owner)
    }
}

/// Checks, on its own connection, that the database still answers; reconnects once before
/// it declares the database lost.
pub struct DatabaseProbe {
    url: String,
    conn: Option<diesel::PgConnection>,
}

impl DatabaseProbe {
    /// Returns `Ok` while the database answers, the reason otherwise. Blocking.
    pub fn check(&mut self) -> Result<(), DbError> {
        if let Some(conn) = self.conn.as_mut()
            && ping(conn).is_ok()
        {
            return Ok(());
        }
        self.conn = None;
        let separator = if self.url.contains('?') { '&' } else { '?' };
        let mut conn = connect(&format!("{}{separator}connect_timeout=3", self.url))?;
        ping(&mut conn)?;
        self.conn = Some(conn);
        Ok(())
    }
}

/// The server's version, as `SHOW server_version` says it.
pub fn server_version(conn: &mut diesel::PgConnection) -> Result<String, DbError> {
    use diesel::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Version {
        #[diesel(sql_type = diesel::sql_types::Text)]
        server_version: String,
    }
    let version: Version = diesel::sql_query("SHOW server_version").get_result(conn)?;
    Ok(version.server_version)
}
