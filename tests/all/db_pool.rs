//! The pool after its server's connections are gone (issue 28): a connection that finds its
//! server gone marks every connection opened before it stale, so one failed query is the price
//! of a lost server, not one per pooled connection; and the URL gets ringmaster's client
//! defaults (bounded connects, TCP keepalives, `tcp_user_timeout`) unless it sets its own. After
//! a change of server a process missing from the new server's `pg_stat_activity` is not yet
//! gone: its hosts are not taken over for one down time.

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

fn register(conn: &mut diesel::PgConnection, holder: uuid::Uuid) -> Result<(), DbError> {
    let now = chrono::Utc::now();
    let all = Default::default();
    db::hosts::register_host(
        conn,
        &"rejoin-1".into(),
        (holder, &all),
        chrono::Duration::seconds(6),
        now,
    )
}

#[test]
fn a_new_server_gives_a_process_missing_from_it_one_down_time_before_its_host_is_taken() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let (gone, other) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    // Process `gone` registered the host five minutes ago, and shows no presence connection.
    let long_ago = chrono::Utc::now() - chrono::Duration::minutes(5);
    db::hosts::register_host(
        &mut conn,
        &"rejoin-1".into(),
        (gone, &Default::default()),
        chrono::Duration::seconds(6),
        long_ago,
    )
    .unwrap();
    // The deployment ran on another server before and reached this one just now: a failover's
    // new primary, where no process has reconnected its presence yet.
    diesel::sql_query(
        "INSERT INTO ringmaster_servers (started_at, first_seen)
         VALUES (now() - interval '1 day', '-infinity'), (pg_postmaster_start_time(), now())",
    )
    .execute(&mut conn)
    .unwrap();
    let refused = register(&mut conn, other).expect_err("not taken within the grace");
    assert!(
        refused
            .to_string()
            .contains("run by another ringmaster process"),
        "{refused}"
    );

    // One down time after the server was first reached, a missing presence means gone.
    diesel::sql_query("UPDATE ringmaster_servers SET first_seen = now() - interval '7 seconds'")
        .execute(&mut conn)
        .unwrap();
    register(&mut conn, other).expect("taken over once the grace is over");
    let holders: Vec<Setting> =
        diesel::sql_query("SELECT holder::text AS value FROM services WHERE host = 'rejoin-1'")
            .load(&mut conn)
            .unwrap();
    assert_eq!(holders.len(), 1);
    assert_eq!(holders[0].value, other.to_string());
}
