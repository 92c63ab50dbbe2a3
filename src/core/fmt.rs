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
