//! Quantities: a number with its unit. Every field that takes an amount (step forms,
//! expected values, metric targets) reads it here, so "3.2 s", "800 ms", "620 ms",
//! "40%", "4,096 tokens" and "80 GiB" mean the same thing everywhere, and a value in
//! the wrong kind of unit (a ratio where a time belongs) is refused naming both units.
//!
//! Units belong to a [`Dimension`]; within a dimension they convert exactly (s → ms,
//! % → fraction, GiB → bytes); across dimensions they never do.

use serde::{Deserialize, Serialize};

/// What a quantity measures. Two values can be compared only in the same dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Time,
    /// A plain ratio or fraction (0.4, 40%, 1.5×).
    Ratio,
    Bytes,
    Tokens,
    /// A plain count (requests in a batch, pages, steps).
    Count,
    RequestRate,
    TokenRate,
    /// Money (the cost metrics are dollars per million tokens).
    Money,
    /// Floating-point operations.
    Operations,
}

impl Dimension {
    /// "a time", "a ratio", … for sentences.
    pub fn phrase(self) -> &'static str {
        match self {
            Dimension::Time => "a time",
            Dimension::Ratio => "a ratio",
            Dimension::Bytes => "a size in bytes",
            Dimension::Tokens => "a number of tokens",
            Dimension::Count => "a count",
            Dimension::RequestRate => "a request rate",
            Dimension::TokenRate => "a token rate",
            Dimension::Money => "an amount of money",
            Dimension::Operations => "a number of operations",
        }
    }

    /// The units a person may type for this dimension, for error messages.
    pub fn examples(self) -> &'static str {
        match self {
            Dimension::Time => "ms, s or µs",
            Dimension::Ratio => "a plain number or %",
            Dimension::Bytes => "B, MB, GB, MiB or GiB",
            Dimension::Tokens => "tokens",
            Dimension::Count => "a plain number",
            Dimension::RequestRate => "req/s",
            Dimension::TokenRate => "tok/s",
            Dimension::Money => "usd",
            Dimension::Operations => "FLOP",
        }
    }
}

/// A unit. The serialized names of the first five are the ones step records were
/// stored with before the other units existed, so old records read unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Unit {
    #[serde(rename = "ms")]
    Ms,
    #[serde(rename = "s")]
    S,
    #[serde(rename = "tok/s")]
    TokPerS,
    #[serde(rename = "req/s")]
    ReqPerS,
    #[serde(rename = "usd")]
    Usd,
    #[serde(rename = "us")]
    Us,
    #[serde(rename = "day")]
    Day,
    #[serde(rename = "%")]
    Percent,
    #[serde(rename = "ratio")]
    Ratio,
    #[serde(rename = "tokens")]
    Tokens,
    #[serde(rename = "count")]
    Count,
    #[serde(rename = "B")]
    Bytes,
    #[serde(rename = "KB")]
    Kb,
    #[serde(rename = "MB")]
    Mb,
    #[serde(rename = "GB")]
    Gb,
    #[serde(rename = "KiB")]
    Kib,
    #[serde(rename = "MiB")]
    Mib,
    #[serde(rename = "GiB")]
    Gib,
    #[serde(rename = "FLOP")]
    Flop,
}

