//! One request line of the telemetry: its typed fields, how a line is read
//! and checked, and its binary COPY form.

use super::{Hint, MAX_LINE_BYTES};
use crate::analyze::{decompressing_reader, AnalyzeError, DEFAULT_MAX_DECOMPRESSED_BYTES};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::Read;

/// One request line. Known fields are typed; everything else is in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRow {
    /// 1-based line number in the (decompressed) file.
    pub line: u64,
    pub request_id: Option<CompactString>,
    /// Arrival time, seconds since the Unix epoch (numbers as given; RFC 3339
    /// strings such as `2025-01-02T03:04:05.5Z` are converted).
    pub arrival_ts: Option<f64>,
    pub tokenize_ms: Option<f64>,
    pub queue_wait_ms: Option<f64>,
    pub prefill_ms: Option<f64>,
    /// Time to first token = tokenize + queue + prefill + sampling (methodology.md).
    pub first_token_ms: Option<f64>,
    pub decode_ms: Option<f64>,
    pub itl_p50_ms: Option<f64>,
    pub itl_p99_ms: Option<f64>,
    pub detokenize_ms: Option<f64>,
    pub total_ms: Option<f64>,
    pub prompt_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub batch_size_at_admission: Option<i64>,
    pub kv_blocks_used: Option<i64>,
    pub prefix_cache_hit_tokens: Option<i64>,
    pub model_version: Option<CompactString>,
    pub tenant: Option<CompactString>,
    /// Fields not listed above, as given.
    pub extra: Map<String, Value>,
}

impl RequestRow {
    /// The first text field (or `extra` key) holding a NUL character, which PostgreSQL
    /// text and jsonb cannot store.
    pub fn field_with_nul(&self) -> Option<String> {
        fn value_has_nul(v: &Value) -> bool {
            match v {
                Value::String(s) => s.contains('\0'),
                Value::Array(a) => a.iter().any(value_has_nul),
                Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || value_has_nul(v)),
                _ => false,
            }
        }
        for (name, v) in [
            ("request_id", &self.request_id),
            ("model_version", &self.model_version),
            ("tenant", &self.tenant),
        ] {
            if v.as_deref().is_some_and(|s| s.contains('\0')) {
                return Some(name.to_string());
            }
        }
        self.extra
            .iter()
            .find(|(k, v)| k.contains('\0') || value_has_nul(v))
            .map(|(k, _)| k.replace('\0', "\\u0000"))
    }
}

impl RequestRow {
    /// Every field empty again, as at line `line`: a row written over in place.
    pub(super) fn reset(&mut self, line: u64) {
        *self = RequestRow {
            line,
            ..RequestRow::default()
        };
    }
}

pub(super) const FLOAT_FIELDS: [&str; 10] = [
    "arrival_ts",
    "tokenize_ms",
    "queue_wait_ms",
    "prefill_ms",
    "first_token_ms",
    "decode_ms",
    "itl_p50_ms",
    "itl_p99_ms",
    "detokenize_ms",
    "total_ms",
];

pub(super) const INT_FIELDS: [&str; 5] = [
    "prompt_tokens",
    "output_tokens",
    "batch_size_at_admission",
    "kv_blocks_used",
    "prefix_cache_hit_tokens",
];

impl RequestRow {
    /// The seven phase times in the decomposition's order: tokenize, queue wait,
    /// prefill, first token, decode, detokenize, total.
    pub fn phases(&self) -> [Option<f64>; 7] {
        [
            self.tokenize_ms,
            self.queue_wait_ms,
            self.prefill_ms,
            self.first_token_ms,
            self.decode_ms,
            self.detokenize_ms,
            self.total_ms,
        ]
    }

    /// The request's time per output token after the first, ms per token:
    /// `decode_ms ÷ (output_tokens − 1)`; `None` without both, or with fewer than two
    /// output tokens (no decode step to divide by).
    pub fn tpot_ms(&self) -> Option<f64> {
        let steps = self.output_tokens.filter(|n| *n >= 2)? - 1;
        self.decode_ms.map(|d| d / steps as f64)
    }

