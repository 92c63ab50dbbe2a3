//! Reader adapters shared by the analyzers: byte counting with progress, gzip
//! sniffing with a size cap, UTF-8 repair, bounded line reading, and a rewriter
//! that turns Python's bare `NaN`/`Infinity` into JSON `null`.

use super::AnalyzeError;
use flate2::read::MultiGzDecoder;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

/// How often (in raw bytes) [`CountingReader`] reports progress.
const PROGRESS_EVERY: u64 = 1 << 20;

/// Counts the bytes read from `inner` and reports them to `progress`
/// about every MiB, plus once when the input ends.
pub struct CountingReader<'a, R> {
    inner: R,
    count: u64,
    next_report: u64,
    progress: &'a (dyn Fn(u64) + Sync),
    finished: bool,
}

impl<'a, R: Read> CountingReader<'a, R> {
    pub fn new(inner: R, progress: &'a (dyn Fn(u64) + Sync)) -> Self {
        CountingReader {
            inner,
            count: 0,
            next_report: PROGRESS_EVERY,
            progress,
            finished: false,
        }
    }
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        if n == 0 && !buf.is_empty() {
            if !self.finished {
                self.finished = true;
                (self.progress)(self.count);
            }
        } else if self.count >= self.next_report {
            (self.progress)(self.count);
            self.next_report = self.count + PROGRESS_EVERY;
        }
        Ok(n)
    }
}

/// The marker error inside the `io::Error` that [`decompressing_reader`]
/// returns once the cap is passed; `AnalyzeError` maps it to `TooLarge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeCapExceeded {
    /// The cap in decompressed bytes.
    pub cap: u64,
}

impl fmt::Display for SizeCapExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "decompressed content exceeds the limit of {} bytes (gzip-bomb guard)",
            self.cap
        )
    }
}

impl std::error::Error for SizeCapExceeded {}

/// Marker for a corrupt or truncated gzip stream, so it reads as malformed
/// input rather than as a failing disk.
#[derive(Debug)]
struct CorruptGzip(String);

impl fmt::Display for CorruptGzip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the gzip stream is corrupt or truncated: {}", self.0)
    }
}

impl std::error::Error for CorruptGzip {}

/// Turn an io error from our reader stack into the matching `AnalyzeError`.
pub(crate) fn classify_io_error(e: io::Error) -> AnalyzeError {
    if let Some(inner) = e.get_ref() {
        if inner.downcast_ref::<SizeCapExceeded>().is_some() {
            return AnalyzeError::TooLarge;
        }
        if let Some(c) = inner.downcast_ref::<CorruptGzip>() {
            return AnalyzeError::malformed(c.to_string());
        }
        if let Some(t) = inner.downcast_ref::<StringTooLong>() {
            return AnalyzeError::Malformed {
                line: None,
                byte: Some(t.byte),
                message: t.to_string(),
            };
        }
    }
    AnalyzeError::Io(e)
}

type Sniffed<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

enum Source<R: Read> {
    Plain(Sniffed<R>),
    Gzip(Box<MultiGzDecoder<BufReader<Sniffed<R>>>>),
    /// Reading the magic bytes failed; the error is returned by the first read.
    Failed(Option<io::Error>),
}

/// See [`decompressing_reader`].
pub struct Decompressed<R: Read> {
    source: Source<R>,
    produced: u64,
    cap: u64,
}

/// True when `head` starts with the gzip magic bytes `1f 8b` (RFC 1952 §2.3.1).
pub(crate) fn starts_gzip(head: &[u8]) -> bool {
    head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b
}

/// Wrap `r` so that gzip content (magic bytes `1f 8b`, RFC 1952) is
/// decompressed transparently (concatenated members too) and anything else
/// passes through. Once more than `cap` bytes were produced, reads fail with an
/// `io::Error` wrapping [`SizeCapExceeded`].
pub fn decompressing_reader<R: Read>(mut r: R, cap: u64) -> impl Read {
    let mut magic = [0u8; 2];
    let mut got = 0;
    let mut failure = None;
    while got < magic.len() {
        match r.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let source = if let Some(e) = failure {
        Source::Failed(Some(e))
    } else {
        let head = magic[..got].to_vec();
        let gz = starts_gzip(&head);
        let chained = io::Cursor::new(head).chain(r);
        if gz {
            Source::Gzip(Box::new(MultiGzDecoder::new(BufReader::with_capacity(
                64 << 10,
                chained,
            ))))
        } else {
            Source::Plain(chained)
        }
    };
    Decompressed {
        source,
        produced: 0,
        cap,
    }
}

impl<R: Read> Read for Decompressed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.produced > self.cap {
            return Err(cap_error(self.cap));
        }
        // Never hand out more than one byte past the cap, so the guard trips
        // without decompressing a whole extra buffer.
        let room = (self.cap - self.produced).saturating_add(1);
        let len = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let buf = &mut buf[..len];
        let n = match &mut self.source {
            Source::Plain(r) => r.read(buf)?,
            Source::Gzip(r) => r.read(buf).map_err(|e| {
                if e.kind() == io::ErrorKind::Interrupted {
                    e
                } else {
                    io::Error::new(e.kind(), CorruptGzip(e.to_string()))
                }
            })?,
            Source::Failed(e) => {
                return Err(e
                    .take()
                    .unwrap_or_else(|| io::Error::other("reading the upload failed earlier")))
            }
        };
        self.produced += n as u64;
        if self.produced > self.cap {
            return Err(cap_error(self.cap));
        }
        Ok(n)
    }
}

