//! The inputs shared by the estimators that look at a model on a GPU: which model
//! (catalog name, `config.json` text, or bare overrides), which GPU, TP and dtypes,
//! plus the decode-floor arithmetic several estimators build on.

use super::chain::Work;
use super::expected_cost::{self, Basis, Shape};
use super::input::{Parser, Rule};
use super::models::{self, KvLayout, ModelSpec};
use super::precision::{self, ComputePeak};
use super::quant::Quant;
use super::{defaults, fmt, gpus, Dtype, FieldSpec};
use crate::fmt::ByteStyle;

mod fields;
pub(crate) use fields::*;

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
    /// Parameters no quantization touches (embeddings, lm_head, norms, routers).
    pub unquantized: f64,
    /// The checkpoint's own quantization, from the catalog or a config's
    /// `quantization_config`.
    pub quant: Option<Quant>,
    /// Decoder layers (every kind) and those with an MoE feed-forward.
    pub layers: u64,
    pub moe_layers: u64,
    /// The vocabulary (the sampler's logits are this wide), when the model gives it.
    pub vocab: Option<u64>,
    /// `heads × (q·k dims + v dims)` of one softmax-attention layer: the attention FLOPs a
    /// pair of tokens costs (0 when only overrides describe the model).
    pub attention_width: f64,
    /// The vocabulary matrices (vocab × hidden) counted in the active parameters: the
    /// embedding table, and the LM head unless tied (0 when an explicit params count
    /// replaces the architecture's).
    pub vocab_params: f64,
    /// The LM head's parameters (vocab × hidden; 0 as above).
    pub head_params: f64,
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
    /// Expert parallelism (1: experts split by TP like every other weight).
    pub ep: u64,
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

/// The catalog GPU `name` means, or — for a GPU the catalog lacks — the nearest entry as
/// a template, when the estimate gives every figure it takes from the catalog
/// (`bandwidth`, `peak_flops`, `hbm_bytes`, whichever it accepts).
fn lookup_gpu(p: &mut Parser, name: &str) -> Option<&'static gpus::GpuSpec> {
    if let Some(g) = gpus::find(name) {
        p.record("gpu", g.name);
        return Some(g);
    }
    let figures = ["bandwidth", "peak_flops", "hbm_bytes"];
    let taken: Vec<&str> = figures.into_iter().filter(|k| p.accepts(k)).collect();
    let described = !taken.is_empty() && taken.iter().all(|k| p.given(k));
    if !described {
        p.fail("gpu", gpus::unknown(name));
        return None;
    }
    let near = super::spelling::nearest(name, gpus::GPUS.iter().map(|g| g.name));
    let template = near.first().and_then(|n| gpus::find(n))?;
    p.record(
        "gpu",
        format!(
            "{} (not in the catalog: {} as given; tensor-core precisions and link as the \
             nearest entry, {})",
            name.trim(),
            taken.join(", "),
            template.name
        ),
    );
    Some(template)
}

/// The weight dtype: given, else the checkpoint's own quantization, else bf16.
fn weight_dtype(p: &mut Parser, quant: Option<Quant>) -> Option<Dtype> {
    let Some(q) = quant else {
        return dtype(p, "weight_dtype");
    };
    match p.text("weight_dtype").map(Dtype::parse) {
        None => {
            p.record(
                "weight_dtype",
                format!("{} (the checkpoint's quantization_config)", q.describe()),
            );
            Some(q.dtype)
        }
        Some(Ok(d)) if d == q.dtype => {
            p.record("weight_dtype", q.describe());
            Some(d)
        }
        Some(Ok(d)) => {
            p.record(
                "weight_dtype",
                format!(
                    "{} (given: every weight at it, not the checkpoint's {})",
                    d.name(),
                    q.describe()
                ),
            );
            Some(d)
        }
        Some(Err(msg)) => {
            p.fail("weight_dtype", msg);
            None
        }
    }
}