    /// How the request ended, from its `status`, `finish_reason` and `error` fields
    /// (kept among the unknown fields); a number or other JSON value counts as its text,
    /// and JSON null as absent.
    pub fn outcome(&self) -> super::Outcome {
        let text = |k: &str| match self.extra.get(k) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(std::borrow::Cow::Borrowed(s.as_str())),
            Some(v) => Some(std::borrow::Cow::Owned(v.to_string())),
        };
        let (status, finish, error) = (text("status"), text("finish_reason"), text("error"));
        super::outcome(status.as_deref(), finish.as_deref(), error.as_deref())
    }

    fn floats(&self) -> [Option<f64>; 10] {
        [
            self.arrival_ts,
            self.tokenize_ms,
            self.queue_wait_ms,
            self.prefill_ms,
            self.first_token_ms,
            self.decode_ms,
            self.itl_p50_ms,
            self.itl_p99_ms,
            self.detokenize_ms,
            self.total_ms,
        ]
    }
}

/// Bytes of the file handed to a parsing thread at a time (cut at a line end).
const BLOCK_BYTES: usize = 1 << 20;

/// Blocks waiting for each parsing thread, and parsed blocks waiting to be handed on.
const BLOCKS_QUEUED: usize = 1;

/// Stream every request line of `reader` (gzip is undone transparently) to `cb`, in
/// file order. Empty lines are skipped; any malformed line stops the stream with a
/// `Malformed` error naming it (the first one in the file). Returns the number of rows.
///
/// The file is read in blocks of whole lines, parsed on one thread per core, and the
/// rows handed to `cb` on the calling thread in file order; at most a few blocks are in
/// memory at once. A block's rows go back to the thread that parsed them, which drops
/// them: their texts are freed where they were allocated, off the calling thread. The
/// callback's error type only needs `From<AnalyzeError>`.
pub fn for_each_request<R: Read + Send, E: From<AnalyzeError>>(
    reader: R,
    mut cb: impl FnMut(&RequestRow) -> Result<(), E>,
) -> Result<u64, E> {
    use std::sync::mpsc::{channel, sync_channel};
    type Parsed = Result<Vec<RequestRow>, AnalyzeError>;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8));
    // Buffers go back to the thread that made them, to be filled again: a block or a
    // list of rows freed on another thread than its own is held by the allocator for a
    // while, and a load of 1,000,000 rows made the server's resident memory swing by
    // 100 MiB before they were reused.
    let (spent_blocks, fresh_blocks) = channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let mut to_workers = Vec::with_capacity(workers);
        let mut from_workers = Vec::with_capacity(workers);
        let mut emptied = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (work, blocks) = sync_channel::<Result<Block, AnalyzeError>>(BLOCKS_QUEUED);
            let (parsed, results) = sync_channel::<Parsed>(BLOCKS_QUEUED);
            let (spent_rows, fresh_rows) = channel::<Vec<RequestRow>>();
            let spent_blocks = spent_blocks.clone();
            scope.spawn(move || {
                for block in blocks {
                    let rows = block.and_then(|b| {
                        let mut rows = fresh_rows.try_recv().unwrap_or_default();
                        let parsed = parse_block(&b.data, b.first_line, &mut rows);
                        let _ = spent_blocks.send(b.data);
                        parsed.map(|()| rows)
                    });
                    if parsed.send(rows).is_err() {
                        break;
                    }
                }
            });
            to_workers.push(work);
            from_workers.push(results);
            emptied.push(spent_rows);
        }
        drop(spent_blocks);
        // Block n goes to thread n mod workers, and is taken back from it in turn: the
        // order of the file needs no sorting. An error of the reading itself travels as
        // a block, so it is reported after the rows before it.
        scope.spawn(move || {
            let mut n = 0usize;
            split_blocks(reader, &fresh_blocks, |block| {
                let sent = to_workers[n % to_workers.len()].send(block).is_ok();
                n += 1;
                sent
            });
        });
        let mut rows = 0u64;
        for n in 0.. {
            let Ok(parsed) = from_workers[n % from_workers.len()].recv() else {
                break;
            };
            let parsed = parsed?;
            for row in &parsed {
                rows += 1;
                cb(row)?;
            }
            let _ = emptied[n % emptied.len()].send(parsed);
        }
        Ok(rows)
    })
}