impl Unit {
    /// The unit as written after a number ("ms", "%", "GiB"); empty for plain ratios
    /// and counts.
    pub fn slug(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::S => "s",
            Unit::TokPerS => "tok/s",
            Unit::ReqPerS => "req/s",
            Unit::Usd => "usd",
            Unit::Us => "µs",
            Unit::Day => "days",
            Unit::Percent => "%",
            Unit::Ratio => "",
            Unit::Tokens => "tokens",
            Unit::Count => "",
            Unit::Bytes => "B",
            Unit::Kb => "KB",
            Unit::Mb => "MB",
            Unit::Gb => "GB",
            Unit::Kib => "KiB",
            Unit::Mib => "MiB",
            Unit::Gib => "GiB",
            Unit::Flop => "FLOP",
        }
    }

    /// How the unit is named in a sentence ("ms", "a plain ratio").
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ratio => "a plain ratio (no unit)",
            Unit::Count => "a plain count (no unit)",
            other => other.slug(),
        }
    }

    pub fn dimension(self) -> Dimension {
        match self {
            Unit::Ms | Unit::S | Unit::Us | Unit::Day => Dimension::Time,
            Unit::Percent | Unit::Ratio => Dimension::Ratio,
            Unit::Tokens => Dimension::Tokens,
            Unit::Count => Dimension::Count,
            Unit::Bytes | Unit::Kb | Unit::Mb | Unit::Gb | Unit::Kib | Unit::Mib | Unit::Gib => {
                Dimension::Bytes
            }
            Unit::TokPerS => Dimension::TokenRate,
            Unit::ReqPerS => Dimension::RequestRate,
            Unit::Usd => Dimension::Money,
            Unit::Flop => Dimension::Operations,
        }
    }

    /// Multiplier to the dimension's base unit (ms, ratio, bytes; 1 for the rest).
    fn factor(self) -> f64 {
        match self {
            Unit::Us => 1e-3,
            Unit::S => 1e3,
            Unit::Day => 86_400_000.0,
            Unit::Percent => 0.01,
            Unit::Kb => 1e3,
            Unit::Mb => 1e6,
            Unit::Gb => 1e9,
            Unit::Kib => 1024.0,
            Unit::Mib => 1024.0 * 1024.0,
            Unit::Gib => 1024.0 * 1024.0 * 1024.0,
            _ => 1.0,
        }
    }

    /// Lenient reading of a typed unit: "ms", "sec", "µs", "%", "tokens", "GiB",
    /// "req/s", "rps", "$", "x" …
    pub fn parse(raw: &str) -> Option<Unit> {
        let s = raw.trim().to_lowercase().replace(' ', "");
        Some(match s.as_str() {
            "ms" | "msec" | "millisecond" | "milliseconds" => Unit::Ms,
            "s" | "sec" | "secs" | "second" | "seconds" => Unit::S,
            "us" | "µs" | "μs" | "usec" | "microsecond" | "microseconds" => Unit::Us,
            "d" | "day" | "days" => Unit::Day,
            "tok/s" | "tokens/s" | "token/s" | "tps" | "tok/sec" | "tokens/sec" => Unit::TokPerS,
            "req/s" | "requests/s" | "request/s" | "rps" | "qps" | "req/sec" => Unit::ReqPerS,
            "usd" | "$" | "dollars" | "usd/1m" | "$/1m" => Unit::Usd,
            "%" | "pct" | "percent" => Unit::Percent,
            "x" | "×" | "ratio" => Unit::Ratio,
            "tok" | "token" | "tokens" => Unit::Tokens,
            "count" => Unit::Count,
            "b" | "byte" | "bytes" => Unit::Bytes,
            "kb" => Unit::Kb,
            "mb" => Unit::Mb,
            "gb" => Unit::Gb,
            "kib" => Unit::Kib,
            "mib" => Unit::Mib,
            "gib" => Unit::Gib,
            "flop" | "flops" => Unit::Flop,
            _ => return None,
        })
    }

    /// `value` in this unit converted to `to`; `None` across dimensions.
    pub fn convert(self, value: f64, to: Unit) -> Option<f64> {
        (self.dimension() == to.dimension()).then(|| value * self.factor() / to.factor())
    }
}

/// A number with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    pub value: f64,
    pub unit: Unit,
}

impl Quantity {
    pub fn new(value: f64, unit: Unit) -> Quantity {
        Quantity { value, unit }
    }

    pub fn dimension(&self) -> Dimension {
        self.unit.dimension()
    }

    /// The value in `unit`; `None` when the dimensions differ.
    pub fn in_unit(&self, unit: Unit) -> Option<f64> {
        self.unit.convert(self.value, unit)
    }
}

/// Why a typed amount was refused. The message names what was typed and what the
/// field takes; the caller adds which field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantityError(pub String);

