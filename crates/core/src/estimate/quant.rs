//! A checkpoint's `quantization_config`: which weights are stored narrow, at what
//! precision, and which modules it keeps in 16 bits.
//!
//! Only linear layers are ever quantized: embeddings, norms and (in every engine we
//! know) the MoE router and `lm_head` stay 16-bit whatever the config says. Of the
//! linear layers, the ones a config lists under `modules_to_not_convert` (`ignore` for
//! compressed-tensors, `exclude_modules` for ModelOpt) keep their 16-bit weights too:
//! Meta's Llama 3.1 405B FP8 keeps every attention projection and the first and last
//! layers' MLPs in BF16, gpt-oss quantizes its experts only (MXFP4) and keeps attention
//! in BF16.

use serde::Serialize;
use serde_json::{Map, Value};

use super::Dtype;

/// How a checkpoint is quantized, with the parameters it keeps at 16 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Quant {
    /// `quant_method` as the config names it (`fp8`, `fbgemm_fp8`, `mxfp4`, …).
    pub method: &'static str,
    pub dtype: Dtype,
    /// Scale bits stored per `block` quantized weights (MXFP4: one 8-bit exponent per 32
    /// values; NVFP4: an FP8 scale per 16); 0 where they are negligible (FP8 blocks of
    /// 128 × 128 share one 32-bit scale: 0.002 bits a weight).
    pub scale_bits: u64,
    pub block: u64,
    /// Linear-layer parameters outside the routed experts the config keeps 16-bit.
    pub kept: u64,
    /// Routed-expert parameters kept 16-bit.
    pub kept_routed: u64,
    /// Layers whose attention, and whose MLP, the config keeps (for the chain's wording).
    pub kept_attention_layers: u64,
    pub kept_mlp_layers: u64,
}

impl Quant {
    /// Bytes one quantized weight takes, scales included.
    pub fn bytes_per_weight(&self) -> f64 {
        let scales = if self.block > 0 {
            self.scale_bits as f64 / 8.0 / self.block as f64
        } else {
            0.0
        };
        self.dtype.bytes() + scales
    }

    /// `fp8 (fbgemm_fp8; attention of 126 layers and the MLP of 2 kept bf16)`.
    pub fn describe(&self) -> String {
        let mut kept = Vec::new();
        if self.kept_attention_layers > 0 {
            kept.push(format!(
                "attention of {} layers",
                self.kept_attention_layers
            ));
        }
        if self.kept_mlp_layers > 0 {
            kept.push(format!("the MLP of {} layers", self.kept_mlp_layers));
        }
        let scales = if self.block > 0 {
            format!(", {} scale bits per {}", self.scale_bits, self.block)
        } else {
            String::new()
        };
        let kept = if kept.is_empty() {
            String::new()
        } else {
            format!("; {} kept 16-bit", kept.join(" and "))
        };
        format!("{} ({}{scales}{kept})", self.dtype.name(), self.method)
    }
}

/// The sizes of one decoder layer's quantizable modules, as the parameter count sees
/// them; [`read`] takes one per layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LayerShape {
    /// q, k, v, o projections (GQA); for MLA and linear attention only `attention` is set.
    pub q: u64,
    pub k: u64,
    pub v: u64,
    pub o: u64,
    pub attention: u64,
    /// The dense MLP (0 in an MoE layer); gate, up and down are a third each.
    pub mlp: u64,
    pub shared: u64,
    pub routed: u64,
}

/// Which part of a layer a module name points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Attention,
    Q,
    K,
    V,
    O,
    Mlp,
    MlpThird,
    Shared,
    Routed,
}

