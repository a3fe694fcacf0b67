//! Archive benchmark: soft-deleted instances with a row in each lifecycle table (7 rows per
//! instance), archived by ringmaster's batched, re-checking archiver and, on the same data
//! generated afresh, by one hand-written statement per table
//! (`WITH moved AS (DELETE … RETURNING *) INSERT INTO shadow_… SELECT * FROM moved`).
//! Reports rows/s, the ratio between the two, and this process's peak memory.
//!
//! Run: `cargo bench --bench archive` (1,000,000 instances) or `-- 100000` for a quicker one.

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use diesel::{Connection, PgConnection, RunQueryDsl};
use ringmaster::db::archive::{ArchiveOptions, archive_deleted_rows};
use ringmaster::db::scratch::ScratchServer;
use ringmaster::db::{build_pool, connect};

/// Rows per batch as Nova counts them (7 per instance tree): 10,000 instances.
const BATCH: i64 = 70_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let instances: i64 = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(1_000_000);
    let server = ScratchServer::start_private(None)?;

    let db = server.create_database()?;
    let mut conn = connect(db.url())?;
    let rows = generate(&mut conn, instances)?;
    let pool = build_pool(db.url(), 2)?;
    let options = ArchiveOptions {
        max_rows: BATCH,
        before: None,
        task_log: false,
        until_complete: true,
        sleep: Duration::ZERO,
    };
    let never = AtomicBool::new(false);
    let started = Instant::now();
    let mut moved = 0_i64;
    let mut batches = 0;
    let summary = archive_deleted_rows(&pool, &options, &never, |batch| {
        moved += batch.values().sum::<i64>();
        batches += 1;
        if batches % 10 == 0 {
            let rate = moved as f64 / started.elapsed().as_secs_f64();
            print!("\rringmaster: {moved} of {rows} rows, {rate:.0} rows/s   ");
            let _ = std::io::stdout().flush();
        }
    })?;
    let ours = started.elapsed();
    println!();
    assert_eq!(summary.total(), rows, "every generated row archived");
    drop(db);

    let db = server.create_database()?;
    let mut conn = connect(db.url())?;
    generate(&mut conn, instances)?;
    let started = Instant::now();
    let baseline_rows = one_statement_per_table(&mut conn)?;
    let baseline = started.elapsed();
    assert_eq!(baseline_rows, rows);

    let ours_rate = rows as f64 / ours.as_secs_f64();
    let baseline_rate = rows as f64 / baseline.as_secs_f64();
    println!("\n| archiver | rows | time | rows/s |");
    println!("|---|---:|---:|---:|");
    println!(
        "| ringmaster, batches of {BATCH} rows ({} instances), re-checked and locked | {rows} | {:.1} s | {ours_rate:.0} |",
        BATCH / 7,
        ours.as_secs_f64()
    );
    println!(
        "| one statement per table | {rows} | {:.1} s | {baseline_rate:.0} |",
        baseline.as_secs_f64()
    );
    println!(
        "\nringmaster / one statement: {:.2}x the time",
        ours.as_secs_f64() / baseline.as_secs_f64()
    );
    println!(
        "peak memory of this process: {} (batches keep ids only)",
        peak_memory()
    );
    Ok(())
}

/// Generates `instances` soft-deleted instances, each with one extra, system-metadata, fault,
/// block-device-mapping, action and action-event row. Returns the rows generated.
fn generate(conn: &mut PgConnection, instances: i64) -> Result<i64, Box<dyn std::error::Error>> {
    let started = Instant::now();
    print!("generating {instances} instances with their lifecycle rows...");
    let _ = std::io::stdout().flush();
    conn.transaction::<_, diesel::result::Error, _>(|conn| {
        let statements = [
            "INSERT INTO instances (id, uuid, project_id, user_id, vm_state, deleted_at, deleted)
             SELECT s, gen_random_uuid(), 'project', 'user', 'deleted', now() - interval '1 day', s
               FROM generate_series(1, $1) s",
            "INSERT INTO instance_extra (id, instance_uuid, flavor, deleted_at, deleted)
             SELECT id, uuid, 'baremetal', deleted_at, id FROM instances",
            "INSERT INTO instance_system_metadata (id, instance_uuid, key, value, deleted_at, deleted)
             SELECT id, uuid, 'image_base_image_ref', 'x', deleted_at, id FROM instances",
            "INSERT INTO instance_faults (id, instance_uuid, code, message, deleted_at, deleted)
             SELECT id, uuid, 500, 'fault', deleted_at, id FROM instances",
            "INSERT INTO block_device_mapping (id, uuid, instance_uuid, deleted_at, deleted)
             SELECT id, gen_random_uuid(), uuid, deleted_at, id FROM instances",
            "INSERT INTO instance_actions (id, action, instance_uuid) SELECT id, 'create', uuid FROM instances",
            "INSERT INTO instance_actions_events (id, event, action_id)
             SELECT id, 'compute__do_build_and_run_instance', id FROM instance_actions",
        ];
        for (index, statement) in statements.iter().enumerate() {
            if index == 0 {
                diesel::sql_query(*statement).bind::<diesel::sql_types::BigInt, _>(instances).execute(conn)?;
            } else {
                diesel::sql_query(*statement).execute(conn)?;
            }
        }
        Ok(())
    })?;
    diesel::sql_query("ANALYZE").execute(conn)?;
    println!(" {:.1} s", started.elapsed().as_secs_f64());
    Ok(instances * 7)
}

/// Archives everything with one statement per table, children first. Returns rows moved.
fn one_statement_per_table(conn: &mut PgConnection) -> Result<i64, Box<dyn std::error::Error>> {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let deleted_instances = "SELECT uuid FROM instances WHERE deleted <> 0";
    let statements = [
        (
            "instance_actions_events",
            format!(
                "action_id IN (SELECT id FROM instance_actions WHERE instance_uuid IN ({deleted_instances}))"
            ),
        ),
        (
            "instance_actions",
            format!("instance_uuid IN ({deleted_instances})"),
        ),
        (
            "instance_extra",
            format!("instance_uuid IN ({deleted_instances})"),
        ),
        (
            "instance_system_metadata",
            format!("instance_uuid IN ({deleted_instances})"),
        ),
        (
            "instance_faults",
            format!("instance_uuid IN ({deleted_instances})"),
        ),
        (
            "block_device_mapping",
            format!("instance_uuid IN ({deleted_instances})"),
        ),
        ("instances", "deleted <> 0".to_owned()),
    ];
    let mut total = 0;
    conn.transaction::<_, diesel::result::Error, _>(|conn| {
        for (table, condition) in &statements {
            let moved: Count = diesel::sql_query(format!(
                "WITH moved AS (DELETE FROM {table} WHERE {condition} RETURNING *),
                      copied AS (INSERT INTO shadow_{table} SELECT * FROM moved RETURNING 1)
                 SELECT count(*) AS count FROM copied"
            ))
            .get_result(conn)?;
            total += moved.count;
        }
        Ok(())
    })?;
    Ok(total)
}

/// Returns this process's peak resident memory (VmHWM), as Linux reports it.
fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .map(|line| line.trim_start_matches("VmHWM:").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}