impl std::fmt::Display for QuantityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Characters that group thousands: comma, underscore, and the narrow and no-break
/// spaces typeset numbers use.
const GROUP: [char; 4] = [',', '_', '\u{202f}', '\u{a0}'];

/// Splits "3.2 s", "~3,200ms", "$1.20", "40%" into the number and the unit typed
/// after it (`None` when there is none). Commas and underscores group thousands
/// (groups of three digits); the decimal mark is '.'.
pub fn split(raw: &str) -> Result<(f64, Option<Unit>), QuantityError> {
    let text = raw.trim();
    let body = text.trim_start_matches(['~', '≈']).trim_start();
    let (body, dollar) = match body.strip_prefix('$') {
        Some(rest) => (rest.trim_start(), true),
        None => (body, false),
    };
    let bytes: Vec<(usize, char)> = body.char_indices().collect();
    let mut end = body.len();
    for (k, &(i, c)) in bytes.iter().enumerate() {
        let exponent = matches!(c, 'e' | 'E')
            && k > 0
            && bytes[k - 1].1.is_ascii_digit()
            && bytes
                .get(k + 1)
                .is_some_and(|&(_, n)| n.is_ascii_digit() || matches!(n, '+' | '-'));
        if c.is_ascii_digit() || matches!(c, '.' | '+' | '-') || GROUP.contains(&c) || exponent {
            continue;
        }
        end = i;
        break;
    }
    let (number, suffix) = body.split_at(end);
    let number = number.trim();
    if number.is_empty() {
        return Err(QuantityError(format!("'{text}' is not a number")));
    }
    let plain = ungroup(number).ok_or_else(|| {
        QuantityError(format!(
            "'{text}': commas group thousands in threes (3,200); write decimals with '.'"
        ))
    })?;
    let value: f64 = plain
        .parse()
        .map_err(|_| QuantityError(format!("'{text}' is not a number")))?;
    if !value.is_finite() {
        return Err(QuantityError(format!("'{text}' is not a finite number")));
    }
    let unit = match (suffix.trim(), dollar) {
        ("", true) => Some(Unit::Usd),
        ("", false) => None,
        (s, _) => Some(Unit::parse(s).ok_or_else(|| {
            QuantityError(format!(
                "'{s}' in '{text}' is not a unit: use ms, s, µs, %, tokens, GB, GiB, tok/s or req/s"
            ))
        })?),
    };
    Ok((value, unit))
}

/// The number with its group separators removed, when every group after the first
/// has exactly three digits (so "1,5" is refused rather than read as 15).
fn ungroup(number: &str) -> Option<String> {
    if !number.contains(GROUP) {
        return Some(number.to_string());
    }
    let (int, rest) = match number.find(['.', 'e', 'E']) {
        Some(at) => number.split_at(at),
        None => (number, ""),
    };
    if rest.contains(GROUP) {
        return None;
    }
    let int = int.trim_start_matches(['+', '-']);
    let sign = &number[..number.len() - rest.len() - int.len()];
    let groups: Vec<&str> = int.split(GROUP).collect();
    let first_ok = (1..=3).contains(&groups[0].len());
    let rest_ok = groups[1..].iter().all(|g| g.len() == 3);
    (first_ok && rest_ok).then(|| format!("{sign}{}{rest}", groups.concat()))
}

/// Reads an amount for a field whose values are kept in `unit`: a bare number is in
/// `unit`; a typed unit of the same dimension is converted; another dimension is
/// refused naming both units.
pub fn read(raw: &str, unit: Unit) -> Result<f64, QuantityError> {
    let (value, typed) = split(raw)?;
    let typed = typed.unwrap_or(unit);
    typed.convert(value, unit).ok_or_else(|| {
        QuantityError(format!(
            "'{}' is {} in {}, but this field takes {} in {}",
            raw.trim(),
            typed.dimension().phrase(),
            typed.name(),
            unit.dimension().phrase(),
            unit.dimension().examples()
        ))
    })
}

