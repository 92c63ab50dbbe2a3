//! Model architectures: a catalog of well-known models and a reader for any Hugging
//! Face `config.json`, with parameter counts and KV-cache sizes derived from them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::layers::{self, Kind, LayerKinds};
use super::quant::{self, LayerShape, Quant};
use super::{fmt, spelling, Dtype};

mod catalog;
pub use catalog::*;

/// Which attention projections carry a bias vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionBias {
    None,
    /// Qwen2 family: q, k and v have biases, o does not.
    Qkv,
    /// Llama-style `attention_bias: true`: q, k, v and o.
    QkvO,
}

/// Mixture-of-experts feed-forward layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Moe {
    /// Routed experts per MoE layer (`num_local_experts` / `n_routed_experts` / `num_experts`).
    pub experts: u64,
    /// Routed experts each token uses (`num_experts_per_tok`).
    pub experts_per_tok: u64,
    /// Width of one routed expert (`moe_intermediate_size`, else `intermediate_size`).
    pub expert_intermediate: u64,
    /// Total width of the always-on shared expert(s): `n_shared_experts × moe_intermediate_size`
    /// (DeepSeek) or `shared_expert_intermediate_size` (Qwen2-MoE); 0 if none.
    pub shared_intermediate: u64,
    /// Qwen2-MoE scales its shared expert with a hidden → 1 gate.
    pub shared_gate: bool,
    /// Leading layers that keep a dense MLP (`first_k_dense_replace`).
    pub first_dense_layers: u64,
}

/// DeepSeek multi-head latent attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mla {
    /// `None` when queries are projected directly (DeepSeek-V2-Lite).
    pub q_lora_rank: Option<u64>,
    pub kv_lora_rank: u64,
    pub qk_rope_head_dim: u64,
    pub qk_nope_head_dim: u64,
    pub v_head_dim: u64,
}

/// A decoder-only transformer as its `config.json` describes it (the language model
/// only: vision towers of multimodal models are not counted).
///
/// Parameter count, Llama-style:
/// `embeddings (vocab × hidden) + lm_head (same, unless tied) + final norm (hidden)
///  + Σ_layers [attention + 2 × hidden (RMSNorm) + MLP]`, with
/// attention = `hidden × heads × head_dim (q) + 2 × hidden × kv_heads × head_dim (k, v)
///  + heads × head_dim × hidden (o)` (+ biases), a gated MLP = `3 × hidden × intermediate`,
/// and an MoE layer = `experts × 3 × hidden × expert_intermediate + experts × hidden (router)
///  + shared experts`. Other architectures (LayerNorm with biases, ungated MLPs) come out
/// approximate; the `params` input overrides the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModelSpec {
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    /// Dense MLP width (`intermediate_size`).
    pub intermediate: u64,
    pub vocab: u64,
    pub tied_embeddings: bool,
    pub attention_bias: AttentionBias,
    /// Qwen3 normalises q and k per head (two `head_dim` weight vectors per layer).
    pub qk_norm: bool,
    pub moe: Option<Moe>,
    pub mla: Option<Mla>,
    /// Which layers run full, sliding-window or linear attention.
    pub layer_kinds: LayerKinds,
    /// Qwen3-Next gates each full-attention output: q_proj is twice as wide.
    pub gated_attention: bool,
    /// The checkpoint's own quantization (`quantization_config`), when it has one.
    pub quant: Option<Quant>,
}

/// Parameters of a model: all of them, and those one token uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParamCount {
    pub total: u64,
    /// total − the routed experts a token skips: `(experts − experts_per_tok)` per MoE layer.
    pub active: u64,
    /// All routed-expert weights (0 for dense models); the rest is read every step.
    pub routed: u64,
    /// Weights no quantization touches: embeddings, `lm_head`, norms, MoE routers and
    /// biases (16-bit in every quantized checkpoint we know).
    pub unquantized: u64,
}

/// What the KV cache stores per token.
///
/// GQA: `2 (K and V) × layers × kv_heads × head_dim × bytes`, heads split over TP ranks
/// (`ceil(kv_heads / tp)` per rank, so never below one: heads are replicated when tp > kv_heads),
/// where `layers` counts the full-attention layers only: sliding-window layers hold at most
/// `window` tokens each and linear-attention layers a fixed state per sequence, whatever
/// the context ([`KvLayout::bytes_per_seq_per_gpu`] adds both).
/// MLA: `layers × (kv_lora_rank + qk_rope_head_dim) × bytes`, the same latent on every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KvLayout {
    Gqa {
        layers: u64,
        kv_heads: u64,
        head_dim: u64,
        /// Sliding-window layers and their window (0 when there are none).
        window_layers: u64,
        window: u64,
        /// Linear-attention layers and the elements of one layer's state per sequence.
        linear_layers: u64,
        linear_state: u64,
    },
    Mla {
        layers: u64,
        kv_lora_rank: u64,
        qk_rope_head_dim: u64,
    },
}

/// The state of linear-attention layers is kept in the model's 16-bit dtype.
const STATE_BYTES: f64 = 2.0;

impl KvLayout {
    /// Plain GQA: every layer full attention.
    pub const fn gqa(layers: u64, kv_heads: u64, head_dim: u64) -> Self {
        KvLayout::Gqa {
            layers,
            kv_heads,
            head_dim,
            window_layers: 0,
            window: 0,
            linear_layers: 0,
            linear_state: 0,
        }
    }

    /// Layers whose KV grows with the context.
    pub fn growing_layers(&self) -> u64 {
        match *self {
            KvLayout::Gqa { layers, .. } | KvLayout::Mla { layers, .. } => layers,
        }
    }

    /// KV heads each TP rank holds (GQA); MLA has one latent per rank.
    pub fn heads_per_gpu(&self, tp: u64) -> u64 {
        match *self {
            KvLayout::Gqa { kv_heads, .. } => kv_heads.div_ceil(tp.max(1)).max(1),
            KvLayout::Mla { .. } => 1,
        }
    }

