//! The model catalog: the names users type, each mirroring a public checkpoint's
//! `config.json`, and the summaries the estimator pages list.

use super::*;

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
        layer_kinds: LayerKinds::all_full(layers),
        gated_attention: false,
        quant: None,
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

/// q, k, v and o of one GQA layer: `2 × hidden × heads × head_dim + 2 × hidden × kv_heads × head_dim`.
const fn gqa_attention(hidden: u64, heads: u64, kv_heads: u64, head_dim: u64) -> u64 {
    2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
}

/// A checkpoint that quantizes every linear layer to FP8 (block scales negligible).
const fn fp8_all(method: &'static str) -> Quant {
    Quant {
        method,
        dtype: Dtype::Fp8,
        scale_bits: 0,
        block: 0,
        kept: 0,
        kept_routed: 0,
        kept_attention_layers: 0,
        kept_mlp_layers: 0,
    }
}

/// An MoE model of Llama-style attention: `(experts, per token, expert width)`.
const fn moe_model(
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    vocab: u64,
    experts: (u64, u64, u64),
    shared: u64,
) -> ModelSpec {
    let mut spec = llama(hidden, layers, heads, kv_heads, 0, vocab, false);
    spec.moe = Some(Moe {
        experts: experts.0,
        experts_per_tok: experts.1,
        expert_intermediate: experts.2,
        shared_intermediate: shared,
        shared_gate: shared > 0,
        first_dense_layers: 0,
    });
    spec.qk_norm = true;
    spec
}

/// Qwen3 (q/k norms, head_dim 128, untied, vocab 151,936), dense or MoE.
const fn qwen3(
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    intermediate: u64,
    experts: Option<(u64, u64, u64)>,
) -> ModelSpec {
    let mut spec = match experts {
        Some(e) => moe_model(hidden, layers, heads, kv_heads, 151_936, e, 0),
        None => llama(
            hidden,
            layers,
            heads,
            kv_heads,
            intermediate,
            151_936,
            false,
        ),
    };
    spec.intermediate = intermediate;
    spec.head_dim = 128;
    spec.qk_norm = true;
    spec
}

/// gpt-oss: 64 heads of 64 over hidden 2,880, biases, alternating sliding (128 tokens)
/// and full layers, 4 experts a token; experts MXFP4, attention kept BF16.
const fn gpt_oss(layers: u64, experts: u64) -> ModelSpec {
    let mut spec = moe_model(2880, layers, 64, 8, 201_088, (experts, 4, 2880), 0);
    spec.head_dim = 64;
    spec.intermediate = 2880;
    spec.qk_norm = false;
    spec.attention_bias = AttentionBias::QkvO;
    spec.layer_kinds = LayerKinds {
        full: layers / 2,
        sliding: layers / 2,
        window: 128,
        linear: 0,
        linear_state: 0,
        linear_params: 0,
    };
    spec.quant = Some(Quant {
        method: "mxfp4",
        dtype: Dtype::Fp4,
        scale_bits: 8,
        block: 32,
        kept: layers * gqa_attention(2880, 64, 8, 64),
        kept_routed: 0,
        kept_attention_layers: layers,
        kept_mlp_layers: 0,
    });
    spec
}

/// DeepSeek-V3 (and R1): MLA, 256 routed experts of 2,048 with 8 a token, one shared
/// expert, 3 dense layers first.
const DEEPSEEK_V3: ModelSpec = ModelSpec {
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
    layer_kinds: LayerKinds::all_full(61),
    gated_attention: false,
    quant: None,
};