/// Whole lines of the file, the first of them line `first_line` (1-based).
struct Block {
    first_line: u64,
    data: Vec<u8>,
}

/// Reads the (decompressed) file in blocks of about [`BLOCK_BYTES`] that end at a line
/// end (the last may not), handing each to `send` until it returns false. A line longer
/// than [`MAX_LINE_BYTES`] with no end in sight, or a read error, is handed on as an
/// error in its place.
fn split_blocks<R: Read>(
    reader: R,
    spent: &std::sync::mpsc::Receiver<Vec<u8>>,
    mut send: impl FnMut(Result<Block, AnalyzeError>) -> bool,
) {
    let mut input = decompressing_reader(reader, DEFAULT_MAX_DECOMPRESSED_BYTES);
    let mut carry: Vec<u8> = Vec::new();
    let mut first_line = 1u64;
    loop {
        // The part line left from the last block starts the next one: in a buffer that
        // came back when it is short (the usual case), else in its own (a long line
        // still arriving is not copied again for every read).
        let reused = (carry.len() < 64 << 10)
            .then(|| spent.try_recv().ok())
            .flatten();
        let mut data = match reused {
            Some(mut reused) => {
                reused.clear();
                reused.extend_from_slice(&carry);
                carry.clear();
                reused
            }
            None => std::mem::take(&mut carry),
        };
        let want = BLOCK_BYTES.saturating_sub(data.len()).max(64 << 10);
        let (eof, failed) = fill(&mut input, &mut data, want);
        if let Some(e) = failed {
            send(Err(e.into()));
            return;
        }
        if !eof {
            match memchr::memrchr(b'\n', &data) {
                Some(end) => {
                    carry.extend_from_slice(&data[end + 1..]);
                    data.truncate(end + 1);
                }
                None if data.len() > MAX_LINE_BYTES => {
                    send(Err(too_long(first_line)));
                    return;
                }
                None => {
                    // One line so far, not ended yet: read on.
                    carry = data;
                    continue;
                }
            }
        }
        if data.is_empty() {
            return;
        }
        let lines = memchr::memchr_iter(b'\n', &data).count() as u64;
        if !send(Ok(Block { first_line, data })) || eof {
            return;
        }
        first_line += lines;
    }
}