    /// KV bytes one token of context adds on one GPU: the full-attention layers' K and V
    /// (the part that grows with the context).
    pub fn bytes_per_token_per_gpu(&self, dtype: Dtype, tp: u64) -> f64 {
        match *self {
            KvLayout::Gqa {
                layers, head_dim, ..
            } => {
                2.0 * layers as f64
                    * self.heads_per_gpu(tp) as f64
                    * head_dim as f64
                    * dtype.bytes()
            }
            KvLayout::Mla {
                layers,
                kv_lora_rank,
                qk_rope_head_dim,
            } => layers as f64 * (kv_lora_rank as f64 + qk_rope_head_dim as f64) * dtype.bytes(),
        }
    }

    /// What one sequence holds on one GPU beyond its growing KV at this context: the
    /// sliding layers' last `min(context, window)` tokens and the linear layers' state
    /// (its heads split over TP like the KV heads).
    pub fn bounded_bytes_per_seq_per_gpu(&self, dtype: Dtype, tp: u64, context: f64) -> f64 {
        match *self {
            KvLayout::Gqa {
                head_dim,
                window_layers,
                window,
                linear_layers,
                linear_state,
                ..
            } => {
                let per_layer_token =
                    2.0 * self.heads_per_gpu(tp) as f64 * head_dim as f64 * dtype.bytes();
                window_layers as f64 * context.min(window as f64) * per_layer_token
                    + linear_layers as f64 * linear_state as f64 * STATE_BYTES / tp.max(1) as f64
            }
            KvLayout::Mla { .. } => 0.0,
        }
    }

    /// Everything one sequence of `context` tokens holds on one GPU.
    pub fn bytes_per_seq_per_gpu(&self, dtype: Dtype, tp: u64, context: f64) -> f64 {
        context * self.bytes_per_token_per_gpu(dtype, tp)
            + self.bounded_bytes_per_seq_per_gpu(dtype, tp, context)
    }

    /// The bounded part's formula, e.g. `18 sliding layers × min(4,096, 128) tokens × 2,048 B`;
    /// empty when the model has none.
    pub fn bounded_formula(&self, dtype: Dtype, tp: u64, context: f64) -> String {
        let KvLayout::Gqa {
            head_dim,
            window_layers,
            window,
            linear_layers,
            linear_state,
            ..
        } = *self
        else {
            return String::new();
        };
        let mut parts = Vec::new();
        if window_layers > 0 {
            let per = 2.0 * self.heads_per_gpu(tp) as f64 * head_dim as f64 * dtype.bytes();
            parts.push(format!(
                "{window_layers} sliding-window layers × min({}, {window}) tokens × {} B",
                fmt::num(context),
                fmt::num(per)
            ));
        }
        if linear_layers > 0 {
            let tp_part = if tp > 1 {
                format!(" / TP {tp}")
            } else {
                String::new()
            };
            parts.push(format!(
                "{linear_layers} linear-attention layers × {} state elements × 2 B{tp_part} \
                 (a fixed state per sequence)",
                fmt::num(linear_state as f64)
            ));
        }
        parts.join(" + ")
    }

    /// The formula with numbers, e.g. `2 × 80 layers × (8 KV heads / TP 2 = 4) × 128 × 2 B (bf16)`.
    pub fn formula(&self, dtype: Dtype, tp: u64) -> String {
        match *self {
            KvLayout::Gqa {
                layers,
                kv_heads,
                head_dim,
                window_layers,
                linear_layers,
                ..
            } => {
                let heads = if tp <= 1 {
                    format!("{kv_heads} KV heads")
                } else if tp > kv_heads {
                    format!("1 KV head (of {kv_heads}, replicated: TP {tp} > {kv_heads})")
                } else {
                    format!(
                        "({kv_heads} KV heads / TP {tp} = {})",
                        self.heads_per_gpu(tp)
                    )
                };
                let which = if window_layers + linear_layers > 0 {
                    " full-attention"
                } else {
                    ""
                };
                format!(
                    "2 × {layers}{which} layers × {heads} × {head_dim} dims × {}",
                    dtype.describe()
                )
            }
            KvLayout::Mla {
                layers,
                kv_lora_rank,
                qk_rope_head_dim,
            } => {
                let rank = if tp > 1 {
                    ", the same latent on every TP rank"
                } else {
                    ""
                };
                format!(
                    "{layers} layers × ({kv_lora_rank} latent + {qk_rope_head_dim} rope) × {}{rank}",
                    dtype.describe()
                )
            }
        }
    }
}

/// A count whose arithmetic is checked: an overflow stays an overflow (`None`) through
/// every later step instead of wrapping or panicking.
#[derive(Debug, Clone, Copy)]
struct Count(Option<u64>);

impl Count {
    fn of(v: u64) -> Count {
        Count(Some(v))
    }
}

impl std::ops::Add for Count {
    type Output = Count;
    fn add(self, o: Count) -> Count {
        Count(self.0.zip(o.0).and_then(|(a, b)| a.checked_add(b)))
    }
}

impl std::ops::Sub for Count {
    type Output = Count;
    fn sub(self, o: Count) -> Count {
        Count(self.0.zip(o.0).and_then(|(a, b)| a.checked_sub(b)))
    }
}

impl std::ops::Mul for Count {
    type Output = Count;
    fn mul(self, o: Count) -> Count {
        Count(self.0.zip(o.0).and_then(|(a, b)| a.checked_mul(b)))
    }
}

/// One decoder layer's parameters by module, as [`ModelSpec::params`] counts them.
#[derive(Debug, Clone, Copy)]
struct Modules {
    /// Softmax attention's projections: q (gate included), k, v, o; for MLA only `attention`.
    q: Count,
    k: Count,
    v: Count,
    o: Count,
    attention: Count,
    /// The small unquantizable part of an attention layer: biases, q/k norms, MLA's latent norms.
    attention_small: Count,
    linear: Count,
    norms: Count,
    dense_mlp: Count,
    /// Per MoE layer: router (+ shared-expert gate), shared experts, one routed expert.
    router: Count,
    shared: Count,
    expert: Count,
}

