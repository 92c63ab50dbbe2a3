//! Lone requests' TTFTs: AccelMark's interactive scenario, one request at a time to an
//! in-process engine (vLLM or SGLang, no HTTP server).

use super::sources::ACCELMARK;
use super::{Case, Load, Measured};

/// SGLang keeps its radix (prefix) cache on by default, and the AccelMark runner does
/// not flush it between passes.
const ACCELMARK_RADIX_CACHE: &str = "SGLang's radix cache is on by default and the \
    interactive scenario replays the same prompts on each of its passes, so most of the \
    measured TTFTs may be cache hits rather than prefills (the 28K-token suite evicts its \
    prompts before they return, and is scored); shown, not fitted";

/// AccelMark's interactive scenario keeps no prompt cache warm in vLLM 0.7.3 (V0 engine,
/// prefix caching off by default), but vLLM 0.20 turns prefix caching on, and the
/// scenario replays the same prompts on every pass.
const ACCELMARK_PREFIX_CACHE: &str = "vLLM 0.20 enables prefix caching by default and the \
    interactive scenario replays the same prompts on each of its passes, so most of the \
    measured TTFTs may be cache hits rather than prefills; shown, not fitted";

pub const CASES: &[Case] = &[
    accelmark(
        "accelmark a100-40gb llama3-8b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× A100 SXM4 40GB, TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-40gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        39.8,
        None,
    ),
    accelmark(
        "accelmark a100-40gb llama3.1-8b 28k",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Llama-3.1-8B-Instruct BF16, 1× A100 SXM4 40GB, TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-40gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        2822.72,
        None,
    ),
    accelmark(
        "accelmark a100-40gb qwen2.5-0.5b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× A100 SXM4 40GB, TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=a100-40gb tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        15.97,
        None,
    ),
    accelmark(
        "accelmark a100-40gb×8 llama3-70b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-70B-Instruct BF16 (the Llama 3.1 70B architecture), 8× A100 SXM4 40GB, TP 8, suite B: the first 50 sharegpt_standard_v1 prompts, median 198.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-70b gpu=a100-40gb tp=8 weight_dtype=bf16 kv_dtype=bf16",
        (198.5, 310.0),
        81.65,
        None,
    ),
    accelmark(
        "accelmark a100-40gb×8 mixtral",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Mixtral-8x7B-Instruct-v0.1 BF16, 8× A100 SXM4 40GB, TP 8, suite G: the first 50 sharegpt_standard_v1 prompts, median 198.5 tokens before the chat template, 3 passes, one request at a time",
        "model=mixtral-8x7b gpu=a100-40gb tp=8 weight_dtype=bf16 kv_dtype=bf16",
        (198.5, 310.0),
        50.45,
        None,
    ),
    accelmark(
        "accelmark a100-80gb llama3-8b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× A100 SXM4 80GB, TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        46.45,
        None,
    ),
    accelmark(
        "accelmark a100-80gb llama3.1-8b 28k",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Llama-3.1-8B-Instruct BF16, 1× A100 SXM4 80GB, TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        2838.69,
        None,
    ),
    accelmark(
        "accelmark a100-80gb qwen2.5-0.5b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× A100 SXM4 80GB, TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        28.88,
        None,
    ),
    accelmark(
        "accelmark a800 llama3-8b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× A800 SXM4 80GB (the A100 80GB's die, clocks and HBM2e; only its NVLink is cut, and TP 1 uses none), TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        37.83,
        None,
    ),
    accelmark(
        "accelmark a800 llama3.1-8b 28k",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Llama-3.1-8B-Instruct BF16, 1× A800 SXM4 80GB (the A100 80GB's die, clocks and HBM2e; only its NVLink is cut, and TP 1 uses none), TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        2805.35,
        None,
    ),
    accelmark(
        "accelmark a800 qwen2.5-0.5b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× A800 SXM4 80GB (the A100 80GB's die, clocks and HBM2e; only its NVLink is cut, and TP 1 uses none), TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        27.45,
        None,
    ),
    accelmark(
        "accelmark h100 llama3-8b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× H100 80GB HBM3 (SXM), TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=h100-sxm tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        20.08,
        None,
    ),
    accelmark(
        "accelmark h100 llama3.1-8b 28k",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Llama-3.1-8B-Instruct BF16, 1× H100 80GB HBM3 (SXM), TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=h100-sxm tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        1076.72,
        None,
    ),
    accelmark(
        "accelmark h100 qwen2.5-0.5b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× H100 80GB HBM3 (SXM), TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=h100-sxm tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        11.52,
        None,
    ),
    accelmark(
        "accelmark h200 llama3-8b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× H200, TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=h200 tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        27.89,
        None,
    ),
    accelmark(
        "accelmark h200 llama3.1-8b 28k",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Llama-3.1-8B-Instruct BF16, 1× H200, TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=h200 tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        1165.86,
        None,
    ),
    accelmark(
        "accelmark h200 qwen2.5-0.5b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× H200, TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=h200 tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        36.01,
        None,
    ),
    accelmark(
        "accelmark h200×8 llama3-70b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-70B-Instruct BF16 (the Llama 3.1 70B architecture), 8× H200, TP 8, suite B: the first 50 sharegpt_standard_v1 prompts, median 198.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-70b gpu=h200 tp=8 weight_dtype=bf16 kv_dtype=bf16",
        (198.5, 310.0),
        77.23,
        None,
    ),
    accelmark(
        "accelmark h200×8 mixtral",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Mixtral-8x7B-Instruct-v0.1 BF16, 8× H200, TP 8, suite G: the first 50 sharegpt_standard_v1 prompts, median 198.5 tokens before the chat template, 3 passes, one request at a time",
        "model=mixtral-8x7b gpu=h200 tp=8 weight_dtype=bf16 kv_dtype=bf16",
        (198.5, 310.0),
        53.26,
        None,
    ),
    accelmark(
        "accelmark h20-3e llama3-8b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× H20-3e (141 GB), TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=h20-141gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        55.3,
        None,
    ),
    accelmark(
        "accelmark h20-3e llama3.1-8b 28k",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Llama-3.1-8B-Instruct BF16, 1× H20-3e (141 GB), TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=h20-141gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        4654.9,
        None,
    ),
    accelmark(
        "accelmark h20-3e qwen2.5-0.5b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× H20-3e (141 GB), TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=h20-141gb tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        34.23,
        None,
    ),
    accelmark(
        "accelmark h20-3e×8 llama3-70b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-70B-Instruct BF16 (the Llama 3.1 70B architecture), 8× H20-3e (141 GB), TP 8, suite B: the first 50 sharegpt_standard_v1 prompts, median 198.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-70b gpu=h20-141gb tp=8 weight_dtype=bf16 kv_dtype=bf16",
        (198.5, 310.0),
        133.03,
        None,
    ),
    accelmark(
        "accelmark h20-3e×8 mixtral",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Mixtral-8x7B-Instruct-v0.1 BF16, 8× H20-3e (141 GB), TP 8, suite G: the first 50 sharegpt_standard_v1 prompts, median 198.5 tokens before the chat template, 3 passes, one request at a time",
        "model=mixtral-8x7b gpu=h20-141gb tp=8 weight_dtype=bf16 kv_dtype=bf16",
        (198.5, 310.0),
        82.02,
        None,
    ),
    accelmark(
        "accelmark l4 llama3-8b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× L4, TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=l4 tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        161.63,
        None,
    ),
    accelmark(
        "accelmark l4 qwen2.5-0.5b",
        "vLLM 0.7.3 (V0 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× L4, TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=l4 tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        23.38,
        None,
    ),
    accelmark(
        "accelmark a100-80gb llama3-8b vllm 0.20",
        "vLLM 0.20.1 (V1 engine), AccelMark reference runner, Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× A100 SXM4 80GB, TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        27.78,
        Some(ACCELMARK_PREFIX_CACHE),
    ),
    accelmark(
        "accelmark a100-80gb llama3.1-8b 28k vllm 0.20",
        "vLLM 0.20.1 (V1 engine), AccelMark reference runner, Llama-3.1-8B-Instruct BF16, 1× A100 SXM4 80GB, TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        3178.55,
        Some(ACCELMARK_PREFIX_CACHE),
    ),
    accelmark(
        "accelmark a100-80gb qwen2.5-0.5b vllm 0.20",
        "vLLM 0.20.1 (V1 engine), AccelMark reference runner, Qwen2.5-0.5B-Instruct BF16, 1× A100 SXM4 80GB, TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=a100-80gb tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        11.24,
        Some(ACCELMARK_PREFIX_CACHE),
    ),
    accelmark(
        "accelmark a100-40gb llama3-8b sglang",
        "SGLang 0.5.6, AccelMark runner (community result), Meta-Llama-3-8B-Instruct BF16 (the Llama 3.1 8B architecture), 1× A100 SXM4 40GB, TP 1, suite A: the first 150 sharegpt_standard_v1 prompts, median 193.5 tokens before the chat template, 3 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-40gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (193.5, 310.0),
        32.52,
        Some(ACCELMARK_RADIX_CACHE),
    ),
    accelmark(
        "accelmark a100-40gb llama3.1-8b 28k sglang",
        "SGLang 0.5.6, AccelMark runner (community result), Llama-3.1-8B-Instruct BF16, 1× A100 SXM4 40GB, TP 1, suite D: the first 100 sharegpt_longctx_v1 prompts, the suite's published median 28,650 tokens, 2 passes, one request at a time",
        "model=llama-3.1-8b gpu=a100-40gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        (28650.0, 256.0),
        2987.93,
        None,
    ),
    accelmark(
        "accelmark a100-40gb qwen2.5-0.5b sglang",
        "SGLang 0.5.6, AccelMark runner (community result), Qwen2.5-0.5B-Instruct BF16, 1× A100 SXM4 40GB, TP 1, suite F: the first 150 sharegpt_edge_v1 prompts, median 57 tokens before the chat template, 3 passes, one request at a time",
        "gpu=a100-40gb tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        (57.0, 150.0),
        16.46,
        Some(ACCELMARK_RADIX_CACHE),
    ),
];

/// One AccelMark interactive result: the p50 TTFT of requests sent one at a time to an
/// in-process engine (vLLM or SGLang, no HTTP server), with the median prompt of the
/// prompts sent.
const fn accelmark(
    id: &'static str,
    setup: &'static str,
    inputs: &'static str,
    (prompt_tokens, output_tokens): (f64, f64),
    ttft_p50: f64,
    unscored: Option<&'static str>,
) -> Case {
    Case {
        id,
        source: &ACCELMARK,
        setup,
        inputs,
        prompt_tokens,
        output_tokens,
        load: Load::Closed { concurrency: 1 },
        decode: None,
        ttft: Some(Measured {
            ms: ttft_p50,
            what: "p50 TTFT (in process)",
            includes_prefills: false,
            unscored,
        }),
    }
}