fn cap_error(cap: u64) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, SizeCapExceeded { cap })
}

/// Outcome of [`read_line_bounded`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line (without its `\n` / `\r\n`) is in the buffer.
    Got,
    /// The input ended.
    Eof,
    /// The line is longer than the limit; the buffer holds its first part.
    TooLong,
}

/// Read one line into `buf` (cleared first) without ever holding more than
/// `max` bytes of it, so a file without newlines cannot exhaust memory.
pub(crate) fn read_line_bounded<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    buf.clear();
    let mut saw_any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            if !saw_any {
                return Ok(Line::Eof);
            }
            break;
        }
        saw_any = true;
        match memchr::memchr(b'\n', avail) {
            Some(i) => {
                if buf.len() + i > max {
                    let take = max.saturating_sub(buf.len());
                    buf.extend_from_slice(&avail[..take]);
                    r.consume(i + 1);
                    return Ok(Line::TooLong);
                }
                buf.extend_from_slice(&avail[..i]);
                r.consume(i + 1);
                break;
            }
            None => {
                let len = avail.len();
                if buf.len() + len > max {
                    let take = max.saturating_sub(buf.len());
                    buf.extend_from_slice(&avail[..take]);
                    r.consume(len);
                    return Ok(Line::TooLong);
                }
                buf.extend_from_slice(avail);
                r.consume(len);
            }
        }
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Line::Got)
}

/// Longest token we rewrite (`-Infinity`).
const NAN_LOOKAHEAD: usize = 9;

/// Rewrites the bare tokens `NaN`, `Infinity` and `-Infinity` (which Python's
/// `json.dump` writes but JSON forbids) to `null` outside of strings, counting
/// them, so benchmark files with a NaN metric still parse.
pub(crate) struct NanToNull<R> {
    inner: R,
    pending: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    in_string: bool,
    escaped: bool,
    eof: bool,
    /// Bytes of the string being read so far (see [`MAX_JSON_STRING`]).
    string_len: usize,
    /// Bytes passed through before the current block (for the error's position).
    offset: u64,
    /// How many tokens were rewritten.
    pub(crate) replaced: u64,
}

/// The longest JSON string a benchmark file may hold. serde_json collects a string it
/// hands over (a key, a kept value) in one buffer, so without a cap one giant string
/// would take as much memory as it is long. Real files hold model names and error
/// messages; 1 MiB is far above them.
pub(crate) const MAX_JSON_STRING: usize = 1 << 20;

impl<R: Read> NanToNull<R> {
    pub(crate) fn new(inner: R) -> Self {
        NanToNull {
            inner,
            pending: Vec::new(),
            out: Vec::with_capacity(64 << 10),
            out_pos: 0,
            in_string: false,
            escaped: false,
            eof: false,
            string_len: 0,
            offset: 0,
            replaced: 0,
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        self.out.clear();
        self.out_pos = 0;
        let start = self.pending.len();
        self.pending.resize(start + (64 << 10), 0);
        let n = loop {
            match self.inner.read(&mut self.pending[start..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.pending.truncate(start);
                    return Err(e);
                }
            }
        };
        self.pending.truncate(start + n);
        if n == 0 {
            self.eof = true;
        }
        let data = std::mem::take(&mut self.pending);
        let block_offset = self.offset;
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            if self.in_string {
                self.string_len += 1;
                if self.string_len > MAX_JSON_STRING {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        StringTooLong {
                            byte: block_offset + i as u64 + 1 - self.string_len as u64,
                        },
                    ));
                }
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                self.out.push(b);
                i += 1;
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.string_len = 0;
                    self.out.push(b);
                    i += 1;
                }
                b'N' | b'I' | b'-' => {
                    // Need enough lookahead to decide; keep the tail for later.
                    if data.len() - i < NAN_LOOKAHEAD && !self.eof {
                        self.pending.extend_from_slice(&data[i..]);
                        break;
                    }
                    let rest = &data[i..];
                    let token_len = if rest.starts_with(b"NaN") {
                        3
                    } else if rest.starts_with(b"Infinity") {
                        8
                    } else if rest.starts_with(b"-Infinity") {
                        9
                    } else {
                        0
                    };
                    if token_len > 0 {
                        self.out.extend_from_slice(b"null");
                        self.replaced += 1;
                        i += token_len;
                    } else {
                        self.out.push(b);
                        i += 1;
                    }
                }
                _ => {
                    self.out.push(b);
                    i += 1;
                }
            }
        }
        self.offset = block_offset + (data.len() - self.pending.len()) as u64;
        Ok(())
    }
}