impl ModelSpec {
    fn modules(&self) -> Modules {
        let c = Count::of;
        let h = c(self.hidden);
        let heads = c(self.heads);
        let (q, k, v, o, small) = match self.mla {
            Some(m) => {
                let qk_dim = c(m.qk_nope_head_dim) + c(m.qk_rope_head_dim);
                // q: down-projection to a rank-r latent, its RMSNorm, then up to all heads
                let (q, q_norm) = match m.q_lora_rank {
                    Some(r) => (h * c(r) + c(r) * heads * qk_dim, c(r)),
                    None => (h * heads * qk_dim, c(0)),
                };
                // kv: joint down-projection (latent + shared rope key), its norm, up-projection
                let kv = h * (c(m.kv_lora_rank) + c(m.qk_rope_head_dim))
                    + c(m.kv_lora_rank) * heads * (c(m.qk_nope_head_dim) + c(m.v_head_dim));
                let o = heads * c(m.v_head_dim) * h;
                (q, kv, c(0), o, q_norm + c(m.kv_lora_rank))
            }
            None => {
                let q_dim = heads * c(self.head_dim);
                let kv_dim = c(self.kv_heads) * c(self.head_dim);
                let gate = if self.gated_attention { c(2) } else { c(1) };
                let bias = match self.attention_bias {
                    AttentionBias::None => c(0),
                    AttentionBias::Qkv => q_dim + c(2) * kv_dim,
                    AttentionBias::QkvO => q_dim + c(2) * kv_dim + h,
                };
                let qk_norm = if self.qk_norm {
                    c(2) * c(self.head_dim)
                } else {
                    c(0)
                };
                (
                    h * q_dim * gate,
                    h * kv_dim,
                    h * kv_dim,
                    q_dim * h,
                    bias + qk_norm,
                )
            }
        };
        let (router, shared, expert) = match self.moe {
            Some(m) => {
                let gate = if m.shared_gate { h } else { c(0) };
                (
                    c(m.experts) * h + gate,
                    c(3) * h * c(m.shared_intermediate),
                    c(3) * h * c(m.expert_intermediate),
                )
            }
            None => (c(0), c(0), c(0)),
        };
        Modules {
            q,
            k,
            v,
            o,
            attention: q + k + v + o,
            attention_small: small,
            linear: c(self.layer_kinds.linear_params),
            norms: c(2) * h,
            dense_mlp: c(3) * h * c(self.intermediate),
            router,
            shared,
            expert,
        }
    }

    /// Leading layers with a dense MLP; the rest are MoE (all dense without experts).
    fn dense_layers(&self) -> u64 {
        match self.moe {
            Some(m) => m.first_dense_layers.min(self.layers),
            None => self.layers,
        }
    }

    /// Parameters from the architecture (see the type's doc for the formula); `None` when
    /// a count does not fit 64 bits (`from_config_json` refuses such a config).
    pub fn params(&self) -> Option<ParamCount> {
        let c = Count::of;
        let m = self.modules();
        let h = c(self.hidden);
        let embeddings = c(self.vocab) * h;
        let lm_head = if self.tied_embeddings {
            c(0)
        } else {
            embeddings
        };
        let kinds = self.layer_kinds;
        let softmax = c(kinds.softmax().min(self.layers));
        let linear = c(self.layers.saturating_sub(kinds.softmax()));
        let dense_layers = c(self.dense_layers());
        let moe_layers = c(self.layers - self.dense_layers());
        let (experts, skipped_per_layer) = match self.moe {
            Some(moe) => (
                c(moe.experts),
                c(moe.experts.saturating_sub(moe.experts_per_tok)),
            ),
            None => (c(0), c(0)),
        };
        let routed = moe_layers * experts * m.expert;
        let unquantized = embeddings
            + lm_head
            + h
            + c(self.layers) * m.norms
            + softmax * m.attention_small
            + moe_layers * m.router;
        let total = unquantized
            + softmax * m.attention
            + linear * m.linear
            + dense_layers * m.dense_mlp
            + moe_layers * m.shared
            + routed;
        let skipped = moe_layers * skipped_per_layer * m.expert;
        Some(ParamCount {
            total: total.0?,
            active: (total - skipped).0?,
            routed: routed.0?,
            unquantized: unquantized.0?,
        })
    }

    /// One shape per decoder layer, for reading a quantization config's module list.
    fn layer_shapes(&self, kinds: &[Kind]) -> Vec<LayerShape> {
        let m = self.modules();
        let n = |x: Count| x.0.unwrap_or(u64::MAX);
        let experts = self.moe.map_or(0, |e| e.experts);
        (0..self.layers)
            .map(|i| {
                let linear = kinds.get(i as usize) == Some(&Kind::Linear);
                let dense = i < self.dense_layers();
                let mut shape = LayerShape {
                    attention: if linear { n(m.linear) } else { n(m.attention) },
                    mlp: if dense { n(m.dense_mlp) } else { 0 },
                    shared: if dense { 0 } else { n(m.shared) },
                    routed: if dense {
                        0
                    } else {
                        n(m.expert).saturating_mul(experts)
                    },
                    ..LayerShape::default()
                };
                if !linear && self.mla.is_none() {
                    (shape.q, shape.k, shape.v, shape.o) = (n(m.q), n(m.k), n(m.v), n(m.o));
                }
                shape
            })
            .collect()
    }

    /// The field with the largest value, for saying which one made a count overflow.
    fn largest_field(&self) -> (&'static str, u64) {
        let mut fields = vec![
            ("hidden_size", self.hidden),
            ("num_hidden_layers", self.layers),
            ("num_attention_heads", self.heads),
            ("num_key_value_heads", self.kv_heads),
            ("head_dim", self.head_dim),
            ("intermediate_size", self.intermediate),
            ("vocab_size", self.vocab),
        ];
        if let Some(m) = self.moe {
            fields.extend([
                ("num_experts", m.experts),
                ("moe_intermediate_size", m.expert_intermediate),
                ("shared_expert_intermediate_size", m.shared_intermediate),
            ]);
        }
        if let Some(m) = self.mla {
            fields.extend([
                ("q_lora_rank", m.q_lora_rank.unwrap_or(0)),
                ("kv_lora_rank", m.kv_lora_rank),
                ("qk_rope_head_dim", m.qk_rope_head_dim),
                ("qk_nope_head_dim", m.qk_nope_head_dim),
                ("v_head_dim", m.v_head_dim),
            ]);
        }
        fields
            .into_iter()
            .max_by_key(|(_, v)| *v)
            .unwrap_or(("hidden_size", self.hidden))
    }