fn resolve_gpu(p: &mut Parser) -> Option<Gpu> {
    let spec = match p.text("gpu") {
        Some(name) => lookup_gpu(p, name),
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
    // The architecture's own layout unless an override reshapes it (every layer then
    // counts as full attention).
    let kv = match (base, layers_o, kv_heads_o, head_dim_o) {
        (Some(b), None, None, None) => b.kv_layout(),
        (Some(ModelSpec { mla: Some(m), .. }), Some(_), None, None) => KvLayout::Mla {
            layers,
            kv_lora_rank: m.kv_lora_rank,
            qk_rope_head_dim: m.qk_rope_head_dim,
        },
        _ => KvLayout::gqa(
            layers,
            kv_heads_o.or(base.map(|b| b.kv_heads))?,
            head_dim_o.or(base.map(|b| b.head_dim))?,
        ),
    };
    let hidden = hidden_o.or(base.map(|b| b.hidden));

    p.record_number("params", params);
    if routed.is_some() {
        p.record_number("active_params", active_params);
    }
    p.record_number("layers", layers as f64);
    if let Some(kinds) = base
        .filter(|_| layers_o.is_none())
        .map(|b| b.layer_kinds.describe())
    {
        if !kinds.is_empty() {
            p.record("attention_layers", kinds);
        }
    }
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
    // An explicit params count has no module split: its weights are all at weight_dtype.
    let whole = base.filter(|_| params_o.is_none());
    let model = Model {
        params,
        active_params,
        routed,
        kv,
        hidden,
        unquantized: counts
            .filter(|_| whole.is_some())
            .map_or(0.0, |c| c.unquantized as f64),
        quant: whole.and_then(|b| b.quant),
        layers,
        vocab: base.map(|b| b.vocab),
        vocab_params: whole.map_or(0.0, |b| {
            let matrix = (b.vocab * b.hidden) as f64;
            if b.tied_embeddings {
                matrix
            } else {
                2.0 * matrix
            }
        }),
        head_params: whole.map_or(0.0, |b| (b.vocab * b.hidden) as f64),
        attention_width: base.filter(|_| layers_o.is_none()).map_or(0.0, |b| {
            let (qk, v) = match b.mla {
                Some(m) => (m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim),
                None => (b.head_dim, b.head_dim),
            };
            (b.heads * (qk + v)) as f64
        }),
        moe_layers: match (routed, base) {
            (Some(_), Some(b)) => b
                .moe
                .map_or(0, |m| b.layers - m.first_dense_layers.min(b.layers)),
            _ => 0,
        },
    };
    Some((model, base.map(|b| b.heads)))
}

impl Setup {
    /// Reads the common fields this estimator accepts, reporting every problem.
    pub fn resolve(p: &mut Parser) -> Option<Setup> {
        let tp = p.or("tp", 1.0, Rule::Count).map(|v| v as u64);
        let ep = if p.accepts("ep") {
            p.or("ep", 1.0, Rule::Count).map(|v| v as u64)
        } else {
            Some(1)
        };
        let model = resolve_model(p);
        let quant = model.as_ref().and_then(|(m, _)| m.quant);
        let weight_dtype = weight_dtype(p, quant);
        let kv_dtype = dtype(p, "kv_dtype");
        let gpu = resolve_gpu(p);
        let compute = match (&gpu, weight_dtype) {
            (Some(g), Some(w)) if p.accepts("activation_dtype") => {
                resolve_compute(p, g, w).map(Some)
            }
            _ => Some(None),
        };
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
            ep: ep?,
            weight_dtype: weight_dtype?,
            kv_dtype: kv_dtype?,
            compute: compute?,
        })
    }

    /// The checkpoint's quantization when weights are stored at it (`dtype` is its dtype).
    fn split(&self, dtype: Dtype) -> Option<Quant> {
        self.model.quant.filter(|q| q.dtype == dtype)
    }

    /// Bytes of the weights read every step and of the routed experts, for the whole
    /// model: at one dtype, or — for a checkpoint that keeps some modules in 16 bits —
    /// quantized modules at its precision and the rest at 2 B.
    pub fn weight_split(&self, dtype: Dtype) -> (f64, f64) {
        let routed = self.model.routed.map_or(0.0, |r| r.params);
        let always = self.model.params - routed;
        match self.split(dtype) {
            Some(q) => {
                let qb = q.bytes_per_weight();
                let kept = q.kept as f64 + self.model.unquantized;
                let kept_routed = q.kept_routed as f64;
                (
                    (always - kept) * qb + kept * 2.0,
                    (routed - kept_routed) * qb + kept_routed * 2.0,
                )
            }
            None => (always * dtype.bytes(), routed * dtype.bytes()),
        }
    }

    /// Weight bytes per GPU: the [`Setup::weight_split`] over TP.
    pub fn weight_bytes_per_gpu(&self, dtype: Dtype) -> f64 {
        let (always, routed) = self.weight_split(dtype);
        (always + routed) / self.tp as f64
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
        let formula = match self.split(dtype) {
            Some(q) => {
                let kept = q.kept as f64 + q.kept_routed as f64 + self.model.unquantized;
                let narrow = self.model.params - kept;
                let which = if q.kept_attention_layers + q.kept_mlp_layers > 0 {
                    "embeddings, lm_head, norms, routers and the kept modules"
                } else {
                    "embeddings, lm_head, norms, routers"
                };
                format!(
                    "({} params × {} B ({}) + {} params × 2 B (16-bit: {which})){}",
                    fmt::num(narrow),
                    fmt::num(q.bytes_per_weight()),
                    q.describe(),
                    fmt::num(kept),
                    self.per_tp()
                )
            }
            None => format!(
                "{} params × {}{}",
                fmt::num(self.model.params),
                dtype.describe(),
                self.per_tp()
            ),
        };
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
    /// Sliding-window layers add their last `min(context, window)` tokens and linear
    /// layers their fixed state, per sequence.
    pub fn kv_step_line(&self, w: &mut Work, batch: f64, context: f64, per_token: f64) -> f64 {
        let bounded = self
            .model
            .kv
            .bounded_bytes_per_seq_per_gpu(self.kv_dtype, self.tp, context);
        let bytes = batch * (context * per_token + bounded);
        let formula = if bounded > 0.0 {
            format!(
                "{} seqs × ({} tokens × {} + {})",
                fmt::num(batch),
                fmt::num(context),
                crate::fmt::bytes(per_token, ByteStyle::Figure),
                self.model
                    .kv
                    .bounded_formula(self.kv_dtype, self.tp, context)
            )
        } else {
            format!(
                "{} seqs × {} tokens × {}",
                fmt::num(batch),
                fmt::num(context),
                crate::fmt::bytes(per_token, ByteStyle::Figure)
            )
        };
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
        let touched = self.touched_fraction(batch);
        w.line(
            &format!("experts_touched_fraction{suffix}"),
            "Routed experts touched per layer",
            format!("1 − (1 − {}/{})^{}", r.per_tok, r.experts, fmt::num(batch)),
            fmt::float(touched),
            "",
        );
        let (always, routed) = self.weight_split(dtype);
        let bytes = (always + touched * routed) / self.tp as f64;
        w.bytes_line(
            &format!("weight_bytes_read_per_step{suffix}"),
            "Weights read per step per GPU",
            format!(
                "({} always-used + {} × {} routed){}",
                crate::fmt::bytes(always, ByteStyle::Figure),
                fmt::num(touched),
                crate::fmt::bytes(routed, ByteStyle::Figure),
                self.per_tp()
            ),
            bytes,
        );
        bytes
    }

    /// Share of each MoE layer's routed experts that `tokens` tokens touch under uniform
    /// routing: `1 − (1 − k/E)^tokens` (1 for a dense model).
    pub fn touched_fraction(&self, tokens: f64) -> f64 {
        match self.model.routed {
            Some(r) => 1.0 - (1.0 - r.per_tok as f64 / r.experts as f64).powf(tokens),
            None => 1.0,
        }
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

    /// The peers one collective spans: TP, or EP where experts are spread wider.
    pub fn peers(&self) -> u64 {
        self.tp.max(self.ep)
    }

    /// The compute peak of weights × activations: the estimator's, or — for one that
    /// takes no activation dtype — the one the weights run at by default on this GPU.
    pub fn peak(&self) -> ComputePeak {
        if let Some(c) = &self.compute {
            return c.clone();
        }
        let activation = precision::default_activation(self.weight_dtype, self.gpu.spec);
        let mut peak = precision::compute_peak(self.gpu.spec, self.weight_dtype, activation)
            .or_else(|_| precision::compute_peak(self.gpu.spec, Dtype::Bf16, Dtype::Bf16))
            .expect("bf16 × bf16 always has a peak");
        if let Some(v) = self.gpu.peak_override {
            peak.flops = v;
        }
        peak
    }

    /// `2 × active params × tokens / TP / peak`, in ms: prefill compute at the peak.
    pub fn prefill_ms_at_peak(&self, tokens: f64) -> f64 {
        2.0 * self.model.active_params * tokens / self.tp as f64 / self.peak().flops * 1e3
    }

    /// The GEMMs of a step of `tokens` of which `logits` need logits (a prefill's last
    /// token and each decode), per GPU at the peak, in ms, counted as the kernels run
    /// them: `2 × (active params − vocabulary matrices) × tokens` for the layers (the
    /// embedding lookup is a gather, not a matmul) `+ 2 × LM head params × logits`,
    /// `/ TP / peak`.
    pub fn step_gemm_ms_at_peak(&self, tokens: f64, logits: f64) -> f64 {
        let m = &self.model;
        let layers = (m.active_params - m.vocab_params).max(0.0);
        2.0 * (layers * tokens + m.head_params.min(m.vocab_params) * logits)
            / self.tp as f64
            / self.peak().flops
            * 1e3
    }

    /// FLOPs of a fresh prompt chunk's attention over itself per GPU: `heads × (d_qk +
    /// d_v) × chunk²` a full layer (causal: half the pairs, 2 FLOPs a multiply-add), a
    /// sliding layer up to its window.
    pub fn chunk_attention_flops(&self, chunk: f64) -> f64 {
        let (full, sliding, window) = match self.model.kv {
            KvLayout::Gqa {
                layers,
                window_layers,
                window,
                ..
            } => (layers as f64, window_layers as f64, window as f64),
            KvLayout::Mla { layers, .. } => (layers as f64, 0.0, 0.0),
        };
        self.model.attention_width * chunk * (full * chunk + sliding * chunk.min(window))
            / self.tp as f64
    }

    /// Bytes one GPU sends in a step's collectives: 2 a layer, each `2 (p − 1)/p ×
    /// hidden × 2 B` a token (a ring all-reduce; the all-to-alls of EP move about as
    /// much); 0 without peers or a known hidden size.
    pub fn collective_bytes(&self, tokens: f64) -> f64 {
        let p = self.peers() as f64;
        match self.model.hidden {
            Some(h) if p > 1.0 => {
                2.0 * self.model.layers as f64 * 2.0 * (p - 1.0) / p
                    * h as f64
                    * super::defaults::ALLREDUCE_ELEMENT_BYTES.value
                    * tokens
            }
            _ => 0.0,
        }
    }

    /// What the fitted constants multiply for a step reading `reads` bytes (weights, KV),
    /// with `prefill_tokens` riding in it and `tokens` through its collectives.
    pub fn basis(&self, reads: (f64, f64), prefill_tokens: f64, tokens: f64) -> Basis {
        let ms = |bytes: f64| bytes / self.gpu.bandwidth * 1e3;
        let p = self.peers() as f64;
        let calls = if p > 1.0 {
            2.0 * self.model.layers as f64 * (p - 1.0) / p
        } else {
            0.0
        };
        Basis {
            values: [
                ms(reads.0),
                self.model.layers as f64,
                self.model.moe_layers as f64,
                calls,
                1.0,
                self.prefill_ms_at_peak(prefill_tokens),
                ms(reads.1),
            ],
            link_ms: self.collective_bytes(tokens)
                / (self.gpu.link_bandwidth * expected_cost::LINK_EFFICIENCY)
                * 1e3,
        }
    }

    /// The wording the expected-cost lines need.
    pub fn shape(&self, tokens: f64, prefill_tokens: f64, prefill_formula: String) -> Shape {
        let peak = self.peak();
        Shape {
            layers: self.model.layers as f64,
            peers: self.peers(),
            expert_parallel: self.ep > 1 && self.model.routed.is_some(),
            collective_bytes: self.collective_bytes(tokens),
            link: self.gpu.link,
            link_bandwidth: self.gpu.link_bandwidth,
            prefill_tokens,
            prefill_tokens_formula: prefill_formula,
            active_params: self.model.active_params,
            tp: self.tp,
            peak: peak.flops,
            peak_name: peak.precision.name().to_string(),
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
    fn a_gpu_the_catalog_lacks_runs_on_its_own_figures() {
        let e = errs(
            "decode-floor",
            "model=llama-3.1-8b gpu=rtx-9090 batch=1 context=1",
        );
        has_err(&e, "gpu", "give its own datasheet figures: bandwidth");
        let c = ok(
            "decode-floor",
            "model=llama-3.1-8b gpu=rtx-9090 bandwidth=2e12 peak_flops=400e12 batch=64 \
             context=4096",
        );
        close(
            &c,
            "floor_ms",
            (16.060522496e9 + 34.359738368e9) / 2e12 * 1e3,
        );
        let gpu = c.inputs["gpu"].as_str().unwrap();
        assert!(gpu.starts_with("rtx-9090 (not in the catalog"), "{gpu}");
        // mixed-step also takes the compute peak from the catalog: it must be given too
        let e = errs(
            "mixed-step",
            "model=llama-3.1-8b gpu=rtx-9090 bandwidth=2e12 batch=1 context=1 chunk_tokens=1",
        );
        has_err(&e, "gpu", "peak_flops");
    }

    #[test]
    fn a_hybrid_model_reads_kv_at_its_full_attention_layers_and_its_state() {
        let mut raw = inputs("tp=2 batch=8 context=4096");
        raw.insert(
            "config".into(),
            crate::estimate::models::tests::QWEN3_NEXT_CONFIG.into(),
        );
        let c = crate::estimate::run("decode-floor", &raw).unwrap();
        // 2 × 12 layers × 1 KV head per GPU × 256 × 2 B
        assert_eq!(num(&c, "kv_bytes_per_token_per_gpu"), 12_288.0);
        let state = 36.0 * 548_864.0 * 2.0 / 2.0;
        assert_eq!(
            num(&c, "kv_bytes_per_step"),
            8.0 * (4096.0 * 12_288.0 + state)
        );
        assert_eq!(
            c.inputs["attention_layers"],
            "48 layers: 12 full attention, 36 linear attention"
        );
        let line = c
            .lines
            .iter()
            .find(|l| l.key == "kv_bytes_per_step")
            .unwrap();
        assert!(
            line.formula.contains("linear-attention layers"),
            "{}",
            line.formula
        );
    }

    #[test]
    fn a_checkpoint_that_keeps_modules_in_bf16_weighs_them_at_2_bytes() {
        let c = ok(
            "decode-floor",
            "model=llama-3.1-405b-fp8 tp=8 batch=1 context=1",
        );
        // 324.5 B FP8 params + 81.3 B BF16 params (attention, 2 MLPs, embeddings), / 8
        close(&c, "weight_bytes_per_gpu", 487.17e9 / 8.0);
        let w = c
            .lines
            .iter()
            .find(|l| l.key == "weight_bytes_per_gpu")
            .unwrap();
        assert!(
            w.formula.contains("attention of 126 layers"),
            "{}",
            w.formula
        );
        assert!(c.inputs["weight_dtype"]
            .as_str()
            .unwrap()
            .contains("quantization_config"));
        // the same from the config's own text
        let mut raw = inputs("tp=8 batch=1 context=1");
        raw.insert(
            "config".into(),
            crate::estimate::models::tests::llama_405b_fp8_config(),
        );
        let from_config = crate::estimate::run("decode-floor", &raw).unwrap();
        assert_eq!(
            from_config.results["weight_bytes_per_gpu"],
            c.results["weight_bytes_per_gpu"]
        );
        // weight_dtype given as something else: every weight at it
        let bf16 = ok(
            "decode-floor",
            "model=llama-3.1-405b-fp8 tp=8 weight_dtype=bf16 batch=1 context=1",
        );
        close(&bf16, "weight_bytes_per_gpu", 405_853_388_800.0 * 2.0 / 8.0);
        // gpt-oss: MXFP4 experts (4.25 bits), BF16 attention; a decode reads the touched experts
        let g = ok("decode-floor", "model=gpt-oss-120b batch=1 context=1");
        let w = num(&g, "weight_bytes_per_gpu");
        assert!((w / 1e9 - 65.1).abs() < 0.5, "{w}");
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
