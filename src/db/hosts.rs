//! Queries over compute services (`services` rows of the compute binary).

use diesel::prelude::*;

use super::DbError;
use super::models::ServiceRow;
use super::schema::services;
use crate::domain::host::{COMPUTE_BINARY, Host};

/// Lists the live compute hosts, ordered by name.
pub fn list_hosts(conn: &mut PgConnection) -> Result<Vec<Host>, DbError> {
    let rows = services::table
        .filter(services::binary.eq(COMPUTE_BINARY))
        .filter(services::deleted.eq(0))
        .order(services::host.asc())
        .select(ServiceRow::as_select())
        .load(conn)?;
    Ok(rows.into_iter().map(Host::from).collect())
}
