//! Compute precision: which tensor-core peak a GEMM runs at, from the weight and
//! activation dtypes. The one place every estimator that turns FLOPs into time (and so
//! the proposals and the drills, which call the estimators) takes its peak from.
//!
//! - W8A8 FP8 (fp8 weights, fp8 activations) → the FP8 peak; W4A8 with fp8 activations too;
//! - W8A8 INT8 (int8 weights, int8 activations) → the INT8 peak; W4A8 INT8 too;
//! - weight-only quantization (W8A16, W4A16: narrow weights, 16-bit activations) → the
//!   activation precision's peak, since the weights are widened before the multiply;
//! - W4A4 FP4 → the FP4 peak where the GPU has FP4 tensor cores;
//! - a GPU without tensor cores for the precision (FP8 on an A100, FP4 on an H100) runs
//!   those weights weight-only, at the 16-bit peak, and the chain says so.
//!
//! When the activation dtype is not given it follows fp8 and fp4 weights on a GPU that
//! has those tensor cores (what vLLM's fp8 and nvfp4 checkpoints run as), and is bf16
//! otherwise (int8 and int4 checkpoints such as GPTQ and AWQ are weight-only unless
//! they say W8A8).

use super::fmt;
use super::gpus::GpuSpec;
use super::Dtype;

/// The tensor-core precision a GEMM runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Fp4,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Bf16 => "BF16",
            Precision::Fp16 => "FP16",
            Precision::Fp8 => "FP8",
            Precision::Int8 => "INT8",
            Precision::Fp4 => "FP4",
        }
    }
}

/// The peak a GEMM of these dtypes reaches on a GPU, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputePeak {
    pub precision: Precision,
    /// FLOP/s (OP/s for INT8), dense, from the catalog.
    pub flops: f64,
    /// The catalog note, e.g. "dense FP8 tensor core, without sparsity".
    pub note: &'static str,
    /// `fp8 weights × fp8 activations (W8A8)`, plus the fallback when there was one.
    pub reason: String,
}

fn bits(d: Dtype) -> u32 {
    (d.bytes() * 8.0) as u32
}

/// `W8A8`, `W4A16`.
fn scheme(weight: Dtype, activation: Dtype) -> String {
    format!("W{}A{}", bits(weight), bits(activation))
}

/// The activation dtype assumed when none is given (see the module notes).
pub fn default_activation(weight: Dtype, gpu: &GpuSpec) -> Dtype {
    match weight {
        Dtype::Fp8 if gpu.fp8_flops.is_some() => Dtype::Fp8,
        Dtype::Fp4 if gpu.fp4_flops.is_some() => Dtype::Fp4,
        _ => Dtype::Bf16,
    }
}

/// The precision the multiply runs at, before asking the GPU: an error names the
/// combination no tensor-core GEMM takes.
fn operand(weight: Dtype, activation: Dtype) -> Result<Precision, String> {
    use Dtype::*;
    let p = match (weight, activation) {
        (_, Bf16) => Precision::Bf16,
        (_, Fp16) => Precision::Fp16,
        (Fp8 | Int4 | Fp4, Fp8) => Precision::Fp8,
        (Int8 | Int4, Int8) => Precision::Int8,
        (Fp4, Fp4) => Precision::Fp4,
        (_, Int4) => {
            return Err(
                "int4 activations are not modelled: give activation_dtype bf16, fp16, fp8, \
                 int8 or fp4"
                    .to_string(),
            )
        }
        (w, a) => {
            return Err(format!(
                "no tensor-core GEMM takes {} weights with {} activations ({}); quantized \
                 activations need weights of the same kind (fp8 with fp8, int8 with int8, fp4 \
                 with fp4) or give activation_dtype bf16",
                w.name(),
                a.name(),
                scheme(w, a)
            ))
        }
    };
    Ok(p)
}

/// Maps weights × activations to the compute precision and takes its dense peak from
/// the GPU catalog.
pub fn compute_peak(
    gpu: &GpuSpec,
    weight: Dtype,
    activation: Dtype,
) -> Result<ComputePeak, String> {
    let precision = operand(weight, activation)?;
    let what = format!(
        "{} weights × {} activations ({}",
        weight.name(),
        activation.name(),
        scheme(weight, activation)
    );
    let weight_only = bits(weight) < bits(activation);
    let sixteen = |reason: String| ComputePeak {
        precision: if activation == Dtype::Fp16 {
            Precision::Fp16
        } else {
            Precision::Bf16
        },
        flops: gpu.bf16_flops.value,
        note: gpu.bf16_flops.note,
        reason,
    };
    let lacking = |p: Precision| {
        sixteen(format!(
            "{what}): the {} has no {} tensor cores, so the weights run weight-only at the 16-bit peak",
            gpu.name,
            p.name()
        ))
    };
    let found = |s: Option<super::gpus::Sourced>, p: Precision| match s {
        Some(s) => ComputePeak {
            precision: p,
            flops: s.value,
            note: s.note,
            reason: format!("{what}) → the {} peak", p.name()),
        },
        None => lacking(p),
    };
    Ok(match precision {
        Precision::Bf16 | Precision::Fp16 => sixteen(if weight_only {
            format!("{what}, weight-only quantization) → the activations' 16-bit peak")
        } else {
            format!("{what}) → the 16-bit peak")
        }),
        Precision::Fp8 => found(gpu.fp8_flops, Precision::Fp8),
        Precision::Int8 => found(gpu.int8_ops, Precision::Int8),
        Precision::Fp4 => found(gpu.fp4_flops, Precision::Fp4),
    })
}

