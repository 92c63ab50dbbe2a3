//! Numbers as people read them, the one place for digit grouping: pages, charts, the
//! analyzers' notes, the estimators' formulas and the Markdown export all group digits
//! through here (`3,200`, `-1,234.5`).

/// Characters a name must not carry into a page: control characters, and the ones
/// that reorder text around them (bidirectional overrides, embeddings, isolates and
/// marks), with which "gpj.json" can display as "nosj.jpg".
pub fn unsafe_in_name(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// A name made from text nobody typed here (an archive member, a span's service):
/// each character [`unsafe_in_name`] refuses becomes `_`.
pub fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| if unsafe_in_name(c) { '_' } else { c })
        .collect()
}

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

/// About four significant digits; integers and anything ≥ 1000 get thousands separators:
/// `num(15.0508)` → "15.05", `num(1234.56)` → "1,235", `num(0.000123456)` → "0.000123".
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    if a >= 1e15 {
        return format!("{x:.3e}");
    }
    let integral = (x - x.round()).abs() < 1e-9 * a.max(1.0);
    if a >= 999.95 || integral {
        let sign = if x < 0.0 { "-" } else { "" };
        return format!("{sign}{}", grouped(a.round() as u64));
    }
    let decimals = if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else {
        // three significant digits below 1
        (2 - a.log10().floor() as i32).max(0) as usize
    };
    trim_zeros(format!("{x:.decimals$}"))
}

/// "2.50" → "2.5", "3.000" → "3"; text without a decimal point is left alone.
pub(crate) fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// How a byte count is written; the one place byte counts are formatted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteStyle {
    /// A file size, in SI units with one decimal, as file sizes are usually shown:
    /// "1.1 MB", "512 B".
    Size,
    /// A figure in an estimate's formula: GB or MB with about four significant digits
    /// ([`num`]), small counts exact in B: "16.06 GB", "2.5 MB", "131,072 B".
    Figure,
}

