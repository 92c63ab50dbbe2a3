//! Kinds read from a file on disk (an Nsight Systems SQLite export, see
//! [`Kind::needs_file`]): the upload's bytes (gzip undone) are written to a file in the
//! spool folder, at most the upload limit of them; the file is opened read-only and
//! handed to the core analyzer as a connection, then removed, also when the analysis
//! fails or panics (the file's guard removes it when dropped).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::core::analyze::{self, nsys_sqlite, Analysis, AnalyzeError, Kind, Options};

/// Where spooled files go and how large one may grow.
#[derive(Clone, Debug)]
pub struct Spool {
    pub dir: PathBuf,
    /// Bytes written at most (the upload limit: a gzip upload cannot unpack to more).
    pub limit: u64,
}

/// A spooled file, removed when dropped.
struct SpooledFile {
    path: PathBuf,
}

impl Drop for SpooledFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Analyzes an upload of a kind read from a file: spools `reader` (the bytes as stored;
/// gzip is undone here), opens the file read-only and runs the kind's analyzer.
/// `progress` counts the raw bytes read.
pub fn analyze(
    kind: Kind,
    reader: impl Read + Send,
    opts: &Options,
    progress: &(dyn Fn(u64) + Sync),
    spool: &Spool,
) -> Result<Analysis, AnalyzeError> {
    if !kind.needs_file() {
        return analyze::analyze(kind, reader, opts, progress);
    }
    let counted = analyze::CountingReader::new(reader, progress);
    let input = analyze::decompressing_reader(counted, opts.max_decompressed_bytes);
    let file = write_file(input, spool)?;
    match kind {
        Kind::NsysSqlite => {
            let conn = open_read_only(&file.path)?;
            let result = nsys_sqlite::analyze(&conn, opts);
            drop(conn);
            drop(file);
            Ok(Analysis::NsysSqlite(result?))
        }
        other => Err(AnalyzeError::NeedsFile(other)),
    }
}

fn write_file(mut input: impl Read, spool: &Spool) -> Result<SpooledFile, AnalyzeError> {
    let cannot = |e: std::io::Error| {
        AnalyzeError::malformed(format!(
            "the file could not be written to the spool folder for reading: {e}"
        ))
    };
    std::fs::create_dir_all(&spool.dir).map_err(cannot)?;
    let path = spool
        .dir
        .join(format!("{}.sqlite", uuid::Uuid::new_v4().simple()));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(cannot)?;
    // From here on the guard removes the file, whatever happens.
    let file = SpooledFile { path };
    let mut buf = vec![0u8; 1 << 20];
    let mut written: u64 = 0;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        written += n as u64;
        if written > spool.limit {
            return Err(AnalyzeError::malformed(format!(
                "the export unpacks to more than {} bytes, the upload limit; it is not analyzed",
                crate::core::fmt::grouped(spool.limit)
            )));
        }
        out.write_all(&buf[..n]).map_err(cannot)?;
    }
    out.flush().map_err(cannot)?;
    drop(out);
    Ok(file)
}

/// Opens the spooled file read-only and immutable (no locks, no journal files beside it).
fn open_read_only(path: &Path) -> Result<nsys_sqlite::Connection, AnalyzeError> {
    let uri = format!("file:{}?immutable=1", uri_path(path));
    nsys_sqlite::Connection::open_with_flags(
        uri,
        nsys_sqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | nsys_sqlite::OpenFlags::SQLITE_OPEN_URI
            | nsys_sqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| AnalyzeError::malformed(format!("the SQLite file cannot be opened: {e}")))
}

/// A path for an SQLite `file:` URI: characters with a meaning there are %-escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.to_string_lossy().bytes() {
        match b {
            b'%' | b'?' | b'#' | b' ' | 0x80.. => out.push_str(&format!("%{b:02X}")),
            _ => out.push(b as char),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_escape_what_a_uri_reads() {
        assert_eq!(
            uri_path(Path::new("/data/a b/x?y#z%é.sqlite")),
            "/data/a%20b/x%3Fy%23z%25%C3%A9.sqlite"
        );
    }
}