impl ComputePeak {
    /// `1,979 TFLOP/s (FP8)` for formulas.
    pub fn short(&self) -> String {
        format!("{} {}", fmt::flops(self.flops), self.precision.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::gpus::find;

    fn peak(gpu: &str, w: Dtype, a: Dtype) -> ComputePeak {
        compute_peak(find(gpu).unwrap(), w, a).unwrap()
    }

    #[test]
    fn w8a8_fp8_takes_the_fp8_peak() {
        let p = peak("h100-sxm", Dtype::Fp8, Dtype::Fp8);
        assert_eq!(p.precision, Precision::Fp8);
        assert_eq!(p.flops, 1979e12);
        assert!(p.reason.contains("W8A8"), "{}", p.reason);
        assert_eq!(peak("b200", Dtype::Fp8, Dtype::Fp8).flops, 4.5e15);
        assert_eq!(peak("mi300x", Dtype::Fp8, Dtype::Fp8).flops, 2615e12);
    }

    #[test]
    fn weight_only_takes_the_activation_peak() {
        for w in [Dtype::Fp8, Dtype::Int8, Dtype::Int4, Dtype::Fp4] {
            let p = peak("h100-sxm", w, Dtype::Bf16);
            assert_eq!(p.flops, 989e12, "{w:?}");
            assert!(p.reason.contains("weight-only"), "{}", p.reason);
        }
        assert!(peak("h100-sxm", Dtype::Int4, Dtype::Fp16)
            .reason
            .contains("W4A16"));
        assert_eq!(peak("h100-sxm", Dtype::Bf16, Dtype::Bf16).flops, 989e12);
    }

    #[test]
    fn int8_w8a8_takes_the_int8_peak() {
        let p = peak("a100-80gb", Dtype::Int8, Dtype::Int8);
        assert_eq!(p.precision, Precision::Int8);
        assert_eq!(p.flops, 624e12);
        // W4A8 INT8 multiplies in int8 too
        assert_eq!(peak("h100-sxm", Dtype::Int4, Dtype::Int8).flops, 1979e12);
    }

    #[test]
    fn fp4_only_where_the_gpu_has_it() {
        assert_eq!(peak("b200", Dtype::Fp4, Dtype::Fp4).flops, 9e15);
        let h = peak("h100-sxm", Dtype::Fp4, Dtype::Fp4);
        assert_eq!(h.flops, 989e12);
        assert!(h.reason.contains("no FP4 tensor cores"), "{}", h.reason);
        let a = peak("a100-80gb", Dtype::Fp8, Dtype::Fp8);
        assert_eq!(a.flops, 312e12);
        assert!(a.reason.contains("no FP8 tensor cores"), "{}", a.reason);
    }

    #[test]
    fn the_default_activation_follows_fp8_and_fp4_weights_where_there_are_tensor_cores() {
        let h100 = find("h100-sxm").unwrap();
        assert_eq!(default_activation(Dtype::Fp8, h100), Dtype::Fp8);
        assert_eq!(default_activation(Dtype::Fp4, h100), Dtype::Bf16);
        assert_eq!(default_activation(Dtype::Int8, h100), Dtype::Bf16);
        assert_eq!(default_activation(Dtype::Int4, h100), Dtype::Bf16);
        let a100 = find("a100-80gb").unwrap();
        assert_eq!(default_activation(Dtype::Fp8, a100), Dtype::Bf16);
        let b200 = find("b200").unwrap();
        assert_eq!(default_activation(Dtype::Fp4, b200), Dtype::Fp4);
    }

    #[test]
    fn impossible_pairs_are_named() {
        let h = find("h100-sxm").unwrap();
        let e = compute_peak(h, Dtype::Bf16, Dtype::Fp8).unwrap_err();
        assert!(e.contains("bf16 weights with fp8 activations"), "{e}");
        let e = compute_peak(h, Dtype::Fp8, Dtype::Int8).unwrap_err();
        assert!(e.contains("W8A8"), "{e}");
        assert!(compute_peak(h, Dtype::Int4, Dtype::Int4).is_err());
    }
}
