//! The inputs shared by the estimators that look at a model on a GPU: which model
//! (catalog name, `config.json` text, or bare overrides), which GPU, TP and dtypes,
//! plus the decode-floor arithmetic several estimators build on.

use super::chain::Work;
use super::input::{Parser, Rule};
use super::models::{self, KvLayout, ModelSpec};
use super::precision::{self, ComputePeak};
use super::{defaults, fmt, gpus, Dtype, FieldSpec};
use crate::fmt::ByteStyle;

const fn field(
    name: &'static str,
    label: &'static str,
    unit: &'static str,
    default: Option<&'static str>,
    help: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        label,
        unit,
        default,
        help,
        required: false,
    }
}

/// A required field.
pub(crate) const fn need(
    name: &'static str,
    label: &'static str,
    unit: &'static str,
    help: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        label,
        unit,
        default: None,
        help,
        required: true,
    }
}

/// An optional field, with or without a default.
pub(crate) const fn opt(
    name: &'static str,
    label: &'static str,
    unit: &'static str,
    default: Option<&'static str>,
    help: &'static str,
) -> FieldSpec {
    field(name, label, unit, default, help)
}

pub(crate) const MODEL: FieldSpec = field(
    "model",
    "Model",
    "",
    None,
    "Catalog name: llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, llama-3.2-1b, llama-3.2-3b, \
     llama-3.3-70b, qwen2.5-7b, qwen2.5-72b, mixtral-8x7b, deepseek-v3. Give this, or config, \
     or all of params, layers, kv_heads and head_dim.",
);
pub(crate) const CONFIG: FieldSpec = field(
    "config",
    "config.json",
    "",
    None,
    "The text of a Hugging Face config.json, instead of a catalog model.",
);
pub(crate) const GPU: FieldSpec = field(
    "gpu",
    "GPU",
    "",
    Some("h100-sxm"),
    "h100-sxm, h100-pcie, h200, a100-80gb, a100-40gb, l40s, l4, b200 or mi300x.",
);
pub(crate) const TP: FieldSpec = field(
    "tp",
    "Tensor parallelism",
    "GPUs",
    Some("1"),
    "GPUs one model replica is split across; weights and KV heads are divided by it.",
);
pub(crate) const WEIGHT_DTYPE: FieldSpec = field(
    "weight_dtype",
    "Weight dtype",
    "",
    Some("bf16"),
    "bf16, fp16, fp8, int8, int4 or fp4 (int4 and fp4 ignore group scales).",
);
pub(crate) const ACTIVATION_DTYPE: FieldSpec = field(
    "activation_dtype",
    "Activation dtype",
    "",
    Some("follows fp8 or fp4 weights where the GPU has those tensor cores, else bf16"),
    "bf16, fp16, fp8, int8 or fp4: with the weight dtype it sets the compute peak (W8A8 FP8 → \
     FP8 peak; W8A16 or W4A16 → the 16-bit peak; W8A8 INT8 → INT8 peak).",
);
pub(crate) const KV_DTYPE: FieldSpec = field(
    "kv_dtype",
    "KV-cache dtype",
    "",
    Some("bf16"),
    "bf16, fp16, fp8, int8, int4 or fp4.",
);
pub(crate) const PARAMS: FieldSpec = field(
    "params",
    "Parameters",
    "params",
    None,
    "Overrides the model's parameter count (treated as dense: all read every step).",
);
pub(crate) const LAYERS: FieldSpec = field(
    "layers",
    "Layers",
    "layers",
    None,
    "Overrides num_hidden_layers.",
);
pub(crate) const KV_HEADS: FieldSpec = field(
    "kv_heads",
    "KV heads",
    "heads",
    None,
    "Overrides num_key_value_heads (switches an MLA model to the GQA KV formula).",
);
pub(crate) const HEAD_DIM: FieldSpec = field(
    "head_dim",
    "Head dimension",
    "dims",
    None,
    "Overrides head_dim (switches an MLA model to the GQA KV formula).",
);
pub(crate) const HIDDEN: FieldSpec = field(
    "hidden",
    "Hidden size",
    "dims",
    None,
    "Overrides hidden_size.",
);
pub(crate) const HBM_BYTES: FieldSpec = field(
    "hbm_bytes",
    "GPU memory",
    "B",
    None,
    "Overrides the GPU's memory size, e.g. 80e9.",
);
pub(crate) const BANDWIDTH: FieldSpec = field(
    "bandwidth",
    "HBM bandwidth",
    "B/s",
    None,
    "Overrides the GPU's memory bandwidth, e.g. 3.35e12 (a measured figure is better).",
);
pub(crate) const PEAK_FLOPS: FieldSpec = field(
    "peak_flops",
    "Peak compute",
    "FLOP/s",
    None,
    "Overrides the catalog peak of the compute precision (weights × activations), e.g. 989e12.",
);