    pub fn kv_layout(&self) -> KvLayout {
        match self.mla {
            Some(m) => KvLayout::Mla {
                layers: self.layers,
                kv_lora_rank: m.kv_lora_rank,
                qk_rope_head_dim: m.qk_rope_head_dim,
            },
            None => {
                let k = self.layer_kinds;
                KvLayout::Gqa {
                    layers: k.full,
                    kv_heads: self.kv_heads,
                    head_dim: self.head_dim,
                    window_layers: k.sliding,
                    window: k.window,
                    linear_layers: k.linear,
                    linear_state: k.linear_state,
                }
            }
        }
    }

    /// Reads any Hugging Face `config.json` (text). Multimodal configs nest the language
    /// model under `text_config`; its fields win, the top level fills the gaps.
    /// Errors say what is wrong, including where JSON parsing failed (line and column).
    pub fn from_config_json(text: &str) -> Result<ModelSpec, String> {
        let root: Value = serde_json::from_str(text)
            .map_err(|e| format!("config.json is not valid JSON: {e}"))?;
        let Value::Object(top) = &root else {
            return Err("config.json must be a JSON object".to_string());
        };
        let cfg = Config {
            text: top.get("text_config").and_then(Value::as_object),
            top,
        };

        let mut missing = Vec::new();
        let mut need = |key: &'static str| -> Result<u64, String> {
            match cfg.uint(key)? {
                Some(v) if v > 0 => Ok(v),
                Some(_) => Err(format!("config.json: `{key}` must be greater than 0")),
                None => {
                    missing.push(key);
                    Ok(0)
                }
            }
        };
        let model_type = cfg.string("model_type").unwrap_or_default();
        // Gemma 3's text_config leaves vocab_size and tie_word_embeddings at the
        // library's defaults (262,208 and tied).
        let gemma3 = model_type.starts_with("gemma3");
        let hidden = need("hidden_size")?;
        let layers = need("num_hidden_layers")?;
        let heads = need("num_attention_heads")?;
        let vocab = match cfg.uint("vocab_size")? {
            None if gemma3 => GEMMA3_VOCAB,
            _ => need("vocab_size")?,
        };
        let intermediate = cfg.uint("intermediate_size")?;
        if !missing.is_empty() {
            let where_ = if cfg.text.is_some() {
                " (looked in text_config and at the top level)"
            } else {
                ""
            };
            return Err(format!("config.json has no {}{where_}", missing.join(", ")));
        }

        let kv_heads = cfg.uint("num_key_value_heads")?.unwrap_or(heads);
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(format!(
                "config.json: num_key_value_heads {kv_heads} must divide num_attention_heads {heads}"
            ));
        }

        let mla = match cfg.uint("kv_lora_rank")? {
            Some(kv_lora_rank) => {
                let dim = |key: &str| -> Result<u64, String> {
                    cfg.uint(key)?
                        .ok_or_else(|| format!("config.json has kv_lora_rank (MLA) but no {key}"))
                };
                Some(Mla {
                    q_lora_rank: cfg.uint("q_lora_rank")?,
                    kv_lora_rank,
                    qk_rope_head_dim: dim("qk_rope_head_dim")?,
                    qk_nope_head_dim: dim("qk_nope_head_dim")?,
                    v_head_dim: dim("v_head_dim")?,
                })
            }
            None => None,
        };

        let head_dim = match (mla, cfg.uint("head_dim")?) {
            (Some(m), _) => m
                .qk_nope_head_dim
                .checked_add(m.qk_rope_head_dim)
                .ok_or_else(|| too_large("qk_nope_head_dim", m.qk_nope_head_dim))?,
            (None, Some(d)) if d > 0 => d,
            _ if hidden % heads == 0 => hidden / heads,
            _ => {
                return Err(format!(
                    "config.json has no head_dim and hidden_size {hidden} is not a multiple of \
                     num_attention_heads {heads}"
                ))
            }
        };

        let experts = match cfg.uint("num_local_experts")? {
            Some(n) => Some(n),
            None => match cfg.uint("n_routed_experts")? {
                Some(n) => Some(n),
                None => cfg.uint("num_experts")?,
            },
        };
        let moe = match experts {
            Some(experts) if experts > 1 => {
                let experts_per_tok = cfg.uint("num_experts_per_tok")?.ok_or_else(|| {
                    format!("config.json has {experts} experts but no num_experts_per_tok")
                })?;
                let expert_intermediate = match cfg.uint("moe_intermediate_size")? {
                    Some(v) => v,
                    None => intermediate.ok_or_else(|| {
                        "config.json has experts but neither moe_intermediate_size nor \
                         intermediate_size"
                            .to_string()
                    })?,
                };
                let qwen_shared = cfg.uint("shared_expert_intermediate_size")?.unwrap_or(0);
                let shared_experts = cfg.uint("n_shared_experts")?.unwrap_or(0);
                let deepseek_shared = shared_experts
                    .checked_mul(expert_intermediate)
                    .ok_or_else(|| too_large("n_shared_experts", shared_experts))?;
                Some(Moe {
                    experts,
                    experts_per_tok,
                    expert_intermediate,
                    shared_intermediate: qwen_shared
                        .checked_add(deepseek_shared)
                        .ok_or_else(|| too_large("shared_expert_intermediate_size", qwen_shared))?,
                    shared_gate: qwen_shared > 0,
                    first_dense_layers: cfg.uint("first_k_dense_replace")?.unwrap_or(0),
                })
            }
            _ => None,
        };

        // Dense layers need intermediate_size; an all-MoE model may omit it.
        let dense_layers_exist = moe.is_none_or(|m| m.first_dense_layers > 0);
        let intermediate = match intermediate {
            Some(v) => v,
            None if !dense_layers_exist => 0,
            None => return Err("config.json has no intermediate_size".to_string()),
        };

        let attention_bias = if model_type.starts_with("qwen2") {
            AttentionBias::Qkv
        } else if cfg.boolean("attention_bias")?.unwrap_or(false) {
            AttentionBias::QkvO
        } else {
            AttentionBias::None
        };

        let kinds = layer_kinds(&cfg, &model_type, layers)?;
        let (linear_state, linear_params) = linear_attention(&cfg, hidden)?;
        let mut spec = ModelSpec {
            hidden,
            layers,
            heads,
            kv_heads,
            head_dim,
            intermediate,
            vocab,
            // Llama, Qwen2, Mixtral and DeepSeek all default to untied when the key is
            // absent; Gemma ties.
            tied_embeddings: cfg
                .boolean("tie_word_embeddings")?
                .unwrap_or(model_type.starts_with("gemma")),
            attention_bias,
            qk_norm: model_type.starts_with("qwen3")
                || model_type.starts_with("gemma3")
                || cfg.boolean("use_qk_norm")?.unwrap_or(false),
            moe,
            mla,
            layer_kinds: layers::count(
                &kinds,
                cfg.uint("sliding_window")?.unwrap_or(0),
                linear_state,
                linear_params,
            ),
            gated_attention: model_type == "qwen3_next",
            quant: None,
        };
        if spec.params().is_none() {
            let (key, value) = spec.largest_field();
            return Err(too_large(key, value));
        }
        if let Some(q) = top.get("quantization_config").and_then(Value::as_object) {
            spec.quant = Some(quant::read(q, &spec.layer_shapes(&kinds))?);
        }
        Ok(spec)
    }
}