/// `model.layers.12.self_attn.q_proj` → (Some(12) or None for every layer, the part),
/// `None` for modules that are 16-bit anyway (embeddings, norms, router, lm_head).
fn classify(name: &str) -> Option<(Option<u64>, Part, String)> {
    let n = name.trim().trim_start_matches("re:").to_ascii_lowercase();
    let always_wide = [
        "lm_head",
        "embed",
        "norm",
        "router",
        "e_score_correction_bias",
    ];
    if always_wide.iter().any(|w| n.contains(w)) {
        return None;
    }
    let segments: Vec<&str> = n.split('.').collect();
    let last = segments.last().copied().unwrap_or("");
    // the MoE router: `gate` alone or `mlp.gate` (not `gate_proj`)
    if last == "gate" {
        return None;
    }
    let layer = segments
        .iter()
        .position(|s| *s == "layers" || *s == "h" || *s == "blocks")
        .and_then(|i| segments.get(i + 1))
        .and_then(|s| s.parse::<u64>().ok());
    let has = |w: &str| segments.iter().any(|s| s.contains(w));
    let part = if has("shared_expert") {
        Part::Shared
    } else if has("experts") {
        Part::Routed
    } else if has("attn") || has("attention") {
        match last {
            "q_proj" => Part::Q,
            "k_proj" => Part::K,
            "v_proj" => Part::V,
            "o_proj" => Part::O,
            _ => Part::Attention,
        }
    } else if has("mlp") || has("feed_forward") || has("ffn") {
        match last {
            "gate_proj" | "up_proj" | "down_proj" | "w1" | "w2" | "w3" => Part::MlpThird,
            _ => Part::Mlp,
        }
    } else {
        return None;
    };
    // `gate_proj`, `up_proj` and `down_proj` of one layer are three different thirds.
    Some((layer, part, last.to_string()))
}

/// The entries a config lists as not quantized.
fn excluded(q: &Map<String, Value>) -> Vec<String> {
    [
        "modules_to_not_convert",
        "ignore",
        "exclude_modules",
        "ignored_layers",
    ]
    .iter()
    .filter_map(|k| q.get(*k).and_then(Value::as_array))
    .flatten()
    .filter_map(Value::as_str)
    .map(str::to_string)
    .collect()
}