/// A model, resolved from the catalog, a config or overrides.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    /// Total parameters (resident in memory).
    pub params: f64,
    /// Parameters one token uses (FLOPs).
    pub active_params: f64,
    /// MoE only: routed-expert weights, which a decode step reads only in part.
    pub routed: Option<Routed>,
    pub kv: KvLayout,
    pub hidden: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed {
    pub params: f64,
    pub experts: u64,
    pub per_tok: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Gpu {
    pub name: &'static str,
    pub spec: &'static gpus::GpuSpec,
    pub hbm_bytes: f64,
    pub bandwidth: f64,
    /// A `peak_flops` override; otherwise the compute precision's catalog peak.
    pub peak_override: Option<f64>,
    pub link: &'static str,
    pub link_bandwidth: f64,
}

/// Everything the model/GPU estimators share.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub model: Model,
    pub gpu: Gpu,
    pub tp: u64,
    pub weight_dtype: Dtype,
    pub kv_dtype: Dtype,
    /// The compute peak, for the estimators that take `activation_dtype`.
    pub compute: Option<ComputePeak>,
}

fn dtype(p: &mut Parser, key: &str) -> Option<Dtype> {
    if !p.accepts(key) {
        return Some(Dtype::Bf16);
    }
    match p.text(key).map(Dtype::parse) {
        None => {
            p.record(key, "bf16");
            Some(Dtype::Bf16)
        }
        Some(Ok(d)) => {
            p.record(key, d.name());
            Some(d)
        }
        Some(Err(msg)) => {
            p.fail(key, msg);
            None
        }
    }
}

fn resolve_gpu(p: &mut Parser) -> Option<Gpu> {
    let spec = match p.text("gpu") {
        Some(name) => match gpus::find(name) {
            Some(g) => {
                p.record("gpu", g.name);
                Some(g)
            }
            None => {
                p.fail("gpu", gpus::unknown(name));
                None
            }
        },
        None => {
            p.record("gpu", format!("{} (default)", gpus::DEFAULT_GPU));
            gpus::find(gpus::DEFAULT_GPU)
        }
    };
    // Overrides are read even when the name was bad, so their errors show too.
    let fallback = spec.or_else(|| gpus::find(gpus::DEFAULT_GPU))?;
    let mut value = |key: &str, catalog: f64| -> Option<f64> {
        if !p.accepts(key) {
            return Some(catalog);
        }
        if p.given(key) {
            p.opt(key, Rule::Positive)
        } else {
            p.record_number(key, catalog);
            Some(catalog)
        }
    };
    let hbm_bytes = value("hbm_bytes", fallback.memory_bytes.value);
    let bandwidth = value("bandwidth", fallback.hbm_bandwidth.value);
    let peak_given = p.given("peak_flops");
    let peak_override = p.opt("peak_flops", Rule::Positive);
    if peak_given && peak_override.is_none() {
        return None;
    }
    let spec = spec?;
    Some(Gpu {
        name: spec.name,
        spec,
        hbm_bytes: hbm_bytes?,
        bandwidth: bandwidth?,
        peak_override,
        link: fallback.link,
        link_bandwidth: fallback.link_bandwidth.value,
    })
}

/// The activation dtype (given, or following the weights) and the compute peak of
/// weights × activations on this GPU, recorded with the inputs.
fn resolve_compute(p: &mut Parser, gpu: &Gpu, weight: Dtype) -> Option<ComputePeak> {
    let activation = match p.text("activation_dtype").map(Dtype::parse) {
        None => {
            let d = precision::default_activation(weight, gpu.spec);
            p.record(
                "activation_dtype",
                format!("{} (default with {} weights)", d.name(), weight.name()),
            );
            d
        }
        Some(Ok(d)) => {
            p.record("activation_dtype", d.name());
            d
        }
        Some(Err(msg)) => {
            p.fail("activation_dtype", msg);
            return None;
        }
    };
    let mut peak = match precision::compute_peak(gpu.spec, weight, activation) {
        Ok(peak) => peak,
        Err(msg) => {
            p.fail("activation_dtype", msg);
            return None;
        }
    };
    match gpu.peak_override {
        Some(v) => {
            peak.flops = v;
            peak.note = "given";
        }
        None => p.record_number("peak_flops", peak.flops),
    }
    p.record("compute_precision", peak.precision.name());
    Some(peak)
}

