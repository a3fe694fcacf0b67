//! The embedded PostgreSQL cluster: with no DATABASE_URL, ringmaster runs its own server from
//! the installed PostgreSQL binaries, listening on a unix socket in its data directory only.
//!
//! The first process on a data directory owns the server and stops it when it ends; a second
//! process on the same directory finds the server up and connects to it as a guest. The server
//! runs under a small `sh` keeper whose stdin is a pipe from the owner: when the owner exits —
//! normally, on Ctrl-C or killed — the pipe closes and the keeper shuts the server down fast.
//! When the owner runs as root, the server runs as the `postgres` user, as PostgreSQL requires.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod fresh;
mod server_log;

pub use self::fresh::remove_data_dir;

use super::url::socket_url;

/// The longest unix socket path the kernel accepts, less its terminating NUL.
const MAX_SOCKET_PATH: usize = 107;
/// The socket file name PostgreSQL uses on port 5432.
const SOCKET_FILE: &str = ".s.PGSQL.5432";
/// How long a starting server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the owner waits for the server to stop on exit.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Keeps the server running while its stdin pipe is open; stops it fast once the pipe closes,
/// then removes `RINGMASTER_PG_REMOVE` if set (throwaway clusters).
const KEEPER_SCRIPT: &str = r#"server="$1"; shift
"$server" "$@" &
pid=$!
read -r _line
kill -INT "$pid" 2>/dev/null
wait "$pid"
if [ -n "$RINGMASTER_PG_REMOVE" ]; then rm -rf "$RINGMASTER_PG_REMOVE"; fi
"#;

/// Says why the embedded cluster could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "PostgreSQL server binaries (initdb, postgres) not found {searched}: install the \
         PostgreSQL server package (Debian/Ubuntu: `apt-get install postgresql`), or set \
         DATABASE_URL to use a running PostgreSQL server"
    )]
    BinariesNotFound { searched: String },
    #[error(
        "PostgreSQL program {name} not found {searched}: install the PostgreSQL server package \
         (Debian/Ubuntu: `apt-get install postgresql`) or set --pg-bin-dir"
    )]
    ProgramNotFound { name: String, searched: String },
    #[error(
        "running as root, the embedded PostgreSQL must run as the `postgres` user, and there is \
         none: install the PostgreSQL server package, or set DATABASE_URL"
    )]
    NoPostgresUser,
    #[error(
        "data directory {0} is too deep for a PostgreSQL socket path (at most {MAX_SOCKET_PATH} \
         bytes with the socket name): choose a shorter --data-dir"
    )]
    PathTooLong(PathBuf),
    #[error(
        "the postgres user cannot enter {blocked}, on the way to data directory {data_dir}: \
         choose a --data-dir it can reach"
    )]
    Unreachable { blocked: PathBuf, data_dir: PathBuf },
    #[error("data directory {0} exists, is not empty and is not a PostgreSQL cluster")]
    NotACluster(PathBuf),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("initdb failed for {data_dir}: {output}")]
    Initdb { data_dir: PathBuf, output: String },
    #[error("embedded PostgreSQL did not start: {tail}")]
    StartFailed { tail: String },
    #[error("--fresh: {0}")]
    Fresh(String),
}

/// Where and how to run the embedded cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// The PostgreSQL data directory.
    pub data_dir: PathBuf,
    /// The folder holding `initdb` and `postgres`; searched for when `None`.
    pub bin_dir: Option<PathBuf>,
    /// A throwaway cluster trades durability for speed and removes `data_dir`'s parent
    /// folder when it stops.
    pub throwaway: bool,
}

/// A running embedded cluster, owned (started by this process) or joined as a guest.
#[derive(Debug)]
pub struct Cluster {
    socket_dir: PathBuf,
    owned: Option<OwnedServer>,
}

#[derive(Debug)]
struct OwnedServer {
    keeper: Child,
    keeper_stdin: Option<ChildStdin>,
    log: server_log::Tail,
}

