//! A cheap fingerprint of the deployment's state, so the dashboard's event stream can say
//! "something changed" without sending the state itself.

use diesel::prelude::*;
use diesel::sql_types::Text;

use super::DbError;

/// Returns a short text that changes whenever hosts, nodes, owners, instances, providers'
/// usage, moves or archive runs change.
pub fn state_fingerprint(conn: &mut PgConnection) -> Result<String, DbError> {
    #[derive(QueryableByName)]
    struct Fingerprint {
        #[diesel(sql_type = Text)]
        fingerprint: String,
    }
    let row: Fingerprint = diesel::sql_query(
        "SELECT concat_ws('/',
             (SELECT coalesce(max(id), 0) FROM node_moves),
             (SELECT count(*) FROM ironic_nodes),
             (SELECT coalesce(max(updated_at)::text, '') FROM ironic_nodes),
             (SELECT count(*) FROM compute_nodes WHERE deleted = 0),
             (SELECT coalesce(max(updated_at)::text, '') FROM services),
             (SELECT count(*) FROM services WHERE deleted = 0),
             (SELECT count(*) FROM instances WHERE deleted = 0),
             (SELECT coalesce(max(updated_at)::text, '') FROM instances),
             (SELECT coalesce(sum(generation), 0) FROM resource_providers),
             (SELECT coalesce(max(id), 0) FROM archive_runs),
             (SELECT count(*) FROM archive_runs WHERE finished_at IS NOT NULL)) AS fingerprint",
    )
    .get_result(conn)?;
    Ok(row.fingerprint)
}
