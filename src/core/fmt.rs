//! Numbers as people read them, the one place for digit grouping: pages, charts, the
//! analyzers' notes, the estimators' formulas and the Markdown export all group digits
//! through here (`3,200`, `-1,234.5`).

/// `1234567` → `1,234,567`.
pub fn grouped(n: u64) -> String {
    group_digits(&n.to_string())
}

/// Commas between groups of three in a run of ASCII digits.
fn group_digits(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number with thousands separators and a fixed number of decimals:
/// `format_number(3200.0, 0)` → "3,200", `format_number(-1234.5, 1)` → "-1,234.5".
pub fn format_number(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (int_part, frac_part) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text.as_str(), None),
    };
    let grouped = group_digits(int_part);
    // "-0" after rounding is just "0".
    let is_zero = text.chars().all(|c| c == '0' || c == '.');
    let sign = if value < 0.0 && !is_zero { "-" } else { "" };
    match frac_part {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// Bytes as people read them, in SI units ("1.1 MB"), as file sizes are usually shown.
pub fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1000.0 && i < UNITS.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(format_number(3200.0, 0), "3,200");
        assert_eq!(format_number(800.0, 0), "800");
        assert_eq!(format_number(1234567.891, 2), "1,234,567.89");
        assert_eq!(format_number(-1234.5, 1), "-1,234.5");
        assert_eq!(format_number(-0.04, 1), "0.0");
        assert_eq!(format_number(0.5, 0), "0");
    }
}
