//! The setup fields every model-on-a-GPU estimator shares: their keys, labels, units,
//! defaults and help lines.

use super::FieldSpec;

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
    "Catalog name: llama-3.1-8b, llama-3.1-70b, llama-3.1-405b(-fp8), llama-3.2-1b, \
     llama-3.2-3b, llama-3.3-70b, qwen2.5-7b, qwen2.5-72b, qwen3-8b, qwen3-32b, \
     qwen3-30b-a3b, qwen3-235b-a22b(-fp8), qwen3-next-80b-a3b, mixtral-8x7b, deepseek-v3, \
     deepseek-r1, minimax-m2, gpt-oss-20b, gpt-oss-120b. Give this, or config, or all of \
     params, layers, kv_heads and head_dim.",
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
    "A catalog GPU (the GPU catalog page lists each with its sources): h100-sxm, h100-pcie, \
     h100-nvl, h200, h800, h20, h20-141gb, a100-80gb, a100-40gb, l40s, l20, l4, b200, b300, \
     gb200, gb300, gh200, gh200-96gb, mi300x, mi325x or mi355x. Another GPU: its name with \
     bandwidth, peak_flops and hbm_bytes from its datasheet.",
);
pub(crate) const EP: FieldSpec = field(
    "ep",
    "Expert parallelism",
    "GPUs",
    Some("1"),
    "GPUs the experts are spread over (vLLM --enable-expert-parallel: the TP ranks); MoE \
     layers then exchange tokens by all-to-all instead of all-reducing.",
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
    "Overrides num_hidden_layers (every layer then counts as full attention).",
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