impl Cluster {
    /// Connects to the cluster already running on `options.data_dir`, or initializes and
    /// starts one there (owned by this process) when none is.
    pub fn start_or_join(options: &ClusterOptions) -> Result<Cluster, ClusterError> {
        let data_dir = absolute(&options.data_dir)?;
        let socket_dir = data_dir.clone();
        if socket_dir.join(SOCKET_FILE).as_os_str().len() > MAX_SOCKET_PATH {
            return Err(ClusterError::PathTooLong(data_dir));
        }
        let parent = data_dir.parent().unwrap_or(Path::new("/")).to_path_buf();
        fs::create_dir_all(&parent).map_err(io_error("cannot create", &parent))?;
        let _startup_lock = lock_startup(&data_dir)?;

        if server_answers(&socket_dir) {
            log::info!(
                "joining the PostgreSQL server already running on {}",
                data_dir.display()
            );
            return Ok(Cluster {
                socket_dir,
                owned: None,
            });
        }
        let binaries = Binaries::find(options.bin_dir.as_deref())?;
        let run_as = RunAs::for_current_process()?;
        if let Some(blocked) = run_as.first_blocked_folder(&data_dir) {
            return Err(ClusterError::Unreachable { blocked, data_dir });
        }
        if !data_dir.join("PG_VERSION").exists() {
            initdb(&binaries, &run_as, &data_dir, options.throwaway)?;
        }
        wait_for_last_server(&data_dir);
        let owned = start_server(&binaries, &run_as, &data_dir, options)?;
        let mut cluster = Cluster {
            socket_dir,
            owned: Some(owned),
        };
        cluster.wait_until_ready()?;
        log::info!("started embedded PostgreSQL in {}", data_dir.display());
        Ok(cluster)
    }