/// The model named by `model` or `config`: `Ok(None)` when neither is given,
/// `Err(())` when the given one is bad (already reported).
fn base_model(p: &mut Parser) -> Result<Option<ModelSpec>, ()> {
    match (p.text("model"), p.text("config")) {
        (Some(_), Some(_)) => {
            p.fail("config", "give either model or config, not both");
            Err(())
        }
        (Some(name), None) => match models::find(name) {
            Some(m) => {
                p.record("model", m.name);
                Ok(Some(m.spec))
            }
            None => {
                p.fail("model", models::unknown(name));
                Err(())
            }
        },
        (None, Some(text)) => match ModelSpec::from_config_json(text) {
            Ok(spec) => {
                p.record("config", format!("config.json ({} bytes)", text.len()));
                Ok(Some(spec))
            }
            Err(msg) => {
                p.fail("config", msg);
                Err(())
            }
        },
        (None, None) => Ok(None),
    }
}

fn resolve_model(p: &mut Parser) -> Option<(Model, Option<u64>)> {
    let base = base_model(p);
    let params_o = p.opt("params", Rule::Count);
    let layers_o = p.opt("layers", Rule::Count);
    let kv_heads_o = p.opt("kv_heads", Rule::Count).map(|v| v as u64);
    let head_dim_o = p.opt("head_dim", Rule::Count).map(|v| v as u64);
    let hidden_o = p.opt("hidden", Rule::Count).map(|v| v as u64);
    let layers_o = layers_o.map(|v| v as u64);

    let base = base.ok()?;
    if base.is_none() {
        let missing: Vec<_> = [
            ("params", params_o.is_some()),
            ("layers", layers_o.is_some()),
            ("kv_heads", kv_heads_o.is_some()),
            ("head_dim", head_dim_o.is_some()),
        ]
        .into_iter()
        .filter(|(key, ok)| !ok && !p.has_error(key))
        .map(|(key, _)| key)
        .collect();
        if !missing.is_empty() {
            p.fail(
                "model",
                format!(
                    "is required: give model (one of {}), or config (config.json text), or all \
                     of params, layers, kv_heads and head_dim (missing: {})",
                    models::names(),
                    missing.join(", ")
                ),
            );
            return None;
        }
    }

    let counts = base.and_then(|b| b.params());
    let params = params_o.or(counts.map(|c| c.total as f64))?;
    // An explicit params count has no expert split, so it is treated as dense.
    let moe = base.and_then(|b| b.moe).filter(|_| params_o.is_none());
    let (active_params, routed) = match (moe, counts) {
        (Some(m), Some(c)) => (
            c.active as f64,
            Some(Routed {
                params: c.routed as f64,
                experts: m.experts,
                per_tok: m.experts_per_tok,
            }),
        ),
        _ => (params, None),
    };

    let layers = layers_o.or(base.map(|b| b.layers))?;
    let kv = match (base.and_then(|b| b.mla), kv_heads_o, head_dim_o) {
        (Some(m), None, None) => KvLayout::Mla {
            layers,
            kv_lora_rank: m.kv_lora_rank,
            qk_rope_head_dim: m.qk_rope_head_dim,
        },
        _ => KvLayout::Gqa {
            layers,
            kv_heads: kv_heads_o.or(base.map(|b| b.kv_heads))?,
            head_dim: head_dim_o.or(base.map(|b| b.head_dim))?,
        },
    };
    let hidden = hidden_o.or(base.map(|b| b.hidden));

    p.record_number("params", params);
    if routed.is_some() {
        p.record_number("active_params", active_params);
    }
    p.record_number("layers", layers as f64);
    match kv {
        KvLayout::Gqa {
            kv_heads, head_dim, ..
        } => {
            p.record_number("kv_heads", kv_heads as f64);
            p.record_number("head_dim", head_dim as f64);
        }
        KvLayout::Mla {
            kv_lora_rank,
            qk_rope_head_dim,
            ..
        } => {
            p.record_number("kv_lora_rank", kv_lora_rank as f64);
            p.record_number("qk_rope_head_dim", qk_rope_head_dim as f64);
        }
    }
    if let (true, Some(h)) = (p.accepts("hidden"), hidden) {
        p.record_number("hidden", h as f64);
    }
    let model = Model {
        params,
        active_params,
        routed,
        kv,
        hidden,
    };
    Some((model, base.map(|b| b.heads)))
}

