//! vLLM's start-up memory profiles: the weights it loaded and the KV cache it allocated,
//! what memory-fit predicts.

use super::sources::{LLMD_MEMORY, LLM_K8S, VLLM_21348};
use super::MemoryCase;

/// One row of the llm-d table: vLLM 0.11.0, H100 (79.18 GiB), max_model_len 16,000,
/// the server's default batched tokens and sequences.
const fn llmd(
    id: &'static str,
    setup: &'static str,
    inputs: &'static str,
    weights_gib: f64,
    kv_cache_gib: f64,
) -> MemoryCase {
    MemoryCase {
        id,
        source: &LLMD_MEMORY,
        setup,
        inputs,
        weights_gib: Some(weights_gib),
        kv_cache_gib,
        unscored: None,
    }
}

pub const MEMORY_CASES: &[MemoryCase] = &[
    MemoryCase {
        id: "llm-k8s tp4×pp2 start-up, rank 0",
        source: &LLM_K8S,
        setup: "vLLM 0.8.3, Llama-3.3-70B-Instruct BF16, A100 SXM 40GB, TP 4 × PP 2 (each GPU \
                holds an eighth of the weights and of the KV heads × layers, as TP 8 would), \
                gpu_memory_utilization 0.9, chunked prefill at 2,048 tokens",
        inputs: "model=llama-3.3-70b gpu=a100-40gb tp=8 weight_dtype=bf16 kv_dtype=bf16 \
                 gpu_memory_utilization=0.9 max_model_len=131072 max_num_batched_tokens=2048",
        weights_gib: Some(16.46),
        kv_cache_gib: 17.94,
        unscored: None,
    },
    llmd(
        "llm-d llama-3.1-8b",
        "vLLM 0.11.0, Llama-3.1-8B-Instruct BF16, 1× H100, gpu_memory_utilization 0.9",
        "model=llama-3.1-8b gpu=h100-sxm gpu_memory_utilization=0.9 max_model_len=16000",
        14.99,
        51.38,
    ),
    llmd(
        "llm-d llama-3.3-70b fp8 tp2",
        "vLLM 0.11.0, Llama-3.3-70B-Instruct FP8 (dynamic), 2× H100, TP 2, gpu_memory_utilization 0.9",
        "model=llama-3.3-70b weight_dtype=fp8 gpu=h100-sxm tp=2 gpu_memory_utilization=0.9 \
         max_model_len=16000",
        33.88,
        32.00,
    ),
    llmd(
        "llm-d qwen3-0.6b",
        "vLLM 0.11.0, Qwen3-0.6B BF16, 1× H100, gpu_memory_utilization 0.9",
        "model=qwen3-0.6b gpu=h100-sxm gpu_memory_utilization=0.9 max_model_len=16000",
        1.12,
        64.45,
    ),
    llmd(
        "llm-d qwen3-32b",
        "vLLM 0.11.0, Qwen3-32B BF16, 1× H100, gpu_memory_utilization 0.9",
        "model=qwen3-32b gpu=h100-sxm gpu_memory_utilization=0.9 max_model_len=16000",
        61.03,
        4.45,
    ),
    llmd(
        "llm-d qwen3-32b tp2",
        "vLLM 0.11.0, Qwen3-32B BF16, 2× H100, TP 2, gpu_memory_utilization 0.9",
        "model=qwen3-32b gpu=h100-sxm tp=2 gpu_memory_utilization=0.9 max_model_len=16000",
        30.59,
        34.49,
    ),
    llmd(
        "llm-d gpt-oss-20b",
        "vLLM 0.11.0, gpt-oss-20b (MXFP4 experts), 1× H100, gpu_memory_utilization 0.9",
        "model=gpt-oss-20b gpu=h100-sxm gpu_memory_utilization=0.9 max_model_len=16000",
        13.47,
        50.28,
    ),
    llmd(
        "llm-d gpt-oss-120b",
        "vLLM 0.11.0, gpt-oss-120b (MXFP4 experts), 1× H100, gpu_memory_utilization 0.9",
        "model=gpt-oss-120b gpu=h100-sxm gpu_memory_utilization=0.9 max_model_len=16000",
        64.38,
        3.33,
    ),
    MemoryCase {
        id: "llm-d mistral-small-3.2-24b",
        source: &LLMD_MEMORY,
        setup: "vLLM 0.11.0, Mistral-Small-3.2-24B-Instruct-2506 BF16 (multimodal), 1× H100, \
                gpu_memory_utilization 0.95",
        inputs: "model=mistral-small-3.2-24b gpu=h100-sxm gpu_memory_utilization=0.95 \
                 max_model_len=16000",
        weights_gib: Some(44.76),
        kv_cache_gib: 28.20,
        unscored: Some(
            "multimodal: the profiling pass runs the vision encoder and its activation peak \
             (2.12 GiB) is not the text model's; the vision tower's weights are not counted",
        ),
    },
    MemoryCase {
        id: "vllm 21348 qwen3-235b fp8 tp4",
        source: &VLLM_21348,
        setup: "vLLM (July 2025, about 0.9.2–0.10.0) with an LMCache connector, \
                Qwen3-235B-A22B-FP8, 4× H100, TP 4, gpu_memory_utilization 0.9 (default)",
        inputs: "model=qwen3-235b-a22b-fp8 gpu=h100-sxm tp=4 gpu_memory_utilization=0.9 \
                 max_model_len=40960",
        weights_gib: None,
        kv_cache_gib: 8.11,
        unscored: None,
    },
];