/// Gemma 3's vocabulary when its `text_config` leaves it at the library default.
const GEMMA3_VOCAB: u64 = 262_208;

/// Each layer's attention kind, from `layer_types` or the pattern keys (see
/// [`super::layers`]); every layer full when the config says nothing.
fn layer_kinds(cfg: &Config, model_type: &str, layers: u64) -> Result<Vec<Kind>, String> {
    if let Some(list) = cfg.get("layer_types").and_then(Value::as_array) {
        let kinds = list
            .iter()
            .map(|v| Kind::parse(v.as_str().unwrap_or("")))
            .collect::<Result<Vec<_>, _>>()?;
        if kinds.len() as u64 != layers {
            return Err(format!(
                "config.json: layer_types lists {} layers but num_hidden_layers is {layers}",
                kinds.len()
            ));
        }
        return Ok(kinds);
    }
    if let Some(list) = cfg.get("attn_type_list").and_then(Value::as_array) {
        // MiniMax: 1 softmax attention, 0 lightning (linear) attention
        return Ok(list
            .iter()
            .take(layers as usize)
            .map(|v| {
                if v.as_u64() == Some(0) {
                    Kind::Linear
                } else {
                    Kind::Full
                }
            })
            .collect());
    }
    if let Some(n) = cfg.uint("full_attention_interval")? {
        return Ok(layers::pattern(layers, n, Kind::Full, Kind::Linear));
    }
    let window = cfg.uint("sliding_window")?.unwrap_or(0);
    if window > 0 {
        if let Some(n) = cfg.uint("sliding_window_pattern")? {
            return Ok(layers::pattern(layers, n, Kind::Full, Kind::Sliding));
        }
        if model_type.starts_with("gemma3") {
            return Ok(layers::pattern(layers, 6, Kind::Full, Kind::Sliding));
        }
        if model_type == "mistral" && cfg.boolean("use_sliding_window")?.unwrap_or(true) {
            return Ok(vec![Kind::Sliding; layers as usize]);
        }
    }
    Ok(vec![Kind::Full; layers as usize])
}

/// A linear-attention layer (Gated DeltaNet): the elements of its state per sequence —
/// the recurrent state (value heads × key dim × value dim) plus the short convolution's
/// last `kernel − 1` inputs — and its parameters (in_proj_qkvz, in_proj_ba, the
/// convolution, out_proj). (0, 0) when the config has no linear attention.
fn linear_attention(cfg: &Config, hidden: u64) -> Result<(u64, u64), String> {
    let (Some(nk), Some(nv)) = (
        cfg.uint("linear_num_key_heads")?,
        cfg.uint("linear_num_value_heads")?,
    ) else {
        return Ok((0, 0));
    };
    let dk = cfg.uint("linear_key_head_dim")?.unwrap_or(128);
    let dv = cfg.uint("linear_value_head_dim")?.unwrap_or(128);
    let kernel = cfg.uint("linear_conv_kernel_dim")?.unwrap_or(4);
    let c = Count::of;
    let conv_dim = c(2) * c(nk) * c(dk) + c(nv) * c(dv);
    let state = c(nv) * c(dk) * c(dv) + conv_dim * c(kernel.saturating_sub(1));
    let params = c(hidden) * (c(2) * c(nk) * c(dk) + c(2) * c(nv) * c(dv))
        + c(hidden) * c(2) * c(nv)
        + conv_dim * c(kernel)
        + c(nv) * c(dv) * c(hidden);
    match (state.0, params.0) {
        (Some(s), Some(p)) => Ok((s, p)),
        _ => Err(too_large("linear_num_value_heads", nv)),
    }
}

/// The refusal of a size so large that the counts built on it overflow 64 bits.
fn too_large(key: &str, value: u64) -> String {
    format!(
        "config.json: `{key}` = {value} is too large: the parameter count built on it does not \
         fit 64 bits (no real model comes near); check the value"
    )
}

/// Field lookup over `text_config` first, then the top level; JSON nulls count as absent.
struct Config<'a> {
    top: &'a Map<String, Value>,
    text: Option<&'a Map<String, Value>>,
}