impl Setup {
    /// Reads the common fields this estimator accepts, reporting every problem.
    pub fn resolve(p: &mut Parser) -> Option<Setup> {
        let tp = p.or("tp", 1.0, Rule::Count).map(|v| v as u64);
        let weight_dtype = dtype(p, "weight_dtype");
        let kv_dtype = dtype(p, "kv_dtype");
        let gpu = resolve_gpu(p);
        let compute = match (&gpu, weight_dtype) {
            (Some(g), Some(w)) if p.accepts("activation_dtype") => {
                resolve_compute(p, g, w).map(Some)
            }
            _ => Some(None),
        };
        let model = resolve_model(p);
        if let (Some(tp), Some((_, Some(heads)))) = (tp, &model) {
            if heads % tp != 0 {
                p.fail(
                    "tp",
                    format!("TP {tp} must divide the model's {heads} attention heads"),
                );
                return None;
            }
        }
        Some(Setup {
            model: model?.0,
            gpu: gpu?,
            tp: tp?,
            weight_dtype: weight_dtype?,
            kv_dtype: kv_dtype?,
            compute: compute?,
        })
    }

    /// `params × bytes per weight / TP`: what each GPU holds.
    pub fn weight_bytes_per_gpu(&self, dtype: Dtype) -> f64 {
        self.model.params * dtype.bytes() / self.tp as f64
    }

    pub fn kv_bytes_per_token_per_gpu(&self) -> f64 {
        self.model
            .kv
            .bytes_per_token_per_gpu(self.kv_dtype, self.tp)
    }

    fn per_tp(&self) -> String {
        if self.tp > 1 {
            format!(" / TP {}", self.tp)
        } else {
            String::new()
        }
    }

    pub fn weights_line(&self, w: &mut Work, key: &str, label: &str, dtype: Dtype) -> f64 {
        let bytes = self.weight_bytes_per_gpu(dtype);
        let formula = format!(
            "{} params × {}{}",
            fmt::num(self.model.params),
            dtype.describe(),
            self.per_tp()
        );
        w.bytes_line(key, label, formula, bytes);
        bytes
    }

    pub fn kv_token_line(&self, w: &mut Work) -> f64 {
        let bytes = self.kv_bytes_per_token_per_gpu();
        let formula = self.model.kv.formula(self.kv_dtype, self.tp);
        w.bytes_line(
            "kv_bytes_per_token_per_gpu",
            "KV bytes per token per GPU",
            formula,
            bytes,
        );
        bytes
    }

    /// `batch × context × KV bytes per token per GPU`: the KV a decode step reads.
    pub fn kv_step_line(&self, w: &mut Work, batch: f64, context: f64, per_token: f64) -> f64 {
        let bytes = batch * context * per_token;
        let formula = format!(
            "{} seqs × {} tokens × {}",
            fmt::num(batch),
            fmt::num(context),
            crate::fmt::bytes(per_token, ByteStyle::Figure)
        );
        w.bytes_line(
            "kv_bytes_per_step",
            "KV read per step per GPU",
            formula,
            bytes,
        );
        bytes
    }

    /// Weight bytes a decode step reads. Dense: all of them. MoE: the always-used part
    /// plus the routed experts the batch touches, `1 − (1 − k/E)^batch` of them under
    /// uniform routing, since a floor must not count experts no token visits.
    pub fn weights_read(
        &self,
        w: &mut Work,
        dtype: Dtype,
        batch: f64,
        resident: f64,
        suffix: &str,
    ) -> f64 {
        let Some(r) = self.model.routed else {
            return resident;
        };
        let (k, e) = (r.per_tok as f64, r.experts as f64);
        let touched = 1.0 - (1.0 - k / e).powf(batch);
        w.line(
            &format!("experts_touched_fraction{suffix}"),
            "Routed experts touched per layer",
            format!("1 − (1 − {}/{})^{}", r.per_tok, r.experts, fmt::num(batch)),
            fmt::float(touched),
            "",
        );
        let always = self.model.params - r.params;
        let bytes = (always + touched * r.params) * dtype.bytes() / self.tp as f64;
        w.bytes_line(
            &format!("weight_bytes_read_per_step{suffix}"),
            "Weights read per step per GPU",
            format!(
                "({} always-used + {} × {} routed params) × {}{}",
                fmt::num(always),
                fmt::num(touched),
                fmt::num(r.params),
                dtype.describe(),
                self.per_tp()
            ),
            bytes,
        );
        bytes
    }