/// The unit a form field's unit text names ("ms", "tokens", "tokens/s", "USD", "USD per
/// 1M output tokens", "B"), when it is one this module knows; `None` for plain numbers
/// ("") and units it does not convert ("GPUs", "B/s", "FLOP/s", "layers").
pub fn field_unit(unit_text: &str) -> Option<Unit> {
    let text = unit_text.trim();
    if text.starts_with("USD") || text.starts_with('$') {
        return Some(Unit::Usd);
    }
    Unit::parse(text)
}

/// Reads a number for a form or API field whose unit is described by `unit_text` (see
/// [`field_unit`]): a plain number is in the field's unit, so the API's plain numbers
/// read as before; "2,000", "23 ms", "2 s", "$3.00", "40%" are read where the typed unit
/// converts to the field's; a unit of another dimension is refused naming both. A field
/// without a convertible unit takes a plain number, or a percentage where the field is a
/// plain ratio (`unit_text` empty).
pub fn read_field(raw: &str, unit_text: &str) -> Result<f64, QuantityError> {
    if let Some(unit) = field_unit(unit_text) {
        return read(raw, unit);
    }
    let (value, typed) = split(raw)?;
    match typed {
        None => Ok(value),
        Some(t) if unit_text.trim().is_empty() && t.dimension() == Dimension::Ratio => t
            .convert(value, Unit::Ratio)
            .ok_or_else(|| QuantityError(format!("'{}' is not a ratio", raw.trim()))),
        Some(t) => {
            let takes = match unit_text.trim() {
                "" => "a plain number".to_string(),
                u => format!("a plain number of {u}"),
            };
            Err(QuantityError(format!(
                "'{}' is {} in {}, but this field takes {takes}",
                raw.trim(),
                t.dimension().phrase(),
                t.name()
            )))
        }
    }
}

