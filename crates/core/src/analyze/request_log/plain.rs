//! The reader for the common line: one flat JSON object holding only the method's
//! fields, numbers as plain JSON numbers, strings without escapes. It reads such a line
//! in one pass over its bytes, with no intermediate value and no allocation besides the
//! row's own texts, and answers `None` for anything else: another field, a quoted
//! number, an escape, a duplicate, a malformed line. The general reader (`parse_row`)
//! then reads the line, keeps what is unknown and explains what is wrong, so this one
//! never needs to.
//!
//! The lines of one file name their fields in the same order, nearly always: a
//! [`Hint`] keeps which field followed which in the lines read so far, and a name is
//! first compared with the one expected there (one comparison instead of a search).
//!
//! Numbers come out exactly as the general reader's JSON parser makes them. A decimal
//! with at most 19 digits whose digits fit in 53 bits and whose power of ten is within
//! ±22 is one correctly rounded division or multiplication of two exact doubles (the
//! parser does the same); any other number is left to the general reader. Digits are
//! read eight at a time where the line has eight bytes left.

use super::RequestRow;
use super::{FLOAT_FIELDS, INT_FIELDS};

/// The row's text fields, in the order of [`text_slot`].
const TEXT_FIELDS: [&str; 3] = ["request_id", "model_version", "tenant"];

/// How many fields the plain reader knows.
const FIELDS: usize = FLOAT_FIELDS.len() + INT_FIELDS.len() + TEXT_FIELDS.len();

/// Every field's name by its number (see [`field_of`]).
const NAMES: [&str; FIELDS] = {
    let mut names = [""; FIELDS];
    let mut k = 0;
    while k < FIELDS {
        names[k] = if k < FLOAT_FIELDS.len() {
            FLOAT_FIELDS[k]
        } else if k < FLOAT_FIELDS.len() + INT_FIELDS.len() {
            INT_FIELDS[k - FLOAT_FIELDS.len()]
        } else {
            TEXT_FIELDS[k - FLOAT_FIELDS.len() - INT_FIELDS.len()]
        };
        k += 1;
    }
    names
};

/// The longest name with its quotes, rounded up to whole words.
const QUOTED_BYTES: usize = 32;

/// Every field's name with its quotes (padded with zeros), and the length of that.
const QUOTED: [([u8; QUOTED_BYTES], usize); FIELDS] = {
    let mut quoted = [([0u8; QUOTED_BYTES], 0); FIELDS];
    let mut k = 0;
    while k < FIELDS {
        let name = NAMES[k].as_bytes();
        assert!(name.len() + 2 <= QUOTED_BYTES && name.len() + 2 >= 8);
        quoted[k].0[0] = b'"';
        let mut i = 0;
        while i < name.len() {
            quoted[k].0[i + 1] = name[i];
            i += 1;
        }
        quoted[k].0[name.len() + 1] = b'"';
        quoted[k].1 = name.len() + 2;
        k += 1;
    }
    quoted
};

/// No field expected (nothing learned yet, or the line ended there).
const NO_FIELD: u8 = u8::MAX;

/// Which field came after which in the lines read so far: `after[k]` follows field
/// `k`, and `after[FIELDS]` opens a line. Only a guess: a line in another order is
/// read as well, and teaches its order.
#[derive(Debug, Clone)]
pub struct Hint {
    after: [u8; FIELDS + 1],
}

impl Default for Hint {
    fn default() -> Self {
        Hint {
            after: [NO_FIELD; FIELDS + 1],
        }
    }
}

