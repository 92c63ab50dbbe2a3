//! Model architectures: a catalog of well-known models and a reader for any Hugging
//! Face `config.json`, with parameter counts and KV-cache sizes derived from them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{fmt, spelling, Dtype};

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
}

/// Parameters of a model: all of them, and those one token uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParamCount {
    pub total: u64,
    /// total − the routed experts a token skips: `(experts − experts_per_tok)` per MoE layer.
    pub active: u64,
    /// All routed-expert weights (0 for dense models); the rest is read every step.
    pub routed: u64,
}

/// What the KV cache stores per token.
///
/// GQA: `2 (K and V) × layers × kv_heads × head_dim × bytes`, heads split over TP ranks
/// (`ceil(kv_heads / tp)` per rank, so never below one: heads are replicated when tp > kv_heads).
/// MLA: `layers × (kv_lora_rank + qk_rope_head_dim) × bytes`, the same latent on every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KvLayout {
    Gqa {
        layers: u64,
        kv_heads: u64,
        head_dim: u64,
    },
    Mla {
        layers: u64,
        kv_lora_rank: u64,
        qk_rope_head_dim: u64,
    },
}

impl KvLayout {
    /// KV heads each TP rank holds (GQA); MLA has one latent per rank.
    pub fn heads_per_gpu(&self, tp: u64) -> u64 {
        match *self {
            KvLayout::Gqa { kv_heads, .. } => kv_heads.div_ceil(tp.max(1)).max(1),
            KvLayout::Mla { .. } => 1,
        }
    }

    /// KV-cache bytes one token occupies on one GPU.
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

