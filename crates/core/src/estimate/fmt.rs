//! Number formatting for formulas and text, and JSON number helpers.
//!
//! Text shows about four significant digits (enough to check a figure by hand);
//! JSON keeps full precision.

use serde_json::Value;

pub use crate::fmt::num;
use crate::fmt::trim_zeros;

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
    fn units_scale() {
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