/// Appends up to `want` bytes of `input` to `data`, allocating exactly that much (a
/// block's buffer is not doubled the way `read_to_end` grows one); true at the end of
/// the input.
fn fill(input: &mut impl Read, data: &mut Vec<u8>, want: usize) -> (bool, Option<std::io::Error>) {
    let start = data.len();
    data.reserve_exact(want);
    data.resize(start + want, 0);
    let mut filled = start;
    let outcome = loop {
        match input.read(&mut data[filled..]) {
            Ok(0) => break (true, None),
            Ok(n) => {
                filled += n;
                if filled == data.len() {
                    break (false, None);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break (false, Some(e)),
        }
    };
    data.truncate(filled);
    outcome
}

fn too_long(line_no: u64) -> AnalyzeError {
    AnalyzeError::at_line(
        line_no,
        format!("line is longer than {MAX_LINE_BYTES} bytes; is this really one request per line?"),
    )
}

/// The rows of a block's lines (blank lines skipped) into `rows`, whose rows from an
/// earlier block are written over in place.
fn parse_block(
    data: &[u8],
    first_line: u64,
    rows: &mut Vec<RequestRow>,
) -> Result<(), AnalyzeError> {
    let mut start = 0;
    let mut filled = 0;
    let mut hint = Hint::default();
    let ends = memchr::memchr_iter(b'\n', data).chain(std::iter::once(data.len()));
    for (k, end) in ends.enumerate() {
        if start > data.len() {
            break;
        }
        let line = &data[start..end];
        start = end + 1;
        let line_no = first_line + k as u64;
        if line.len() > MAX_LINE_BYTES {
            return Err(too_long(line_no));
        }
        let mut bytes = line;
        if line_no == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        // A line's first byte is nearly always its `{`: blank lines are rare.
        if bytes.first().is_none_or(u8::is_ascii_whitespace)
            && bytes.iter().all(u8::is_ascii_whitespace)
        {
            continue;
        }
        if filled == rows.len() {
            rows.push(RequestRow::default());
        }
        parse_row(bytes, line_no, &mut hint, &mut rows[filled])?;
        filled += 1;
    }
    rows.truncate(filled);
    Ok(())
}

/// Parse one JSON line into `row` (whatever it held is replaced); `hint` carries the
/// order of the fields from one line of a file to the next (a new one for the first
/// line).
pub fn parse_row(
    bytes: &[u8],
    line_no: u64,
    hint: &mut Hint,
    row: &mut RequestRow,
) -> Result<(), AnalyzeError> {
    // Most lines hold exactly the method's fields with plain types: read those in one
    // pass (`plain`). Anything else (unknown fields, quoted numbers, RFC 3339 times,
    // escapes, errors) takes the general path below, which keeps extras and explains
    // problems; so does a number out of range, which it names with its field.
    if super::plain::read_plain(bytes, line_no, hint, row).is_some()
        && row
            .floats()
            .into_iter()
            .flatten()
            .all(crate::analyze::in_range)
    {
        return Ok(());
    }
    // Only here can a text hold a NUL: the plain reader takes no escape.
    *row = parse_general(bytes, line_no)?;
    if let Some(field) = row.field_with_nul() {
        return Err(AnalyzeError::at_line(
            line_no,
            format!("{field} contains a NUL character (\\u0000), which cannot be stored"),
        ));
    }
    Ok(())
}

/// Any line: through a JSON value, keeping unknown fields and naming what is wrong.
fn parse_general(bytes: &[u8], line_no: u64) -> Result<RequestRow, AnalyzeError> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return Err(line_error(bytes, line_no, &e)),
    };
    let Value::Object(mut map) = value else {
        return Err(AnalyzeError::at_line(
            line_no,
            "expected a JSON object (one request per line)",
        ));
    };
    let mut row = RequestRow {
        line: line_no,
        ..RequestRow::default()
    };
    row.request_id = take_text(&mut map, "request_id", line_no)?;
    row.model_version = take_text(&mut map, "model_version", line_no)?;
    row.tenant = take_text(&mut map, "tenant", line_no)?;
    row.arrival_ts = take_timestamp(&mut map, "arrival_ts", line_no)?;
    let floats = [
        &mut row.tokenize_ms,
        &mut row.queue_wait_ms,
        &mut row.prefill_ms,
        &mut row.first_token_ms,
        &mut row.decode_ms,
        &mut row.itl_p50_ms,
        &mut row.itl_p99_ms,
        &mut row.detokenize_ms,
        &mut row.total_ms,
    ];
    for (slot, name) in floats.into_iter().zip(&FLOAT_FIELDS[1..]) {
        *slot = take_float(&mut map, name, line_no)?;
    }
    let ints = [
        &mut row.prompt_tokens,
        &mut row.output_tokens,
        &mut row.batch_size_at_admission,
        &mut row.kv_blocks_used,
        &mut row.prefix_cache_hit_tokens,
    ];
    for (slot, name) in ints.into_iter().zip(INT_FIELDS) {
        *slot = take_int(&mut map, name, line_no)?;
    }
    row.extra = map;
    Ok(row)
}

/// Explain a JSON error on a line, calling out Python's NaN/Infinity tokens.
fn line_error(bytes: &[u8], line_no: u64, e: &serde_json::Error) -> AnalyzeError {
    let col = e.column();
    if let Some((token, field)) = find_non_finite(bytes) {
        let field = field
            .map(|f| format!(" in field '{f}'"))
            .unwrap_or_default();
        return AnalyzeError::at_line(
            line_no,
            format!(
                "{token}{field} is not valid JSON; write null for a missing value (column {col})"
            ),
        );
    }
    let text = e.to_string();
    let reason = text.split(" at line ").next().unwrap_or(&text);
    AnalyzeError::at_line(line_no, format!("invalid JSON at column {col}: {reason}"))
}

