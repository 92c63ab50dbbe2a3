//! Storage data types for weights and the KV cache.

use serde::Serialize;

/// Bytes per element: bf16 | fp16 = 2, fp8 | int8 = 1, int4 | fp4 = 0.5.
///
/// int4 and fp4 count the packed 4-bit values only; the per-group scales and zero points
/// (typically a few % more) are ignored, and formulas say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Int4,
    Fp4,
}

impl Dtype {
    pub const ALL: [Dtype; 6] = [
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Fp8,
        Dtype::Int8,
        Dtype::Int4,
        Dtype::Fp4,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Int8 => "int8",
            Dtype::Int4 => "int4",
            Dtype::Fp4 => "fp4",
        }
    }

    pub fn bytes(self) -> f64 {
        match self {
            Dtype::Bf16 | Dtype::Fp16 => 2.0,
            Dtype::Fp8 | Dtype::Int8 => 1.0,
            Dtype::Int4 | Dtype::Fp4 => 0.5,
        }
    }

    /// For formulas: `2 B (bf16)`, `0.5 B (int4, group scales ignored)`.
    pub fn describe(self) -> String {
        match self {
            Dtype::Int4 => "0.5 B (int4, group scales ignored)".to_string(),
            Dtype::Fp4 => "0.5 B (fp4, block scales ignored)".to_string(),
            d => format!("{} B ({})", d.bytes(), d.name()),
        }
    }

    /// Accepts the short names and the spellings found in configs (`bfloat16`,
    /// `float16`, `fp8_e4m3`); case does not matter.
    pub fn parse(s: &str) -> Result<Dtype, String> {
        let lower = s.trim().to_ascii_lowercase();
        let d = match lower.as_str() {
            "bf16" | "bfloat16" => Dtype::Bf16,
            "fp16" | "float16" | "half" => Dtype::Fp16,
            "fp8" | "fp8_e4m3" | "fp8_e5m2" | "float8" => Dtype::Fp8,
            "int8" | "w8" => Dtype::Int8,
            "int4" | "w4" => Dtype::Int4,
            "fp4" | "nvfp4" | "mxfp4" | "fp4_e2m1" => Dtype::Fp4,
            _ => {
                let names: Vec<_> = Dtype::ALL.iter().map(|d| d.name()).collect();
                return Err(format!("unknown dtype `{s}`; known: {}", names.join(", ")));
            }
        };
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_element() {
        assert_eq!(Dtype::Bf16.bytes(), 2.0);
        assert_eq!(Dtype::Fp16.bytes(), 2.0);
        assert_eq!(Dtype::Fp8.bytes(), 1.0);
        assert_eq!(Dtype::Int8.bytes(), 1.0);
        assert_eq!(Dtype::Int4.bytes(), 0.5);
        assert_eq!(Dtype::Bf16.describe(), "2 B (bf16)");
        assert!(Dtype::Int4.describe().contains("group scales ignored"));
    }

    #[test]
    fn parsing() {
        assert_eq!(Dtype::parse("BF16"), Ok(Dtype::Bf16));
        assert_eq!(Dtype::parse("bfloat16"), Ok(Dtype::Bf16));
        assert_eq!(Dtype::parse("fp8_e4m3"), Ok(Dtype::Fp8));
        assert_eq!(Dtype::parse("NVFP4"), Ok(Dtype::Fp4));
        let err = Dtype::parse("fp6").unwrap_err();
        assert!(err.contains("bf16, fp16, fp8, int8, int4, fp4"), "{err}");
        assert_eq!(serde_json::to_string(&Dtype::Int4).unwrap(), "\"int4\"");
    }
}
