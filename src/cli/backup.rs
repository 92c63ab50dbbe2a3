//! `perfjournal backup` and `perfjournal restore`: the whole instance, database and
//! uploaded files, as one directory:
//!
//! ```text
//! backup-20261129T101500Z/
//!   manifest.json   {"format": "perfjournal-backup", "version": 1, "created_at", "blobs": N, "blob_bytes": B}
//!   database.dump   pg_dump --format=custom (restored with pg_restore --clean)
//!   blobs/sha256/ab/ab…   the blob store's files, byte for byte
//! ```
//!
//! Restore replaces the database's contents and the blob directory with the backup's,
//! so the instance is in the state it was in when the backup was taken.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::config::DbArgs;
use crate::db::{Database, EmbeddedCluster, EMBEDDED_DATABASE};

const FORMAT: &str = "perfjournal-backup";

#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    /// The directory to create (default: DATA_DIR/backups/backup-<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// A directory written by `perfjournal backup`.
    pub dir: PathBuf,
}

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u32,
    created_at: chrono::DateTime<chrono::Utc>,
    blobs: u64,
    blob_bytes: u64,
}

/// A PostgreSQL client program of the same installation as the server binaries.
fn client(program: &str) -> Command {
    match EmbeddedCluster::find_binaries() {
        Ok(dir) if dir.join(program).is_file() => Command::new(dir.join(program)),
        _ => Command::new(program),
    }
}

/// libpq connection arguments for the database the app uses.
fn connection_args(db: &DbArgs, database: &Database) -> Vec<String> {
    match (&db.database_url, &database.cluster) {
        (Some(url), _) => vec![format!("--dbname={url}")],
        (None, Some(cluster)) => vec![
            format!("--host={}", cluster.socket_dir().display()),
            format!("--username={}", crate::db::embedded::SUPERUSER),
            format!("--dbname={EMBEDDED_DATABASE}"),
        ],
        (None, None) => vec![format!("--dbname={EMBEDDED_DATABASE}")],
    }
}

fn run(mut command: Command, what: &str) -> anyhow::Result<()> {
    let out = command.output().with_context(|| {
        format!("running {what} (are the PostgreSQL client programs installed?)")
    })?;
    if !out.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Copies a directory tree; returns (files, bytes).
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
    if !from.exists() {
        return Ok((0, 0));
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            let (f, b) = copy_tree(&entry.path(), &target)?;
            files += f;
            bytes += b;
        } else {
            bytes += std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
            files += 1;
        }
    }
    Ok((files, bytes))
}

pub async fn backup(db: &DbArgs, database: &Database, args: BackupArgs) -> anyhow::Result<()> {
    let created_at = chrono::Utc::now();
    let dir = args.out.unwrap_or_else(|| {
        db.data_dir
            .join("backups")
            .join(format!("backup-{}", created_at.format("%Y%m%dT%H%M%SZ")))
    });
    if dir.exists() && std::fs::read_dir(&dir)?.next().is_some() {
        bail!(
            "{} exists and is not empty; choose another --out",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut dump = client("pg_dump");
    dump.arg("--format=custom")
        .arg("--no-owner")
        .arg("--no-privileges")
        .arg(format!("--file={}", dir.join("database.dump").display()))
        .args(connection_args(db, database));
    run(dump, "pg_dump")?;
    // Only finished blobs: tmp/ holds uploads in progress.
    let (blobs, blob_bytes) = copy_tree(
        &db.data_dir.join("blobs").join("sha256"),
        &dir.join("blobs").join("sha256"),
    )?;
    let manifest = Manifest {
        format: FORMAT.into(),
        version: 1,
        created_at,
        blobs,
        blob_bytes,
    };
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)? + "\n",
    )?;
    println!(
        "backed up the database and {blobs} files ({blob_bytes} bytes) to {}",
        dir.display()
    );
    Ok(())
}

pub async fn restore(db: &DbArgs, database: &Database, args: RestoreArgs) -> anyhow::Result<()> {
    let manifest: Manifest = serde_json::from_str(
        &std::fs::read_to_string(args.dir.join("manifest.json")).with_context(|| {
            format!("{} has no manifest.json: not a backup", args.dir.display())
        })?,
    )
    .context("manifest.json is not a backup manifest")?;
    if manifest.format != FORMAT || manifest.version != 1 {
        bail!(
            "{} is a {} version {} backup; this version reads {FORMAT} version 1",
            args.dir.display(),
            manifest.format,
            manifest.version
        );
    }
    let dump = args.dir.join("database.dump");
    if !dump.is_file() {
        bail!("{} is missing", dump.display());
    }
    let mut restore = client("pg_restore");
    restore
        .arg("--clean")
        .arg("--if-exists")
        .arg("--no-owner")
        .arg("--no-privileges")
        .arg("--single-transaction")
        .arg("--exit-on-error")
        .args(connection_args(db, database))
        .arg(&dump);
    // Idle pool connections would otherwise see the old catalog.
    database.pool.close().await;
    run(restore, "pg_restore")?;
    let blobs = db.data_dir.join("blobs").join("sha256");
    if blobs.exists() {
        std::fs::remove_dir_all(&blobs).with_context(|| format!("clearing {}", blobs.display()))?;
    }
    let (files, bytes) = copy_tree(&args.dir.join("blobs").join("sha256"), &blobs)?;
    if files != manifest.blobs || bytes != manifest.blob_bytes {
        bail!(
            "the backup's blob directory holds {files} files ({bytes} bytes) but its manifest says {} ({} bytes)",
            manifest.blobs,
            manifest.blob_bytes
        );
    }
    println!(
        "restored the database and {files} files from {} (taken {})",
        args.dir.display(),
        manifest.created_at.to_rfc3339()
    );
    Ok(())
}