/// Reads a line into `row`, every field of which it sets anew (a block's rows are
/// reused: moving a new row of ~350 bytes into its list was a copy per line); `None`
/// when the line is not of the plain kind, and `row` then holds part of it.
pub(super) fn read_plain(
    bytes: &[u8],
    line: u64,
    hint: &mut Hint,
    row: &mut RequestRow,
) -> Option<()> {
    let mut r = Reader { b: bytes, i: 0 };
    row.reset(line);
    // One bit per field: a name given twice is for the general reader.
    let mut seen = 0u32;
    let mut previous = FIELDS;
    r.skip_ws();
    r.eat(b'{')?;
    r.skip_ws();
    if r.peek() == Some(b'}') {
        r.i += 1;
    } else {
        loop {
            r.skip_ws();
            let field = match r.expected_name(hint.after[previous]) {
                Some(field) => field,
                None => {
                    let field = field_of(r.plain_string()?)?;
                    hint.after[previous] = field as u8;
                    field
                }
            };
            if seen & (1 << field) != 0 {
                return None;
            }
            seen |= 1 << field;
            previous = field;
            r.skip_ws();
            r.eat(b':')?;
            r.skip_ws();
            r.value_into(row, field)?;
            r.skip_ws();
            match r.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    r.skip_ws();
    (r.i == bytes.len()).then_some(())
}

/// The field a name is, in the order of [`float_slot`], [`int_slot`] and [`text_slot`]:
/// the ten floats (arrival first, as `FLOAT_FIELDS`), the five integers (as
/// `INT_FIELDS`), then the three texts (as [`TEXT_FIELDS`]).
fn field_of(key: &[u8]) -> Option<usize> {
    Some(match key {
        b"arrival_ts" => 0,
        b"tokenize_ms" => 1,
        b"queue_wait_ms" => 2,
        b"prefill_ms" => 3,
        b"first_token_ms" => 4,
        b"decode_ms" => 5,
        b"itl_p50_ms" => 6,
        b"itl_p99_ms" => 7,
        b"detokenize_ms" => 8,
        b"total_ms" => 9,
        b"prompt_tokens" => 10,
        b"output_tokens" => 11,
        b"batch_size_at_admission" => 12,
        b"kv_blocks_used" => 13,
        b"prefix_cache_hit_tokens" => 14,
        b"request_id" => 15,
        b"model_version" => 16,
        b"tenant" => 17,
        _ => return None,
    })
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

/// What the general reader's JSON parser does with the digits and the power of ten:
/// exact below 2^53 and ±22, so one rounding.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A number as written: its sign, its digits as an integer, the power of ten they are
/// scaled by, and whether it had a fraction or an exponent.
struct Number {
    negative: bool,
    digits: u64,
    exponent: i32,
    integer: bool,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.i += 1;
        }
    }

    /// The quoted name of field `guess`, when the line has it here: the reader moves
    /// past it. Anything else (another name, an escape) is left for [`Self::plain_string`].
    fn expected_name(&mut self, guess: u8) -> Option<usize> {
        let (name, len) = QUOTED.get(usize::from(guess))?;
        let here = self.b.get(self.i..self.i + len)?;
        // Word by word (every quoted name is at least a word long); the last word may
        // overlap the one before it.
        let word = |s: &[u8], at: usize| {
            u64::from_le_bytes(s[at..at + 8].try_into().expect("eight bytes"))
        };
        let mut at = 0;
        while at + 8 < *len {
            if word(here, at) != word(name, at) {
                return None;
            }
            at += 8;
        }
        if word(here, len - 8) != word(name, len - 8) {
            return None;
        }
        self.i += len;
        Some(usize::from(guess))
    }

    /// A string's bytes between its quotes, when it has no escape and no control
    /// character (which JSON forbids raw).
    fn plain_string(&mut self) -> Option<&[u8]> {
        self.eat(b'"')?;
        let start = self.i;
        // Names and values are short: a plain loop beats a vectorised search here.
        loop {
            match *self.b.get(self.i)? {
                b'"' => break,
                b'\\' => return None,
                c if c < 0x20 => return None,
                _ => self.i += 1,
            }
        }
        self.i += 1;
        Some(&self.b[start..self.i - 1])
    }

    fn value_into(&mut self, row: &mut RequestRow, field: usize) -> Option<()> {
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            return Some(());
        }
        let (floats, ints) = (FLOAT_FIELDS.len(), INT_FIELDS.len());
        if field < floats {
            let x = self.number()?.float()?;
            *float_slot(row, field) = Some(x);
        } else if field < floats + ints {
            let n = self.number()?;
            *int_slot(row, field - floats) = Some(n.int()?);
        } else {
            let s = std::str::from_utf8(self.plain_string()?).ok()?;
            *text_slot(row, field - floats - ints) = Some(s.into());
        }
        Some(())
    }

    /// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`,
    /// with at most 19 digits and an exponent of at most 4 digits.
    fn number(&mut self) -> Option<Number> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.i += 1;
        }
        let mut digits = 0u64;
        let mut count = 0usize;
        let mut exponent = 0i32;
        let mut integer = true;
        let first = self.peek()?;
        if !first.is_ascii_digit() {
            return None;
        }
        // One leading zero at most.
        if first == b'0' && self.b.get(self.i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        self.digits(&mut digits, &mut count)?;
        if self.peek() == Some(b'.') {
            integer = false;
            self.i += 1;
            let fraction = self.digits(&mut digits, &mut count)?;
            if fraction == 0 {
                return None;
            }
            exponent -= fraction as i32;
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.i += 1;
            let negative_exp = match self.peek()? {
                b'-' => {
                    self.i += 1;
                    true
                }
                b'+' => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let start = self.i;
            let mut e = 0i32;
            while let Some(c @ b'0'..=b'9') = self.peek() {
                e = e * 10 + i32::from(c - b'0');
                self.i += 1;
                if self.i - start > 4 {
                    return None;
                }
            }
            if self.i == start {
                return None;
            }
            exponent += if negative_exp { -e } else { e };
        }
        Some(Number {
            negative,
            digits,
            exponent,
            integer,
        })
    }
}