/// `quant_method` → the stored dtype and its scales.
fn method(q: &Map<String, Value>) -> Result<(&'static str, Dtype, u64, u64), String> {
    let text = |k: &str| {
        q.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let bits = q.get("bits").and_then(Value::as_u64);
    let group = q.get("group_size").and_then(Value::as_u64).unwrap_or(128);
    Ok(match text("quant_method").as_str() {
        "fp8" => ("fp8", Dtype::Fp8, 0, 0),
        "fbgemm_fp8" => ("fbgemm_fp8", Dtype::Fp8, 0, 0),
        "mxfp4" => ("mxfp4", Dtype::Fp4, 8, 32),
        "modelopt" => match text("quant_algo").as_str() {
            "fp8" => ("modelopt", Dtype::Fp8, 0, 0),
            "nvfp4" => ("modelopt", Dtype::Fp4, 8, 16),
            other => return Err(format!("quant_algo `{other}` of modelopt is not read")),
        },
        "awq" | "gptq" => {
            let m = if text("quant_method") == "awq" {
                "awq"
            } else {
                "gptq"
            };
            match bits {
                Some(4) => (m, Dtype::Int4, 16, group),
                Some(8) => (m, Dtype::Int8, 16, group),
                other => return Err(format!("{m} with bits {other:?} is not read")),
            }
        }
        "compressed-tensors" => {
            let weights = q
                .get("config_groups")
                .and_then(Value::as_object)
                .and_then(|g| g.values().next())
                .and_then(|g| g.get("weights"));
            let bits = weights
                .and_then(|w| w.get("num_bits"))
                .and_then(Value::as_u64);
            let kind = weights
                .and_then(|w| w.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("int");
            match (bits, kind) {
                (Some(8), "float") => ("compressed-tensors", Dtype::Fp8, 0, 0),
                (Some(8), _) => ("compressed-tensors", Dtype::Int8, 0, 0),
                (Some(4), "float") => ("compressed-tensors", Dtype::Fp4, 8, 16),
                (Some(4), _) => ("compressed-tensors", Dtype::Int4, 16, group),
                (b, k) => {
                    return Err(format!(
                        "compressed-tensors weights of {b:?} bits ({k}) are not read"
                    ))
                }
            }
        }
        other => {
            return Err(format!(
                "quant_method `{other}` is not read (known: fp8, fbgemm_fp8, mxfp4, modelopt, \
                 awq, gptq, compressed-tensors)"
            ))
        }
    })
}

/// Reads `quantization_config` against the model's layers (one shape per layer).
pub(crate) fn read(q: &Map<String, Value>, layers: &[LayerShape]) -> Result<Quant, String> {
    let (method, dtype, scale_bits, block) = method(q)
        .map_err(|e| format!("config.json quantization_config: {e}; give weight_dtype instead"))?;
    let parts: std::collections::BTreeSet<(Option<u64>, Part, String)> =
        excluded(q).iter().filter_map(|n| classify(n)).collect();
    let mut quant = Quant {
        method,
        dtype,
        scale_bits,
        block,
        kept: 0,
        kept_routed: 0,
        kept_attention_layers: 0,
        kept_mlp_layers: 0,
    };
    for (i, shape) in layers.iter().enumerate() {
        let here: Vec<&(Option<u64>, Part, String)> = parts
            .iter()
            .filter(|(l, _, _)| l.is_none_or(|l| l == i as u64))
            .collect();
        let has = |p: Part| here.iter().any(|(_, q, _)| *q == p);
        let attention = if has(Part::Attention) {
            shape.attention
        } else {
            [
                (Part::Q, shape.q),
                (Part::K, shape.k),
                (Part::V, shape.v),
                (Part::O, shape.o),
            ]
            .iter()
            .filter(|(p, _)| has(*p))
            .map(|(_, n)| n)
            .sum()
        };
        let thirds = here
            .iter()
            .filter(|(_, p, _)| *p == Part::MlpThird)
            .map(|(_, _, name)| name)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            .min(3) as u64;
        let whole_mlp = has(Part::Mlp);
        let mlp = if whole_mlp {
            shape.mlp + shape.shared
        } else {
            shape.mlp / 3 * thirds
        };
        let shared = if has(Part::Shared) && !whole_mlp {
            shape.shared
        } else {
            0
        };
        let routed = if has(Part::Routed) || whole_mlp {
            shape.routed
        } else {
            0
        };
        quant.kept += attention + mlp + shared;
        quant.kept_routed += routed;
        quant.kept_attention_layers += u64::from(attention > 0);
        quant.kept_mlp_layers += u64::from(mlp + shared + routed > 0);
    }
    Ok(quant)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names_point_at_layer_parts() {
        assert_eq!(classify("lm_head"), None);
        assert_eq!(classify("model.layers.0.mlp.gate"), None);
        assert_eq!(classify("model.layers.3.input_layernorm"), None);
        assert_eq!(
            classify("model.layers.0.self_attn.q_proj").map(|c| (c.0, c.1)),
            Some((Some(0), Part::Q))
        );
        assert_eq!(
            classify("model.layers.*.self_attn").map(|c| (c.0, c.1)),
            Some((None, Part::Attention))
        );
        assert_eq!(
            classify("model.layers.125.mlp.down_proj").map(|c| (c.0, c.1)),
            Some((Some(125), Part::MlpThird))
        );
        assert_eq!(
            classify("re:.*mlp.experts.*").map(|c| c.1),
            Some(Part::Routed)
        );
    }

    #[test]
    fn a_whole_layers_list_and_thirds_add_up() {
        let shape = LayerShape {
            q: 4,
            k: 1,
            v: 1,
            o: 4,
            attention: 10,
            mlp: 30,
            ..LayerShape::default()
        };
        let mut names: Vec<String> = (0..3)
            .flat_map(|i| {
                ["q_proj", "k_proj", "v_proj", "o_proj"]
                    .map(|p| format!("model.layers.{i}.self_attn.{p}"))
            })
            .collect();
        names.extend(
            ["gate_proj", "up_proj", "down_proj"].map(|p| format!("model.layers.2.mlp.{p}")),
        );
        let q = read(
            &obj(json!({"quant_method": "fbgemm_fp8", "modules_to_not_convert": names})),
            &[shape; 3],
        )
        .unwrap();
        assert_eq!(q.kept, 3 * 10 + 30);
        assert_eq!((q.kept_attention_layers, q.kept_mlp_layers), (3, 1));
        assert_eq!(q.dtype, Dtype::Fp8);
        assert!(
            q.describe().contains("attention of 3 layers"),
            "{}",
            q.describe()
        );
    }

    #[test]
    fn methods_map_to_dtypes_with_their_scales() {
        let q = read(&obj(json!({"quant_method": "mxfp4"})), &[]).unwrap();
        assert_eq!(q.bytes_per_weight(), 0.5 + 1.0 / 32.0);
        let awq = read(
            &obj(json!({"quant_method": "awq", "bits": 4, "group_size": 128})),
            &[],
        );
        assert_eq!(awq.unwrap().dtype, Dtype::Int4);
        let ct = json!({"quant_method": "compressed-tensors",
            "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}},
            "ignore": ["lm_head"]});
        assert_eq!(read(&obj(ct), &[]).unwrap().dtype, Dtype::Fp8);
        let e = read(&obj(json!({"quant_method": "bitsandbytes"})), &[]).unwrap_err();
        assert!(e.contains("weight_dtype"), "{e}");
    }
}
