//! Uploading a whole trace set at once: rank traces, or archives of a profiler output
//! folder (`.tar`, `.tar.gz`/`.tgz`, `.zip`) whose trace files are unpacked, each into
//! its own artifact (the multipart body is read in the binary's `files::trace_set`, which
//! hands each file here as a byte stream). Every trace goes through the same
//! path as a single upload ([`crate::artifacts::receive`]: streamed to the blob store and
//! analysed as it arrives). An archive is first kept in a temporary file (a zip's
//! directory sits at its end), then read entry by entry on a blocking thread through a
//! bounded channel, so memory stays a few chunks whatever its size. When anything is
//! refused, the traces this upload already stored are deleted again: a refused upload
//! leaves nothing.

use std::io::Read;
use std::path::Path;

use bytes::Bytes;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::artifacts::{self, Artifact, ArtifactStore, Owner};
use crate::core::analyze::trace_set::MAX_RANKS;
use crate::core::analyze::Kind;
use crate::core::FieldError;
use crate::error::Error;

/// How an uploaded file is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Archive {
    Tar,
    TarGz,
    Zip,
}

/// An archive by its name; anything else is one trace.
pub fn archive_of(name: &str) -> Option<Archive> {
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
    let expanded = std::cell::Cell::new(0u64);
    let send = |name: String, reader: &mut dyn Read| -> Result<bool, String> {
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        if out.blocking_send(Ok(Member { name, chunks: rx })).is_err() {
            return Ok(false);
        }
        let mut buf = vec![0u8; CHUNK];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(true),
                Ok(n) => {
                    expanded.set(expanded.get() + n as u64);
                    if expanded.get() > max_expanded {
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
            // Raw entries: the tar crate reads a long-name or PAX header whole into
            // memory, whatever size its header claims (up to 8 GiB). Here each is
            // bounded before it is read, and counted with the members.
            let entries = tar
                .entries()
                .map_err(|e| format!("not a tar archive: {e}"))?
                .raw(true);
            let mut long_name: Option<String> = None;
            for entry in entries {
                let mut entry = entry.map_err(|e| format!("a damaged tar entry: {e}"))?;
                let kind = entry.header().entry_type();
                let size = entry.header().entry_size().unwrap_or(u64::MAX);
                if kind.is_gnu_longname()
                    || kind.is_gnu_longlink()
                    || kind.is_pax_local_extensions()
                    || kind.is_pax_global_extensions()
                {
                    let data = read_extension(&mut entry, size)?;
                    expanded.set(expanded.get() + data.len() as u64);
                    if kind.is_gnu_longname() {
                        let name = data.split(|b| *b == 0).next().unwrap_or_default();
                        long_name = Some(String::from_utf8_lossy(name).into_owned());
                    } else if kind.is_pax_local_extensions() {
                        if let Some(path) = pax_path(&data)? {
                            long_name = Some(path);
                        }
                    }
                    continue;
                }
                let name = long_name.take().unwrap_or_else(|| {
                    entry
                        .path()
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default()
                });
                if !kind.is_file() || !is_trace_member(&name) {
                    continue;
                }
                if !send(name, &mut entry)? {
                    return Ok(());
                }
            }
        }
        Archive::Zip => {
            let mut file = std::io::BufReader::new(file);
            // The directory is read whole by the zip reader: its size is checked first.
            let entries = zip_entries(&mut file)?;
            if entries > MAX_ZIP_ENTRIES {
                return Err(format!(
                    "the zip archive lists {entries} entries; at most {MAX_ZIP_ENTRIES} are read"
                ));
            }
            let mut zip =
                zip::ZipArchive::new(file).map_err(|e| format!("not a zip archive: {e}"))?;
            check_zip_members(&mut zip)?;
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

/// The most entries a zip archive's directory may list (its reader holds the whole
/// directory: a few hundred bytes an entry).
const MAX_ZIP_ENTRIES: u64 = 100_000;

/// The entry count a zip archive's end-of-directory record gives (its Zip64 record when
/// the count overflows 16 bits).
fn zip_entries(file: &mut (impl Read + std::io::Seek)) -> Result<u64, String> {
    use std::io::SeekFrom;
    let not_zip = |why: &str| format!("not a zip archive: {why}");
    let len = file
        .seek(SeekFrom::End(0))
        .map_err(|e| not_zip(&e.to_string()))?;
    let tail = len.min(65_557);
    file.seek(SeekFrom::Start(len - tail))
        .map_err(|e| not_zip(&e.to_string()))?;
    let mut buf = vec![0u8; tail as usize];
    file.read_exact(&mut buf)
        .map_err(|e| not_zip(&e.to_string()))?;
    let eocd = (0..buf.len().saturating_sub(21))
        .rev()
        .find(|&i| buf[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or_else(|| not_zip("no end-of-directory record"))?;
    let count = u64::from(u16::from_le_bytes([buf[eocd + 10], buf[eocd + 11]]));
    if count != 0xffff || eocd < 20 || buf[eocd - 20..eocd - 16] != [0x50, 0x4b, 0x06, 0x07] {
        return Ok(count);
    }
    // Zip64: the locator gives the record's offset; its entry count is at 32.
    let at = u64::from_le_bytes(buf[eocd - 12..eocd - 4].try_into().unwrap_or_default());
    let mut record = [0u8; 40];
    file.seek(SeekFrom::Start(at))
        .and_then(|_| file.read_exact(&mut record))
        .map_err(|_| not_zip("a damaged Zip64 end-of-directory record"))?;
    Ok(u64::from_le_bytes(
        record[32..40].try_into().unwrap_or_default(),
    ))
}

/// Refuses a zip archive whose trace members share a name (one would silently replace
/// the other) or overlap in the file (many entries pointing at one compressed stream,
/// which inflates it once per entry).
fn check_zip_members<R: Read + std::io::Seek>(zip: &mut zip::ZipArchive<R>) -> Result<(), String> {
    if zip.has_duplicate_names() {
        // The reader keeps one entry per name: the others would vanish unseen.
        return Err("two members share a name; a trace set's ranks need distinct files".into());
    }
    let mut spans = Vec::new();
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| format!("zip entry {i} cannot be read: {e}"))?;
        if !entry.is_file() {
            continue;
        }
        let name = entry.name().map(|n| n.into_owned()).unwrap_or_default();
        if !is_trace_member(&name) {
            continue;
        }
        let start = entry.header_start();
        let end = entry.data_start().unwrap_or(start) + entry.compressed_size();
        spans.push((start, end.max(start + 1), i));
    }
    spans.sort_unstable();
    if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(format!(
            "zip entries {} and {} overlap in the file (entries sharing one compressed stream); \
             such an archive is not unpacked",
            w[0].2, w[1].2
        ));
    }
    Ok(())
}

/// The most bytes a tar extension header (a GNU long name or link, PAX records) may
/// hold: paths are at most 4,096 bytes, and PAX records of a trace file a few hundred.
const MAX_EXTENSION_BYTES: u64 = 64 << 10;

/// A tar extension header's data, refused when its size claims more than
/// [`MAX_EXTENSION_BYTES`].
fn read_extension(entry: &mut dyn Read, size: u64) -> Result<Vec<u8>, String> {
    if size > MAX_EXTENSION_BYTES {
        return Err(format!(
            "a tar extension header (a long name or PAX record) claims {size} bytes; at most \
             {MAX_EXTENSION_BYTES} are read"
        ));
    }
    let mut data = Vec::with_capacity(size as usize);
    entry
        .take(MAX_EXTENSION_BYTES)
        .read_to_end(&mut data)
        .map_err(|e| format!("the archive breaks off: {e}"))?;
    Ok(data)
}

/// The `path` of PAX records (`<length> <key>=<value>\n` each). A `size` record is
/// refused: such members (past 8 GiB) are larger than any upload may expand to.
fn pax_path(data: &[u8]) -> Result<Option<String>, String> {
    let mut path = None;
    let mut rest = data;
    while !rest.is_empty() {
        let space = rest.iter().position(|b| *b == b' ');
        let length = space
            .and_then(|i| std::str::from_utf8(&rest[..i]).ok())
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n > space.unwrap_or(0) && *n <= rest.len())
            .ok_or("a malformed PAX record in the tar archive")?;
        let record = &rest[space.unwrap_or(0) + 1..length];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(value) = record.strip_prefix(b"path=") {
            path = Some(String::from_utf8_lossy(value).into_owned());
        } else if record.starts_with(b"size=") {
            return Err("a tar member whose size is given in a PAX record (over 8 GiB)".into());
        }
        rest = &rest[length..];
    }
    Ok(path)
}

/// A stored upload must be a PyTorch trace, and the set not too large.
pub fn check_trace(a: &Artifact, name: &str, before: usize) -> Result<(), Error> {
    if before >= MAX_RANKS {
        return Err(Error::field(
            "file",
            format!("more than {MAX_RANKS} traces: a set holds at most {MAX_RANKS} ranks"),
        ));
    }
    if a.kind() != Kind::PytorchTrace {
        return Err(Error::Invalid(vec![FieldError::new(
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
pub async fn unpack_into<S, E>(
    store: &ArtifactStore,
    owner: Owner,
    user_id: i64,
    archive_name: &str,
    kind: Archive,
    mut body: S,
    list: &mut Vec<Artifact>,
) -> Result<(), Error>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    // In the data dir's spool folder, emptied at every start: a crash mid-upload leaves
    // nothing behind for good.
    let spool = store.spool().dir;
    let tmp = std::fs::create_dir_all(&spool)
        .and_then(|()| {
            tempfile::Builder::new()
                .prefix("archive-")
                .tempfile_in(&spool)
        })
        .map_err(|e| Error::Internal(anyhow::anyhow!("a temporary file: {e}")))?;
    let mut out = tokio::fs::File::create(tmp.path())
        .await
        .map_err(|e| Error::Internal(e.into()))?;
    let mut size: u64 = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            Error::BadRequest(format!(
                "the upload was interrupted ({e}); nothing was stored"
            ))
        })?;
        size += chunk.len() as u64;
        if size > store.upload_limit {
            return Err(Error::PayloadTooLarge(format!(
                "{archive_name} is larger than the upload limit of {} bytes; nothing was stored",
                store.upload_limit
            )));
        }
        out.write_all(&chunk)
            .await
            .map_err(|e| Error::Internal(e.into()))?;
    }
    out.flush().await.map_err(|e| Error::Internal(e.into()))?;
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
        let a = artifacts::receive(store, owner, &name, chunks, user_id, None).await;
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

fn damaged(archive_name: &str, why: &str) -> Error {
    Error::Invalid(vec![FieldError::new(
        "file",
        format!("{archive_name}: {why}; nothing was kept"),
    )])
}

/// A member's artifact name: its path in the archive after the archive's name, cut to
/// the 255 characters a name may have.
fn member_name(archive: &str, member: &str) -> String {
    let member = crate::core::fmt::safe_name(member);
    let member = member.as_str();
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

    /// A zip of `files`, then its central directory's first record repeated under each
    /// of `extra` names (same length as the first name): entries that share one stream.
    fn zip_with_aliases(files: &[(&str, &[u8])], extra: &[&str]) -> Vec<u8> {
        use std::io::Write;
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, bytes) in files {
            z.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            z.write_all(bytes).unwrap();
        }
        let mut out = z.finish().unwrap().into_inner();
        let eocd = out.len() - 22;
        let cd_size = u32::from_le_bytes(out[eocd + 12..eocd + 16].try_into().unwrap()) as usize;
        let cd_start = u32::from_le_bytes(out[eocd + 16..eocd + 20].try_into().unwrap()) as usize;
        let name_len = u16::from_le_bytes(out[cd_start + 28..cd_start + 30].try_into().unwrap());
        let record_len = 46 + name_len as usize;
        let first = out[cd_start..cd_start + record_len].to_vec();
        let mut tail = out.split_off(eocd);
        for name in extra {
            let mut r = first.clone();
            r[46..].copy_from_slice(name.as_bytes());
            out.extend(r);
        }
        let n = (files.len() + extra.len()) as u16;
        tail[8..10].copy_from_slice(&n.to_le_bytes());
        tail[10..12].copy_from_slice(&n.to_le_bytes());
        let size = (cd_size + extra.len() * record_len) as u32;
        tail[12..16].copy_from_slice(&size.to_le_bytes());
        out.extend(tail);
        out
    }

    fn zip_check(bytes: Vec<u8>) -> Result<(), String> {
        let mut cursor = std::io::Cursor::new(bytes);
        assert!(zip_entries(&mut cursor)? <= MAX_ZIP_ENTRIES);
        let mut zip = zip::ZipArchive::new(cursor).map_err(|e| e.to_string())?;
        check_zip_members(&mut zip)
    }

    #[test]
    fn zip_members_sharing_a_stream_or_a_name_are_refused() {
        let trace = br#"{"traceEvents": []}"#;
        assert_eq!(
            zip_check(zip_with_aliases(
                &[("a.json", trace), ("b.json", trace)],
                &[]
            )),
            Ok(())
        );
        let overlap = zip_check(zip_with_aliases(
            &[("a.json", trace)],
            &["b.json", "c.json"],
        ));
        assert!(overlap.unwrap_err().contains("overlap"));
        let same = zip_check(zip_with_aliases(&[("a.json", trace)], &["a.json"]));
        assert!(same.unwrap_err().contains("two members share a name"));
        let mut cursor = std::io::Cursor::new(zip_with_aliases(&[("a.json", trace)], &[]));
        assert_eq!(zip_entries(&mut cursor), Ok(1));
    }

    #[test]
    fn tar_extension_headers_are_bounded_and_read() {
        assert_eq!(
            pax_path(b"30 path=prof/a/very/long.json\n20 mtime=1700000000\n"),
            Ok(Some("prof/a/very/long.json".into()))
        );
        assert!(pax_path(b"20 size=99999999999\n").is_err());
        assert!(pax_path(b"99 path=x\n").is_err());
        let big = read_extension(&mut &[0u8; 16][..], 3_000_000_000).unwrap_err();
        assert!(big.contains("claims 3000000000 bytes"), "{big}");
        assert_eq!(
            read_extension(&mut &b"name\0"[..], 5),
            Ok(b"name\0".to_vec())
        );
    }
}