/// Find a bare NaN/Infinity token outside strings, with the key before it.
fn find_non_finite(bytes: &[u8]) -> Option<(&'static str, Option<String>)> {
    let mut in_str = false;
    let mut esc = false;
    let mut str_start = 0;
    let mut last_string: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
                last_string = Some((str_start, i));
            }
        } else if b == b'"' {
            in_str = true;
            str_start = i + 1;
        } else {
            let rest = &bytes[i..];
            let token = if rest.starts_with(b"NaN") {
                Some("NaN")
            } else if rest.starts_with(b"-Infinity") {
                Some("-Infinity")
            } else if rest.starts_with(b"Infinity") {
                Some("Infinity")
            } else {
                None
            };
            if let Some(t) = token {
                let key =
                    last_string.map(|(s, e)| String::from_utf8_lossy(&bytes[s..e]).into_owned());
                return Some((t, key));
            }
        }
        i += 1;
    }
    None
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn take_text(
    map: &mut Map<String, Value>,
    key: &str,
    line: u64,
) -> Result<Option<CompactString>, AnalyzeError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.into())),
        Some(Value::Number(n)) => Ok(Some(n.to_string().into())),
        Some(other) => Err(AnalyzeError::at_line(
            line,
            format!("field '{key}' must be a string, got {}", type_name(&other)),
        )),
    }
}

fn take_float(
    map: &mut Map<String, Value>,
    key: &str,
    line: u64,
) -> Result<Option<f64>, AnalyzeError> {
    let x = match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        // Some exporters quote numbers; accept them when they parse.
        Some(Value::String(s)) => match s.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Some(x)),
            Ok(_) => Err(AnalyzeError::at_line(
                line,
                format!("field '{key}' is \"{s}\"; NaN/Infinity are not accepted, write null for a missing value"),
            )),
            Err(_) if s.trim().is_empty() => Ok(None),
            Err(_) => Err(AnalyzeError::at_line(
                line,
                format!("field '{key}' must be a number, got the string \"{s}\""),
            )),
        },
        Some(other) => Err(AnalyzeError::at_line(
            line,
            format!("field '{key}' must be a number, got {}", type_name(&other)),
        )),
    }?;
    match x {
        Some(v) if !crate::analyze::in_range(v) => Err(AnalyzeError::at_line(
            line,
            crate::analyze::out_of_range(key, v, ""),
        )),
        x => Ok(x),
    }
}

fn take_int(
    map: &mut Map<String, Value>,
    key: &str,
    line: u64,
) -> Result<Option<i64>, AnalyzeError> {
    let v = take_float_or_int(map, key, line)?;
    match v {
        None => Ok(None),
        Some(IntOrFloat::Int(i)) => Ok(Some(i)),
        Some(IntOrFloat::Float(x)) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(Some(x as i64)),
        Some(IntOrFloat::Float(x)) => Err(AnalyzeError::at_line(
            line,
            format!("field '{key}' must be a whole number, got {x}"),
        )),
    }
}

enum IntOrFloat {
    Int(i64),
    Float(f64),
}

fn take_float_or_int(
    map: &mut Map<String, Value>,
    key: &str,
    line: u64,
) -> Result<Option<IntOrFloat>, AnalyzeError> {
    match map.get(key) {
        Some(Value::Number(n)) if n.is_i64() => {
            let i = n.as_i64();
            map.remove(key);
            Ok(i.map(IntOrFloat::Int))
        }
        _ => Ok(take_float(map, key, line)?.map(IntOrFloat::Float)),
    }
}

fn take_timestamp(
    map: &mut Map<String, Value>,
    key: &str,
    line: u64,
) -> Result<Option<f64>, AnalyzeError> {
    if let Some(Value::String(s)) = map.get(key) {
        if s.trim().parse::<f64>().is_err() && !s.trim().is_empty() {
            let parsed = parse_rfc3339(s.trim());
            return match parsed {
                Some(t) => {
                    map.remove(key);
                    Ok(Some(t))
                }
                None => Err(AnalyzeError::at_line(
                    line,
                    format!("field '{key}' must be epoch seconds or an RFC 3339 time, got \"{s}\""),
                )),
            };
        }
    }
    take_float(map, key, line)
}

