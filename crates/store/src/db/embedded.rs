//! A private PostgreSQL cluster under the data directory, so `cargo run` needs no
//! database set up by hand. It listens only on a Unix socket inside the data dir, so it
//! never collides with a system server on port 5432.

use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};
use sqlx::postgres::PgConnectOptions;

/// The role the embedded cluster is created with (trust auth on its private socket).
pub const SUPERUSER: &str = "perfjournal";

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "no PostgreSQL server binaries found (looked for initdb, pg_ctl and postgres on PATH and in \
         /usr/lib/postgresql/*/bin). Either install PostgreSQL (e.g. `apt-get install postgresql`) \
         or set DATABASE_URL to a server you already run."
    )]
    NoBinaries,
    #[error(
        "PostgreSQL refuses to run as root and there is no unprivileged `postgres` system user \
         to run it as; create one, run perfjournal as a normal user, or set DATABASE_URL"
    )]
    NoUnprivilegedUser,
    #[error(
        "the `postgres` system user (PostgreSQL will not run as root) cannot reach {data_dir}: \
         {blocked} is not searchable for it, and the fallback {fallback} is not either \
         ({fallback_blocked}); set PERFJOURNAL_DATA_DIR to a directory outside root's home \
         (e.g. /var/lib/perfjournal), run perfjournal as a normal user, or set DATABASE_URL"
    )]
    Unreachable {
        data_dir: PathBuf,
        blocked: PathBuf,
        fallback: PathBuf,
        fallback_blocked: PathBuf,
    },
    #[error("{what} failed: {detail}")]
    Command { what: String, detail: String },
    #[error("preparing {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A cluster directory plus what is needed to run and reach it.
#[derive(Debug, Clone)]
pub struct EmbeddedCluster {
    bin: PathBuf,
    cluster_dir: PathBuf,
    socket_dir: PathBuf,
    log_file: PathBuf,
    run_as: Option<(u32, u32)>,
    started_here: bool,
}