    /// The formula with numbers, e.g. `2 × 80 layers × (8 KV heads / TP 2 = 4) × 128 × 2 B (bf16)`.
    pub fn formula(&self, dtype: Dtype, tp: u64) -> String {
        match *self {
            KvLayout::Gqa {
                layers,
                kv_heads,
                head_dim,
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
                format!(
                    "2 × {layers} layers × {heads} × {head_dim} dims × {}",
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

impl ModelSpec {
    /// Parameters from the architecture (see the type's doc for the formula); `None` when
    /// a count does not fit 64 bits (`from_config_json` refuses such a config).
    pub fn params(&self) -> Option<ParamCount> {
        let c = Count::of;
        let h = c(self.hidden);
        let heads = c(self.heads);
        let embeddings = c(self.vocab) * h;
        let lm_head = if self.tied_embeddings {
            c(0)
        } else {
            embeddings
        };

        let attention = match self.mla {
            Some(m) => {
                let qk_dim = c(m.qk_nope_head_dim) + c(m.qk_rope_head_dim);
                // q: down-projection to a rank-r latent, its RMSNorm, then up to all heads
                let q = match m.q_lora_rank {
                    Some(r) => h * c(r) + c(r) + c(r) * heads * qk_dim,
                    None => h * heads * qk_dim,
                };
                // kv: joint down-projection (latent + shared rope key), its norm, up-projection
                let kv = h * (c(m.kv_lora_rank) + c(m.qk_rope_head_dim))
                    + c(m.kv_lora_rank)
                    + c(m.kv_lora_rank) * heads * (c(m.qk_nope_head_dim) + c(m.v_head_dim));
                let o = heads * c(m.v_head_dim) * h;
                q + kv + o
            }
            None => {
                let q_dim = heads * c(self.head_dim);
                let kv_dim = c(self.kv_heads) * c(self.head_dim);
                let weights = h * q_dim + c(2) * h * kv_dim + q_dim * h;
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
                weights + bias + qk_norm
            }
        };
        let norms = c(2) * h;
        let dense_mlp = c(3) * h * c(self.intermediate);

        let (dense_layers, moe_layers, moe_fixed, expert, routed_per_layer) = match self.moe {
            Some(m) => {
                let dense = m.first_dense_layers.min(self.layers);
                let expert = c(3) * h * c(m.expert_intermediate);
                let router = c(m.experts) * h;
                let gate = if m.shared_gate { h } else { c(0) };
                let shared = c(3) * h * c(m.shared_intermediate) + gate;
                (
                    c(dense),
                    c(self.layers - dense),
                    router + shared,
                    expert,
                    c(m.experts) * expert,
                )
            }
            None => (c(self.layers), c(0), c(0), c(0), c(0)),
        };

        let total = embeddings
            + lm_head
            + h
            + c(self.layers) * (attention + norms)
            + dense_layers * dense_mlp
            + moe_layers * (moe_fixed + routed_per_layer);
        let skipped = match self.moe {
            Some(m) => moe_layers * c(m.experts.saturating_sub(m.experts_per_tok)) * expert,
            None => c(0),
        };
        Some(ParamCount {
            total: total.0?,
            active: (total - skipped).0?,
            routed: (moe_layers * routed_per_layer).0?,
        })
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
            None => KvLayout::Gqa {
                layers: self.layers,
                kv_heads: self.kv_heads,
                head_dim: self.head_dim,
            },
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
        let hidden = need("hidden_size")?;
        let layers = need("num_hidden_layers")?;
        let heads = need("num_attention_heads")?;
        let vocab = need("vocab_size")?;
        let intermediate = cfg.uint("intermediate_size")?;
        if !missing.is_empty() {
            let where_ = if cfg.text.is_some() {
                " (looked in text_config and at the top level)"
            } else {
                ""
            };
            return Err(format!("config.json has no {}{where_}", missing.join(", ")));
        }

        let model_type = cfg.string("model_type").unwrap_or_default();
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

        let spec = ModelSpec {
            hidden,
            layers,
            heads,
            kv_heads,
            head_dim,
            intermediate,
            vocab,
            // Llama, Qwen2, Mixtral and DeepSeek all default to untied when the key is absent.
            tied_embeddings: cfg.boolean("tie_word_embeddings")?.unwrap_or(false),
            attention_bias,
            qk_norm: model_type.starts_with("qwen3"),
            moe,
            mla,
        };
        if spec.params().is_none() {
            let (key, value) = spec.largest_field();
            return Err(too_large(key, value));
        }
        Ok(spec)
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

/// A catalog entry: the name users type, the Hugging Face repository it mirrors, and
/// the architecture from that repository's `config.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CatalogModel {
    pub name: &'static str,
    pub hf_repo: &'static str,
    pub spec: ModelSpec,
}

const fn llama(
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    intermediate: u64,
    vocab: u64,
    tied: bool,
) -> ModelSpec {
    ModelSpec {
        hidden,
        layers,
        heads,
        kv_heads,
        head_dim: hidden / heads,
        intermediate,
        vocab,
        tied_embeddings: tied,
        attention_bias: AttentionBias::None,
        qk_norm: false,
        moe: None,
        mla: None,
    }
}

const fn qwen2(
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    intermediate: u64,
) -> ModelSpec {
    let mut spec = llama(
        hidden,
        layers,
        heads,
        kv_heads,
        intermediate,
        152_064,
        false,
    );
    spec.attention_bias = AttentionBias::Qkv;
    spec
}

/// Well-known models, from their Hugging Face `config.json` files.
pub const CATALOG: &[CatalogModel] = &[
    CatalogModel {
        name: "llama-3.1-8b",
        hf_repo: "meta-llama/Llama-3.1-8B",
        spec: llama(4096, 32, 32, 8, 14336, 128_256, false),
    },
    CatalogModel {
        name: "llama-3.1-70b",
        hf_repo: "meta-llama/Llama-3.1-70B",
        spec: llama(8192, 80, 64, 8, 28672, 128_256, false),
    },
    CatalogModel {
        name: "llama-3.1-405b",
        hf_repo: "meta-llama/Llama-3.1-405B",
        spec: llama(16384, 126, 128, 8, 53248, 128_256, false),
    },
    CatalogModel {
        name: "llama-3.2-1b",
        hf_repo: "meta-llama/Llama-3.2-1B",
        spec: llama(2048, 16, 32, 8, 8192, 128_256, true),
    },
    CatalogModel {
        name: "llama-3.2-3b",
        hf_repo: "meta-llama/Llama-3.2-3B",
        spec: llama(3072, 28, 24, 8, 8192, 128_256, true),
    },
    CatalogModel {
        name: "llama-3.3-70b",
        hf_repo: "meta-llama/Llama-3.3-70B-Instruct",
        spec: llama(8192, 80, 64, 8, 28672, 128_256, false),
    },
    CatalogModel {
        name: "qwen2.5-7b",
        hf_repo: "Qwen/Qwen2.5-7B-Instruct",
        spec: qwen2(3584, 28, 28, 4, 18944),
    },
    CatalogModel {
        name: "qwen2.5-72b",
        hf_repo: "Qwen/Qwen2.5-72B-Instruct",
        spec: qwen2(8192, 80, 64, 8, 29568),
    },
    CatalogModel {
        name: "mixtral-8x7b",
        hf_repo: "mistralai/Mixtral-8x7B-v0.1",
        spec: ModelSpec {
            moe: Some(Moe {
                experts: 8,
                experts_per_tok: 2,
                expert_intermediate: 14336,
                shared_intermediate: 0,
                shared_gate: false,
                first_dense_layers: 0,
            }),
            ..llama(4096, 32, 32, 8, 14336, 32_000, false)
        },
    },
    CatalogModel {
        name: "deepseek-v3",
        hf_repo: "deepseek-ai/DeepSeek-V3",
        spec: ModelSpec {
            hidden: 7168,
            layers: 61,
            heads: 128,
            kv_heads: 128,
            head_dim: 192,
            intermediate: 18432,
            vocab: 129_280,
            tied_embeddings: false,
            attention_bias: AttentionBias::None,
            qk_norm: false,
            moe: Some(Moe {
                experts: 256,
                experts_per_tok: 8,
                expert_intermediate: 2048,
                shared_intermediate: 2048,
                shared_gate: false,
                first_dense_layers: 3,
            }),
            mla: Some(Mla {
                q_lora_rank: Some(1536),
                kv_lora_rank: 512,
                qk_rope_head_dim: 64,
                qk_nope_head_dim: 128,
                v_head_dim: 128,
            }),
        },
    },
];

/// A catalog model by name or Hugging Face repository, ignoring case, or by a common
/// spelling of either (organisation prefix and `-Instruct`/`-Chat` suffixes dropped:
/// "meta-llama/Llama-3.1-8B-Instruct" is `llama-3.1-8b`).
pub fn find(name: &str) -> Option<&'static CatalogModel> {
    let name = name.trim();
    let exact = CATALOG
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name) || m.hf_repo.eq_ignore_ascii_case(name));
    exact.or_else(|| {
        let key = spelling::model_key(name);
        CATALOG
            .iter()
            .find(|m| m.name == key || spelling::model_key(m.hf_repo) == key)
    })
}

/// "unknown model `x`; nearest: a, b, c" for a name [`find`] cannot place.
pub fn unknown(name: &str) -> String {
    let near = spelling::nearest(&spelling::model_key(name), CATALOG.iter().map(|m| m.name));
    format!(
        "unknown model `{}`; nearest in the catalog: {} (known: {}; or paste its config.json)",
        name.trim(),
        near.join(", "),
        names()
    )
}

pub fn names() -> String {
    CATALOG
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the models page shows for one model (TP 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSummary {
    pub name: String,
    pub hf_repo: String,
    pub params: ParamCount,
    /// params × bytes per weight, keyed by dtype name (int4 without group scales).
    pub weight_bytes: BTreeMap<&'static str, Value>,
    /// KV-cache bytes per token, keyed by KV dtype name.
    pub kv_bytes_per_token: BTreeMap<&'static str, Value>,
    pub kv_layout: KvLayout,
    pub spec: ModelSpec,
}

impl ModelSummary {
    /// `None` when the counts overflow (never for a catalog entry or a parsed config).
    pub fn new(name: &str, hf_repo: &str, spec: &ModelSpec) -> Option<Self> {
        let params = spec.params()?;
        let kv = spec.kv_layout();
        let weight_bytes = Dtype::ALL
            .iter()
            .map(|d| (d.name(), fmt::whole(params.total as f64 * d.bytes())))
            .collect();
        let kv_bytes_per_token = Dtype::ALL
            .iter()
            .map(|d| (d.name(), fmt::whole(kv.bytes_per_token_per_gpu(*d, 1))))
            .collect();
        Some(Self {
            name: name.to_string(),
            hf_repo: hf_repo.to_string(),
            params,
            weight_bytes,
            kv_bytes_per_token,
            kv_layout: kv,
            spec: *spec,
        })
    }
}

/// Summaries of every catalog model, in catalog order.
pub fn summaries() -> Vec<ModelSummary> {
    CATALOG
        .iter()
        .filter_map(|m| ModelSummary::new(m.name, m.hf_repo, &m.spec))
        .collect()
}

#[cfg(test)]
mod tests {
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
