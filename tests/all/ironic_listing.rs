//! One listing of Ironic per deployment (issue 31), against the stand-in Ironic: three `serve`
//! processes list it once per interval between them, not three times; the lease moves within
//! the down time when its holder is killed; a listing that suddenly lacks many nodes takes
//! none for gone until the next agrees; a listing's writes are its changes.

use std::time::Duration;

use diesel::RunQueryDsl;
use ringmaster::actors::node_source::IronicDriver;
use ringmaster::config::IronicSettings;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{FAST, Running, StandinIronic, TestDb, eventually, get_json, serve_with};

/// The listing lease as stored: (holder, epoch, acquired_at, expires_at), by the database's
/// clock.
fn lease(
    db: &TestDb,
) -> (
    Uuid,
    i64,
    chrono::DateTime<chrono::Utc>,
    chrono::DateTime<chrono::Utc>,
) {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        holder: Uuid,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        epoch: i64,
        #[diesel(sql_type = diesel::sql_types::Timestamptz)]
        acquired_at: chrono::DateTime<chrono::Utc>,
        #[diesel(sql_type = diesel::sql_types::Timestamptz)]
        expires_at: chrono::DateTime<chrono::Utc>,
    }
    let row: Row = diesel::sql_query(
        "SELECT holder, epoch, acquired_at, expires_at FROM leader_leases
          WHERE name = 'ironic-listing'",
    )
    .get_result(&mut db.conn())
    .expect("the listing lease exists");
    (row.holder, row.epoch, row.acquired_at, row.expires_at)
}

fn owned(address: &str) -> usize {
    get_json(address, "/api/v1/nodes")
        .as_array()
        .map_or(0, |nodes| {
            nodes.iter().filter(|node| node["host"].is_string()).count()
        })
}

#[test]
fn three_processes_list_ironic_once_per_interval_and_the_lease_moves_when_its_holder_dies() {
    let ironic = StandinIronic::start(40);
    let db = TestDb::new();
    let flags: Vec<&str> = FAST
        .iter()
        .copied()
        .chain(["--ironic-url", ironic.url.as_str()])
        .collect();
    let mut processes: Vec<(Running, String)> = ["a-1", "b-1", "c-1"]
        .iter()
        .map(|host| serve_with(db.url(), host, &flags))
        .collect();
    eventually(Duration::from_secs(60), "every node owned", || {
        (owned(&processes[0].1) == 40).then_some(())
    });

    // Every 500 ms one listing for the deployment: about 10 in 5 s, where three processes
    // listing each would make about 30.
    let before = ironic.listings();
    std::thread::sleep(Duration::from_secs(5));
    let listings = ironic.listings() - before;
    assert!(
        (4..=14).contains(&listings),
        "one listing per interval for 3 processes: {listings} in 5 s"
    );
    let holders: Vec<usize> = (0..3)
        .filter(|at| {
            get_json(&processes[*at].1, "/api/v1/node-source")["listing"]["lists_here"] == true
        })
        .collect();
    assert_eq!(holders.len(), 1, "one process lists");
    for (_, address) in &processes {
        let listing = get_json(address, "/api/v1/node-source")["listing"].clone();
        assert_eq!(
            listing["nodes"], 40,
            "every process reads the holder's listing: {listing}"
        );
        assert_eq!(listing["error"], Value::Null);
    }

    maintenance_in_ironic_reaches_the_owner(&ironic, &processes[0].1);

    // The holder dies without a word: another process lists within the down time (2 s).
    let (old_holder, old_epoch, _, old_expiry) = lease(&db);
    let (mut killed, _) = processes.remove(holders[0]);
    killed.child.kill().expect("SIGKILL");
    let _ = killed.child.wait();
    let (new_holder, new_epoch, taken_at, _) =
        eventually(Duration::from_secs(20), "a new holder", || {
            let now = lease(&db);
            (now.1 > old_epoch).then_some(now)
        });
    assert_ne!(new_holder, old_holder);
    assert_eq!(new_epoch, old_epoch + 1);
    assert!(
        taken_at - old_expiry < chrono::Duration::seconds(2),
        "the lease moved within the down time of its expiry: expired {old_expiry}, taken {taken_at}"
    );
    let after_kill = ironic.listings();
    eventually(Duration::from_secs(20), "listings go on", || {
        (ironic.listings() >= after_kill + 3).then_some(())
    });
    eventually(Duration::from_secs(20), "a survivor shows it lists", || {
        processes
            .iter()
            .any(|(_, address)| {
                get_json(address, "/api/v1/node-source")["listing"]["lists_here"] == true
            })
            .then_some(())
    });
    let audit = get_json(&processes[0].1, "/api/v1/audit");
    assert_eq!(audit["ok"], true, "{audit}");
}