impl Reader<'_> {
    /// A run of decimal digits appended to `digits`; how many there were. `None` once
    /// the number has more than 19 digits (`count`, over its runs).
    fn digits(&mut self, digits: &mut u64, count: &mut usize) -> Option<usize> {
        let start = self.i;
        // Eight bytes at a time while the line has them (numbers are followed by at
        // least the line's closing brace, so this covers nearly every digit).
        while let Some(eight) = self.b.get(self.i..self.i + 8) {
            let word = u64::from_le_bytes(eight.try_into().ok()?);
            let n = leading_digits(word);
            if n == 0 {
                return Some(self.i - start);
            }
            *count += n;
            if *count > 19 {
                return None;
            }
            *digits = *digits * POW10_INT[n] + digits_value(word, n);
            self.i += n;
            if n < 8 {
                return Some(self.i - start);
            }
        }
        while let Some(c @ b'0'..=b'9') = self.peek() {
            *count += 1;
            if *count > 19 {
                return None;
            }
            *digits = *digits * 10 + u64::from(c - b'0');
            self.i += 1;
        }
        Some(self.i - start)
    }
}

/// Powers of ten up to 10^8, as integers.
const POW10_INT: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

const ONES: u64 = 0x0101_0101_0101_0101;

/// How many of the eight bytes of `word` (the first in its low byte) are ASCII digits
/// before the first that is not.
fn leading_digits(word: u64) -> usize {
    // A byte is a digit when it is '0' + 0..=9: xor with '0' leaves 0..=9 exactly then.
    let v = word ^ (ONES * u64::from(b'0'));
    // High bit of each byte set when the byte is 10 or more (no carry crosses a byte:
    // 0x7F + 0x76 < 0x100), or had its high bit set already.
    let not_digit = (((v & (ONES * 0x7F)) + ONES * 0x76) | v) & (ONES * 0x80);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `n` (1..=8) bytes of `word` (ASCII digits, the first in the
/// low byte), combined in three steps: pairs, fours, then eight (as simdjson does).
fn digits_value(word: u64, n: usize) -> u64 {
    let v = (word & (ONES * 0x0F)) << (8 * (8 - n));
    let v = (v.wrapping_mul(10 << 8 | 1) >> 8) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100 << 16 | 1) >> 16) & 0x0000_FFFF_0000_FFFF;
    v.wrapping_mul(10_000 << 32 | 1) >> 32
}

