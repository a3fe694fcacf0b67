//! Invariant 4 inside a host's own work: a node that moves while its host is busy with Ironic
//! (a deploy or a destroy in flight) gets no write from the old host afterwards; the new owner
//! finishes what Ironic finished.

use diesel::{Connection, PgConnection, RunQueryDsl};
use ringmaster::actors::compute_host::{DestroyInstance, HostError};
use ringmaster::domain::identity::InstanceUuid;
use ringmaster::domain::instance::Instance;

use std::time::Duration;

use crate::helpers::{TestDeployment, eventually_async, move_node, other_than};

/// Holds every Ironic node row locked, so that a deploy or destroy waits, until dropped.
struct IronicHeld {
    release: std::sync::mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl IronicHeld {
    fn take(url: &str) -> IronicHeld {
        let url = url.to_owned();
        let (locked_tx, locked_rx) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut conn = PgConnection::establish(&url).unwrap();
            conn.transaction::<_, diesel::result::Error, _>(|conn| {
                diesel::sql_query("SELECT 1 FROM ironic_nodes FOR UPDATE").execute(conn)?;
                locked_tx.send(()).unwrap();
                let _ = release_rx.recv();
                Ok(())
            })
            .unwrap();
        });
        locked_rx.recv().unwrap();
        IronicHeld {
            release,
            thread: Some(thread),
        }
    }
}

impl Drop for IronicHeld {
    fn drop(&mut self) {
        let _ = self.release.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The only live instance, read from the database.
fn the_instance(d: &TestDeployment) -> Option<Instance> {
    let mut conn = d.db.conn();
    let uuids: Vec<uuid::Uuid> = {
        use diesel::prelude::*;
        use ringmaster::db::schema::instances;
        instances::table
            .filter(instances::deleted.eq(0))
            .select(instances::uuid)
            .load(&mut conn)
            .unwrap()
    };
    let uuid = uuids.first()?;
    Some(ringmaster::db::instances::get_instance(&mut conn, InstanceUuid(*uuid)).unwrap())
}

/// Says whether a session of the test database waits on a row lock.
fn waiting_on_a_lock(d: &TestDeployment) -> bool {
    #[derive(diesel::QueryableByName)]
    struct Waiting {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let waiting: Waiting = diesel::sql_query(
        "SELECT count(*) AS n FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND datname = current_database()",
    )
    .get_result(&mut d.db.conn())
    .unwrap();
    waiting.n > 0
}

/// A node moves while its old host waits on Ironic to deploy: the old host's closing write is
/// refused (NotOwner) and it writes nothing after it; the build is then settled by what Ironic
/// says (deployed: active, its allocation kept), once — the new owner's pass finds nothing left.
#[actix_web::test]
async fn a_host_that_lost_the_node_during_a_deploy_writes_nothing_after_it() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 4).await;
    let held = IronicHeld::take(d.db.url());
    let boot = actix_rt::spawn({
        let scheduler = d.actors.scheduler.clone();
        async move {
            scheduler
                .send(crate::helpers::boot_request("vm-1", 0))
                .await
                .unwrap()
        }
    });
    let instance = eventually_async(Duration::from_secs(30), "the boot's instance", || async {
        the_instance(&d)
    })
    .await;
    let (node, old_host) = (
        instance.node.unwrap().to_string(),
        instance.host.clone().unwrap(),
    );
    let allocations = d.allocations();
    // Move the node once the deploy waits on the held Ironic row (past its ownership check).
    eventually_async(
        Duration::from_secs(30),
        "a write waiting on the held row",
        || async { waiting_on_a_lock(&d).then_some(()) },
    )
    .await;
    move_node(&d, &node, &old_host, other_than(&old_host)).await;
    drop(held);

    let booted = boot.await.unwrap().expect("the boot settles");
    assert_eq!(
        booted.vm_state, "active",
        "Ironic deployed it, so the build is settled active: {booted:?}"
    );
    let after = the_instance(&d).unwrap();
    assert_eq!(after.host.as_deref(), Some(other_than(&old_host)));
    assert_eq!(d.allocations(), allocations, "the allocation stays");
    d.audit();

    let report = d.track(&[other_than(&old_host)]).await.remove(0);
    assert!(
        report.builds_finished.is_empty() && report.builds_failed.is_empty(),
        "settled once: {report:?}"
    );
    assert_eq!(the_instance(&d).unwrap().vm_state, "active");
    d.audit();
}

/// A node moves while its old host waits on Ironic to destroy an instance: the old host
/// neither deletes the instance nor frees its allocation; the new owner can.
#[actix_web::test]
async fn a_host_that_lost_the_node_during_a_destroy_deletes_nothing() {
    let d = TestDeployment::start(&["cmp-1", "cmp-2"], 4).await;
    let instance = d.boot("vm-1").await.unwrap();
    let (node, old_host) = (
        instance.node.unwrap().to_string(),
        instance.host.clone().unwrap(),
    );
    let allocations = d.allocations();
    let held = IronicHeld::take(d.db.url());
    let destroy = actix_rt::spawn(
        d.actors
            .hosts
            .get(&old_host)
            .unwrap()
            .send(DestroyInstance {
                instance: instance.uuid,
                defer_pci_free: false,
            }),
    );
    // Move the node once the destroy waits on the held Ironic row (past its ownership check).
    eventually_async(
        Duration::from_secs(30),
        "a write waiting on the held row",
        || async { waiting_on_a_lock(&d).then_some(()) },
    )
    .await;
    move_node(&d, &node, &old_host, other_than(&old_host)).await;
    drop(held);

    let destroyed = destroy.await.unwrap().unwrap();
    assert!(
        matches!(destroyed, Err(HostError::NotOwner { .. })),
        "the old owner's delete is refused: {destroyed:?}"
    );
    let after = the_instance(&d).expect("the instance is still there");
    assert_eq!(after.uuid, instance.uuid);
    assert_eq!(d.allocations(), allocations, "the allocation stays");
    d.audit();

    let new_owner = d.actors.hosts.get(other_than(&old_host)).unwrap();
    let finished = new_owner
        .send(DestroyInstance {
            instance: instance.uuid,
            defer_pci_free: false,
        })
        .await
        .unwrap();
    assert!(finished.is_ok(), "the new owner finishes it: {finished:?}");
    assert!(the_instance(&d).is_none());
    assert!(d.allocations().is_empty());
    d.audit();
}
