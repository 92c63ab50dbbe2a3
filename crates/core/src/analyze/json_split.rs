//! Cutting a large JSON document into its parts without parsing them, so the parts can
//! be parsed from memory (borrowing their strings) on another thread while the next
//! block is read.
//!
//! The document is an object whose fields are small, except one array field (for a
//! Chrome trace, `traceEvents`) whose elements are the bulk; or a bare array. The
//! splitter hands out batches of whole parts: each element of that array, and each
//! other field of the object with its key. It only follows the structure (strings,
//! brackets, separators) — a part's own content is checked by whoever parses it. Memory
//! is one block plus the largest part, which is capped. Invalid UTF-8 (tools that cut
//! names mid-character) is replaced with U+FFFD in place, and counted.

use std::io::{self, Read};

/// Where a part starts in the whole (decompressed) document.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// 0-based byte offset.
    pub byte: u64,
    /// 1-based line.
    pub line: u64,
    /// 1-based byte column.
    pub column: u64,
}

impl Pos {
    /// The position `line`/`column` (1-based, as serde_json reports them) inside a part
    /// that starts here.
    pub fn within(self, line: usize, column: usize) -> Pos {
        if line <= 1 {
            Pos {
                byte: self.byte + column.saturating_sub(1) as u64,
                line: self.line,
                column: self.column + column.saturating_sub(1) as u64,
            }
        } else {
            Pos {
                byte: self.byte,
                line: self.line + line as u64 - 1,
                column: column as u64,
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// An element of the array (the bare document array, or the named field's).
    Element,
    /// Another field of the top-level object.
    Field,
}

/// One part, as ranges into its batch's buffer.
#[derive(Clone, Copy, Debug)]
pub struct Part {
    pub kind: PartKind,
    /// A field's key, without its quotes (escapes left as written); empty for elements.
    key: (u32, u32),
    value: (u32, u32),
    /// Where the value starts.
    pub at: Pos,
}

/// Whole parts and the bytes they point into. Batches are handed back to
/// [`Splitter::next_batch`] for reuse, so a steady stream allocates (and zeroes) nothing.
#[derive(Default)]
pub struct Batch {
    /// Initialised memory; the first `len` bytes are the data.
    buf: Vec<u8>,
    len: usize,
    pub parts: Vec<Part>,
}

impl Batch {
    pub fn value(&self, p: &Part) -> &[u8] {
        &self.buf[p.value.0 as usize..p.value.1 as usize]
    }

    pub fn key(&self, p: &Part) -> &[u8] {
        &self.buf[p.key.0 as usize..p.key.1 as usize]
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Not a JSON document of the expected shape.
    #[error("{message}")]
    Syntax { at: Pos, message: String },
    /// The input ended before the document did.
    #[error("the document ends early (after {} bytes)", at.byte)]
    Truncated { at: Pos },
    /// One part is larger than the cap.
    #[error("one part of the document (starting at line {}) is larger than {} MiB", at.line, limit >> 20)]
    TooLarge { at: Pos, limit: usize },
}

/// Where the splitter is in the document's outer structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outer {
    DocStart,
    /// After `{` (a `}` may close it) or after a `,` (a key must follow).
    Key {
        first: bool,
    },
    InKey {
        escaped: bool,
    },
    Colon,
    FieldValue,
    AfterField,
    /// In the array: after `[` (a `]` may close it) or after `,`.
    Element {
        first: bool,
    },
    AfterElement,
    InPart,
    DocEnd,
}

/// Scanning one value: resumable across blocks.
#[derive(Clone, Copy, Debug, Default)]
struct ValueScan {
    depth: u32,
    in_str: bool,
    escaped: bool,
    scalar: bool,
}

pub struct Splitter<R> {
    reader: R,
    array_key: &'static [u8],
    block: usize,
    max_part: usize,
    outer: Outer,
    /// True when the array being split is the bare document (not a field of it).
    bare: bool,
    scan: ValueScan,
    part_kind: PartKind,
    /// Buffer index where the current key (or element) starts; `None` between parts.
    part_start: Option<usize>,
    key: (u32, u32),
    /// Buffer index where a field's value starts (its key comes first).
    value_start: usize,
    /// True until the current value's first byte was looked at.
    value_fresh: bool,
    part_at: Pos,
    /// The part in progress and the bytes after it, moved to the next batch's buffer.
    carry: Vec<u8>,
    /// Index of the next byte to look at in the current buffer.
    pos: usize,
    /// Document offset of the buffer's first byte.
    base: u64,
    line: u64,
    /// Document offset of the current line's first byte.
    line_start: u64,
    eof: bool,
    /// Buffer index up to which the bytes are known to be UTF-8 (a character cut by
    /// the end of a read waits for the next one); the scan stays below it.
    checked: usize,
    replaced: u64,
}

const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

impl<R: Read> Splitter<R> {
    /// Splits `reader`; `array_key` names the field whose elements are handed out one
    /// by one; reads `block` bytes at a time; parts over `max_part` bytes are refused.
    pub fn new(reader: R, array_key: &'static [u8], block: usize, max_part: usize) -> Self {
        Splitter {
            reader,
            array_key,
            block,
            max_part,
            outer: Outer::DocStart,
            bare: false,
            scan: ValueScan::default(),
            part_kind: PartKind::Element,
            part_start: None,
            key: (0, 0),
            value_start: 0,
            value_fresh: false,
            part_at: Pos::default(),
            carry: Vec::new(),
            pos: 0,
            base: 0,
            line: 1,
            line_start: 0,
            eof: false,
            checked: 0,
            replaced: 0,
        }
    }

    /// How many invalid UTF-8 sequences were replaced so far.
    pub fn replaced(&self) -> u64 {
        self.replaced
    }

    /// The position of buffer index `i`.
    fn pos_at(&self, i: usize) -> Pos {
        let byte = self.base + i as u64;
        Pos {
            byte,
            line: self.line,
            column: byte - self.line_start + 1,
        }
    }

    fn syntax(&self, i: usize, message: impl Into<String>) -> SplitError {
        SplitError::Syntax {
            at: self.pos_at(i),
            message: message.into(),
        }
    }

    /// Fills `batch` (emptied first) with the next whole parts; `None` once the document
    /// has ended. A batch holds at least one part.
    pub fn next_batch(&mut self, mut batch: Batch) -> Result<Option<Batch>, SplitError> {
        batch.parts.clear();
        let carried = self.carry.len();
        if batch.buf.len() > 4 * self.block.max(carried) {
            // It grew for one huge part: give the memory back rather than keep a few
            // such buffers circulating.
            batch.buf.truncate(carried + self.block);
            batch.buf.shrink_to_fit();
        }
        if batch.buf.len() < carried + self.block {
            batch.buf.resize(carried + self.block, 0);
        }
        batch.buf[..carried].copy_from_slice(&self.carry);
        batch.len = carried;
        self.carry.clear();
        loop {
            self.scan_buffer(&mut batch)?;
            let scanned_all = self.pos == self.checked && self.checked == batch.len;
            if self.eof && scanned_all && batch.parts.is_empty() {
                if self.outer == Outer::DocEnd {
                    return Ok(None);
                }
                return Err(SplitError::Truncated {
                    at: self.pos_at(batch.len),
                });
            }
            if !batch.parts.is_empty() && self.pos == self.checked {
                // Ship what is whole; the unfinished part moves to the next buffer.
                let keep = self.part_start.unwrap_or(self.pos);
                self.carry.extend_from_slice(&batch.buf[keep..batch.len]);
                batch.len = keep;
                self.shift(keep);
                return Ok(Some(batch));
            }
            // Need more bytes: a part spans past this block.
            match self.part_start {
                Some(start) if batch.len - start > self.max_part => {
                    return Err(SplitError::TooLarge {
                        at: self.part_at,
                        limit: self.max_part,
                    });
                }
                None if batch.parts.is_empty() && self.pos > 0 => {
                    // Between parts with nothing to ship: what was scanned is blanks or
                    // separators, and nothing points into it. Drop it, so a run of
                    // whitespace of any length costs one block, not its own length.
                    batch.buf.copy_within(self.pos..batch.len, 0);
                    batch.len -= self.pos;
                    self.shift(self.pos);
                }
                _ => {}
            }
            self.fill(&mut batch)?;
        }
    }

    /// Indices drop by `by` (the bytes before it went with the shipped batch).
    fn shift(&mut self, by: usize) {
        self.base += by as u64;
        self.pos -= by;
        self.checked -= by;
        if let Some(s) = self.part_start.as_mut() {
            *s -= by;
        }
        // A key (while its field is in progress) lies after `part_start`, so after `by`.
        if self.key.0 > 0 {
            self.key.0 -= by as u32;
            if self.key.1 > 0 {
                self.key.1 -= by as u32;
            }
        }
        self.value_start = self.value_start.saturating_sub(by);
    }

    /// Reads up to one block onto the end of the batch's data, then checks the new
    /// bytes are UTF-8.
    fn fill(&mut self, batch: &mut Batch) -> io::Result<()> {
        let start = batch.len;
        let end = start + self.block;
        if batch.buf.len() < end {
            batch.buf.resize(end, 0);
        }
        let mut got = start;
        while got < end {
            match self.reader.read(&mut batch.buf[got..end]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        batch.len = got;
        self.check_utf8(batch);
        Ok(())
    }

    /// Advances `checked` over valid UTF-8, replacing each invalid sequence with U+FFFD
    /// (the bytes after it move along).
    fn check_utf8(&mut self, batch: &mut Batch) {
        loop {
            match std::str::from_utf8(&batch.buf[self.checked..batch.len]) {
                Ok(_) => {
                    self.checked = batch.len;
                    return;
                }
                Err(e) => {
                    let good = self.checked + e.valid_up_to();
                    let bad = match e.error_len() {
                        Some(n) => n,
                        // A character cut by the end of this read: the next read ends it.
                        None if !self.eof => {
                            self.checked = good;
                            return;
                        }
                        None => batch.len - good,
                    };
                    let grow = REPLACEMENT.len() - bad;
                    if batch.buf.len() < batch.len + grow {
                        batch.buf.resize(batch.len + grow, 0);
                    }
                    batch
                        .buf
                        .copy_within(good + bad..batch.len, good + REPLACEMENT.len());
                    batch.buf[good..good + REPLACEMENT.len()].copy_from_slice(REPLACEMENT);
                    batch.len += grow;
                    self.checked = good + REPLACEMENT.len();
                    self.replaced += 1;
                }
            }
        }
    }

    fn newline(&mut self, i: usize) {
        self.line += 1;
        self.line_start = self.base + i as u64 + 1;
    }

    /// Advances through the buffer, recording whole parts.
    fn scan_buffer(&mut self, batch: &mut Batch) -> Result<(), SplitError> {
        let buf = &batch.buf[..self.checked];
        let mut i = self.pos;
        while i < buf.len() {
            if self.outer == Outer::InPart {
                match self.scan_value(buf, i) {
                    Some(end) => {
                        let start = self.part_start.take().expect("a part in progress");
                        let value_start = if self.part_kind == PartKind::Field {
                            self.value_start
                        } else {
                            start
                        };
                        batch.parts.push(Part {
                            kind: self.part_kind,
                            key: self.key,
                            value: (value_start as u32, end as u32),
                            at: self.part_at,
                        });
                        self.key = (0, 0);
                        self.outer = match self.part_kind {
                            PartKind::Element => Outer::AfterElement,
                            PartKind::Field => Outer::AfterField,
                        };
                        i = end;
                        continue;
                    }
                    None => {
                        i = buf.len();
                        break;
                    }
                }
            }
            let b = buf[i];
            if let Outer::InKey { escaped } = self.outer {
                if escaped {
                    self.outer = Outer::InKey { escaped: false };
                } else if b == b'\\' {
                    self.outer = Outer::InKey { escaped: true };
                } else if b == b'"' {
                    self.key.1 = i as u32;
                    self.outer = Outer::Colon;
                }
                i += 1;
                continue;
            }
            if b == b'\n' {
                self.newline(i);
                i += 1;
                continue;
            }
            if matches!(b, b' ' | b'\t' | b'\r') {
                i += 1;
                continue;
            }
            match self.outer {
                Outer::DocStart => match b {
                    b'{' => self.outer = Outer::Key { first: true },
                    b'[' => {
                        self.bare = true;
                        self.outer = Outer::Element { first: true };
                    }
                    _ => {
                        return Err(self.syntax(
                            i,
                            "expected a JSON object (with traceEvents) or an array of events",
                        ))
                    }
                },
                Outer::Key { first } => match b {
                    b'"' => {
                        self.part_start = Some(i);
                        self.key = (i as u32 + 1, 0);
                        self.outer = Outer::InKey { escaped: false };
                    }
                    b'}' if first => self.outer = Outer::DocEnd,
                    _ => return Err(self.syntax(i, "expected a field name in double quotes")),
                },
                Outer::Colon => {
                    if b != b':' {
                        return Err(self.syntax(i, "expected ':' after a field name"));
                    }
                    self.outer = Outer::FieldValue;
                }
                Outer::FieldValue => {
                    let key = &buf[self.key.0 as usize..self.key.1 as usize];
                    if b == b'[' && key == self.array_key {
                        self.part_start = None;
                        self.key = (0, 0);
                        self.outer = Outer::Element { first: true };
                    } else {
                        self.part_kind = PartKind::Field;
                        self.value_start = i;
                        self.start_part(i);
                        continue;
                    }
                }
                Outer::AfterField => match b {
                    b',' => self.outer = Outer::Key { first: false },
                    b'}' => self.outer = Outer::DocEnd,
                    _ => return Err(self.syntax(i, "expected ',' or '}' after a field")),
                },
                Outer::Element { first } => {
                    if b == b']' && first {
                        self.close_array();
                    } else if b == b']' || b == b',' {
                        return Err(self.syntax(i, "expected an event"));
                    } else {
                        self.part_start = Some(i);
                        self.part_kind = PartKind::Element;
                        self.start_part(i);
                        continue;
                    }
                }
                Outer::AfterElement => match b {
                    b',' => self.outer = Outer::Element { first: false },
                    b']' => self.close_array(),
                    _ => return Err(self.syntax(i, "expected ',' or ']' after an event")),
                },
                Outer::DocEnd => {
                    return Err(self.syntax(i, "trailing characters after the document"))
                }
                Outer::InPart | Outer::InKey { .. } => unreachable!("handled above"),
            }
            i += 1;
        }
        self.pos = i;
        Ok(())
    }

    fn close_array(&mut self) {
        self.outer = if self.bare {
            Outer::DocEnd
        } else {
            Outer::AfterField
        };
    }

    /// A value starts at `i` (not consumed: [`Self::scan_value`] looks at it).
    fn start_part(&mut self, i: usize) {
        self.part_at = self.pos_at(i);
        self.scan = ValueScan::default();
        self.outer = Outer::InPart;
        self.value_fresh = true;
    }

    /// Scans the current value from `i`; its end (exclusive) once it is whole.
    fn scan_value(&mut self, buf: &[u8], mut i: usize) -> Option<usize> {
        if self.value_fresh {
            self.value_fresh = false;
            match buf[i] {
                b'{' | b'[' => {
                    self.scan.depth = 1;
                    i += 1;
                }
                b'"' => {
                    self.scan.in_str = true;
                    i += 1;
                }
                _ => self.scan.scalar = true,
            }
        }
        let mut s = self.scan;
        let end = self.scan_from(&mut s, buf, i);
        self.scan = s;
        end
    }

    fn scan_from(&mut self, s: &mut ValueScan, buf: &[u8], mut i: usize) -> Option<usize> {
        if s.scalar {
            // A number or literal ends at the next separator or blank.
            while i < buf.len() {
                if matches!(buf[i], b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
                    return Some(i);
                }
                i += 1;
            }
            return None;
        }
        while i < buf.len() {
            if s.in_str {
                if s.escaped {
                    s.escaped = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &buf[i..]) {
                    None => return None,
                    Some(k) => {
                        i += k;
                        if buf[i] == b'\\' {
                            s.escaped = true;
                        } else {
                            s.in_str = false;
                            if s.depth == 0 {
                                return Some(i + 1);
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            match buf[i] {
                b'"' => s.in_str = true,
                b'{' | b'[' => s.depth += 1,
                b'}' | b']' => {
                    s.depth -= 1;
                    if s.depth == 0 {
                        return Some(i + 1);
                    }
                }
                b'\n' => self.newline(i),
                _ => {}
            }
            i += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part as (kind, key, value text), reading `block` bytes at a time.
    fn split(doc: &str, block: usize) -> Result<Vec<(PartKind, String, String, Pos)>, SplitError> {
        let mut s = Splitter::new(doc.as_bytes(), b"traceEvents", block, 1 << 20);
        let mut out = Vec::new();
        let mut batch = Batch::default();
        while let Some(b) = s.next_batch(std::mem::take(&mut batch))? {
            for p in &b.parts {
                out.push((
                    p.kind,
                    String::from_utf8(b.key(p).to_vec()).unwrap(),
                    String::from_utf8(b.value(p).to_vec()).unwrap(),
                    p.at,
                ));
            }
            batch = b;
        }
        Ok(out)
    }

    const DOC: &str = "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 3, \"x\": [1, {}]},\n  \
        \"traceEvents\": [\n  {\"name\": \"a \\\"}] b\", \"ph\": \"X\", \"args\": {\"k\": [1, 2]}},\n  \
        {\"name\": \"\\\\\", \"ts\": 1.5}, 7, \"s\", null\n],\n \"trace_id\": \"t\\\"1\", \"z\": true}\n";

    #[test]
    fn splits_fields_and_elements_whatever_the_block_size() {
        let whole = split(DOC, 1 << 16).unwrap();
        let shape: Vec<(PartKind, &str, &str)> = whole
            .iter()
            .map(|(k, key, v, _)| (*k, key.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (PartKind::Field, "schemaVersion", "1"),
                (
                    PartKind::Field,
                    "distributedInfo",
                    "{\"rank\": 3, \"x\": [1, {}]}"
                ),
                (
                    PartKind::Element,
                    "",
                    "{\"name\": \"a \\\"}] b\", \"ph\": \"X\", \"args\": {\"k\": [1, 2]}}"
                ),
                (PartKind::Element, "", "{\"name\": \"\\\\\", \"ts\": 1.5}"),
                (PartKind::Element, "", "7"),
                (PartKind::Element, "", "\"s\""),
                (PartKind::Element, "", "null"),
                (PartKind::Field, "trace_id", "\"t\\\"1\""),
                (PartKind::Field, "z", "true"),
            ]
        );
        // Positions: the first event is on line 3, after two blanks.
        assert_eq!(whole[2].3.line, 3);
        assert_eq!(whole[2].3.column, 3);
        assert_eq!(&DOC[whole[2].3.byte as usize..][..8], "{\"name\":");
        for block in 1..=17 {
            assert_eq!(split(DOC, block).unwrap(), whole, "block {block}");
        }
    }

    #[test]
    fn a_bare_array_and_empty_documents() {
        let parts = split("[{\"a\": 1}, {\"b\": [2]}]", 3).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].2, "{\"b\": [2]}");
        assert!(split("[]", 1).unwrap().is_empty());
        assert!(split(" {} ", 1).unwrap().is_empty());
        assert!(split("{\"traceEvents\": []}", 2).unwrap().is_empty());
    }

    #[test]
    fn a_cut_document_ends_truncated_after_its_whole_parts() {
        let cut = &DOC[..DOC.find("7, ").unwrap()];
        let mut s = Splitter::new(cut.as_bytes(), b"traceEvents", 8, 1 << 20);
        let mut seen = 0;
        let err = loop {
            match s.next_batch(Batch::default()) {
                Ok(Some(b)) => seen += b.parts.len(),
                Ok(None) => panic!("a cut document cannot end cleanly"),
                Err(e) => break e,
            }
        };
        assert_eq!(seen, 4);
        assert!(matches!(err, SplitError::Truncated { .. }), "{err:?}");
        assert!(matches!(split("", 4), Err(SplitError::Truncated { .. })));
    }

    #[test]
    fn structure_errors_name_their_position() {
        let err = split("{\"traceEvents\": [1 2]}", 4).unwrap_err();
        match err {
            SplitError::Syntax { at, message } => {
                assert_eq!((at.line, at.column, at.byte), (1, 20, 19));
                assert_eq!(message, "expected ',' or ']' after an event");
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            "x",
            "{1: 2}",
            "{\"a\" 1}",
            "{\"a\": 1 \"b\": 2}",
            "[1,]",
            "[,1]",
            "{} x",
        ] {
            assert!(
                matches!(split(bad, 3), Err(SplitError::Syntax { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_part_over_the_cap_is_refused() {
        let big = format!("[{{\"a\": \"{}\"}}]", "x".repeat(5000));
        let mut s = Splitter::new(big.as_bytes(), b"traceEvents", 64, 1024);
        let Err(err) = s.next_batch(Batch::default()) else {
            panic!("a part over the cap was accepted");
        };
        // A big part under the cap passes; the buffer it grew is not kept for the next one.
        let mut s = Splitter::new(big.as_bytes(), b"traceEvents", 64, 1 << 20);
        let b = s.next_batch(Batch::default()).unwrap().unwrap();
        assert_eq!(b.parts.len(), 1);
        assert!(b.buf.len() > 5000);
        assert!(s.next_batch(b).unwrap().is_none());
        assert!(
            matches!(err, SplitError::TooLarge { limit: 1024, .. }),
            "{err:?}"
        );
    }

    /// Blanks in any amount, streamed: `head`, then `n` spaces, then `tail`.
    struct Blanks {
        head: &'static [u8],
        spaces: u64,
        tail: &'static [u8],
        at: u64,
    }

    impl Read for Blanks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let (h, s) = (self.head.len() as u64, self.spaces);
            let mut n = 0;
            while n < buf.len() {
                let i = self.at;
                let b = if i < h {
                    self.head[i as usize]
                } else if i < h + s {
                    b' '
                } else if ((i - h - s) as usize) < self.tail.len() {
                    self.tail[(i - h - s) as usize]
                } else {
                    break;
                };
                buf[n] = b;
                n += 1;
                self.at += 1;
            }
            Ok(n)
        }
    }

    #[test]
    fn blanks_between_parts_cost_one_block_whatever_their_length() {
        // 64 MiB of spaces between two events, between fields, and around the document,
        // read 4 KiB at a time: the buffer never holds more than a few blocks.
        for (head, tail) in [
            (&b"{\"traceEvents\": [{\"a\": 1},"[..], &b"{\"b\": 2}]}"[..]),
            (&b"{\"x\": 1,"[..], &b"\"traceEvents\": [{\"b\": 2}]}"[..]),
            (&b""[..], &b"[{\"b\": 2}]"[..]),
            (&b"[{\"a\": 1}]"[..], &b""[..]),
        ] {
            let input = Blanks {
                head,
                spaces: 64 << 20,
                tail,
                at: 0,
            };
            let mut s = Splitter::new(input, b"traceEvents", 4096, 1 << 20);
            let mut batch = Batch::default();
            let mut parts = 0;
            while let Some(b) = s.next_batch(std::mem::take(&mut batch)).unwrap() {
                assert!(b.buf.len() <= 3 * 4096, "buffer grew to {}", b.buf.len());
                parts += b.parts.len();
                batch = b;
            }
            assert!(parts >= 1);
            assert!(s.carry.capacity() <= 3 * 4096);
        }
        // Blanks inside one part count towards its cap: refused, not held.
        let input = Blanks {
            head: b"[{\"a\":",
            spaces: 8 << 20,
            tail: b"1}]",
            at: 0,
        };
        let mut s = Splitter::new(input, b"traceEvents", 4096, 1 << 20);
        assert!(matches!(
            s.next_batch(Batch::default()),
            Err(SplitError::TooLarge { .. })
        ));
    }

    #[test]
    fn invalid_utf8_is_replaced_across_read_boundaries() {
        let mut doc = "[\"héllo ".as_bytes().to_vec();
        doc.extend_from_slice(&[0xff, b'x', 0xe2, 0x82]); // a bad byte, a cut €
        doc.extend_from_slice(" € ok\", \"a".as_bytes());
        doc.extend_from_slice(&[0xe2]);
        doc.extend_from_slice(b"\"]");
        for block in [1, 2, 3, 7, 1 << 20] {
            let mut s = Splitter::new(&doc[..], b"traceEvents", block, 1 << 20);
            let mut values = Vec::new();
            let mut batch = Batch::default();
            while let Some(b) = s.next_batch(std::mem::take(&mut batch)).unwrap() {
                for p in &b.parts {
                    values.push(String::from_utf8(b.value(p).to_vec()).unwrap());
                }
                batch = b;
            }
            assert_eq!(
                values,
                ["\"héllo \u{FFFD}x\u{FFFD} € ok\"", "\"a\u{FFFD}\""],
                "block {block}"
            );
            assert_eq!(s.replaced(), 3);
        }
    }
}
