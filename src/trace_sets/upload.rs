//! Uploading a whole trace set at once: a multipart body of rank traces, or of
//! archives of a profiler output folder (`.tar`, `.tar.gz`/`.tgz`, `.zip`) whose trace
//! files are unpacked, each into its own artifact. Every trace goes through the same
//! path as a single upload ([`crate::artifacts::receive`]: streamed to the blob store and
//! analysed as it arrives). An archive is first kept in a temporary file (a zip's
//! directory sits at its end), then read entry by entry on a blocking thread through a
//! bounded channel, so memory stays a few chunks whatever its size. When anything is
//! refused, the traces this upload already stored are deleted again: a refused upload
//! leaves nothing.

use std::io::Read;
use std::path::Path;

use axum::extract::{FromRequest, Multipart, Request};
use bytes::Bytes;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::artifacts::{self, Artifact, ArtifactStore, Owner};
use crate::core::analyze::trace_set::MAX_RANKS;
use crate::core::analyze::Kind;
use crate::core::FieldError;
use crate::error::AppError;

/// How an uploaded file is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Archive {
    Tar,
    TarGz,
    Zip,
}

/// An archive by its name; anything else is one trace.
fn archive_of(name: &str) -> Option<Archive> {
    let n = name.to_ascii_lowercase();
    if n.ends_with(".tar.gz") || n.ends_with(".tgz") {
        Some(Archive::TarGz)
    } else if n.ends_with(".tar") {
        Some(Archive::Tar)
    } else if n.ends_with(".zip") {
        Some(Archive::Zip)
    } else {
        None
    }
}

/// Whether an archive member is a profiler trace file (`*.json`, `*.json.gz`, as the
/// PyTorch profiler writes them, e.g. `host_1234.1700000000000.pt.trace.json.gz`).
fn is_trace_member(path: &str) -> bool {
    let n = path.to_ascii_lowercase();
    let base = n.rsplit('/').next().unwrap_or(&n);
    !base.starts_with('.') && (base.ends_with(".json") || base.ends_with(".json.gz"))
}

/// Bytes read from an archive member at a time.
const CHUNK: usize = 1 << 20;

/// One trace file inside an archive, as its bytes come.
struct Member {
    name: String,
    chunks: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
}