/// Maintenance set in Ironic reaches the node's owner, in whichever process it runs.
fn maintenance_in_ironic_reaches_the_owner(ironic: &StandinIronic, address: &str) {
    let node = get_json(address, "/api/v1/nodes")[0]["uuid"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_default();
    ironic.set(node.parse().unwrap_or_default(), "maintenance", json!(true));
    eventually(Duration::from_secs(20), "the node reserved", || {
        let listed = get_json(address, "/api/v1/nodes");
        listed
            .as_array()?
            .iter()
            .any(|each| each["uuid"] == node.as_str() && each["maintenance"] == true)
            .then_some(())
    });
}

fn driver(url: &str, db: &TestDb) -> IronicDriver {
    let mut settings = IronicSettings::new(url);
    settings.vanish_limit = "10%,50".parse().expect("the default");
    IronicDriver::new(
        settings,
        None,
        db.pool(),
        std::sync::Arc::new(ringmaster::domain::clock::SystemClock::new()),
    )
}

fn mirror_len(db: &TestDb) -> usize {
    ringmaster::db::ironic_mirror::mirrored_nodes(&mut db.conn())
        .expect("the mirror")
        .len()
}

#[actix_web::test]
async fn a_listing_that_suddenly_lacks_many_nodes_takes_none_for_gone_until_the_next_agrees() {
    let ironic = StandinIronic::start(200);
    let db = TestDb::new();
    let driver = driver(&ironic.url, &db);
    assert_eq!(driver.list_once().await.expect("listed").len(), 200);
    assert_eq!(mirror_len(&db), 200);
    let all: Vec<Uuid> = ringmaster::db::ironic_mirror::mirrored_nodes(&mut db.conn())
        .expect("the mirror")
        .iter()
        .map(|node| node.uuid)
        .collect();

    // 30 of 200 (more than 10 %, 20) vanish, then come back: nothing is taken for gone.
    ironic.hide(&all[..30], true);
    assert!(driver.list_once().await.expect("listed").is_empty());
    assert_eq!(mirror_len(&db), 200, "held: no row removed");
    assert_eq!(driver.status().held, 30);
    ironic.hide(&all[..30], false);
    assert!(driver.list_once().await.expect("listed").is_empty());
    assert_eq!((mirror_len(&db), driver.status().held), (200, 0));

    // They vanish for two listings in a row: the second agrees, they go.
    ironic.hide(&all[..30], true);
    assert!(driver.list_once().await.expect("listed").is_empty());
    assert_eq!(mirror_len(&db), 200);
    assert_eq!(driver.list_once().await.expect("listed").len(), 30);
    assert_eq!(mirror_len(&db), 170, "two listings agreed");

    // Within the limit (10 % of 170 is 17): at once.
    ironic.hide(&all[30..40], true);
    assert_eq!(driver.list_once().await.expect("listed").len(), 10);
    assert_eq!(mirror_len(&db), 160);
}

#[actix_web::test]
async fn a_listing_writes_its_changes_only_and_catches_up_with_rows_others_wrote() {
    let ironic = StandinIronic::start(5_000);
    let db = TestDb::new();
    let driver = driver(&ironic.url, &db);
    assert_eq!(driver.list_once().await.expect("listed").len(), 5_000);
    assert_eq!(
        driver.status().requests,
        6,
        "5 full pages and the empty one that ends them"
    );
    assert!(
        driver.list_once().await.expect("listed").is_empty(),
        "idle: nothing written"
    );

    // 1 % changed: 50 written, with only the fields ringmaster reads asked for.
    let changed = ironic.change(100, 50);
    let mut written = driver.list_once().await.expect("listed");
    written.sort();
    let mut expected = changed.clone();
    expected.sort();
    assert_eq!(written, expected);
    let pages: Vec<String> = ironic
        .requests()
        .into_iter()
        .filter(|request| request.starts_with("/v1/nodes?"))
        .collect();
    assert!(
        pages
            .iter()
            .all(|page| page.contains("fields=uuid%2Cname%2Cresource_class")
                && !page.contains("driver")),
        "{:?}",
        pages.first()
    );

    // Another process's deploy wrote a node as Ironic showed it then; Ironic has since gone
    // back: the listing holder notices though its own last listing saw the same.
    let node = changed[0];
    let mut deployed = ringmaster::db::ironic_mirror::mirrored_nodes(&mut db.conn())
        .expect("the mirror")
        .into_iter()
        .find(|row| row.uuid == node)
        .expect("mirrored");
    deployed.provision_state = "active".to_owned();
    ringmaster::db::ironic_mirror::refresh_node(&mut db.conn(), &deployed, chrono::Utc::now())
        .expect("a deploy's write");
    assert_eq!(driver.list_once().await.expect("listed"), vec![node]);
    let row = ringmaster::db::ironic_mirror::mirrored_nodes(&mut db.conn())
        .expect("the mirror")
        .into_iter()
        .find(|row| row.uuid == node)
        .map(|row| row.provision_state);
    assert_eq!(
        row.as_deref(),
        Some("available"),
        "the mirror shows Ironic again"
    );
}