/// Reads an amount and keeps the unit it was typed in (`default` when none was).
pub fn read_quantity(raw: &str, default: Unit) -> Result<Quantity, QuantityError> {
    let (value, typed) = split(raw)?;
    Ok(Quantity::new(value, typed.unwrap_or(default)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_the_same_whatever_the_unit() {
        assert_eq!(read("3.2 s", Unit::Ms).unwrap(), 3200.0);
        assert_eq!(read("800 ms", Unit::Ms).unwrap(), 800.0);
        assert_eq!(read("620ms", Unit::Ms).unwrap(), 620.0);
        assert_eq!(read("620", Unit::Ms).unwrap(), 620.0);
        assert!((read("349.8 µs", Unit::Ms).unwrap() - 0.3498).abs() < 1e-12);
        assert!((read("349.8 us", Unit::Ms).unwrap() - 0.3498).abs() < 1e-12);
        assert_eq!(read("~3,200 ms", Unit::Ms).unwrap(), 3200.0);
        assert_eq!(read("2 days", Unit::Day).unwrap(), 2.0);
    }

    #[test]
    fn thousands_separators_group_in_threes() {
        assert_eq!(read("1,800", Unit::TokPerS).unwrap(), 1800.0);
        assert_eq!(read("100_000", Unit::Count).unwrap(), 100_000.0);
        assert_eq!(read("1\u{202f}234.5", Unit::Ms).unwrap(), 1234.5);
        assert_eq!(read("-1,234", Unit::Ms).unwrap(), -1234.0);
        assert_eq!(read("3.2e3", Unit::Ms).unwrap(), 3200.0);
        let e = read("1,5", Unit::Ms).unwrap_err();
        assert!(e.0.contains("threes"), "{e}");
        assert!(read("12,34,567", Unit::Ms).is_err());
    }

    #[test]
    fn fractions_percent_tokens_bytes_and_rates() {
        assert_eq!(read("40%", Unit::Ratio).unwrap(), 0.4);
        assert_eq!(read("0.4", Unit::Ratio).unwrap(), 0.4);
        assert_eq!(read("1.5x", Unit::Ratio).unwrap(), 1.5);
        assert_eq!(read("62", Unit::Percent).unwrap(), 62.0);
        assert_eq!(read("4,096 tokens", Unit::Tokens).unwrap(), 4096.0);
        assert_eq!(read("80 GiB", Unit::Bytes).unwrap(), 80.0 * 1024f64.powi(3));
        assert_eq!(read("80 GB", Unit::Gib).unwrap(), 80e9 / 1024f64.powi(3));
        assert_eq!(read("12 rps", Unit::ReqPerS).unwrap(), 12.0);
        assert_eq!(read("$1.20", Unit::Usd).unwrap(), 1.2);
    }

    #[test]
    fn another_dimension_is_refused_naming_both_units() {
        let e = read("46%", Unit::Ms).unwrap_err();
        assert!(e.0.contains("a ratio in %"), "{e}");
        assert!(e.0.contains("a time in ms, s or µs"), "{e}");
        let e = read("3 GB", Unit::Tokens).unwrap_err();
        assert!(e.0.contains("GB") && e.0.contains("tokens"), "{e}");
        let e = read("3 parsecs", Unit::Ms).unwrap_err();
        assert!(e.0.contains("'parsecs'"), "{e}");
        assert!(read("fast", Unit::Ms).is_err());
        assert!(read("", Unit::Ms).is_err());
        assert!(read("inf", Unit::Ms).is_err());
    }

    #[test]
    fn fields_read_typed_units_where_they_fit_and_plain_numbers_as_before() {
        assert_eq!(read_field("2,000", "tokens").unwrap(), 2000.0);
        assert_eq!(read_field("2000", "tokens").unwrap(), 2000.0);
        assert_eq!(read_field("23 ms", "ms").unwrap(), 23.0);
        assert_eq!(read_field("2 s", "ms").unwrap(), 2000.0);
        assert_eq!(read_field("500 ms", "s").unwrap(), 0.5);
        assert_eq!(read_field("$3.00", "USD").unwrap(), 3.0);
        assert_eq!(
            read_field("$0.40", "USD per 1M output tokens").unwrap(),
            0.4
        );
        assert_eq!(read_field("1,800 tok/s", "tokens/s").unwrap(), 1800.0);
        assert_eq!(read_field("80 GB", "B").unwrap(), 80e9);
        assert_eq!(read_field("50%", "").unwrap(), 0.5);
        assert_eq!(read_field("0.5", "").unwrap(), 0.5);
        assert_eq!(read_field("4", "GPUs").unwrap(), 4.0);
        assert_eq!(read_field("3.35e12", "B/s").unwrap(), 3.35e12);
        let e = read_field("2 s", "tokens").unwrap_err();
        assert!(
            e.0.contains("a time in s") && e.0.contains("a number of tokens"),
            "{e}"
        );
        let e = read_field("23 ms", "GPUs").unwrap_err();
        assert!(e.0.contains("a plain number of GPUs"), "{e}");
        let e = read_field("40%", "USD").unwrap_err();
        assert!(e.0.contains("an amount of money"), "{e}");
        assert!(read_field("lots", "tokens").is_err());
        assert!(read_field("1,5", "").is_err());
    }

    #[test]
    fn quantities_keep_their_unit_and_convert_within_a_dimension() {
        let q = read_quantity("3.2 s", Unit::Ms).unwrap();
        assert_eq!(q.unit, Unit::S);
        assert_eq!(q.in_unit(Unit::Ms), Some(3200.0));
        assert_eq!(q.in_unit(Unit::Ratio), None);
        assert_eq!(read_quantity("21", Unit::Ms).unwrap().unit, Unit::Ms);
        for u in [Unit::Ms, Unit::S, Unit::TokPerS, Unit::ReqPerS, Unit::Usd] {
            let json = serde_json::to_string(&u).unwrap();
            let back: Unit = serde_json::from_str(&json).unwrap();
            assert_eq!(back, u);
        }
        assert_eq!(serde_json::to_string(&Unit::TokPerS).unwrap(), "\"tok/s\"");
    }
}