impl EmbeddedCluster {
    /// Finds the server binaries: a directory on PATH holding `pg_ctl` (links resolved, so
    /// Debian's wrappers lead to the real directory), else the newest `/usr/lib/postgresql/*/bin`.
    pub fn find_binaries() -> Result<PathBuf, ClusterError> {
        let complete = |dir: &Path| {
            ["initdb", "pg_ctl", "postgres"]
                .iter()
                .all(|b| dir.join(b).is_file())
        };
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                let Ok(real) = dir.join("pg_ctl").canonicalize() else {
                    continue;
                };
                if let Some(parent) = real.parent() {
                    if complete(parent) {
                        return Ok(parent.to_path_buf());
                    }
                }
            }
        }
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                let bin = e.path().join("bin");
                complete(&bin).then_some((v, bin))
            })
            .collect();
        versions.sort();
        versions
            .pop()
            .map(|(_, p)| p)
            .ok_or(ClusterError::NoBinaries)
    }

    /// Initializes the cluster under `data_dir/postgres` on first use and starts it (or
    /// adopts a server already running on that directory). Blocking: call from
    /// `spawn_blocking` in async code.
    pub fn start(data_dir: &Path) -> Result<Self, ClusterError> {
        let bin = Self::find_binaries()?;
        let run_as = unprivileged_user()?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ClusterError::Io { path, source }
        };
        std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
        let data_dir = data_dir.canonicalize().map_err(io(data_dir))?;
        let home = cluster_home(&data_dir, run_as)?;
        let cluster_dir = home.join("postgres");
        let socket_dir = socket_dir_for(&home);
        let log_file = socket_dir.join("server.log");
        for dir in [&cluster_dir, &socket_dir] {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        std::fs::set_permissions(&cluster_dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io(&cluster_dir))?;
        std::fs::set_permissions(&socket_dir, std::fs::Permissions::from_mode(0o755))
            .map_err(io(&socket_dir))?;
        if let Some((uid, gid)) = run_as {
            use std::os::unix::fs::MetadataExt;
            // A walk over every file only when ownership is wrong (first run, or a copy).
            let owner = std::fs::metadata(&cluster_dir)
                .map_err(io(&cluster_dir))?
                .uid();
            if owner != uid {
                chown_tree(&cluster_dir, uid, gid)?;
            }
            std::os::unix::fs::chown(&socket_dir, Some(uid), Some(gid)).map_err(io(&socket_dir))?;
            if log_file.exists() {
                std::os::unix::fs::chown(&log_file, Some(uid), Some(gid)).map_err(io(&log_file))?;
            }
        }
        let mut cluster = EmbeddedCluster {
            bin,
            cluster_dir,
            socket_dir,
            log_file,
            run_as,
            started_here: false,
        };
        if !cluster.cluster_dir.join("PG_VERSION").exists() {
            tracing::info!(dir = %cluster.cluster_dir.display(), "initializing the embedded PostgreSQL cluster");
            let dir = cluster.cluster_dir.to_string_lossy().into_owned();
            cluster.run(
                "initdb",
                &[
                    "-D",
                    &dir,
                    "-U",
                    SUPERUSER,
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-instructions",
                ],
            )?;
        }
        if cluster.is_running() {
            tracing::info!("embedded PostgreSQL already running; reusing it");
        } else {
            cluster.start_server()?;
            cluster.started_here = true;
            tracing::info!(socket = %cluster.socket_dir.display(), "embedded PostgreSQL started");
        }
        Ok(cluster)
    }

    /// Starts the server on the existing cluster directory and waits until it accepts
    /// connections (after a crash that includes replaying its WAL). Blocking.
    pub fn start_server(&self) -> Result<(), ClusterError> {
        let options = format!(
            "-k '{}' -c listen_addresses='' -c max_connections=200",
            self.socket_dir.display()
        );
        let dir = self.cluster_dir.to_string_lossy().into_owned();
        let log = self.log_file.to_string_lossy().into_owned();
        self.run(
            "pg_ctl start",
            &[
                "start", "-D", &dir, "-l", &log, "-w", "-t", "60", "-s", "-o", &options,
            ],
        )
    }

    /// The postmaster's process id as its lock file (`postmaster.pid`) records it, when
    /// the file exists.
    pub fn postmaster_pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.cluster_dir.join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// Whether the postmaster is alive: its lock file names a process that exists. A
    /// cheap check (no child process), for the supervisor to run every second.
    pub fn postmaster_alive(&self) -> bool {
        let Some(pid) = self.postmaster_pid().filter(|p| *p > 0) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        let r = unsafe { libc::kill(pid, 0) };
        let exists = r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        // A killed postmaster whose parent has not reaped it yet still "exists" as a zombie.
        exists && !is_zombie(pid)
    }

    /// Connection options for a database of this cluster, over its private socket.
    pub fn connect_options(&self, database: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .socket(&self.socket_dir)
            .username(SUPERUSER)
            .database(database)
    }

    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    pub fn cluster_dir(&self) -> &Path {
        &self.cluster_dir
    }

    /// Whether this process started the server (and so should stop it).
    pub fn started_here(&self) -> bool {
        self.started_here
    }

    pub fn is_running(&self) -> bool {
        let dir = self.cluster_dir.to_string_lossy().into_owned();
        self.command("pg_ctl", &["status", "-D", &dir])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    /// Fast shutdown: open transactions are rolled back, data on disk stays consistent.
    pub fn stop(&self) -> Result<(), ClusterError> {
        let dir = self.cluster_dir.to_string_lossy().into_owned();
        self.run(
            "pg_ctl stop",
            &["stop", "-D", &dir, "-m", "fast", "-w", "-s"],
        )
    }

    /// Immediate shutdown: the server stops at once without a checkpoint, as after a crash
    /// (it recovers from its WAL at the next start). For fault tests.
    pub fn stop_immediately(&self) -> Result<(), ClusterError> {
        let dir = self.cluster_dir.to_string_lossy().into_owned();
        self.run(
            "pg_ctl stop",
            &["stop", "-D", &dir, "-m", "immediate", "-w", "-s"],
        )
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.bin.join(program));
        cmd.args(args)
            .env("LC_ALL", "C")
            .current_dir(&self.socket_dir);
        if let Some((uid, gid)) = self.run_as {
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    fn run(&self, what: &str, args: &[&str]) -> Result<(), ClusterError> {
        let program = what.split(' ').next().unwrap_or(what);
        let out: Output =
            self.command(program, args)
                .output()
                .map_err(|e| ClusterError::Command {
                    what: what.to_string(),
                    detail: e.to_string(),
                })?;
        if out.status.success() {
            return Ok(());
        }
        let mut detail = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if let Ok(log) = std::fs::read_to_string(&self.log_file) {
            let tail: Vec<&str> = log.lines().rev().take(5).collect();
            if !tail.is_empty() {
                detail.push_str("\nserver log: ");
                detail.push_str(&tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
        }
        Err(ClusterError::Command {
            what: what.to_string(),
            detail,
        })
    }
}

/// Where the cluster and its socket live: under the data directory, unless the server's
/// system user cannot reach it (a clone in root's mode-700 home directory, say). Then they
/// live under [`FALLBACK_ROOT`], in a directory named after the data directory, and a
/// pointer file in the data directory records where, so later starts find the same cluster.
fn cluster_home(data_dir: &Path, run_as: Option<(u32, u32)>) -> Result<PathBuf, ClusterError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ClusterError::Io { path, source }
    };
    let pointer = data_dir.join(LOCATION_FILE);
    if let Ok(text) = std::fs::read_to_string(&pointer) {
        let home = PathBuf::from(text.trim());
        if home.is_absolute() {
            tracing::info!(
                cluster = %home.join("postgres").display(),
                pointer = %pointer.display(),
                "embedded PostgreSQL lives outside the data directory (see the pointer file)"
            );
            return Ok(home);
        }
    }
    let Some((uid, gid)) = run_as else {
        return Ok(data_dir.to_path_buf());
    };
    let Some(blocked) = first_unreachable(data_dir, uid, gid) else {
        return Ok(data_dir.to_path_buf());
    };
    let digest = Sha256::digest(data_dir.as_os_str().as_encoded_bytes());
    let home = Path::new(FALLBACK_ROOT).join(&hex::encode(digest)[..16]);
    let mut dir = PathBuf::from("/");
    for part in home.strip_prefix("/").unwrap_or(&home).components() {
        dir.push(part);
        if !dir.exists() {
            std::fs::create_dir(&dir).map_err(io(&dir))?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                .map_err(io(&dir))?;
        }
    }
    if let Some(stop) = first_unreachable(&home, uid, gid) {
        return Err(ClusterError::Unreachable {
            data_dir: data_dir.to_path_buf(),
            blocked,
            fallback: home,
            fallback_blocked: stop,
        });
    }
    std::fs::write(&pointer, format!("{}\n", home.display())).map_err(io(&pointer))?;
    tracing::warn!(
        data_dir = %data_dir.display(),
        blocked = %blocked.display(),
        cluster = %home.join("postgres").display(),
        "the `postgres` system user cannot reach the data directory (a parent is not searchable \
         for it), so the embedded cluster lives elsewhere; the pointer file {} records where",
        pointer.display()
    );
    Ok(home)
}

/// Where clusters go whose data directory the server's system user cannot reach.
pub const FALLBACK_ROOT: &str = "/var/lib/perfjournal/clusters";

/// The file in the data directory that names a cluster kept outside it.
pub const LOCATION_FILE: &str = "postgres-location";

/// The first directory on the way to `path` (itself included) that the user `uid`/`gid`
/// may not search, judged by the permission bits the way the kernel would.
fn first_unreachable(path: &Path, uid: u32, gid: u32) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut dir = PathBuf::new();
    for part in path.components() {
        dir.push(part);
        let Ok(meta) = std::fs::metadata(&dir) else {
            return Some(dir);
        };
        let mode = meta.mode();
        let searchable = if meta.uid() == uid {
            mode & 0o100 != 0
        } else if meta.gid() == gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !searchable {
            return Some(dir);
        }
    }
    None
}

