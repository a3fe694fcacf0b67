//! The pool after its server's connections are gone (issue 28): a connection that finds its
//! server gone marks every connection opened before it stale, so one failed query is the price
//! of a lost server, not one per pooled connection; and the URL gets ringmaster's client
//! defaults (bounded connects, TCP keepalives, `tcp_user_timeout`) unless it sets its own.

use diesel::RunQueryDsl;
use ringmaster::db::{self, DbError};

use crate::helpers::TestDb;

#[derive(diesel::QueryableByName)]
struct Setting {
    #[diesel(sql_type = diesel::sql_types::Text)]
    value: String,
}

fn terminate_others(db: &TestDb) -> usize {
    let mut admin = db.conn();
    diesel::sql_query(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = '{}' AND pid <> pg_backend_pid()",
        db.name()
    ))
    .execute(&mut admin)
    .unwrap()
}

#[actix_web::test]
async fn after_its_connections_are_terminated_the_pool_fails_once_and_reconnects() {
    let db = TestDb::new();
    let pool = db.pool();
    // Eight connections open and idle in the pool.
    let held: Vec<_> = (0..8).map(|_| pool.get().unwrap()).collect();
    drop(held);
    assert_eq!(db::pool_figures(&pool).idle, 8);
    assert!(
        terminate_others(&db) >= 8,
        "the pool's backends are terminated"
    );

    let mut failures = 0;
    for _ in 0..16 {
        match db::run(&pool, db::ping).await {
            Ok(()) => {}
            Err(DbError::Unavailable(_)) => failures += 1,
            Err(other) => panic!("a lost connection is `Unavailable` (a 503), not {other}"),
        }
    }
    assert!(
        failures <= 1,
        "one query pays for the lost server, not one per pooled connection: {failures} failed"
    );

    // Again, with the connections checked out while their backends go.
    let held: Vec<_> = (0..4).map(|_| pool.get().unwrap()).collect();
    terminate_others(&db);
    let mut failed_in_hand = 0;
    for mut conn in held {
        if db::ping(&mut conn).is_err() {
            failed_in_hand += 1;
        }
    }
    assert_eq!(failed_in_hand, 4, "the terminated connections fail");
    for _ in 0..8 {
        db::run(&pool, db::ping)
            .await
            .expect("no connection that failed is handed out again");
    }
}

#[test]
fn connections_carry_the_client_defaults_unless_the_url_sets_its_own() {
    let db = TestDb::new();
    let read = |url: &str, name: &str| -> String {
        let mut conn = db::connect(url).unwrap();
        // libpq's settings are not server settings; the server sees the keepalive ones.
        diesel::sql_query(format!("SELECT current_setting('{name}') AS value"))
            .get_result::<Setting>(&mut conn)
            .unwrap()
            .value
    };
    // A unix socket has no TCP settings; the test server listens on one, so the URL is
    // checked as libpq is given it.
    let given = ringmaster::db::url::with_client_defaults(db.url());
    assert!(given.contains("tcp_user_timeout=10000"), "{given}");
    assert!(given.contains("connect_timeout=5"), "{given}");
    let own = format!("{}&connect_timeout=2", db.url());
    let kept = ringmaster::db::url::with_client_defaults(&own);
    assert_eq!(kept.matches("connect_timeout=").count(), 1, "{kept}");
    assert!(kept.contains("connect_timeout=2"), "{kept}");
    // And libpq takes the URL with every default added.
    assert_eq!(read(db.url(), "server_version_num").len(), 6);
}