/// Marker inside the `io::Error` [`NanToNull`] returns for a string over
/// [`MAX_JSON_STRING`]; `classify_io_error` turns it into a malformed-input error.
#[derive(Debug)]
pub(crate) struct StringTooLong {
    /// 0-based offset of the string's first byte (its quote) in the decompressed content.
    pub byte: u64,
}

impl fmt::Display for StringTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a string longer than {} MiB (no benchmark field is that long)",
            MAX_JSON_STRING >> 20
        )
    }
}

impl std::error::Error for StringTooLong {}

impl<R: Read> Read for NanToNull<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.out_pos >= self.out.len() {
            if self.eof && self.pending.is_empty() {
                return Ok(0);
            }
            self.refill()?;
        }
        let n = buf.len().min(self.out.len() - self.out_pos);
        buf[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `step` bytes per call, to exercise
    /// boundaries inside multi-byte characters and tokens.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn read_all(mut r: impl Read) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        r.read_to_end(&mut v)?;
        Ok(v)
    }

    #[test]
    fn plain_and_gzip_pass_through() {
        let text = b"hello world\n".repeat(1000);
        assert_eq!(
            read_all(decompressing_reader(&text[..], 1 << 20)).unwrap(),
            text
        );
        let gz = super::super::test_support::gzip(&text);
        assert!(starts_gzip(&gz));
        let r = decompressing_reader(Trickle { data: &gz, step: 1 }, 1 << 20);
        assert_eq!(read_all(r).unwrap(), text);
        // Tiny inputs (0 and 1 byte) survive the 2-byte sniff.
        assert_eq!(read_all(decompressing_reader(&b""[..], 10)).unwrap(), b"");
        assert_eq!(read_all(decompressing_reader(&b"x"[..], 10)).unwrap(), b"x");
    }

    #[test]
    fn concatenated_gzip_members_are_read() {
        let mut gz = super::super::test_support::gzip(b"first ");
        gz.extend(super::super::test_support::gzip(b"second"));
        assert_eq!(
            read_all(decompressing_reader(&gz[..], 100)).unwrap(),
            b"first second"
        );
    }

    #[test]
    fn cap_stops_with_marker_error() {
        let text = vec![b'a'; 10_000];
        let gz = super::super::test_support::gzip(&text);
        let err = read_all(decompressing_reader(&gz[..], 1000)).unwrap_err();
        let marker = err.get_ref().unwrap().downcast_ref::<SizeCapExceeded>();
        assert_eq!(marker, Some(&SizeCapExceeded { cap: 1000 }));
        assert!(err.to_string().contains("1000 bytes"));
        assert!(matches!(classify_io_error(err), AnalyzeError::TooLarge));
        // Exactly at the cap is fine.
        assert_eq!(
            read_all(decompressing_reader(&text[..], 10_000))
                .unwrap()
                .len(),
            10_000
        );
    }

    #[test]
    fn truncated_gzip_is_malformed() {
        let gz = super::super::test_support::gzip(&b"some text ".repeat(500));
        let cut = &gz[..gz.len() / 2];
        let err = read_all(decompressing_reader(cut, 1 << 20)).unwrap_err();
        let e = classify_io_error(err);
        assert!(matches!(e, AnalyzeError::Malformed { .. }), "{e:?}");
        assert!(e.to_string().contains("gzip"));
    }

    #[test]
    fn counting_reader_reports_progress() {
        let data = vec![0u8; 3 << 20];
        let seen = std::sync::Mutex::new(Vec::new());
        let cb = |n: u64| seen.lock().unwrap().push(n);
        let r = CountingReader::new(&data[..], &cb);
        assert_eq!(read_all(r).unwrap().len(), data.len());
        let seen = seen.into_inner().unwrap();
        assert!(seen.len() >= 3, "{seen:?}");
        assert_eq!(*seen.last().unwrap(), data.len() as u64);
    }

    #[test]
    fn bounded_lines() {
        let data = b"one\r\ntwo\n\nlast-no-newline";
        let mut r = BufReader::with_capacity(3, &data[..]);
        let mut buf = Vec::new();
        let mut lines = Vec::new();
        while read_line_bounded(&mut r, &mut buf, 100).unwrap() == Line::Got {
            lines.push(String::from_utf8(buf.clone()).unwrap());
        }
        assert_eq!(lines, ["one", "two", "", "last-no-newline"]);
        let long = vec![b'x'; 1000];
        let mut r = BufReader::with_capacity(64, &long[..]);
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 100).unwrap(),
            Line::TooLong
        );
        assert!(buf.len() <= 100);
    }

    #[test]
    fn nan_tokens_become_null_outside_strings() {
        let src =
            br#"{"a": NaN, "b": [1, Infinity, -Infinity, -2], "s": "NaN Infinity", "e": "x\"NaN"}"#;
        for step in [1, 4, 9, 1 << 20] {
            let mut r = NanToNull::new(Trickle { data: src, step });
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(v["a"], serde_json::Value::Null, "step {step}");
            assert_eq!(v["b"], serde_json::json!([1, null, null, -2]));
            assert_eq!(v["s"], "NaN Infinity");
            assert_eq!(v["e"], "x\"NaN");
            assert_eq!(r.replaced, 3);
        }
    }
}