    /// `(weights + KV) / HBM bandwidth`, in ms.
    pub fn floor_line(
        &self,
        w: &mut Work,
        key: &str,
        label: &str,
        weights: f64,
        kv_step: f64,
    ) -> f64 {
        let ms = (weights + kv_step) / self.gpu.bandwidth * 1e3;
        let formula = format!(
            "({} + {}) / {}",
            crate::fmt::bytes(weights, ByteStyle::Figure),
            crate::fmt::bytes(kv_step, ByteStyle::Figure),
            fmt::rate(self.gpu.bandwidth)
        );
        w.ms_line(key, label, formula, ms);
        ms
    }

    /// The whole decode floor with the standard keys; returns the figures.
    pub fn decode_floor(&self, w: &mut Work, batch: f64, context: f64) -> Floor {
        let weight_bytes = self.weights_line(
            w,
            "weight_bytes_per_gpu",
            "Weights per GPU",
            self.weight_dtype,
        );
        let kv_per_token = self.kv_token_line(w);
        let kv_per_step = self.kv_step_line(w, batch, context, kv_per_token);
        let read = self.weights_read(w, self.weight_dtype, batch, weight_bytes, "");
        let ms = self.floor_line(w, "floor_ms", "Decode step floor", read, kv_per_step);
        Floor {
            weight_bytes,
            weights_read: read,
            kv_per_token,
            kv_per_step,
            ms,
        }
    }

    /// `2 × active params × tokens / TP / (peak × MFU)`, in ms, at the compute peak of
    /// weights × activations; pushes the peak, MFU, FLOP and time lines.
    pub fn compute_lines(
        &self,
        w: &mut Work,
        tokens: f64,
        mfu: Mfu,
        flops_key: &str,
        ms_key: &str,
    ) -> (f64, f64) {
        let peak = self
            .compute
            .clone()
            .expect("an estimator that computes takes activation_dtype");
        w.line(
            "compute_peak",
            "Compute peak",
            format!(
                "{} ({})",
                peak.reason,
                if peak.note == "given" {
                    "peak_flops as given".to_string()
                } else {
                    format!("{}, {}", self.gpu.name, peak.note)
                }
            ),
            fmt::float(peak.flops / 1e12),
            "TFLOP/s",
        );
        w.line(
            "mfu",
            "MFU",
            defaults::provenance(mfu.given, &defaults::MFU),
            fmt::float(mfu.value),
            "",
        );
        let flop = 2.0 * self.model.active_params * tokens;
        w.line(
            flops_key,
            "Compute for the tokens",
            format!(
                "2 × {} params × {} tokens",
                fmt::num(self.model.active_params),
                fmt::num(tokens)
            ),
            fmt::float(flop / 1e12),
            "TFLOP",
        );
        let rate = peak.flops * mfu.value;
        let ms = flop / self.tp as f64 / rate * 1e3;
        w.ms_line(
            ms_key,
            "Compute time",
            format!(
                "{}{} / ({} × {})",
                fmt::flop(flop),
                self.per_tp(),
                peak.short(),
                fmt::num(mfu.value)
            ),
            ms,
        );
        (flop, ms)
    }
}

/// The MFU an estimate used, and whether it was given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mfu {
    pub value: f64,
    pub given: bool,
}

impl Mfu {
    /// Reads `mfu`, defaulting to the one MFU default.
    pub fn read(p: &mut Parser) -> Option<Mfu> {
        let given = p.given("mfu");
        let value = p.or("mfu", defaults::MFU.value, Rule::Fraction)?;
        Some(Mfu { value, given })
    }

    /// At peak the compute time is a lower bound; the sanity sentence says so.
    pub fn caveat(self) -> &'static str {
        if self.value >= 1.0 {
            " At peak (MFU 1) the compute time is a lower bound: real GEMMs reach less."
        } else {
            ""
        }
    }
}