/// Whether `/proc` shows the process as a zombie (dead, not yet reaped).
fn is_zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may hold spaces.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

/// Unix sockets have a path limit of about 107 bytes; a deep data dir gets a short,
/// stable directory under /tmp instead.
fn socket_dir_for(data_dir: &Path) -> PathBuf {
    let preferred = data_dir.join("run");
    if preferred.as_os_str().len() + "/.s.PGSQL.5432".len() < 100 {
        return preferred;
    }
    let digest = Sha256::digest(data_dir.as_os_str().as_encoded_bytes());
    PathBuf::from(format!("/tmp/perfjournal-{}", &hex::encode(digest)[..16]))
}

/// When running as root, the uid/gid of the `postgres` system user to run the server as.
fn unprivileged_user() -> Result<Option<(u32, u32)>, ClusterError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = CString::new("postgres").expect("no NUL in literal");
    // SAFETY: getpwnam returns a pointer to static storage or null; we copy the ids out
    // immediately and do not keep the pointer.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    if entry.is_null() {
        return Err(ClusterError::NoUnprivilegedUser);
    }
    // SAFETY: non-null pointer from getpwnam, read before any other passwd call.
    let (uid, gid) = unsafe { ((*entry).pw_uid, (*entry).pw_gid) };
    Ok(Some((uid, gid)))
}

fn chown_tree(dir: &Path, uid: u32, gid: u32) -> Result<(), ClusterError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ClusterError::Io { path, source }
    };
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid)).map_err(err(dir))?;
    if dir.is_dir() && !dir.is_symlink() {
        for entry in std::fs::read_dir(dir).map_err(err(dir))? {
            let path = entry.map_err(err(dir))?.path();
            chown_tree(&path, uid, gid)?;
        }
    }
    Ok(())
}