/// Parse `YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±HH:MM]` (RFC 3339; a missing offset
/// means UTC) into epoch seconds.
pub(crate) fn parse_rfc3339(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ')
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = s.get(19..)?;
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        frac = format!("0.{}", &r[..digits]).parse().ok()?;
        rest = &r[digits..];
    }
    // Byte-wise: a multi-byte character where a digit belongs is refused, never sliced.
    let offset = match rest.as_bytes() {
        [] | [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| -> Option<i64> {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
            };
            let v = two(*h1, *h2)? * 3600 + two(*m1, *m2)? * 60;
            if *sign == b'-' {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some((days * 86_400 + h * 3600 + mi * 60 + sec - offset) as f64 + frac)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// "days_from_civil" algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain reader's row of a line, into a fresh row.
    fn read_plain(bytes: &[u8], line: u64, hint: &mut Hint) -> Option<RequestRow> {
        let mut row = RequestRow::default();
        super::super::plain::read_plain(bytes, line, hint, &mut row).map(|()| row)
    }

    /// SplitMix64: the same lines on every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A JSON number in one of the forms exporters write, now and then a malformed one.
    fn number(r: &mut Rng) -> String {
        // `lo` to `lo + span - 1` random digits.
        fn digits(r: &mut Rng, lo: u64, span: u64) -> String {
            let n = lo + r.below(span);
            (0..n.max(1))
                .map(|_| char::from(b'0' + r.below(10) as u8))
                .collect()
        }
        let sign = if r.below(5) == 0 { "-" } else { "" };
        let int = {
            let d = digits(r, 1, 12);
            let d = d.trim_start_matches('0');
            if d.is_empty() {
                "0".to_string()
            } else {
                d.to_string()
            }
        };
        // Mostly the plain forms; now and then (one field in 50) another.
        match r.below(100) {
            0 => [
                "-0",
                "-0.0",
                "1e22",
                "1e23",
                "9007199254740993.0",
                "0.1",
                "01",
                "1.",
                ".5",
                "1e",
                "1e+5",
                "2E+022",
                "-",
                "1.5e-400",
                "1e400",
                "18446744073709551616",
            ][r.below(16) as usize]
                .to_string(),
            1 => format!("{sign}{}", digits(r, 15, 8)),
            2..=20 => format!("{sign}{int}"),
            21..=30 => format!("{sign}{int}.{}e{}", digits(r, 1, 3), r.below(12)),
            31..=35 => format!("{sign}{int}E-{}", r.below(12)),
            36..=50 => format!("{sign}0.{}", digits(r, 1, 8)),
            _ => format!("{sign}{int}.{}", digits(r, 1, 6)),
        }
    }

    fn text(r: &mut Rng) -> String {
        match r.below(40) {
            0..=4 => "\"caf\u{e9} \u{1F680}\"".to_string(),
            5 => "\"with \\\"quote\\\"\"".to_string(),
            6..=8 => "\"\"".to_string(),
            9 => "7".to_string(),
            _ => format!("\"t-{}\"", r.below(1000)),
        }
    }

    fn line(r: &mut Rng) -> String {
        let names: Vec<&str> = FLOAT_FIELDS
            .iter()
            .chain(INT_FIELDS.iter())
            .chain(["request_id", "model_version", "tenant"].iter())
            .copied()
            .collect();
        let ws = |r: &mut Rng| [" ", "", "", "\t", "\r\n "][r.below(5) as usize];
        let mut parts = Vec::new();
        for name in &names {
            if r.below(6) == 0 {
                continue;
            }
            let value = if r.below(15) == 0 {
                "null".to_string()
            } else if ["request_id", "model_version", "tenant"].contains(name) {
                text(r)
            } else if INT_FIELDS.contains(name) && r.below(50) != 0 {
                let n = r.next() % 10u64.pow(1 + r.below(12) as u32);
                let sign = if r.below(9) == 0 && n != 0 { "-" } else { "" };
                format!("{sign}{n}")
            } else if r.below(300) == 0 {
                format!("\"{}\"", number(r))
            } else {
                number(r)
            };
            parts.push(format!("{}\"{name}\"{}:{}{value}", ws(r), ws(r), ws(r)));
        }
        match r.below(30) {
            0 => parts.push("\"status\":\"ok\"".into()),
            1 if !parts.is_empty() => parts.push(parts[0].clone()),
            _ => {}
        }
        // Shuffled: any order is a line.
        for i in (1..parts.len()).rev() {
            parts.swap(i, r.below(i as u64 + 1) as usize);
        }
        format!("{}{{{}{}}}{}", ws(r), parts.join(","), ws(r), ws(r))
    }

    #[test]
    fn a_plain_line_reads_as_the_general_reader_reads_it() {
        let mut r = Rng(7);
        let (mut plain, mut general) = (0, 0);
        // One hint over the lines, whose fields come in any order: a line is read with
        // what the earlier ones taught, then again once it taught its own order.
        let mut hint = Hint::default();
        let (mut held, mut previous) = (RequestRow::default(), RequestRow::default());
        previous.extra.insert("gpu".into(), Value::from("h100"));
        for n in 0..60_000 {
            let line = line(&mut r);
            let reference = parse_general(line.as_bytes(), n);
            let first = read_plain(line.as_bytes(), n, &mut hint);
            assert_eq!(read_plain(line.as_bytes(), n, &mut hint), first, "{line}");
            // Written over a row that held the line before: nothing of it stays.
            let reused = super::super::plain::read_plain(line.as_bytes(), n, &mut hint, &mut held)
                .map(|()| held.clone());
            assert_eq!(reused, first, "{line}");
            if reused.is_none() {
                held = previous.clone();
            }
            if let Some(row) = &first {
                previous = row.clone();
            }
            match first {
                // Out of range: `parse_row` hands it to the general reader, which
                // names the field.
                Some(row)
                    if !row
                        .floats()
                        .into_iter()
                        .flatten()
                        .all(crate::analyze::in_range) =>
                {
                    assert!(reference.is_err(), "{line}");
                    general += 1;
                }
                Some(row) => {
                    plain += 1;
                    let reference = reference.unwrap_or_else(|e| panic!("{line}: {e}"));
                    // Bit for bit, so -0.0 and 0.0 are told apart.
                    let bits = |r: &RequestRow| r.floats().map(|x| x.map(f64::to_bits));
                    assert_eq!(bits(&row), bits(&reference), "{line}");
                    assert_eq!(row, reference, "{line}");
                }
                None => general += 1,
            }
        }
        // Most lines are plain; every kind the plain reader declines came up too.
        assert!(
            plain > 20_000 && general > 5_000,
            "{plain} plain, {general} not"
        );
    }

    #[test]
    fn the_plain_reader_declines_what_it_cannot_read_exactly() {
        for line in [
            r#"{"tenant":"a","tenant":"b"}"#,
            r#"{"prefill_ms":"12.5"}"#,
            r#"{"prefill_ms":-0}"#,
            r#"{"prefill_ms":1e23}"#,
            r#"{"prefill_ms":12345678901234567890}"#,
            r#"{"prefill_ms":9007199254740993.5}"#,
            r#"{"prompt_tokens":12.0}"#,
            r#"{"tenant":"a\nb"}"#,
            r#"{"status":"ok"}"#,
            r#"{"prefill_ms":1}x"#,
            r#"{"prefill_ms":1,}"#,
            r#"{"prefill_ms":01}"#,
            r#"["prefill_ms",1]"#,
            "{\"tenant\":\"a\u{1}\"}",
        ] {
            assert_eq!(
                read_plain(line.as_bytes(), 1, &mut Hint::default()),
                None,
                "{line}"
            );
            // Nor once the line taught the hint its names.
            let mut taught = Hint::default();
            read_plain(line.as_bytes(), 1, &mut taught);
            assert_eq!(read_plain(line.as_bytes(), 1, &mut taught), None, "{line}");
        }
        let row = read_plain(
            br#" { "prefill_ms" : 12.5 , "tenant":null,"prompt_tokens":-3 } "#,
            4,
            &mut Hint::default(),
        )
        .unwrap();
        assert_eq!(
            (row.line, row.prefill_ms, row.tenant, row.prompt_tokens),
            (4, Some(12.5), None, Some(-3))
        );
        assert_eq!(
            read_plain(b"{}", 1, &mut Hint::default()),
            Some(RequestRow {
                line: 1,
                ..RequestRow::default()
            })
        );
    }
}