/// Reads the archive at `path` on this (blocking) thread, handing each trace member to
/// `out` with its bytes in chunks; the receiver paces it.
fn unpack(
    path: &Path,
    kind: Archive,
    max_expanded: u64,
    out: tokio::sync::mpsc::Sender<Result<Member, String>>,
) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("reading the archive back: {e}"))?;
    // What the members expand to, together: bounded like any compressed upload.
    let mut expanded: u64 = 0;
    let mut send = |name: String, reader: &mut dyn Read| -> Result<bool, String> {
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        if out.blocking_send(Ok(Member { name, chunks: rx })).is_err() {
            return Ok(false);
        }
        let mut buf = vec![0u8; CHUNK];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(true),
                Ok(n) => {
                    expanded += n as u64;
                    if expanded > max_expanded {
                        let why = format!(
                            "its traces expand past {max_expanded} bytes, the most a compressed upload may expand to"
                        );
                        let _ = tx.blocking_send(Err(why.clone()));
                        return Err(why);
                    }
                    if tx
                        .blocking_send(Ok(Bytes::copy_from_slice(&buf[..n])))
                        .is_err()
                    {
                        return Ok(false);
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e.to_string()));
                    return Err(format!("the archive breaks off: {e}"));
                }
            }
        }
    };
    match kind {
        Archive::Tar | Archive::TarGz => {
            let reader: Box<dyn Read> = if kind == Archive::TarGz {
                Box::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)))
            } else {
                Box::new(std::io::BufReader::new(file))
            };
            let mut tar = tar::Archive::new(reader);
            let entries = tar
                .entries()
                .map_err(|e| format!("not a tar archive: {e}"))?;
            for entry in entries {
                let mut entry = entry.map_err(|e| format!("a damaged tar entry: {e}"))?;
                if !entry.header().entry_type().is_file() {
                    continue;
                }
                let name = entry
                    .path()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if !is_trace_member(&name) {
                    continue;
                }
                if !send(name, &mut entry)? {
                    return Ok(());
                }
            }
        }
        Archive::Zip => {
            let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
                .map_err(|e| format!("not a zip archive: {e}"))?;
            for i in 0..zip.len() {
                let mut entry = zip
                    .by_index(i)
                    .map_err(|e| format!("zip entry {i} cannot be read: {e}"))?;
                if !entry.is_file() {
                    continue;
                }
                let name = entry.name().map(|n| n.into_owned()).unwrap_or_default();
                if !is_trace_member(&name) {
                    continue;
                }
                if !send(name, &mut entry)? {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// The traces stored so far by one upload; deleted again unless kept.
struct Stored<'a> {
    store: &'a ArtifactStore,
    user: &'a crate::auth::User,
    list: Vec<Artifact>,
}

impl Stored<'_> {
    async fn undo(self) {
        for a in self.list {
            if let Err(e) =
                artifacts::delete(&self.store.pool, &self.store.blobs, a.id, self.user).await
            {
                tracing::error!(id = a.id, error = %e, "removing a trace of a refused set upload");
            }
        }
    }
}

/// Receives every file of the body (unpacking archives) as trace artifacts; all of them,
/// or nothing and the reason. The set's name comes from the query, or from a `name`
/// field before the files (as a form sends it); it is checked before the first file.
pub async fn receive_traces(
    store: &ArtifactStore,
    req: Request,
    owner: Owner,
    user: &crate::auth::User,
    name: Option<String>,
) -> Result<(String, Vec<Artifact>), AppError> {
    let mut stored = Stored {
        store,
        user,
        list: Vec::new(),
    };
    match receive_all(store, req, owner, user.id, name, &mut stored.list).await {
        Ok(name) => Ok((name, stored.list)),
        Err(e) => {
            stored.undo().await;
            Err(e)
        }
    }
}

async fn receive_all(
    store: &ArtifactStore,
    req: Request,
    owner: Owner,
    user_id: i64,
    mut set_name: Option<String>,
    list: &mut Vec<Artifact>,
) -> Result<String, AppError> {
    let mut form = Multipart::from_request(req, &())
        .await
        .map_err(|e| AppError::BadRequest(format!("the multipart body is malformed: {e}")))?;
    let mut files = 0;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| AppError::BadRequest(format!("the multipart body is malformed: {e}")))?
    {
        if field.file_name().is_none() && field.name() == Some("name") {
            let text = field.text().await.map_err(|e| {
                AppError::BadRequest(format!("the multipart body is malformed: {e}"))
            })?;
            set_name = Some(text);
            continue;
        }
        if field.file_name().is_none() && field.name() != Some("file") {
            continue;
        }
        if files == 0 {
            let mut errors = Vec::new();
            match super::clean_set_name(set_name.as_deref(), &mut errors) {
                Some(n) => set_name = Some(n),
                None => return Err(AppError::Invalid(errors)),
            }
        }
        files += 1;
        let name =
            artifacts::clean_name(field.file_name()).map_err(|e| AppError::Invalid(vec![e]))?;
        match archive_of(&name) {
            None => {
                let a = artifacts::receive(store, owner, &name, field, user_id).await?;
                let checked = check_trace(&a, &name, list.len());
                // Kept in the list either way, so a refusal deletes it too.
                list.push(a);
                checked?;
            }
            Some(kind) => unpack_into(store, owner, user_id, &name, kind, field, list).await?,
        }
    }
    if files == 0 {
        return Err(AppError::field(
            "file",
            "no file in the form: choose the rank traces, or an archive of the profiler folder",
        ));
    }
    if list.is_empty() {
        return Err(AppError::field(
            "file",
            "no trace in the upload: the archives hold no .json or .json.gz file",
        ));
    }
    Ok(set_name.unwrap_or_default())
}

/// A stored upload must be a PyTorch trace, and the set not too large.
fn check_trace(a: &Artifact, name: &str, before: usize) -> Result<(), AppError> {
    if before >= MAX_RANKS {
        return Err(AppError::field(
            "file",
            format!("more than {MAX_RANKS} traces: a set holds at most {MAX_RANKS} ranks"),
        ));
    }
    if a.kind() != Kind::PytorchTrace {
        return Err(AppError::Invalid(vec![FieldError::new(
            "file",
            format!(
                "{name} is a {}, not a PyTorch profiler trace; a trace set holds one trace per rank (nothing was kept)",
                a.kind
            ),
        )]));
    }
    Ok(())
}