    /// Starts a private cluster in a fresh folder (in /dev/shm when there is one) that
    /// trades durability for speed and removes its folder when it stops.
    pub fn start_throwaway(bin_dir: Option<PathBuf>) -> Result<Cluster, ClusterError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.subsec_nanos())
            .unwrap_or(0);
        let root = base.join(format!(
            "ringmaster-{}-{}-{nanos:x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&root).map_err(io_error("cannot create", &root))?;
        let options = ClusterOptions {
            data_dir: root.join("pg"),
            bin_dir,
            throwaway: true,
        };
        let started = RunAs::for_current_process()
            .and_then(|run_as| run_as.hand_over(&root))
            .and_then(|()| Cluster::start_or_join(&options));
        if started.is_err() {
            let _ = fs::remove_dir_all(&root);
        }
        started
    }

    /// Returns the URL of database `database` on this cluster.
    pub fn url(&self, database: &str) -> String {
        socket_url(&self.socket_dir, database)
    }

    /// Returns the data directory, which is also the folder of the server's socket.
    pub fn data_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// Says whether this process started the server (and so stops it).
    pub fn is_owner(&self) -> bool {
        self.owned.is_some()
    }

    fn wait_until_ready(&mut self) -> Result<(), ClusterError> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if server_answers(&self.socket_dir) {
                return Ok(());
            }
            if let Some(owned) = self.owned.as_mut() {
                let exited = matches!(owned.keeper.try_wait(), Ok(Some(_)));
                if exited || Instant::now() > deadline {
                    return Err(ClusterError::StartFailed {
                        tail: owned.log.summary(),
                    });
                }
            }
            thread::sleep(Duration::from_millis(25));
        }
    }

    /// Stops the server if this process owns it, waiting for it to shut down.
    pub fn stop(&mut self) {
        let Some(mut owned) = self.owned.take() else {
            return;
        };
        drop(owned.keeper_stdin.take());
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match owned.keeper.try_wait() {
                Ok(Some(_)) => {
                    log::info!("stopped embedded PostgreSQL");
                    return;
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                Ok(None) | Err(_) => {
                    log::warn!("embedded PostgreSQL did not stop within {STOP_TIMEOUT:?}");
                    return;
                }
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Returns the default data directory, `./.ringmaster/pg`. When this process is root and the
/// `postgres` user cannot enter a folder on the way there (a checkout under a private home,
/// say), it returns a folder of its own under /var/tmp instead, the same one for the same
/// working directory, so that a second command finds the same cluster.
pub fn default_data_dir() -> PathBuf {
    let preferred = PathBuf::from("./.ringmaster/pg");
    let Ok(run_as) = RunAs::for_current_process() else {
        return preferred;
    };
    let Ok(absolute_path) = std::path::absolute(&preferred) else {
        return preferred;
    };
    let Some(blocked) = run_as.first_blocked_folder(&absolute_path) else {
        return preferred;
    };
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in absolute_path.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let fallback = PathBuf::from(format!("/var/tmp/ringmaster-{hash:016x}/pg"));
    log::warn!(
        "the postgres user cannot enter {}, so the embedded cluster lives in {} (choose another with --data-dir)",
        blocked.display(),
        fallback.display()
    );
    fallback
}

/// Says whether a PostgreSQL server accepts connections on the socket in `socket_dir`.
fn server_answers(socket_dir: &Path) -> bool {
    let socket = socket_dir.join(SOCKET_FILE);
    if !socket.exists() {
        return false;
    }
    let url = format!("{}&connect_timeout=2", socket_url(socket_dir, "postgres"));
    super::connect(&url).is_ok()
}

/// Waits (up to the stop timeout) for the server of the last run on `data_dir` to finish
/// stopping: right after its owner was killed it shuts down while refusing connections, and
/// its `postmaster.pid` would make the new server refuse to start.
fn wait_for_last_server(data_dir: &Path) {
    let still_running = || {
        fs::read_to_string(data_dir.join("postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
            .and_then(|pid| fs::read_to_string(format!("/proc/{pid}/comm")).ok())
            .is_some_and(|name| name.trim() == "postgres")
    };
    let deadline = Instant::now() + STOP_TIMEOUT;
    if still_running() {
        log::warn!(
            "waiting for the PostgreSQL server of the last run on {} to stop",
            data_dir.display()
        );
    }
    while still_running() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
}

/// Holds an exclusive lock on `<data dir>.lock` while this process checks for and starts the
/// server, so that two processes starting together start one server between them.
fn lock_startup(data_dir: &Path) -> Result<File, ClusterError> {
    let lock_path = data_dir.with_extension("lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_error("cannot open", &lock_path))?;
    file.lock().map_err(io_error("cannot lock", &lock_path))?;
    Ok(file)
}

/// The server programs this cluster runs.
struct Binaries {
    initdb: PathBuf,
    postgres: PathBuf,
}

impl Binaries {
    /// Looks in `bin_dir` only when given; otherwise on PATH, then under
    /// /usr/lib/postgresql/<version>/bin, newest version first.
    fn find(bin_dir: Option<&Path>) -> Result<Binaries, ClusterError> {
        search_dirs(bin_dir)
            .iter()
            .find(|dir| is_executable(&dir.join("initdb")) && is_executable(&dir.join("postgres")))
            .map(|dir| Binaries {
                initdb: dir.join("initdb"),
                postgres: dir.join("postgres"),
            })
            .ok_or_else(|| ClusterError::BinariesNotFound {
                searched: searched(bin_dir),
            })
    }
}

/// Where the server's programs are looked for: `bin_dir` only when given; otherwise PATH, then
/// /usr/lib/postgresql/<version>/bin, newest version first.
fn search_dirs(bin_dir: Option<&Path>) -> Vec<PathBuf> {
    match bin_dir {
        Some(dir) => vec![dir.to_path_buf()],
        None => {
            let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
                .map(|path| std::env::split_paths(&path).collect())
                .unwrap_or_default();
            dirs.extend(debian_server_dirs());
            dirs
        }
    }
}

fn searched(bin_dir: Option<&Path>) -> String {
    match bin_dir {
        Some(dir) => format!("in {}", dir.display()),
        None => "on PATH or under /usr/lib/postgresql/*/bin".to_owned(),
    }
}

/// Finds PostgreSQL program `name` (pg_dump, pg_restore …) where the server's programs are.
pub fn server_program(bin_dir: Option<&Path>, name: &str) -> Result<PathBuf, ClusterError> {
    search_dirs(bin_dir)
        .iter()
        .map(|dir| dir.join(name))
        .find(|path| is_executable(path))
        .ok_or_else(|| ClusterError::ProgramNotFound {
            name: name.to_owned(),
            searched: searched(bin_dir),
        })
}

/// Lists /usr/lib/postgresql/<version>/bin folders, highest version first.
fn debian_server_dirs() -> Vec<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The user the server programs run as: the `postgres` user when this process is root
/// (PostgreSQL refuses to run as root), this process's own user otherwise.
struct RunAs {
    ids: Option<(u32, u32)>,
}

impl RunAs {
    fn for_current_process() -> Result<RunAs, ClusterError> {
        if !nix::unistd::geteuid().is_root() {
            return Ok(RunAs { ids: None });
        }
        match nix::unistd::User::from_name("postgres") {
            Ok(Some(user)) => Ok(RunAs {
                ids: Some((user.uid.as_raw(), user.gid.as_raw())),
            }),
            _ => Err(ClusterError::NoPostgresUser),
        }
    }

    /// Returns the first existing folder on the way to `path` that the server's user may
    /// not enter, if any.
    fn first_blocked_folder(&self, path: &Path) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let (uid, gid) = self.ids?;
        path.ancestors()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .filter_map(|folder| fs::metadata(folder).ok().map(|meta| (folder, meta)))
            .find(|(_, meta)| {
                let mode = meta.mode();
                let may_enter = if meta.uid() == uid {
                    mode & 0o100 != 0
                } else if meta.gid() == gid {
                    mode & 0o010 != 0
                } else {
                    mode & 0o001 != 0
                };
                meta.is_dir() && !may_enter
            })
            .map(|(folder, _)| folder.to_path_buf())
    }

    fn apply(&self, command: &mut Command) {
        if let Some((uid, gid)) = self.ids {
            command.uid(uid).gid(gid);
        }
    }

    /// Gives `path` to the server's user, so that it can write there.
    fn hand_over(&self, path: &Path) -> Result<(), ClusterError> {
        if let Some((uid, gid)) = self.ids {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .map_err(io_error("cannot hand to the postgres user", path))?;
        }
        Ok(())
    }
}

fn initdb(
    binaries: &Binaries,
    run_as: &RunAs,
    data_dir: &Path,
    throwaway: bool,
) -> Result<(), ClusterError> {
    let is_empty_or_missing = fs::read_dir(data_dir)
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(true);
    if !is_empty_or_missing {
        return Err(ClusterError::NotACluster(data_dir.to_path_buf()));
    }
    fs::create_dir_all(data_dir).map_err(io_error("cannot create", data_dir))?;
    fs::set_permissions(data_dir, fs::Permissions::from_mode(0o700))
        .map_err(io_error("cannot set permissions of", data_dir))?;
    run_as.hand_over(data_dir)?;

    let mut command = Command::new(&binaries.initdb);
    command
        .arg("--pgdata")
        .arg(data_dir)
        .args([
            "--username=postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
        ])
        .current_dir(data_dir)
        .stdin(Stdio::null());
    if throwaway {
        command.arg("--no-sync");
    }
    run_as.apply(&mut command);
    log::info!(
        "initializing a PostgreSQL cluster in {}",
        data_dir.display()
    );
    let output = command
        .output()
        .map_err(io_error("cannot run", &binaries.initdb))?;
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output.stderr);
    Err(ClusterError::Initdb {
        data_dir: data_dir.to_path_buf(),
        output: super::error::one_line(&text),
    })
}

fn start_server(
    binaries: &Binaries,
    run_as: &RunAs,
    data_dir: &Path,
    options: &ClusterOptions,
) -> Result<OwnedServer, ClusterError> {
    let pipe_failed = io_error("cannot make the log pipe of", &binaries.postgres);
    let (log_reader, log_writer) = std::io::pipe().map_err(pipe_failed)?;
    let pipe_failed = io_error("cannot make the log pipe of", &binaries.postgres);
    let log_writer_for_stderr = log_writer.try_clone().map_err(pipe_failed)?;

    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(KEEPER_SCRIPT)
        .arg("ringmaster-postgres")
        .arg(&binaries.postgres)
        .arg("-D")
        .arg(data_dir)
        .arg("-k")
        .arg(data_dir)
        .args([
            "-c",
            "listen_addresses=",
            "-c",
            "port=5432",
            "-c",
            "max_connections=300",
            // No JIT: its code pages need write+execute memory, which a hardened unit
            // (MemoryDenyWriteExecute) refuses, and ringmaster's short queries gain nothing.
            "-c",
            "jit=off",
        ])
        .args(server_log::SERVER_LOG_SETTINGS)
        .current_dir(data_dir)
        .stdin(Stdio::piped())
        .stdout(log_writer)
        .stderr(log_writer_for_stderr)
        // Its own process group: a Ctrl-C meant for ringmaster must not reach the server
        // before ringmaster has finished with it.
        .process_group(0);
    if options.throwaway {
        // Not `synchronous_commit=off`: a crash of the server (a killed backend) would then
        // lose commits it had acknowledged, and tests crash it on purpose. Without fsync a
        // commit only waits for the WAL to reach the kernel.
        command.args(["-c", "fsync=off", "-c", "full_page_writes=off"]);
        if let Some(root) = data_dir.parent() {
            command.env("RINGMASTER_PG_REMOVE", root);
        }
    }
    run_as.apply(&mut command);
    let mut keeper = command
        .spawn()
        .map_err(io_error("cannot run sh for", &binaries.postgres))?;
    let keeper_stdin = keeper.stdin.take();
    // The pipe's writing ends are the server's now: the reader sees its end when it exits.
    drop(command);
    let log = server_log::Tail::default();
    server_log::forward(log_reader, log.clone()).map_err(io_error(
        "cannot start the log reader of",
        &binaries.postgres,
    ))?;
    Ok(OwnedServer {
        keeper,
        keeper_stdin,
        log,
    })
}

fn absolute(path: &Path) -> Result<PathBuf, ClusterError> {
    std::path::absolute(path).map_err(io_error("cannot resolve", path))
}

fn io_error(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ClusterError {
    let path = path.to_path_buf();
    move |source| ClusterError::Io { what, path, source }
}
