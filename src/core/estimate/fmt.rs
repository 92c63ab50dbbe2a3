//! Number formatting for formulas and text, and JSON number helpers.
//!
//! Text shows about four significant digits (enough to check a figure by hand);
//! JSON keeps full precision.

use serde_json::Value;

/// Largest integer an f64 holds exactly; beyond it "integral" means nothing.
const EXACT_LIMIT: f64 = 9_007_199_254_740_992.0;

/// A JSON number that is an integer when `x` is one (up to float noise, e.g.
/// 0.92 × 85.02e9), else a float. Used for bytes, tokens, pages and FLOP counts.
pub(crate) fn whole(x: f64) -> Value {
    if x.is_finite() && x.abs() < EXACT_LIMIT && (x - x.round()).abs() < 1e-3 {
        let r = x.round();
        if r >= 0.0 {
            Value::from(r as u64)
        } else {
            Value::from(r as i64)
        }
    } else {
        float(x)
    }
}

/// Always a JSON float (ms, ratios); non-finite becomes null.
pub(crate) fn float(x: f64) -> Value {
    Value::from(x)
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// About four significant digits; integers and anything ≥ 1000 get thousands separators.
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
        return format!("{sign}{}", crate::fmt::grouped(a.round() as u64));
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

/// Input values like `3.35e12` or `85.02e9` read better in engineering notation
/// than as thirteen digits; other integers keep separators (`8,030,261,248`).
pub(crate) fn input(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 && (x - x.round()).abs() < 1e-3 && a < EXACT_LIMIT {
        let n = a.round() as u64;
        if n.is_multiple_of(1_000_000) {
            let exp = ((a.log10().floor() as i32) / 3) * 3;
            let mantissa = x / 10f64.powi(exp);
            return format!("{}e{exp}", trim_zeros(format!("{mantissa:.4}")));
        }
    }
    num(x)
}

/// Bytes with a unit that keeps the number readable.
pub(crate) fn bytes(x: f64) -> String {
    let (v, u) = bytes_scaled(x);
    format!("{} {u}", num(v))
}

/// Scales bytes to GB or MB for display lines; small counts stay exact in B.
pub(crate) fn bytes_scaled(x: f64) -> (f64, &'static str) {
    let a = x.abs();
    if a >= 1e9 {
        (x / 1e9, "GB")
    } else if a >= 1e6 {
        (x / 1e6, "MB")
    } else {
        (x, "B")
    }
}

/// Bandwidth in B/s.
pub(crate) fn rate(x: f64) -> String {
    if x.abs() >= 1e12 {
        format!("{} TB/s", num(x / 1e12))
    } else if x.abs() >= 1e9 {
        format!("{} GB/s", num(x / 1e9))
    } else {
        format!("{} MB/s", num(x / 1e6))
    }
}

/// A FLOP count.
pub(crate) fn flop(x: f64) -> String {
    if x.abs() >= 1e12 {
        format!("{} TFLOP", num(x / 1e12))
    } else {
        format!("{} GFLOP", num(x / 1e9))
    }
}

/// A FLOP/s rate.
pub(crate) fn flops(x: f64) -> String {
    format!("{}/s", flop(x))
}

/// A fraction as a percentage for prose: `0.02352` → `2.4`, `0.6815` → `68`.
pub(crate) fn pct(fraction: f64) -> String {
    let x = fraction * 100.0;
    let a = x.abs();
    if a >= 10.0 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        trim_zeros(format!("{x:.1}"))
    } else {
        num(x)
    }
}

pub(crate) fn ms(x: f64) -> String {
    format!("{} ms", num(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn units_scale() {
        assert_eq!(bytes(16060522496.0), "16.06 GB");
        assert_eq!(bytes(34359738368.0), "34.36 GB");
        assert_eq!(bytes(131072.0), "131,072 B");
        assert_eq!(bytes(2_500_000.0), "2.5 MB");
        assert_eq!(rate(3.35e12), "3.35 TB/s");
        assert_eq!(rate(450e9), "450 GB/s");
        assert_eq!(flop(33.92e12), "33.92 TFLOP");
        assert_eq!(flops(494.5e12), "494.5 TFLOP/s");
        assert_eq!(ms(68.5945), "68.59 ms");
        assert_eq!(pct(0.02352), "2.4");
        assert_eq!(pct(0.6815), "68");
        assert_eq!(pct(0.5), "50");
        assert_eq!(pct(0.001234), "0.123");
    }

    #[test]
    fn inputs_use_engineering_notation_for_round_big_numbers() {
        assert_eq!(input(3.35e12), "3.35e12");
        assert_eq!(input(85.02e9), "85.02e9");
        assert_eq!(input(989e12), "989e12");
        assert_eq!(input(8030261248.0), "8,030,261,248");
        assert_eq!(input(0.92), "0.92");
    }

    #[test]
    fn json_integers_where_exact() {
        assert_eq!(whole(0.92 * 85.02e9), json!(78218400000u64));
        assert_eq!(whole(2.5), json!(2.5));
        assert_eq!(whole(-3.0), json!(-3));
        assert_eq!(float(2.0), json!(2.0));
        assert!(whole(1e300).is_f64());
    }
}
