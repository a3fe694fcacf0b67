//! PostgreSQL's messages read in one language. What a deadlock or a lost connection is, ringmaster
//! reads where diesel gives no kind for it (a deadlock, `40P01`; a terminated backend,
//! `57P01`) from the server's message — which PostgreSQL writes in its `lc_messages`: German
//! `FEHLER: Verklemmung (Deadlock) entdeckt` would be no deadlock to ringmaster, and never
//! retried. So every session ringmaster opens speaks C: when the server's `lc_messages` is not
//! C, POSIX or English, the session sets `lc_messages = 'C'`, where PostgreSQL lets its role
//! (a superuser; `GRANT SET ON PARAMETER lc_messages`; or the role's own default, `ALTER ROLE
//! … SET lc_messages = 'C'`, which makes the change needless). Where it does not, ringmaster
//! refuses to start, with the statement an administrator runs.

use diesel::connection::SimpleConnection as _;
use diesel::pg::PgConnection;
use diesel::{QueryableByName, RunQueryDsl};

use super::DbError;

/// The settings of `lc_messages` whose messages ringmaster reads.
const ENGLISH: &str = "^(c|posix|en|english)([._@-]|$)";

/// What a pooled session runs: `lc_messages` made C when it is not English, in one round trip
/// with the session's other settings (a new primary after a failover may have other defaults).
pub(super) fn in_english_statement() -> String {
    format!(
        "DO $$BEGIN IF current_setting('lc_messages') !~* '{ENGLISH}' THEN \
         PERFORM set_config('lc_messages', 'C', false); END IF; END$$"
    )
}

#[derive(QueryableByName)]
struct Language {
    #[diesel(sql_type = diesel::sql_types::Text)]
    setting: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    role: String,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    english: bool,
}

/// Makes `conn` speak C if it does not speak English; says so once per process, or refuses
/// with the statement that lets it.
pub(super) fn speak_english(conn: &mut PgConnection) -> Result<(), DbError> {
    let language: Language = diesel::sql_query(format!(
        "SELECT current_setting('lc_messages') AS setting, quote_ident(current_user) AS role, \
         current_setting('lc_messages') ~* '{ENGLISH}' AS english"
    ))
    .get_result(conn)?;
    if language.english {
        return Ok(());
    }
    let Language { setting, role, .. } = language;
    if conn.batch_execute("SET lc_messages = 'C'").is_err() {
        // The refusal itself is in the server's language: it is not repeated.
        return Err(DbError::Refused(format!(
            "PostgreSQL writes its messages in {setting:?} (lc_messages), which ringmaster does \
             not read, and role {role} may not set lc_messages = 'C' for its sessions: an \
             administrator runs ALTER ROLE {role} SET lc_messages = 'C' (or GRANT SET ON \
             PARAMETER lc_messages TO {role})"
        )));
    }
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        log::info!(
            "PostgreSQL writes its messages in {setting:?} (lc_messages): ringmaster's sessions \
             set lc_messages = 'C', so that it reads a deadlock or a lost connection as such"
        );
    });
    Ok(())
}
