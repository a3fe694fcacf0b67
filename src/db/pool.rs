//! The connection pool, and how it gets over a lost server: a connection whose query failed for
//! want of its server (reset, terminated, a standby or demoted primary refusing writes) marks
//! every connection opened before it stale; a stale connection is discarded when it is next
//! checked out or comes back, never handed out again, and new ones are opened on whichever host
//! of the URL is the primary now (`target_session_attrs=read-write`). Nothing costs a round trip
//! while the server is well.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, ManageConnection, R2D2Connection};

use super::DbError;
use super::url::with_client_defaults;

/// A pool of PostgreSQL connections.
pub type Pool = diesel::r2d2::Pool<Manager>;

/// A connection checked out of the pool.
pub type PooledConnection = diesel::r2d2::PooledConnection<Manager>;

/// How long a pooled session may sit idle inside a transaction before the server ends it: a
/// process frozen mid-transaction (SIGSTOP, a long pause) releases its row locks — the
/// leadership lease's among them — within this time. Our transactions never wait on anything
/// but the database between statements.
pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(3);

/// Opens one connection (with ringmaster's client defaults, speaking English:
/// `db::messages`), giving libpq's own reason on failure.
pub fn connect(url: &str) -> Result<PgConnection, DbError> {
    use diesel::Connection as _;
    let mut conn = PgConnection::establish(&with_client_defaults(url)).map_err(DbError::from)?;
    super::messages::speak_english(&mut conn)?;
    Ok(conn)
}

/// Builds a pool of at most `max_size` connections, after one direct connection proves the
/// URL works (so a bad URL is reported with libpq's reason, not as a pool timeout).
pub fn build_pool(url: &str, max_size: u32) -> Result<Pool, DbError> {
    connect(url)?;
    diesel::r2d2::Pool::builder()
        .max_size(max_size)
        .min_idle(Some(0))
        .connection_customizer(Box::new(SessionSettings))
        // The check is `Manager::is_valid`: no round trip, only "is it stale".
        .test_on_check_out(true)
        .connection_timeout(Duration::from_secs(5))
        .error_handler(Box::new(QuietErrorHandler))
        .build(Manager::new(url))
        .map_err(|error| DbError::Unavailable(error.to_string()))
}

/// Opens connections and tells the pool which ones to discard.
#[derive(Debug)]
pub struct Manager {
    inner: ConnectionManager<PgConnection>,
    /// Bumped when a connection finds its server gone: every connection of an older
    /// generation is stale.
    generation: Arc<AtomicU64>,
}

impl Manager {
    fn new(url: &str) -> Manager {
        Manager {
            inner: ConnectionManager::new(with_client_defaults(url)),
            generation: Arc::new(AtomicU64::new(0)),
        }
    }

    fn is_stale(&self, conn: &mut PgConnection) -> bool {
        let current = self.generation.load(Ordering::Acquire);
        diesel::Connection::instrumentation(conn)
            .downcast_ref::<Watch>()
            .is_none_or(|watch| watch.failed || watch.generation < current)
    }
}

impl ManageConnection for Manager {
    type Connection = PgConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PgConnection, Self::Error> {
        let generation = self.generation.load(Ordering::Acquire);
        let mut conn = self.inner.connect()?;
        diesel::Connection::set_instrumentation(
            &mut conn,
            Watch {
                generation,
                shared: Arc::clone(&self.generation),
                failed: false,
            },
        );
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut PgConnection) -> Result<(), Self::Error> {
        if self.is_stale(conn) {
            return Err(diesel::r2d2::Error::ConnectionError(
                diesel::ConnectionError::BadConnection(
                    "opened before its server was lost".to_owned(),
                ),
            ));
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut PgConnection) -> bool {
        std::thread::panicking() || R2D2Connection::is_broken(conn) || self.is_stale(conn)
    }
}

/// Watches one connection's queries for a failure that says its server is gone.
struct Watch {
    generation: u64,
    shared: Arc<AtomicU64>,
    failed: bool,
}

impl Instrumentation for Watch {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::FinishQuery {
            error: Some(error), ..
        } = event
            && !self.failed
            && super::error::is_server_lost(error)
        {
            self.failed = true;
            let next = self.generation + 1;
            if self.shared.fetch_max(next, Ordering::AcqRel) < next {
                log::warn!(
                    "database connection lost ({}): the pooled connections opened before are \
                     replaced",
                    super::error::one_line(&error.to_string())
                );
            }
        }
    }
}

/// Sets what every pooled session runs with: a bound on idling inside a transaction, no JIT,
/// messages in English (`db::messages`).
#[derive(Debug)]
struct SessionSettings;

impl diesel::r2d2::CustomizeConnection<PgConnection, diesel::r2d2::Error> for SessionSettings {
    fn on_acquire(&self, conn: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        // JIT compilation costs tens of milliseconds per statement and never pays off for
        // short index-driven queries like ours (a tracker pass read of 5,000 nodes: 112 ms
        // with it, 75 ms without).
        diesel::connection::SimpleConnection::batch_execute(
            conn,
            &format!(
                "SET idle_in_transaction_session_timeout = {}; SET jit = off; {}",
                IDLE_IN_TRANSACTION_TIMEOUT.as_millis(),
                super::messages::in_english_statement()
            ),
        )
        .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// r2d2 logs every failed connection attempt at `error` level by default; the caller that
/// gets the error reports it once, so the pool itself only logs at `debug`.
#[derive(Debug)]
struct QuietErrorHandler;

impl diesel::r2d2::HandleError<diesel::r2d2::Error> for QuietErrorHandler {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        log::debug!("database pool: {error}");
    }
}

/// A pool's connections, as the metrics show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolFigures {
    pub open: u32,
    pub idle: u32,
    pub max: u32,
}

/// The connections of `pool` now (no database round trip).
pub fn pool_figures(pool: &Pool) -> PoolFigures {
    let state = pool.state();
    PoolFigures {
        open: state.connections,
        idle: state.idle_connections,
        max: pool.max_size(),
    }
}