/// Qwen3-Next-80B-A3B: 48 layers, every 4th gated full attention (16 heads, 2 KV heads
/// of 256), the other 36 Gated DeltaNet (16 key heads, 32 value heads of 128, a
/// 4-wide convolution); 512 experts of 512, 10 a token, plus a gated shared expert of 512.
const QWEN3_NEXT: ModelSpec = {
    let mut spec = moe_model(2048, 48, 16, 2, 151_936, (512, 10, 512), 512);
    spec.head_dim = 256;
    spec.intermediate = 5120;
    spec.gated_attention = true;
    let (nk, nv, dk, dv, kernel) = (16, 32, 128, 128, 4);
    let conv = 2 * nk * dk + nv * dv;
    spec.layer_kinds = LayerKinds {
        full: 12,
        sliding: 0,
        window: 0,
        linear: 36,
        linear_state: nv * dk * dv + conv * (kernel - 1),
        linear_params: 2048 * (2 * nk * dk + 2 * nv * dv)
            + 2048 * 2 * nv
            + conv * kernel
            + nv * dv * 2048,
    };
    spec
};

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
        spec: DEEPSEEK_V3,
    },
    CatalogModel {
        name: "deepseek-r1",
        hf_repo: "deepseek-ai/DeepSeek-R1",
        // The same architecture; the checkpoint is block-scaled FP8 with no module kept
        // (lm_head and the routers are 16-bit anyway).
        spec: ModelSpec {
            quant: Some(fp8_all("fp8")),
            ..DEEPSEEK_V3
        },
    },
    CatalogModel {
        name: "llama-3.1-405b-fp8",
        hf_repo: "meta-llama/Llama-3.1-405B-Instruct-FP8",
        // fbgemm_fp8 keeps q/k/v/o of all 126 layers and the MLPs of layers 0 and 125 in
        // BF16 (Llama 3 paper §6.2): only the 124 middle MLPs are FP8.
        spec: ModelSpec {
            quant: Some(Quant {
                kept: 126 * gqa_attention(16384, 128, 8, 128) + 2 * 3 * 16384 * 53248,
                kept_attention_layers: 126,
                kept_mlp_layers: 2,
                ..fp8_all("fbgemm_fp8")
            }),
            ..llama(16384, 126, 128, 8, 53248, 128_256, false)
        },
    },
    CatalogModel {
        name: "qwen3-0.6b",
        hf_repo: "Qwen/Qwen3-0.6B",
        spec: ModelSpec {
            tied_embeddings: true,
            ..qwen3(1024, 28, 16, 8, 3072, None)
        },
    },
    CatalogModel {
        name: "mistral-small-3.2-24b",
        hf_repo: "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        // The language model (40 layers, 32 heads of 128 over hidden 5,120); the vision
        // tower of the multimodal checkpoint is not counted.
        spec: ModelSpec {
            head_dim: 128,
            ..llama(5120, 40, 32, 8, 32768, 131_072, false)
        },
    },
    CatalogModel {
        name: "qwen3-8b",
        hf_repo: "Qwen/Qwen3-8B",
        spec: qwen3(4096, 36, 32, 8, 12288, None),
    },
    CatalogModel {
        name: "qwen3-32b",
        hf_repo: "Qwen/Qwen3-32B",
        spec: qwen3(5120, 64, 64, 8, 25600, None),
    },
    CatalogModel {
        name: "qwen3-30b-a3b",
        hf_repo: "Qwen/Qwen3-30B-A3B",
        spec: qwen3(2048, 48, 32, 4, 6144, Some((128, 8, 768))),
    },
    CatalogModel {
        name: "qwen3-235b-a22b",
        hf_repo: "Qwen/Qwen3-235B-A22B",
        spec: qwen3(4096, 94, 64, 4, 12288, Some((128, 8, 1536))),
    },
    CatalogModel {
        name: "qwen3-235b-a22b-fp8",
        hf_repo: "Qwen/Qwen3-235B-A22B-FP8",
        // Block-scaled FP8; its ignore list names lm_head, the norms and the routers only.
        spec: ModelSpec {
            quant: Some(fp8_all("fp8")),
            ..qwen3(4096, 94, 64, 4, 12288, Some((128, 8, 1536)))
        },
    },
    CatalogModel {
        name: "qwen3-next-80b-a3b",
        hf_repo: "Qwen/Qwen3-Next-80B-A3B-Instruct",
        spec: QWEN3_NEXT,
    },
    CatalogModel {
        name: "minimax-m2",
        hf_repo: "MiniMaxAI/MiniMax-M2",
        // Native block-scaled FP8 for attention and experts; 62 softmax layers.
        spec: ModelSpec {
            head_dim: 128,
            quant: Some(fp8_all("fp8")),
            ..moe_model(3072, 62, 48, 8, 200_064, (256, 8, 1536), 0)
        },
    },
    CatalogModel {
        name: "gpt-oss-120b",
        hf_repo: "openai/gpt-oss-120b",
        spec: gpt_oss(36, 128),
    },
    CatalogModel {
        name: "gpt-oss-20b",
        hf_repo: "openai/gpt-oss-20b",
        spec: gpt_oss(24, 32),
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
