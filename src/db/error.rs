//! `DbError`: every database failure, classified once from diesel's and r2d2's errors.

use diesel::result::{DatabaseErrorKind, Error as DieselError};

use crate::domain::error::ErrorKind;

/// Says what went wrong talking to PostgreSQL.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("unique constraint {constraint} violated")]
    UniqueViolation { constraint: String },
    #[error("foreign key constraint {constraint} violated")]
    ForeignKeyViolation { constraint: String },
    #[error("check constraint {constraint} violated")]
    CheckViolation { constraint: String },
    #[error("not-null constraint violated on column {column}")]
    NotNullViolation { column: String },
    #[error("{0}")]
    Conflict(String),
    /// What the caller sent, refused by PostgreSQL (a regular expression its `~` cannot take):
    /// the message is for the caller.
    #[error("{0}")]
    InvalidInput(String),
    #[error("the host's lease lapsed: write abandoned")]
    LeaseLapsed,
    #[error("this process no longer holds the {lease} lease (epoch {epoch}): write refused")]
    LeadershipLost { lease: String, epoch: i64 },
    #[error("concurrent transaction conflict, retry")]
    SerializationFailure,
    #[error("deadlock detected")]
    Deadlock,
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The server takes the connection but not as ringmaster needs it (it writes its messages
    /// in a language ringmaster does not read, and may not be told otherwise): waiting will
    /// not help, an administrator will.
    #[error("{0}")]
    Refused(String),
    #[error("migration failed: {0}")]
    Migration(String),
    #[error("database work was canceled before it finished")]
    Canceled,
    #[error("database error: {0}")]
    Other(String),
}

impl DbError {
    /// Classifies this error for the HTTP and CLI layers.
    pub fn kind(&self) -> ErrorKind {
        match self {
            DbError::NotFound(_) => ErrorKind::NotFound,
            DbError::UniqueViolation { .. }
            | DbError::SerializationFailure
            | DbError::Deadlock
            | DbError::Conflict(_)
            | DbError::LeaseLapsed
            | DbError::LeadershipLost { .. } => ErrorKind::Conflict,
            DbError::ForeignKeyViolation { .. }
            | DbError::CheckViolation { .. }
            | DbError::NotNullViolation { .. }
            | DbError::InvalidInput(_) => ErrorKind::Invalid,
            DbError::Unavailable(_) | DbError::Canceled => ErrorKind::Unavailable,
            DbError::Migration(_) | DbError::Refused(_) | DbError::Other(_) => ErrorKind::Internal,
        }
    }
}

impl From<DieselError> for DbError {
    fn from(error: DieselError) -> Self {
        match error {
            DieselError::NotFound => DbError::NotFound("row".to_owned()),
            DieselError::DatabaseError(kind, info) => {
                let constraint = info.constraint_name().unwrap_or("unknown").to_owned();
                match kind {
                    DatabaseErrorKind::UniqueViolation => DbError::UniqueViolation { constraint },
                    DatabaseErrorKind::ForeignKeyViolation => {
                        DbError::ForeignKeyViolation { constraint }
                    }
                    DatabaseErrorKind::CheckViolation => DbError::CheckViolation { constraint },
                    DatabaseErrorKind::NotNullViolation => DbError::NotNullViolation {
                        column: info.column_name().unwrap_or("unknown").to_owned(),
                    },
                    DatabaseErrorKind::SerializationFailure => DbError::SerializationFailure,
                    // The server gone, or no longer the primary (`25006`).
                    DatabaseErrorKind::ClosedConnection
                    | DatabaseErrorKind::UnableToSendCommand
                    | DatabaseErrorKind::ReadOnlyTransaction => {
                        DbError::Unavailable(one_line(info.message()))
                    }
                    // `40P01`, which diesel gives no kind: read in English, as every session
                    // of ringmaster speaks it (`db::messages`).
                    _ if info.message().starts_with("deadlock detected") => DbError::Deadlock,
                    _ if is_connection_loss(info.message()) => {
                        DbError::Unavailable(one_line(info.message()))
                    }
                    _ => DbError::Other(one_line(info.message())),
                }
            }
            other => DbError::Other(one_line(&other.to_string())),
        }
    }
}

impl From<diesel::ConnectionError> for DbError {
    fn from(error: diesel::ConnectionError) -> Self {
        DbError::Unavailable(one_line(&error.to_string()))
    }
}

impl From<diesel::r2d2::PoolError> for DbError {
    fn from(error: diesel::r2d2::PoolError) -> Self {
        DbError::Unavailable(one_line(&error.to_string()))
    }
}

/// Says whether `error`, a query's, means that the connection's server is gone or is no
/// longer the primary: closed or reset, the backend terminated (`57P01`), the server starting
/// or shutting down (`57P03`), a read-only server refusing a write (`25006`). The pool replaces
/// such a connection and those opened before it.
pub fn is_server_lost(error: &DieselError) -> bool {
    match error {
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection
            | DatabaseErrorKind::UnableToSendCommand
            | DatabaseErrorKind::ReadOnlyTransaction,
            _,
        ) => true,
        DieselError::DatabaseError(_, info) => is_connection_loss(info.message()),
        _ => false,
    }
}

impl DbError {
    /// Whether waiting may help: the server is away (down, restarting, changing primary, a
    /// standby where a primary is needed), not refusing this client (a wrong password, an
    /// unknown role or database, no `pg_hba.conf` entry, a bad URL option).
    pub fn is_transient(&self) -> bool {
        const REFUSALS: &[&str] = &[
            "no pg_hba.conf entry",
            "does not exist",
            "permission denied",
            "invalid connection option",
            "invalid uri",
            "invalid integer value",
            "authentication", // failed, or of a method the client lacks
        ];
        match self {
            DbError::Unavailable(message) => {
                let message = message.to_ascii_lowercase();
                !REFUSALS.iter().any(|sign| message.contains(sign))
            }
            _ => false,
        }
    }
}

/// Says whether libpq's or the server's `message` (in English: `db::messages`) means the
/// connection or the server went away (a restart, a crash recovery, a failover, a terminated backend): the work may succeed
/// once the server is back, so it is `Unavailable`, never an internal error.
fn is_connection_loss(message: &str) -> bool {
    const SIGNS: &[&str] = &[
        "server closed the connection",
        "terminating connection",
        "the database system is",
        "no connection to the server",
        "connection to server",
        "could not connect to server",
        "could not receive data from server",
        "could not send data to server",
    ];
    SIGNS.iter().any(|sign| message.contains(sign))
}

/// Folds libpq's multi-line messages into one line, so every error prints as one line.
pub fn one_line(text: &str) -> String {
    text.split(['\n', '\t'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