/// The figures of a decode floor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Floor {
    pub weight_bytes: f64,
    pub weights_read: f64,
    pub kv_per_token: f64,
    pub kv_per_step: f64,
    pub ms: f64,
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn unknown_model_gpu_dtype_list_valid_names() {
        let e = errs(
            "decode-floor",
            "model=llama-9b gpu=h300 kv_dtype=fp6 batch=1 context=1",
        );
        has_err(&e, "model", "llama-3.1-8b");
        has_err(&e, "gpu", "h100-sxm");
        has_err(&e, "kv_dtype", "bf16, fp16, fp8, int8, int4");
    }

    #[test]
    fn model_or_config_or_overrides() {
        let e = errs("decode-floor", "batch=1 context=1 params=8e9 layers=32");
        has_err(&e, "model", "missing: kv_heads, head_dim");
        // all four overrides stand in for a model
        let chain = ok(
            "decode-floor",
            "batch=64 context=4096 params=8030261248 layers=32 kv_heads=8 head_dim=128",
        );
        close(&chain, "floor_ms", 15.05);
        let e = errs(
            "decode-floor",
            "model=llama-3.1-8b config={} batch=1 context=1",
        );
        has_err(&e, "config", "not both");
    }

    #[test]
    fn config_text_replaces_the_catalog() {
        let cfg = r#"{"hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"vocab_size":128256}"#;
        let mut raw = inputs("batch=64 context=4096");
        raw.insert("config".into(), cfg.into());
        let chain = crate::estimate::run("decode-floor", &raw).unwrap();
        close(&chain, "floor_ms", 15.05);
        assert!(chain.inputs["config"]
            .as_str()
            .unwrap()
            .starts_with("config.json"));

        raw.insert("config".into(), "{\"hidden_size\": 4096,,}".into());
        let err = crate::estimate::run("decode-floor", &raw).unwrap_err();
        assert!(err.to_string().contains("line 1 column"), "{err}");
    }

    #[test]
    fn overrides_win_and_are_recorded() {
        let chain = ok(
            "decode-floor",
            "model=llama-3.1-8b bandwidth=2e12 layers=16 batch=1 context=1",
        );
        assert_eq!(
            chain.inputs["bandwidth"],
            serde_json::json!(2_000_000_000_000u64)
        );
        assert_eq!(chain.inputs["layers"], serde_json::json!(16));
        assert_eq!(
            chain.results["kv_bytes_per_token_per_gpu"],
            serde_json::json!(65536)
        );
        let e = errs(
            "decode-floor",
            "model=llama-3.1-8b bandwidth=0 batch=1 context=1",
        );
        has_err(&e, "bandwidth", "greater than 0");
    }

    #[test]
    fn tp_must_divide_heads() {
        let e = errs("decode-floor", "model=llama-3.1-8b tp=3 batch=1 context=1");
        has_err(&e, "tp", "32 attention heads");
        let e = errs("decode-floor", "model=llama-3.1-8b tp=0 batch=1 context=1");
        has_err(&e, "tp", "at least 1");
    }

    #[test]
    fn tp_beyond_kv_heads_replicates() {
        // 8 KV heads over 16 ranks: each keeps one head, like at TP 8
        let at8 = ok(
            "decode-floor",
            "model=llama-3.1-405b tp=8 batch=1 context=1",
        );
        let at16 = ok(
            "decode-floor",
            "model=llama-3.1-405b tp=16 batch=1 context=1",
        );
        assert_eq!(
            num(&at8, "kv_bytes_per_token_per_gpu"),
            2.0 * 126.0 * 128.0 * 2.0
        );
        assert_eq!(
            num(&at16, "kv_bytes_per_token_per_gpu"),
            num(&at8, "kv_bytes_per_token_per_gpu")
        );
    }

    #[test]
    fn moe_floor_reads_only_touched_experts() {
        let one = ok(
            "decode-floor",
            "model=deepseek-v3 gpu=h200 tp=8 weight_dtype=fp8 batch=1 context=1",
        );
        let many = ok(
            "decode-floor",
            "model=deepseek-v3 gpu=h200 tp=8 weight_dtype=fp8 batch=4096 context=1",
        );
        // batch 1 reads about the active parameters; a big batch nearly all
        let active = num(&one, "weight_bytes_read_per_step") * 8.0;
        assert!((active / 37.5e9 - 1.0).abs() < 0.02, "{active}");
        let all = num(&many, "weight_bytes_read_per_step");
        assert!((all / num(&many, "weight_bytes_per_gpu") - 1.0).abs() < 1e-3);
        // MLA latent is the same on every rank
        assert_eq!(num(&one, "kv_bytes_per_token_per_gpu"), 61.0 * 576.0 * 2.0);
        // a params override turns the model dense
        let dense = ok(
            "decode-floor",
            "model=deepseek-v3 params=671e9 batch=1 context=1 tp=8",
        );
        assert!(!dense.results.contains_key("weight_bytes_read_per_step"));
    }
}