/// An archive: kept in a temporary file (bounded by the upload limit), then each trace
/// member received as an artifact.
async fn unpack_into(
    store: &ArtifactStore,
    owner: Owner,
    user_id: i64,
    archive_name: &str,
    kind: Archive,
    mut field: axum::extract::multipart::Field<'_>,
    list: &mut Vec<Artifact>,
) -> Result<(), AppError> {
    let tmp = tempfile::NamedTempFile::new()
        .map_err(|e| AppError::Internal(anyhow::anyhow!("a temporary file: {e}")))?;
    let mut out = tokio::fs::File::create(tmp.path())
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    let mut size: u64 = 0;
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(|e| {
            AppError::BadRequest(format!(
                "the upload was interrupted ({e}); nothing was stored"
            ))
        })?;
        size += chunk.len() as u64;
        if size > store.upload_limit {
            return Err(AppError::PayloadTooLarge(format!(
                "{archive_name} is larger than the upload limit of {} bytes; nothing was stored",
                store.upload_limit
            )));
        }
        out.write_all(&chunk)
            .await
            .map_err(|e| AppError::Internal(e.into()))?;
    }
    out.flush()
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    drop(out);
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let path = tmp.path().to_path_buf();
    let max_expanded = store.max_decompressed_bytes;
    let reader = crate::memory::spawn_blocking(move || {
        let outcome = unpack(&path, kind, max_expanded, tx.clone());
        if let Err(e) = &outcome {
            let _ = tx.blocking_send(Err(e.clone()));
        }
        outcome
    });
    let mut failure = None;
    while let Some(m) = rx.recv().await {
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        let name = member_name(archive_name, &m.name);
        let chunks = tokio_stream_of(m.chunks);
        let a = artifacts::receive(store, owner, &name, chunks, user_id).await;
        match a {
            Ok(a) => {
                let checked = check_trace(&a, &name, list.len());
                list.push(a);
                checked?;
            }
            Err(e) => {
                drop(rx);
                // A member cut short is the archive's fault: say so, by its name.
                if let Ok(Err(why)) = reader.await {
                    return Err(damaged(archive_name, &why));
                }
                return Err(e.into());
            }
        }
    }
    drop(rx);
    let _ = reader.await;
    if let Some(why) = failure {
        return Err(damaged(archive_name, &why));
    }
    Ok(())
}

fn damaged(archive_name: &str, why: &str) -> AppError {
    AppError::Invalid(vec![FieldError::new(
        "file",
        format!("{archive_name}: {why}; nothing was kept"),
    )])
}

/// A member's artifact name: its path in the archive after the archive's name, cut to
/// the 255 characters a name may have.
fn member_name(archive: &str, member: &str) -> String {
    let full = format!("{archive}:{member}");
    let base = member.rsplit('/').next().unwrap_or(member);
    if full.chars().count() <= 255 {
        full
    } else {
        base.chars().take(255).collect()
    }
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
) -> impl futures::Stream<Item = Result<Bytes, String>> + Unpin {
    Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_and_trace_members_by_name() {
        assert_eq!(archive_of("run.tar.gz"), Some(Archive::TarGz));
        assert_eq!(archive_of("run.TGZ"), Some(Archive::TarGz));
        assert_eq!(archive_of("run.tar"), Some(Archive::Tar));
        assert_eq!(archive_of("run.zip"), Some(Archive::Zip));
        assert_eq!(archive_of("rank0.json.gz"), None);
        assert!(is_trace_member("prof/host_1.1700.pt.trace.json.gz"));
        assert!(is_trace_member("rank0.json"));
        assert!(!is_trace_member("prof/._rank0.json"));
        assert!(!is_trace_member("prof/README.md"));
        assert_eq!(
            member_name("run.tar", "prof/r0.json"),
            "run.tar:prof/r0.json"
        );
    }
}
