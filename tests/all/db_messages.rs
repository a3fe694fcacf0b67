//! A PostgreSQL whose `lc_messages` is German (issue 50): ringmaster's sessions speak C, so a
//! deadlock is read as one and retried; a role that may not set `lc_messages` is refused at
//! start with the statement an administrator runs, and either remedy (`GRANT SET ON
//! PARAMETER`, `ALTER ROLE … SET lc_messages = 'C'`) lets it start. The server's sessions get
//! German as their default from `ALTER DATABASE … SET lc_messages`, as from a server started
//! with it; the locale comes from scripts/bootstrap (`localedef -i de_DE -f UTF-8`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};

use diesel::connection::SimpleConnection as _;
use diesel::{Connection, PgConnection, QueryableByName, RunQueryDsl};
use ringmaster::db::{self, DbError};

use crate::helpers::{TestDb, ringmaster, run_to_end, scratch_server};

/// Makes every new session on `db` write its messages in German.
fn german(db: &TestDb) {
    let mut admin = PgConnection::establish(scratch_server().admin_url()).unwrap();
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {} SET lc_messages = 'de_DE.UTF-8'",
            db.name()
        ))
        .expect("the de_DE.UTF-8 locale (scripts/bootstrap makes it)");
}

#[derive(QueryableByName)]
struct Setting {
    #[diesel(sql_type = diesel::sql_types::Text)]
    lc_messages: String,
}

fn lc_messages(conn: &mut PgConnection) -> String {
    diesel::sql_query("SELECT current_setting('lc_messages') AS lc_messages")
        .get_result::<Setting>(conn)
        .unwrap()
        .lc_messages
}

#[test]
fn a_deadlock_on_a_server_that_answers_in_german_is_read_as_one_and_retried() {
    let db = TestDb::new();
    german(&db);
    // A session of anyone else's answers in German.
    let mut raw = PgConnection::establish(db.url()).unwrap();
    let error = diesel::sql_query("SELECT 1/0")
        .execute(&mut raw)
        .unwrap_err();
    assert!(error.to_string().contains("Division durch Null"), "{error}");
    // ringmaster's speak C, pooled or not.
    let pool = db::build_pool(db.url(), 2).unwrap();
    assert_eq!(lc_messages(&mut pool.get().unwrap()), "C");
    assert_eq!(lc_messages(&mut db::connect(db.url()).unwrap()), "C");

    raw.batch_execute(
        "CREATE TABLE probe (id int PRIMARY KEY, n int); INSERT INTO probe VALUES (1, 0), (2, 0)",
    )
    .unwrap();
    // Two transactions lock the rows in opposite orders: PostgreSQL ends one as a deadlock.
    let barrier = Arc::new(Barrier::new(2));
    let attempts = Arc::new(AtomicU32::new(0));
    let workers: Vec<_> = [(1, 2), (2, 1)]
        .into_iter()
        .map(|(first, second)| {
            let (pool, barrier, attempts) = (pool.clone(), barrier.clone(), attempts.clone());
            std::thread::spawn(move || {
                let mut conn = pool.get().unwrap();
                db::retrying_conflicts(&mut conn, "probe", |conn| {
                    let attempt = attempts.fetch_add(1, Ordering::SeqCst);
                    // Waiting at the barrier is idling in a transaction: on a busy machine
                    // the pool's 3 s bound would end the session before the other arrives.
                    conn.batch_execute("SET LOCAL idle_in_transaction_session_timeout = 0")?;
                    conn.batch_execute(&format!("UPDATE probe SET n = n + 1 WHERE id = {first}"))?;
                    if attempt < 2 {
                        barrier.wait();
                    }
                    conn.batch_execute(&format!("UPDATE probe SET n = n + 1 WHERE id = {second}"))?;
                    Ok(())
                })
            })
        })
        .collect();
    let results: Vec<Result<(), DbError>> = workers
        .into_iter()
        .map(|worker| worker.join().unwrap())
        .collect();
    assert!(
        results.iter().all(Result::is_ok),
        "the deadlock was retried: {results:?}"
    );
    let attempts = attempts.load(Ordering::SeqCst);
    assert!(
        attempts >= 3,
        "a deadlocked transaction was tried again: {attempts} attempts"
    );
    let total: Vec<(i32, i32)> = {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            id: i32,
            #[diesel(sql_type = diesel::sql_types::Integer)]
            n: i32,
        }
        diesel::sql_query("SELECT id, n FROM probe ORDER BY id")
            .load::<Row>(&mut raw)
            .unwrap()
            .into_iter()
            .map(|row| (row.id, row.n))
            .collect()
    };
    assert_eq!(total, [(1, 2), (2, 2)], "both transactions committed once");
}

#[test]
fn a_role_that_may_not_set_lc_messages_is_refused_with_the_statement_that_lets_it() {
    let db = TestDb::new();
    german(&db);
    let role = format!("plain_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let mut admin = PgConnection::establish(scratch_server().admin_url()).unwrap();
    admin
        .batch_execute(&format!("CREATE ROLE {role} LOGIN"))
        .unwrap();
    let url = db.url().replacen("://postgres@", &format!("://{role}@"), 1);
    assert_ne!(url, db.url(), "the test server's URL names its user");

    let refusal = db::connect(&url).map(|_| ()).unwrap_err().to_string();
    assert!(refusal.contains("lc_messages"), "{refusal}");
    assert!(
        refusal.contains(&format!("ALTER ROLE {role} SET lc_messages = 'C'")),
        "{refusal}"
    );
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args(["db", "version"])
            .env("DATABASE_URL", &url)
            .env("RUST_LOG", "warn"),
    );
    assert_ne!(code, Some(0), "{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains("lc_messages") && lines[0].contains("ALTER ROLE"),
        "{stderr}"
    );

    // Either remedy lets it: a grant of the parameter, then the role's own default.
    admin
        .batch_execute(&format!("GRANT SET ON PARAMETER lc_messages TO {role}"))
        .unwrap();
    assert_eq!(lc_messages(&mut db::connect(&url).unwrap()), "C");
    admin
        .batch_execute(&format!(
            "REVOKE SET ON PARAMETER lc_messages FROM {role}; \
             ALTER ROLE {role} SET lc_messages = 'C'"
        ))
        .unwrap();
    assert_eq!(lc_messages(&mut db::connect(&url).unwrap()), "C");
    drop(db);
    admin.batch_execute(&format!("DROP ROLE {role}")).unwrap();
}