/// Bytes as people read them, in the given style.
pub fn bytes(b: f64, style: ByteStyle) -> String {
    match style {
        ByteStyle::Size => {
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
        ByteStyle::Figure => {
            let (v, u) = bytes_scaled(b);
            format!("{} {u}", num(v))
        }
    }
}

/// The [`ByteStyle::Figure`] scale: GB or MB, whichever reads best; small counts stay in B.
pub fn bytes_scaled(x: f64) -> (f64, &'static str) {
    let a = x.abs();
    if a >= 1e9 {
        (x / 1e9, "GB")
    } else if a >= 1e6 {
        (x / 1e6, "MB")
    } else {
        (x, "B")
    }
}

/// A C++ kernel symbol the way Perfetto and HTA users read it: the return type dropped,
/// template arguments folded to `<…>` and the parameter list cut, so
/// `void at::native::vectorized_elementwise_kernel<4, …>(int, …)` reads
/// `at::native::vectorized_elementwise_kernel<…>`. Names that do not look like C++
/// (`ampere_sgemm_128x64_tn`, `Memcpy DtoD (Device -> Device)`) come back unchanged; the
/// full name belongs in a tooltip or a details row beside the short one.
pub fn short_kernel_name(name: &str) -> String {
    let name = name.trim();
    let looks_cpp = name.contains("::") || name.contains('<') || name.starts_with("void ");
    if !looks_cpp {
        return name.to_string();
    }
    const ANON: &str = "(anonymous namespace)";
    let mut out = String::with_capacity(name.len().min(96));
    let mut depth = 0usize;
    let mut rest = name;
    let mut prev = None;
    while let Some(c) = rest.chars().next() {
        if depth == 0 && rest.starts_with(ANON) {
            out.push_str(ANON);
            rest = &rest[ANON.len()..];
            continue;
        }
        match c {
            '<' if depth == 0 && !out.ends_with("operator") => {
                out.push_str("<…>");
                depth = 1;
            }
            '<' if depth > 0 => depth += 1,
            '>' if depth > 0 && prev != Some('-') => depth -= 1,
            '(' if depth == 0 => break,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    // The return type (and any qualifiers) sits before the last top-level space.
    let out = out.trim();
    let mut parens = 0i32;
    let mut start = 0;
    for (i, c) in out.char_indices() {
        match c {
            '(' => parens += 1,
            ')' => parens -= 1,
            ' ' if parens == 0 => start = i + 1,
            _ => {}
        }
    }
    let short = &out[start..];
    if short.is_empty() {
        name.to_string()
    } else {
        short.to_string()
    }
}

/// [`short_kernel_name`] when it differs from the name (a page then shows the full name
/// on hover and in a details row), `None` when the name is already short.
pub fn folded_kernel_name(name: impl AsRef<str>) -> Option<String> {
    let name = name.as_ref();
    let short = short_kernel_name(name);
    (short != name.trim()).then_some(short)
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

    #[test]
    fn numbers_read_like_the_reference() {
        assert_eq!(num(131072.0), "131,072");
        assert_eq!(num(15.0508), "15.05");
        assert_eq!(num(5.28169), "5.282");
        assert_eq!(num(494.5), "494.5");
        assert_eq!(num(989.0), "989");
        assert_eq!(num(0.62712), "0.627");
        assert_eq!(num(0.000123456), "0.000123");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-0.15), "-0.15");
        assert_eq!(num(1234.56), "1,235");
        assert_eq!(num(8030261248.0), "8,030,261,248");
    }

    #[test]
    fn bytes_read_in_either_style() {
        assert_eq!(bytes(512.0, ByteStyle::Size), "512 B");
        assert_eq!(bytes(1_100_000.0, ByteStyle::Size), "1.1 MB");
        assert_eq!(bytes(131072.0, ByteStyle::Size), "131.1 KB");
        assert_eq!(bytes(16060522496.0, ByteStyle::Figure), "16.06 GB");
        assert_eq!(bytes(34359738368.0, ByteStyle::Figure), "34.36 GB");
        assert_eq!(bytes(131072.0, ByteStyle::Figure), "131,072 B");
        assert_eq!(bytes(2_500_000.0, ByteStyle::Figure), "2.5 MB");
    }

    #[test]
    fn kernel_names_fold_templates_and_parameters() {
        assert_eq!(
            short_kernel_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
            ),
            "at::native::vectorized_elementwise_kernel<…>"
        );
        assert_eq!(
            short_kernel_name(
                "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>, true>(Flash_fwd_params)"
            ),
            "flash_fwd_kernel<…>"
        );
        assert_eq!(
            short_kernel_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, float const*, int)"),
            "at::native::(anonymous namespace)::cunn_SoftMaxForward<…>"
        );
        assert_eq!(
            short_kernel_name("void rms_norm_kernel(float*, int)"),
            "rms_norm_kernel"
        );
        // Not C++: unchanged.
        assert_eq!(
            short_kernel_name("ampere_sgemm_128x64_tn"),
            "ampere_sgemm_128x64_tn"
        );
        assert_eq!(
            short_kernel_name("Memcpy DtoD (Device -> Device)"),
            "Memcpy DtoD (Device -> Device)"
        );
        // `->` inside template arguments does not close them; unbalanced input still folds.
        assert_eq!(short_kernel_name("k<decltype(a->b)>(int)"), "k<…>");
        assert_eq!(short_kernel_name("void k<int"), "k<…>");
        assert_eq!(
            folded_kernel_name("void k<int>(int)").as_deref(),
            Some("k<…>")
        );
        assert_eq!(folded_kernel_name("ampere_sgemm_128x64_tn"), None);
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn direction_overrides_and_escapes_do_not_reach_a_name() {
        assert_eq!(safe_name("rank0\u{202E}nosj.gpj"), "rank0_nosj.gpj");
        assert_eq!(safe_name("a\u{1b}[31mred"), "a_[31mred");
        assert_eq!(safe_name("plain-name_1.json"), "plain-name_1.json");
        assert!(unsafe_in_name('\u{2067}') && !unsafe_in_name('é'));
    }
}
