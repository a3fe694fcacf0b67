//! The test run's PostgreSQL server, a database of its own per test, and restarting the
//! server under a running deployment.

use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use diesel::{Connection, PgConnection};
use ringmaster::db::scratch::{ScratchDb, ScratchServer};
use ringmaster::db::{Pool, build_pool};

use super::process::run_to_end;
use super::wait::eventually;

/// The one PostgreSQL server of this test run: TEST_DATABASE_URL when set, otherwise a
/// private throwaway cluster that stops (and removes itself) when the test process ends.
pub fn scratch_server() -> &'static ScratchServer {
    static SERVER: OnceLock<ScratchServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let _ = env_logger::builder()
            .is_test(true)
            .parse_env(env_logger::Env::new().filter("TEST_LOG"))
            .try_init();
        let server = match std::env::var("TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => ScratchServer::from_url(&url),
            _ => ScratchServer::start_private(None),
        };
        server.expect("the test PostgreSQL server must start")
    })
}

/// A database of its own for one test, migrated and empty; dropped with the value.
pub struct TestDb {
    db: ScratchDb,
}

impl TestDb {
    pub fn new() -> TestDb {
        TestDb {
            db: scratch_server()
                .create_database()
                .expect("create test database"),
        }
    }

    /// An empty database with no migration applied.
    pub fn empty() -> TestDb {
        TestDb {
            db: scratch_server()
                .create_empty_database()
                .expect("create empty test database"),
        }
    }

    pub fn name(&self) -> &str {
        self.db.name()
    }

    pub fn url(&self) -> &str {
        self.db.url()
    }

    pub fn conn(&self) -> PgConnection {
        PgConnection::establish(self.db.url()).expect("connect to test database")
    }

    pub fn pool(&self) -> Pool {
        build_pool(self.db.url(), 8).expect("pool on test database")
    }
}

/// Runs a PostgreSQL server program as the server's user (`postgres` when we are root).
pub fn pg_command(program: &str) -> Command {
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .find(|dir| dir.join(program).exists())
        .map(|dir| dir.join(program))
        .unwrap_or_else(|| program.into());
    if nix::unistd::geteuid().is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(bin);
        command
    } else {
        Command::new(bin)
    }
}

/// The process id of the server running the cluster in `data_dir`.
pub fn postmaster_pid(data_dir: &std::path::Path) -> i32 {
    std::fs::read_to_string(data_dir.join("postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The server of a throwaway cluster, restarted by a test under a running deployment: the
/// new server runs on the same data directory and socket; it is stopped when this is dropped
/// (before the cluster, whose keeper then removes the folder).
pub struct RestartedServer {
    data_dir: std::path::PathBuf,
}

impl RestartedServer {
    /// Stops the cluster's server (fast shutdown: every connection is cut), keeps it down for
    /// `down`, then starts it again on the same data directory.
    pub fn restart(data_dir: &std::path::Path, down: Duration) -> RestartedServer {
        let pid_file = data_dir.join("postmaster.pid");
        let pid = postmaster_pid(data_dir);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        eventually(Duration::from_secs(30), "the server to stop", || {
            (!pid_file.exists()).then_some(())
        });
        std::thread::sleep(down);
        Self::start(data_dir)
    }

    /// Starts the stopped server of the cluster in `data_dir` again, on the same socket.
    pub fn start(data_dir: &std::path::Path) -> RestartedServer {
        let dir = data_dir.to_string_lossy().into_owned();
        let (code, _, stderr) = run_to_end(pg_command("pg_ctl").args([
            "start",
            "-w",
            "-D",
            &dir,
            "-l",
            &format!("{dir}/restarted.log"),
            "-o",
            &format!(
                "-k {dir} -c listen_addresses= -c port=5432 -c max_connections=300 -c fsync=off"
            ),
        ]));
        assert_eq!(code, Some(0), "pg_ctl start: {stderr}");
        RestartedServer {
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// Kills one backend with SIGKILL: the server ends every session and recovers from the
    /// crash (about 0.3 s), as when a backend dies.
    pub fn kill_a_backend(url: &str, application_prefix: &str) {
        #[derive(diesel::QueryableByName)]
        struct Backend {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            pid: i32,
        }
        use diesel::RunQueryDsl;
        let mut conn = PgConnection::establish(url).unwrap();
        let backend: Backend = diesel::sql_query(
            "SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1 || '%' LIMIT 1",
        )
        .bind::<diesel::sql_types::Text, _>(application_prefix)
        .get_result(&mut conn)
        .unwrap();
        drop(conn);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(backend.pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    }
}

impl Drop for RestartedServer {
    fn drop(&mut self) {
        let dir = self.data_dir.to_string_lossy().into_owned();
        let _ = run_to_end(pg_command("pg_ctl").args(["stop", "-m", "immediate", "-D", &dir]));
    }
}

/// How many rows `table` holds.
pub fn rows_in(conn: &mut diesel::PgConnection, table: &str) -> i64 {
    count_in(conn, &format!("SELECT count(*) AS n FROM {table}"))
}

/// The one number `sql` selects as `n` (`SELECT count(*) AS n …`).
pub fn count_in(conn: &mut diesel::PgConnection, sql: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::RunQueryDsl::get_result::<Count>(diesel::sql_query(sql), conn)
        .unwrap()
        .n
}