impl Number {
    fn float(&self) -> Option<f64> {
        if self.integer {
            // Whole numbers: the parser's integer, then its conversion to a double
            // ("-0" is the parser's float -0.0, left to it).
            if self.negative && self.digits == 0 {
                return None;
            }
            let x = self.digits as f64;
            return Some(if self.negative { -x } else { x });
        }
        if self.digits > 1 << 53 || self.exponent.unsigned_abs() as usize >= POW10.len() {
            return None;
        }
        let m = self.digits as f64;
        let p = POW10[self.exponent.unsigned_abs() as usize];
        let x = if self.exponent >= 0 { m * p } else { m / p };
        Some(if self.negative { -x } else { x })
    }

    /// A whole number written as one (no fraction, no exponent), within 18 digits.
    fn int(&self) -> Option<i64> {
        if !self.integer || self.digits >= 1_000_000_000_000_000_000 {
            return None;
        }
        if self.negative && self.digits == 0 {
            return None;
        }
        let n = self.digits as i64;
        Some(if self.negative { -n } else { n })
    }
}

fn float_slot(row: &mut RequestRow, k: usize) -> &mut Option<f64> {
    match k {
        0 => &mut row.arrival_ts,
        1 => &mut row.tokenize_ms,
        2 => &mut row.queue_wait_ms,
        3 => &mut row.prefill_ms,
        4 => &mut row.first_token_ms,
        5 => &mut row.decode_ms,
        6 => &mut row.itl_p50_ms,
        7 => &mut row.itl_p99_ms,
        8 => &mut row.detokenize_ms,
        _ => &mut row.total_ms,
    }
}

fn int_slot(row: &mut RequestRow, k: usize) -> &mut Option<i64> {
    match k {
        0 => &mut row.prompt_tokens,
        1 => &mut row.output_tokens,
        2 => &mut row.batch_size_at_admission,
        3 => &mut row.kv_blocks_used,
        _ => &mut row.prefix_cache_hit_tokens,
    }
}

fn text_slot(row: &mut RequestRow, k: usize) -> &mut Option<compact_str::CompactString> {
    match k {
        0 => &mut row.request_id,
        1 => &mut row.model_version,
        _ => &mut row.tenant,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_bytes_give_their_leading_digits_and_value() {
        for text in [
            "12345678",
            "1234567}",
            "0.5,\"a\"",
            "99999999",
            "00000001",
            "7e+5    ",
            "x1234567",
            "1\u{7f}345678",
            "12\u{b0}",
            "/:09:/09",
        ] {
            let mut eight = [b' '; 8];
            let bytes = text.as_bytes();
            eight[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
            let word = u64::from_le_bytes(eight);
            let n = eight.iter().take_while(|c| c.is_ascii_digit()).count();
            assert_eq!(leading_digits(word), n, "{text}");
            if n > 0 {
                let value: u64 = std::str::from_utf8(&eight[..n]).unwrap().parse().unwrap();
                assert_eq!(digits_value(word, n), value, "{text}");
            }
        }
    }

    #[test]
    fn the_field_numbers_follow_the_row_lists() {
        let names = FLOAT_FIELDS.iter().chain(INT_FIELDS.iter());
        let names = names.chain(["request_id", "model_version", "tenant"].iter());
        for (k, name) in names.enumerate() {
            assert_eq!(field_of(name.as_bytes()), Some(k), "{name}");
        }
    }
}