impl Config<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.text
            .and_then(|t| t.get(key))
            .filter(|v| !v.is_null())
            .or_else(|| self.top.get(key).filter(|v| !v.is_null()))
    }

    fn uint(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .map(Some)
                .ok_or_else(|| format!("config.json: `{key}` must be a whole number, found {v}")),
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| format!("config.json: `{key}` must be true or false, found {v}")),
        }
    }

    fn string(&self, key: &str) -> Option<String> {
        self.get(key).and_then(Value::as_str).map(str::to_string)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn spec(name: &str) -> ModelSpec {
        find(name).unwrap().spec
    }

    fn near(got: u64, want: f64, rel: f64) {
        let got = got as f64;
        assert!((got - want).abs() <= rel * want, "{got} vs {want}");
    }

    #[test]
    fn exact_parameter_counts() {
        assert_eq!(spec("llama-3.1-8b").params().unwrap().total, 8_030_261_248);
        assert_eq!(
            spec("llama-3.3-70b").params().unwrap().total,
            70_553_706_496
        );
        assert_eq!(
            spec("llama-3.1-70b").params().unwrap().total,
            70_553_706_496
        );
        assert_eq!(
            spec("llama-3.1-405b").params().unwrap().total,
            405_853_388_800
        );
        assert_eq!(spec("llama-3.2-1b").params().unwrap().total, 1_235_814_400);
        assert_eq!(spec("llama-3.2-3b").params().unwrap().total, 3_212_749_824);
        assert_eq!(spec("qwen2.5-7b").params().unwrap().total, 7_615_616_512);
        assert_eq!(spec("qwen2.5-72b").params().unwrap().total, 72_706_203_648);
        let dense = spec("llama-3.1-8b").params().unwrap();
        assert_eq!(dense.active, dense.total);
        assert_eq!(dense.routed, 0);
    }

    #[test]
    fn moe_parameter_counts_near_published() {
        let mixtral = spec("mixtral-8x7b").params().unwrap();
        near(mixtral.total, 46.7e9, 0.002);
        near(mixtral.active, 12.9e9, 0.005);
        let ds = spec("deepseek-v3").params().unwrap();
        near(ds.total, 671e9, 0.002);
        near(ds.active, 37e9, 0.02);
        assert!(ds.total - ds.routed < ds.active);
    }

    #[test]
    fn kv_bytes_per_token() {
        let kv = spec("llama-3.1-8b").kv_layout();
        assert_eq!(kv.bytes_per_token_per_gpu(Dtype::Bf16, 1), 131_072.0);
        assert_eq!(kv.bytes_per_token_per_gpu(Dtype::Fp8, 1), 65_536.0);
        let kv70 = spec("llama-3.3-70b").kv_layout();
        assert_eq!(kv70.bytes_per_token_per_gpu(Dtype::Bf16, 1), 327_680.0);
        assert_eq!(kv70.bytes_per_token_per_gpu(Dtype::Bf16, 2), 163_840.0);
        let ds = spec("deepseek-v3").kv_layout();
        assert_eq!(
            ds.bytes_per_token_per_gpu(Dtype::Bf16, 1),
            61.0 * 576.0 * 2.0
        );
    }

    #[test]
    fn tp_replicates_kv_heads_and_mla_latent() {
        let kv = spec("llama-3.1-8b").kv_layout(); // 8 KV heads
        assert_eq!(kv.heads_per_gpu(1), 8);
        assert_eq!(kv.heads_per_gpu(8), 1);
        assert_eq!(kv.heads_per_gpu(16), 1);
        // beyond kv_heads, each rank keeps a full replica of one head: no further savings
        assert_eq!(
            kv.bytes_per_token_per_gpu(Dtype::Bf16, 16),
            kv.bytes_per_token_per_gpu(Dtype::Bf16, 8)
        );
        assert!(kv.formula(Dtype::Bf16, 16).contains("replicated"));
        let ds = spec("deepseek-v3").kv_layout();
        assert_eq!(
            ds.bytes_per_token_per_gpu(Dtype::Bf16, 8),
            ds.bytes_per_token_per_gpu(Dtype::Bf16, 1)
        );
        assert!(ds.formula(Dtype::Bf16, 8).contains("every TP rank"));
    }

    const LLAMA_8B_CONFIG: &str = r#"{
      "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
      "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
      "max_position_embeddings": 131072, "model_type": "llama", "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
      "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "rope_theta": 500000.0,
      "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256
    }"#;

    #[test]
    fn config_json_matches_catalog() {
        let parsed = ModelSpec::from_config_json(LLAMA_8B_CONFIG).unwrap();
        assert_eq!(parsed, spec("llama-3.1-8b"));
        assert_eq!(parsed.params().unwrap().total, 8_030_261_248);
    }

    #[test]
    fn config_json_qwen2_bias_and_defaults() {
        let cfg = r#"{"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
            "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
            "vocab_size": 152064, "tie_word_embeddings": false, "sliding_window": null}"#;
        let parsed = ModelSpec::from_config_json(cfg).unwrap();
        assert_eq!(parsed.attention_bias, AttentionBias::Qkv);
        assert_eq!(parsed.params().unwrap().total, 7_615_616_512);
        // no num_key_value_heads → multi-head attention
        let mha = r#"{"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_hidden_layers": 2, "vocab_size": 100}"#;
        let parsed = ModelSpec::from_config_json(mha).unwrap();
        assert_eq!((parsed.kv_heads, parsed.head_dim), (4, 16));
    }

    #[test]
    fn config_json_text_config_nesting() {
        let cfg = r#"{
          "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
          "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24},
          "tie_word_embeddings": false,
          "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
            "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
            "vocab_size": 128256}
        }"#;
        let parsed = ModelSpec::from_config_json(cfg).unwrap();
        assert_eq!(parsed.params().unwrap().total, 8_030_261_248);
        assert_eq!(parsed.layers, 32);
    }

    #[test]
    fn config_json_deepseek_mla() {
        let cfg = r#"{
          "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
          "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
          "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
          "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
          "first_k_dense_replace": 3, "moe_layer_freq": 1, "q_lora_rank": 1536,
          "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
          "v_head_dim": 128, "vocab_size": 129280, "tie_word_embeddings": false,
          "num_nextn_predict_layers": 1, "topk_method": "noaux_tc"
        }"#;
        let parsed = ModelSpec::from_config_json(cfg).unwrap();
        assert_eq!(parsed, spec("deepseek-v3"));
        assert_eq!(
            parsed.kv_layout().bytes_per_token_per_gpu(Dtype::Bf16, 1),
            70_272.0
        );
        // V2-Lite style: no q down-projection
        let lite = cfg.replace("\"q_lora_rank\": 1536", "\"q_lora_rank\": null");
        let lite = ModelSpec::from_config_json(&lite).unwrap();
        assert_eq!(lite.mla.unwrap().q_lora_rank, None);
        assert!(lite.params().unwrap().total > parsed.params().unwrap().total);
    }

    #[test]
    fn config_json_mixtral_matches_catalog() {
        let cfg = r#"{"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
            "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
            "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
            "tie_word_embeddings": false}"#;
        assert_eq!(
            ModelSpec::from_config_json(cfg).unwrap(),
            spec("mixtral-8x7b")
        );
    }

    #[test]
    fn config_json_errors_say_where() {
        let err =
            ModelSpec::from_config_json("{\n  \"hidden_size\": 4096,\n  oops\n}").unwrap_err();
        assert!(err.contains("line 3 column 3"), "{err}");
        let err = ModelSpec::from_config_json(r#"{"hidden_size": 4096}"#).unwrap_err();
        assert!(err.contains("num_hidden_layers"), "{err}");
        assert!(err.contains("vocab_size"), "{err}");
        let err = ModelSpec::from_config_json(r#"{"hidden_size": "big"}"#).unwrap_err();
        assert!(err.contains("hidden_size"), "{err}");
        assert!(ModelSpec::from_config_json("[1]").is_err());
    }

    #[test]
    fn sizes_that_overflow_the_counts_are_refused_by_name() {
        let big = r#"{"hidden_size": 4294967296, "intermediate_size": 14336,
            "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 4294967295}"#;
        let err = ModelSpec::from_config_json(big).unwrap_err();
        assert!(err.contains("`hidden_size` = 4294967296"), "{err}");
        let mla = r#"{"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_hidden_layers": 2, "vocab_size": 100, "kv_lora_rank": 8,
            "qk_rope_head_dim": 18446744073709551615, "qk_nope_head_dim": 2, "v_head_dim": 2}"#;
        let err = ModelSpec::from_config_json(mla).unwrap_err();
        assert!(err.contains("qk_nope_head_dim"), "{err}");
    }

    /// Qwen3-Next-80B-A3B's config.json (the Hub file's fields).
    pub(crate) const QWEN3_NEXT_CONFIG: &str = r#"{
      "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
      "decoder_sparse_step": 1, "full_attention_interval": 4, "head_dim": 256,
      "hidden_size": 2048, "intermediate_size": 5120, "linear_conv_kernel_dim": 4,
      "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
      "linear_value_head_dim": 128, "max_position_embeddings": 262144, "mlp_only_layers": [],
      "moe_intermediate_size": 512, "norm_topk_prob": true, "num_attention_heads": 16,
      "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48,
      "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "rope_theta": 10000000,
      "shared_expert_intermediate_size": 512, "tie_word_embeddings": false,
      "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 151936
    }"#;

    #[test]
    fn qwen3_next_holds_kv_at_its_full_attention_layers_only() {
        let parsed = ModelSpec::from_config_json(QWEN3_NEXT_CONFIG).unwrap();
        assert_eq!(parsed, spec("qwen3-next-80b-a3b"));
        let k = parsed.layer_kinds;
        assert_eq!((k.full, k.linear, k.sliding), (12, 36, 0));
        let kv = parsed.kv_layout();
        assert_eq!(kv.growing_layers(), 12);
        // 2 × 12 layers × 2 KV heads × 256 × 2 B, not 48 layers' worth (4× more)
        assert_eq!(kv.bytes_per_token_per_gpu(Dtype::Bf16, 1), 24_576.0);
        // each DeltaNet layer keeps 32 × 128 × 128 + 8,192 × 3 elements per sequence
        assert_eq!(k.linear_state, 548_864);
        let one_seq = kv.bytes_per_seq_per_gpu(Dtype::Bf16, 1, 4096.0);
        assert_eq!(one_seq, 4096.0 * 24_576.0 + 36.0 * 548_864.0 * 2.0);
        let p = parsed.params().unwrap();
        near(p.total, 79.7e9, 0.01);
        // "A3B": 3.6 B a token without the embedding table, which is a lookup, not compute
        near(p.active - parsed.vocab * parsed.hidden, 3.56e9, 0.01);
    }

    #[test]
    fn sliding_window_layers_cap_their_kv_at_the_window() {
        let gpt_oss = spec("gpt-oss-120b");
        let kv = gpt_oss.kv_layout();
        // 18 full layers grow; 18 sliding layers hold at most 128 tokens
        assert_eq!(
            kv.bytes_per_token_per_gpu(Dtype::Bf16, 1),
            2.0 * 18.0 * 8.0 * 64.0 * 2.0
        );
        let at = |ctx: f64| kv.bytes_per_seq_per_gpu(Dtype::Bf16, 1, ctx);
        assert_eq!(at(100.0), 100.0 * 36_864.0 * 2.0);
        assert_eq!(at(8192.0), 8192.0 * 36_864.0 + 128.0 * 36_864.0);
        let p = gpt_oss.params().unwrap();
        near(p.total, 116.8e9, 0.01);
        // published active counts leave out the embedding table (a lookup)
        near(p.active - gpt_oss.vocab * gpt_oss.hidden, 5.13e9, 0.01);
        // Gemma 3: 1 layer in 6 global, window 1,024; vocab and tying from the defaults
        let gemma = r#"{"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
          "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
          "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
          "num_key_value_heads": 16, "sliding_window": 1024}}"#;
        let g = ModelSpec::from_config_json(gemma).unwrap();
        assert_eq!((g.layer_kinds.full, g.layer_kinds.sliding), (10, 52));
        assert_eq!((g.vocab, g.tied_embeddings), (262_208, true));
        near(g.params().unwrap().total, 27.0e9, 0.02);
        let listed = r#"{"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_hidden_layers": 2, "vocab_size": 100, "sliding_window": 8,
            "layer_types": ["sliding_attention", "full_attention"]}"#;
        let l = ModelSpec::from_config_json(listed).unwrap();
        assert_eq!(
            (
                l.layer_kinds.full,
                l.layer_kinds.sliding,
                l.layer_kinds.window
            ),
            (1, 1, 8)
        );
        let short = listed.replace(r#", "full_attention""#, "");
        assert!(ModelSpec::from_config_json(&short)
            .unwrap_err()
            .contains("layer_types"));
    }

    /// Meta's FP8 405B keeps q/k/v/o of all 126 layers and the first and last layers'
    /// MLPs in BF16 (its `modules_to_not_convert`).
    pub(crate) fn llama_405b_fp8_config() -> String {
        let mut kept = vec!["lm_head".to_string()];
        for i in 0..126 {
            for p in ["k_proj", "o_proj", "q_proj", "v_proj"] {
                kept.push(format!("model.layers.{i}.self_attn.{p}"));
            }
        }
        for i in [0, 125] {
            for p in ["down_proj", "gate_proj", "up_proj"] {
                kept.push(format!("model.layers.{i}.mlp.{p}"));
            }
        }
        serde_json::json!({
            "architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "hidden_size": 16384, "num_hidden_layers": 126, "num_attention_heads": 128,
            "num_key_value_heads": 8, "intermediate_size": 53248, "vocab_size": 128256,
            "tie_word_embeddings": false,
            "quantization_config": {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
                "modules_to_not_convert": kept}
        })
        .to_string()
    }

    #[test]
    fn llama_405b_fp8_keeps_attention_in_bf16() {
        let parsed = ModelSpec::from_config_json(&llama_405b_fp8_config()).unwrap();
        assert_eq!(parsed, spec("llama-3.1-405b-fp8"));
        let q = parsed.quant.unwrap();
        assert_eq!((q.kept_attention_layers, q.kept_mlp_layers), (126, 2));
        assert_eq!(q.kept, 126 * 570_425_344 + 2 * 3 * 16384 * 53248);
        let p = parsed.params().unwrap();
        assert_eq!(p.total, 405_853_388_800);
        // embeddings, lm_head and norms: never quantized
        assert_eq!(p.unquantized, 2 * 128_256 * 16384 + 16384 + 126 * 2 * 16384);
        // 324.5 B params at 1 B + 81.3 B params at 2 B = 487 GB, not 406 GB all-FP8
        let kept = q.kept + p.unquantized;
        let bytes = (p.total - kept) as f64 + 2.0 * kept as f64;
        assert!((bytes / 1e9 - 487.17).abs() < 0.01, "{bytes}");
    }

    #[test]
    fn new_catalog_models_match_their_published_sizes() {
        for (name, total, active) in [
            ("qwen3-8b", 8.19e9, 8.19e9),
            ("qwen3-32b", 32.8e9, 32.8e9),
            ("qwen3-30b-a3b", 30.5e9, 3.3e9),
            ("qwen3-235b-a22b", 235.1e9, 22.1e9),
            ("minimax-m2", 228.7e9, 10.0e9),
            ("gpt-oss-20b", 20.9e9, 3.6e9),
            ("deepseek-r1", 671e9, 37.5e9),
        ] {
            let m = spec(name);
            let p = m.params().unwrap();
            near(p.total, total, 0.02);
            // vendors differ on whether the embedding table (a lookup) counts as active
            let without = p.active - m.vocab * m.hidden;
            assert!(
                (p.active as f64 - active).abs() <= 0.05 * active
                    || (without as f64 - active).abs() <= 0.05 * active,
                "{name}: {} / {without} vs {active}",
                p.active
            );
        }
        // the FP8 Qwen3 and MiniMax checkpoints quantize attention and experts alike
        for name in ["qwen3-235b-a22b-fp8", "minimax-m2", "deepseek-r1"] {
            let q = spec(name).quant.unwrap();
            assert_eq!(
                (q.dtype, q.kept, q.kept_routed),
                (Dtype::Fp8, 0, 0),
                "{name}"
            );
        }
        let cfg = r#"{"model_type": "qwen3_moe", "hidden_size": 4096, "num_hidden_layers": 94,
          "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
          "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_experts": 128,
          "num_experts_per_tok": 8, "vocab_size": 151936, "tie_word_embeddings": false,
          "quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
            "activation_scheme": "dynamic", "weight_block_size": [128, 128],
            "modules_to_not_convert": ["lm_head", "model.layers.0.input_layernorm",
              "model.layers.0.mlp.gate", "model.layers.0.post_attention_layernorm"]}}"#;
        assert_eq!(
            ModelSpec::from_config_json(cfg).unwrap(),
            spec("qwen3-235b-a22b-fp8")
        );
    }

    #[test]
    fn catalog_lookup_and_summaries() {
        assert!(find("LLAMA-3.1-8B").is_some());
        assert!(find("meta-llama/Llama-3.1-8B").is_some());
        assert!(find("llama-9").is_none());
        for required in [
            "llama-3.1-8b",
            "llama-3.1-70b",
            "llama-3.1-405b",
            "llama-3.3-70b",
            "qwen2.5-7b",
            "qwen2.5-72b",
            "mixtral-8x7b",
            "deepseek-v3",
        ] {
            assert!(find(required).is_some(), "{required}");
        }
        let s = summaries();
        let s8 = s.iter().find(|m| m.name == "llama-3.1-8b").unwrap();
        assert_eq!(
            s8.weight_bytes["bf16"],
            serde_json::json!(16_060_522_496u64)
        );
        assert_eq!(s8.weight_bytes["int4"], serde_json::json!(4_015_130_624u64));
        assert_eq!(s8.kv_bytes_per_token["bf16"], serde_json::json!(131_072));
    }
}
