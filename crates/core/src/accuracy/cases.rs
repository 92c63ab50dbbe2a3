//! The published measurements the estimators are held against: each with its source
//! and the whole setup as the source names it. Figures are copied as published (times
//! in ms; one source printed seconds); where a setup needs a figure the source does not
//! print (mean lengths of a random range, running sequences), [`Case::derivation`] says
//! how it was found.

use serde::Serialize;

/// Where a case's numbers were published.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Source {
    pub key: &'static str,
    pub title: &'static str,
    /// A URL, or `repository@commit:path` for a file in a public repository.
    pub location: &'static str,
}

/// How load was offered, which sets how many sequences decode together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Load {
    /// Requests arrived at random (Poisson) at a set rate; the running sequences follow
    /// from Little's law: completed requests/s × mean request time.
    Paced {
        rate: f64,
        completed_per_s: f64,
        mean_ttft_ms: f64,
        mean_tpot_ms: f64,
    },
    /// Every prompt sent at once (`--request-rate inf`): as above, but TTFT includes
    /// waiting behind earlier prompts, which no estimator here models.
    Burst {
        completed_per_s: f64,
        mean_ttft_ms: f64,
        mean_tpot_ms: f64,
    },
    /// A fixed number of requests in flight (`--max-concurrency`).
    Closed { concurrency: u32 },
}

/// One measured figure of a case.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    pub ms: f64,
    /// What exactly was measured, e.g. "mean TPOT".
    pub what: &'static str,
    /// A per-request average (TPOT, mean ITL) counts the steps that carried other
    /// requests' prefills; a median ITL is a plain step.
    pub includes_prefills: bool,
    /// Why the figure is shown but neither fitted nor scored, when it is not.
    pub unscored: Option<&'static str>,
}

/// One published measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Case {
    pub id: &'static str,
    pub source: &'static Source,
    /// Engine, version, model, precision, GPU and parallelism, as the source gives them.
    pub setup: &'static str,
    /// The estimators' setup inputs (`key=value` separated by spaces).
    pub inputs: &'static str,
    pub prompt_tokens: f64,
    pub output_tokens: f64,
    pub load: Load,
    /// The measured decode step (TPOT or ITL).
    pub decode: Option<Measured>,
    /// The measured time to first token.
    pub ttft: Option<Measured>,
}

/// vLLM's memory profile from a start-up log: what memory-fit predicts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryCase {
    pub id: &'static str,
    pub source: &'static Source,
    pub setup: &'static str,
    pub inputs: &'static str,
    /// "Model loading took …" (GiB), when the log shows it.
    pub weights_gib: Option<f64>,
    /// The KV cache the engine allocated (GiB).
    pub kv_cache_gib: f64,
    /// Why the case is shown but not scored, when it is not.
    pub unscored: Option<&'static str>,
}

const TTFT_REPORT: &str = "the source is a report of this engine's TTFT being slower than \
    expected (its title: a slow-down in TTFT), so its TTFTs are no healthy reference; its \
    ITLs are scored";

const BURST: &str = "every prompt arrived at once: the running batch is only guessed from \
    Little's law and the step waits on prefills and preemption; shown, not fitted";

pub const LLM_K8S: Source = Source {
    key: "llm-k8s",
    title: "vLLM serving benchmarks of Llama 3.3 70B on Azure ND96asr_v4 (8× A100 SXM 40GB)",
    location: "github.com/surajssd/llm-k8s@58b61c59450e06073120a8ad166c1e9c333851a7:\
               results_serving_meta-llama-Llama-3.3-70B-Instruct/cumulative_results.md \
               (per run: <run>/serving_*.json and .commands; server logs: lws-run-1.sh)",
};

pub const A100_SWEEP: Source = Source {
    key: "a100-sweep",
    title: "vLLM throughput–latency sweep on one A100 40GB (J. Musgrave)",
    location: "https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on",
};

pub const L4_SWEEP: Source = Source {
    key: "l4-sweep",
    title: "Concurrency sweep of raw vLLM on one L4 (ai.wmx.dev benchmarks)",
    location: "https://ai.wmx.dev/benchmarks",
};

pub const KVCACHED_H100: Source = Source {
    key: "kvcached-h100",
    title: "kvcached layout check on H100 (ovg-project/kvcached pull request 331)",
    location: "github.com/ovg-project/kvcached pull 331: benchmarks/bench_layout/H100_results.md",
};

pub const NIM_PERF: Source = Source {
    key: "nim-bench-perf",
    title:
        "NVIDIA NIM for LLMs benchmarking: Llama-3.3-70B-Instruct performance tables (NIM 1.8.0)",
    location: "https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md",
};

pub const INFERENCEX_870: Source = Source {
    key: "inferencex-870",
    title:
        "SemiAnalysis InferenceX issue 870: DeepSeek-R1 FP8 on H200 with SGLang, concurrency sweeps",
    location: "https://github.com/SemiAnalysisAI/InferenceX/issues/870",
};

pub const INFERENCEX_890: Source = Source {
    key: "inferencex-890",
    title: "SemiAnalysis InferenceX issue 890: DeepSeek-R1 FP8 on MI325X with SGLang, 1k/1k",
    location: "https://github.com/SemiAnalysisAI/InferenceX/issues/890",
};

pub const INFERENCEX_1053: Source = Source {
    key: "inferencex-pr1053",
    title: "SemiAnalysis InferenceX pull request 1053: gpt-oss-120b on one MI300X, concurrency 64 and 128",
    location: "https://github.com/SemiAnalysisAI/InferenceX/pull/1053",
};

pub const GPUSTACK_QWEN3_8B: Source = Source {
    key: "gpustack-perflab-qwen3-8b-h100-latency",
    title: "GPUStack performance lab: Qwen3-8B on H100, latency",
    location: "gpustack/gpustack@47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d:docs/performance-lab/qwen3-8b/h100-latency.md (block at line 617)",
};

pub const GPUSTACK_DSR1: Source = Source {
    key: "gpustack-perflab-deepseek-r1-h200",
    title: "GPUStack performance lab: DeepSeek-R1 on H200",
    location: "gpustack/gpustack@47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d:docs/performance-lab/deepseek-r1/h200.md (block at line 404)",
};

pub const GPUSTACK_OSS_H100: Source = Source {
    key: "gpustack-perflab-gpt-oss-120b-h100",
    title: "GPUStack performance lab: gpt-oss-120b on H100",
    location: "gpustack/gpustack@47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d:docs/performance-lab/gpt-oss-120b/h100.md (block at line 475)",
};

pub const GPUSTACK_OSS_A100: Source = Source {
    key: "gpustack-perflab-gpt-oss-120b-a100",
    title: "GPUStack performance lab: gpt-oss-120b on A100",
    location: "gpustack/gpustack@47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d:docs/performance-lab/gpt-oss-120b/a100.md (block at line 426)",
};

pub const GPUSTACK_QWEN3_32B: Source = Source {
    key: "gpustack-perflab-qwen3-32b-h100",
    title: "GPUStack performance lab: Qwen3-32B on H100",
    location: "gpustack/gpustack@47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d:docs/performance-lab/qwen3-32b/h100.md (block at line 89)",
};

pub const GPUSTACK_QWEN3_235B: Source = Source {
    key: "gpustack-perflab-qwen3-235b-a22b-h100",
    title: "GPUStack performance lab: Qwen3-235B-A22B on H100",
    location: "gpustack/gpustack@47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d:docs/performance-lab/qwen3-235b-a22b/h100.md (block at line 88)",
};

pub const ACCELMARK: Source = Source {
    key: "accelmark-verified",
    title: "AccelMark verified results: the interactive scenario (one request at a time, \
            in process) of the reference vLLM runner on NVIDIA GPUs",
    location: "FreedomIntelligence/AccelMark@5797fc42745be2494e6213938d9e5afa0c6c5bef:\
               results/verified/<run>/interactive/result.json and \
               results/community/<run>/result.json (scenario: loadgen/loadgen.py; prompts: \
               datasets/*/requests.jsonl; suites: suites/suite_*/suite.json)",
};

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

pub const SGLANG_31044: Source = Source {
    key: "sglang-pr31044",
    title: "SGLang pull request 31044: MiniMax-M2.7 FP8 speed on MI300X",
    location: "https://github.com/sgl-project/sglang/pull/31044",
};

pub const SGLANG_COOKBOOK_MINIMAX: Source = Source {
    key: "sglang-cookbook-minimax-m27",
    title: "SGLang cookbook: MiniMax-M2.7 benchmarks on GB300",
    location: "sgl-project/sglang@05751c8d9a98afafd220257440358bae0017c342:docs_new/src/snippets/configs/MiniMaxAI/minimax-m2.7-benchmarks.jsx",
};

pub const SGLANG_10404: Source = Source {
    key: "sglang-pr10404",
    title: "SGLang pull request 10404: fused-MoE config for Qwen3-Next on H200",
    location: "https://github.com/sgl-project/sglang/pull/10404",
};

pub const SGLANG_10467: Source = Source {
    key: "sglang-pr10467",
    title: "SGLang pull request 10467: fused-MoE config for Qwen3-Next on H20",
    location: "https://github.com/sgl-project/sglang/pull/10467",
};

pub const SGLANG_18195: Source = Source {
    key: "sglang-pr18195",
    title: "SGLang pull request 18195: fused-MoE config for Qwen3-Coder-Next FP8 on H100 at TP 2",
    location: "https://github.com/sgl-project/sglang/pull/18195",
};

pub const TRTLLM_5929: Source = Source {
    key: "trtllm-issue-5929",
    title: "TensorRT-LLM issue 5929: DeepSeek-R1 FP4 on B200 against FP8 on H200, TTFT slow-down",
    location: "https://github.com/NVIDIA/TensorRT-LLM/issues/5929",
};

pub const VLLM_23151: Source = Source {
    key: "vllm-pr23151",
    title: "vLLM pull request 23151: Qwen3-30B-A3B fused-MoE configs (the run without them)",
    location: "https://github.com/vllm-project/vllm/pull/23151",
};

pub const ATOM_QWEN3_235B: Source = Source {
    key: "atom-recipe-qwen3-235b",
    title: "ROCm ATOM recipe: Qwen3-235B-A22B FP8 performance baseline on MI355X",
    location: "ROCm/ATOM@ffdf3bb5ddf8a15a64d521a2eeb3bc7438f9ac21:recipes/Qwen3-235b.md",
};

pub const ATOM_409: Source = Source {
    key: "atom-pr409",
    title: "ROCm ATOM pull request 409: vLLM with the ATOM plugin, key-model benchmark table",
    location: "https://github.com/ROCm/ATOM/pull/409",
};

/// One row of the llm-k8s cumulative table (ShareGPT, 200 prompts).
#[allow(clippy::too_many_arguments)]
const fn k8s(
    id: &'static str,
    setup: &'static str,
    inputs: &'static str,
    rate: Option<f64>,
    completed_per_s: f64,
    output_per_s: f64,
    total_per_s: f64,
    mean_ttft_ms: f64,
    median_ttft_ms: f64,
    mean_tpot_ms: f64,
    median_itl_ms: f64,
) -> Case {
    Case {
        id,
        source: &LLM_K8S,
        setup,
        inputs,
        prompt_tokens: (total_per_s - output_per_s) / completed_per_s,
        output_tokens: output_per_s / completed_per_s,
        load: match rate {
            Some(rate) => Load::Paced {
                rate,
                completed_per_s,
                mean_ttft_ms,
                mean_tpot_ms,
            },
            None => Load::Burst {
                completed_per_s,
                mean_ttft_ms,
                mean_tpot_ms,
            },
        },
        decode: Some(Measured {
            ms: median_itl_ms,
            what: "median ITL",
            includes_prefills: false,
            unscored: match rate {
                Some(_) => None,
                None => Some(BURST),
            },
        }),
        ttft: Some(Measured {
            ms: median_ttft_ms,
            what: "median TTFT",
            includes_prefills: false,
            unscored: match rate {
                Some(_) => None,
                None => Some(BURST),
            },
        }),
    }
}

const TP8: &str = "vLLM 0.8.3, Llama-3.3-70B-Instruct BF16, 8× A100 SXM 40GB (NVLink 3), TP 8";
const TP4PP2: &str = "vLLM 0.8.3, Llama-3.3-70B-Instruct BF16, 2 nodes × 4 A100 SXM 40GB, \
                      TP 4 × PP 2 over InfiniBand";
const TP4PP2_ETH: &str = "vLLM 0.8.3, Llama-3.3-70B-Instruct BF16, 2 nodes × 4 A100 SXM 40GB, \
                          TP 4 × PP 2 without InfiniBand";
// Pipeline stages run one after the other for a token, so a step reads a quarter of the
// weights per GPU pair of stages in turn: the per-token floor equals TP 4's.
const K8S_TP8: &str = "model=llama-3.3-70b gpu=a100-40gb tp=8 weight_dtype=bf16 kv_dtype=bf16";
const K8S_TP4: &str = "model=llama-3.3-70b gpu=a100-40gb tp=4 weight_dtype=bf16 kv_dtype=bf16";

pub const CASES: &[Case] = &[
    k8s("llm-k8s tp8 qps 1", TP8, K8S_TP8, Some(1.0), 0.974567, 208.177, 416.047, 65.2578, 56.3722, 24.5644, 24.3097),
    k8s("llm-k8s tp8 qps 4", TP8, K8S_TP8, Some(4.0), 3.17519, 673.918, 1351.17, 50.3255, 49.5001, 27.0833, 27.1927),
    k8s("llm-k8s tp8 qps 16", TP8, K8S_TP8, Some(16.0), 6.33325, 1354.37, 2705.22, 59.5779, 58.1, 31.5751, 30.4248),
    k8s("llm-k8s tp8 all at once", TP8, K8S_TP8, None, 8.3983, 1780.36, 3571.67, 360.361, 349.846, 39.0627, 35.0514),
    k8s("llm-k8s tp4×pp2 IB qps 1", TP4PP2, K8S_TP4, Some(1.0), 0.924709, 197.55, 394.786, 110.089, 97.1478, 44.0363, 42.5766),
    k8s("llm-k8s tp4×pp2 IB qps 4", TP4PP2, K8S_TP4, Some(4.0), 2.5417, 543.112, 1085.24, 114.88, 103.09, 57.8201, 56.0936),
    k8s("llm-k8s tp4×pp2 IB qps 16", TP4PP2, K8S_TP4, Some(16.0), 3.79431, 811.3, 1620.61, 127.477, 115.769, 67.7359, 63.1964),
    k8s("llm-k8s tp4×pp2 IB all at once", TP4PP2, K8S_TP4, None, 4.37087, 933.925, 1866.21, 970.551, 1002.31, 78.2115, 65.5461),
    k8s("llm-k8s tp4×pp2 no IB qps 1", TP4PP2_ETH, K8S_TP4, Some(1.0), 0.927083, 197.96, 395.702, 112.546, 97.294, 44.1484, 42.599),
    k8s("llm-k8s tp4×pp2 no IB qps 4", TP4PP2_ETH, K8S_TP4, Some(4.0), 2.53555, 540.122, 1080.94, 114.265, 103.232, 58.1053, 56.1168),
    k8s("llm-k8s tp4×pp2 no IB qps 16", TP4PP2_ETH, K8S_TP4, Some(16.0), 3.73543, 800.41, 1597.16, 139.728, 122.404, 70.695, 65.0063),
    k8s("llm-k8s tp4×pp2 no IB all at once", TP4PP2_ETH, K8S_TP4, None, 4.25808, 910.144, 1818.37, 1016.56, 1026.91, 84.9447, 66.9992),
    Case {
        id: "a100 sweep, 1 in flight",
        source: &A100_SWEEP,
        setup: "vLLM 0.23.0, Llama-3.1-8B-Instruct BF16, 1× A100 40GB, TP 1, random 1,024 in / 128 out",
        inputs: "model=llama-3.1-8b gpu=a100-40gb tp=1 weight_dtype=bf16 kv_dtype=bf16",
        prompt_tokens: 1024.0,
        output_tokens: 128.0,
        load: Load::Closed { concurrency: 1 },
        // "about 75 tokens/sec" at one request in flight: 1,000 / 75 ms per token.
        decode: Some(Measured {
            ms: 1000.0 / 75.0,
            what: "per-token time from ~75 tokens/s",
            includes_prefills: true,
            unscored: None,
        }),
        ttft: None,
    },
    l4(1, 5.1, Some(27.0)),
    l4(2, 5.2, None),
    l4(4, 5.3, None),
    l4(8, 5.5, None),
    l4(16, 6.0, None),
    l4(32, 7.1, None),
    Case {
        id: "kvcached h100, 16 req/s",
        source: &KVCACHED_H100,
        setup: "vLLM 0.19.0, Qwen3-0.6B BF16, 1× H100 80GB HBM3, TP 1, random 512 in / 128 out",
        // Qwen3-0.6B: 0.6 B parameters (embeddings tied), 28 layers, 8 KV heads of 128.
        inputs: "gpu=h100-sxm tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.6e9 layers=28 kv_heads=8 head_dim=128",
        prompt_tokens: 512.0,
        output_tokens: 128.0,
        load: Load::Paced {
            rate: 16.0,
            completed_per_s: 15.87,
            mean_ttft_ms: 38.9,
            mean_tpot_ms: 2.39,
        },
        decode: Some(Measured {
            ms: 2.39,
            what: "mean TPOT (3 seeds)",
            includes_prefills: true,
            unscored: None,
        }),
        ttft: Some(Measured {
            ms: 38.9,
            what: "mean TTFT (3 seeds)",
            includes_prefills: false,
            unscored: None,
        }),
    },
    Case {
        id: "nim 70b fp8 tp2 5000/500 c1",
        source: &NIM_PERF,
        setup: "NIM 1.8.0 (TensorRT-LLM profile presumed), Llama-3.3-70B-Instruct FP8, 2× H100 80GB, TP 2",
        inputs: "model=llama-3.3-70b gpu=h100-sxm tp=2 weight_dtype=fp8",
        prompt_tokens: 5000.0,
        output_tokens: 500.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 18.58, what: "mean ITL (AIPerf)", includes_prefills: true, unscored: None }),
        ttft: Some(Measured { ms: 406.77, what: "mean TTFT (AIPerf)", includes_prefills: false, unscored: None }),
    },
    Case {
        id: "nim 70b fp8 tp2 5000/500 c5",
        source: &NIM_PERF,
        setup: "NIM 1.8.0 (TensorRT-LLM profile presumed), Llama-3.3-70B-Instruct FP8, 2× H100 80GB, TP 2",
        inputs: "model=llama-3.3-70b gpu=h100-sxm tp=2 weight_dtype=fp8",
        prompt_tokens: 5000.0,
        output_tokens: 500.0,
        load: Load::Closed { concurrency: 5 },
        decode: Some(Measured { ms: 21.83, what: "mean ITL (AIPerf)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "nim 70b fp8 tp2 5000/500 c25",
        source: &NIM_PERF,
        setup: "NIM 1.8.0 (TensorRT-LLM profile presumed), Llama-3.3-70B-Instruct FP8, 2× H100 80GB, TP 2",
        inputs: "model=llama-3.3-70b gpu=h100-sxm tp=2 weight_dtype=fp8",
        prompt_tokens: 5000.0,
        output_tokens: 500.0,
        load: Load::Closed { concurrency: 25 },
        decode: Some(Measured { ms: 38.75, what: "mean ITL (AIPerf)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "nim 70b fp8 tp2 5000/500 c50",
        source: &NIM_PERF,
        setup: "NIM 1.8.0 (TensorRT-LLM profile presumed), Llama-3.3-70B-Instruct FP8, 2× H100 80GB, TP 2",
        inputs: "model=llama-3.3-70b gpu=h100-sxm tp=2 weight_dtype=fp8",
        prompt_tokens: 5000.0,
        output_tokens: 500.0,
        load: Load::Closed { concurrency: 50 },
        decode: Some(Measured { ms: 59.73, what: "mean ITL (AIPerf)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "nim 70b fp8 tp2 500/2000 c1",
        source: &NIM_PERF,
        setup: "NIM 1.8.0 (TensorRT-LLM profile presumed), Llama-3.3-70B-Instruct FP8, 2× H100 80GB, TP 2",
        inputs: "model=llama-3.3-70b gpu=h100-sxm tp=2 weight_dtype=fp8",
        prompt_tokens: 500.0,
        output_tokens: 2000.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 18.91, what: "mean ITL (AIPerf)", includes_prefills: true, unscored: None }),
        ttft: Some(Measured { ms: 47.77, what: "mean TTFT (AIPerf)", includes_prefills: false, unscored: None }),
    },
    Case {
        id: "inferencex r1 h200 1k/1k c8",
        source: &INFERENCEX_870,
        setup: "SGLang 0.5.7, DeepSeek-R1-0528 FP8 (block-scaled), 8× H200, TP 8, experts tensor-split, random lengths at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 12.8, what: "mean TPOT (ITL is per 10-token chunk there)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 h200 1k/1k c16",
        source: &INFERENCEX_870,
        setup: "SGLang 0.5.7, DeepSeek-R1-0528 FP8 (block-scaled), 8× H200, TP 8, experts tensor-split, random lengths at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 16 },
        decode: Some(Measured { ms: 17.2, what: "mean TPOT (ITL is per 10-token chunk there)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 h200 1k/1k c32",
        source: &INFERENCEX_870,
        setup: "SGLang 0.5.7, DeepSeek-R1-0528 FP8 (block-scaled), 8× H200, TP 8, experts tensor-split, random lengths at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 32 },
        decode: Some(Measured { ms: 25.6, what: "mean TPOT (ITL is per 10-token chunk there)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 h200 1k/1k c64",
        source: &INFERENCEX_870,
        setup: "SGLang 0.5.7, DeepSeek-R1-0528 FP8 (block-scaled), 8× H200, TP 8, experts tensor-split, random lengths at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 64 },
        decode: Some(Measured { ms: 34.6, what: "mean TPOT (ITL is per 10-token chunk there)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 h200 1k/1k c4",
        source: &INFERENCEX_870,
        setup: "SGLang 0.5.7, DeepSeek-R1-0528 FP8 (block-scaled), 8× H200, TP 8, experts tensor-split, random lengths at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 22.73, what: "mean TPOT (ITL is per 10-token chunk there)", includes_prefills: true, unscored: Some("doubtful: the same 1k/1k setup ran at 12.8 ms at twice this concurrency in the same issue (another runner, another day); shown as the regression example, not fitted") }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 h200 1k/8k c4",
        source: &INFERENCEX_870,
        setup: "SGLang 0.5.7, DeepSeek-R1-0528 FP8 (block-scaled), 8× H200, TP 8, experts tensor-split, random lengths at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 921.6,
        output_tokens: 7372.8,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 10.93, what: "mean TPOT (ITL is per 10-token chunk there)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 h200 8k/1k c4",
        source: &INFERENCEX_870,
        setup: "SGLang 0.5.7, DeepSeek-R1-0528 FP8 (block-scaled), 8× H200, TP 8, experts tensor-split, random lengths at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 7372.8,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 12.05, what: "mean TPOT (ITL is per 10-token chunk there)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 mi325x c4",
        source: &INFERENCEX_890,
        setup: "SGLang 0.5.9 (ROCm, AITER), DeepSeek-R1-0528 FP8, 8× MI325X, TP 8, FP8 KV cache, random 1k/1k at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi325x tp=8 kv_dtype=fp8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 24.03, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex r1 mi325x c8",
        source: &INFERENCEX_890,
        setup: "SGLang 0.5.9 (ROCm, AITER), DeepSeek-R1-0528 FP8, 8× MI325X, TP 8, FP8 KV cache, random 1k/1k at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi325x tp=8 kv_dtype=fp8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 26.17, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex gpt-oss mi300x c64",
        source: &INFERENCEX_1053,
        setup: "vLLM 0.17.0 (ROCm), gpt-oss-120b (MXFP4 experts, BF16 attention), 1× MI300X, random 1k/1k at ratio 0.8",
        inputs: "model=gpt-oss-120b gpu=mi300x tp=1",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 64 },
        decode: Some(Measured { ms: 31.4, what: "median TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "inferencex gpt-oss mi300x c128",
        source: &INFERENCEX_1053,
        setup: "vLLM 0.17.0 (ROCm), gpt-oss-120b (MXFP4 experts, BF16 attention), 1× MI300X, random 1k/1k at ratio 0.8",
        inputs: "model=gpt-oss-120b gpu=mi300x tp=1",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 128 },
        decode: Some(Measured { ms: 41.3, what: "median TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-8b bf16 vllm c1",
        source: &GPUSTACK_QWEN3_8B,
        setup: "vLLM 0.11.0, Qwen3-8B BF16, 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=qwen3-8b gpu=h100-sxm",
        prompt_tokens: 232.6,
        output_tokens: 220.6,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 7.28, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: Some(Measured { ms: 59.01, what: "mean TTFT", includes_prefills: false, unscored: None }),
    },
    Case {
        id: "gpustack qwen3-8b bf16 vllm c2",
        source: &GPUSTACK_QWEN3_8B,
        setup: "vLLM 0.11.0, Qwen3-8B BF16, 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=qwen3-8b gpu=h100-sxm",
        prompt_tokens: 232.6,
        output_tokens: 220.6,
        load: Load::Closed { concurrency: 2 },
        decode: Some(Measured { ms: 7.37, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-8b bf16 vllm c4",
        source: &GPUSTACK_QWEN3_8B,
        setup: "vLLM 0.11.0, Qwen3-8B BF16, 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=qwen3-8b gpu=h100-sxm",
        prompt_tokens: 232.6,
        output_tokens: 220.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 7.38, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-8b bf16 vllm c8",
        source: &GPUSTACK_QWEN3_8B,
        setup: "vLLM 0.11.0, Qwen3-8B BF16, 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=qwen3-8b gpu=h100-sxm",
        prompt_tokens: 232.6,
        output_tokens: 220.6,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 7.71, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-8b bf16 sglang c4",
        source: &GPUSTACK_QWEN3_8B,
        setup: "SGLang 0.5.3.post3, Qwen3-8B BF16, 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=qwen3-8b gpu=h100-sxm",
        prompt_tokens: 232.6,
        output_tokens: 220.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 7.19, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-8b bf16 tensorrt-llm c4",
        source: &GPUSTACK_QWEN3_8B,
        setup: "TensorRT-LLM 1.2.0rc1 (trtllm-serve), Qwen3-8B BF16, 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=qwen3-8b gpu=h100-sxm",
        prompt_tokens: 232.6,
        output_tokens: 220.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 7.67, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-8b fp8 sglang c4",
        source: &GPUSTACK_QWEN3_8B,
        setup: "SGLang 0.5.3.post3, Qwen3-8B FP8 (block-wise), 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=qwen3-8b gpu=h100-sxm weight_dtype=fp8",
        prompt_tokens: 232.6,
        output_tokens: 220.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 5.65, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack r1 h200 vllm c4",
        source: &GPUSTACK_DSR1,
        setup: "vLLM 0.11.0, DeepSeek-R1-0528 FP8, 8× H200, TP 8, ShareGPT (100 prompts)",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 228.4,
        output_tokens: 213.4,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 19.36, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack gpt-oss h100 tp1 c4",
        source: &GPUSTACK_OSS_H100,
        setup: "vLLM 0.10.2, gpt-oss-120b (MXFP4 experts, BF16 attention), 1× H100 SXM, TP 1, ShareGPT (100 prompts)",
        inputs: "model=gpt-oss-120b gpu=h100-sxm tp=1",
        prompt_tokens: 229.5,
        output_tokens: 216.9,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 8.31, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack gpt-oss h100 tp2 c4",
        source: &GPUSTACK_OSS_H100,
        setup: "vLLM 0.10.2 with async scheduling, gpt-oss-120b (MXFP4 experts, BF16 attention), 2× H100 SXM, TP 2, ShareGPT (100 prompts)",
        inputs: "model=gpt-oss-120b gpu=h100-sxm tp=2",
        prompt_tokens: 229.5,
        output_tokens: 216.9,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 5.75, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack gpt-oss a100 tp1 c4",
        source: &GPUSTACK_OSS_A100,
        setup: "vLLM 0.11.0, gpt-oss-120b (MXFP4 experts run weight-only: no FP4 tensor cores), 1× A100 SXM 80GB, TP 1, ShareGPT (100 prompts)",
        inputs: "model=gpt-oss-120b gpu=a100-80gb tp=1",
        prompt_tokens: 229.5,
        output_tokens: 216.9,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 11.67, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "gpustack r1 h200 vllm all at once",
        source: &GPUSTACK_DSR1,
        setup: "vLLM 0.11.0, DeepSeek-R1-0528 FP8, 8× H200, TP 8, 1,000 ShareGPT prompts at once",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 219.2,
        output_tokens: 200.8,
        load: Load::Burst { completed_per_s: 13.06, mean_ttft_ms: 17743.08, mean_tpot_ms: 227.45 },
        decode: Some(Measured { ms: 227.45, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack r1 h200 sglang all at once",
        source: &GPUSTACK_DSR1,
        setup: "SGLang 0.5.3, DeepSeek-R1-0528 FP8, 8× H200, TP 8, 1,000 ShareGPT prompts at once",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 219.2,
        output_tokens: 200.8,
        load: Load::Burst { completed_per_s: 15.8, mean_ttft_ms: 6948.08, mean_tpot_ms: 420.18 },
        decode: Some(Measured { ms: 420.18, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack r1 h200 trt-llm all at once",
        source: &GPUSTACK_DSR1,
        setup: "TensorRT-LLM 1.0.0, DeepSeek-R1-0528 FP8, 8× H200, TP 8 × EP 8, 1,000 ShareGPT prompts at once",
        inputs: "model=deepseek-r1 gpu=h200 tp=8 ep=8",
        prompt_tokens: 219.2,
        output_tokens: 200.8,
        load: Load::Burst { completed_per_s: 8.06, mean_ttft_ms: 20253.9, mean_tpot_ms: 221.31 },
        decode: Some(Measured { ms: 221.31, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-32b vllm all at once",
        source: &GPUSTACK_QWEN3_32B,
        setup: "vLLM 0.11.0, Qwen3-32B BF16, 1× H100 SXM, 1,000 ShareGPT prompts at once",
        inputs: "model=qwen3-32b gpu=h100-sxm",
        prompt_tokens: 217.4,
        output_tokens: 201.4,
        load: Load::Burst { completed_per_s: 5.62, mean_ttft_ms: 78118.74, mean_tpot_ms: 88.09 },
        decode: Some(Measured { ms: 88.09, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-32b sglang all at once",
        source: &GPUSTACK_QWEN3_32B,
        setup: "SGLang 0.5.5.post1, Qwen3-32B BF16, 1× H100 SXM, 1,000 ShareGPT prompts at once",
        inputs: "model=qwen3-32b gpu=h100-sxm",
        prompt_tokens: 217.4,
        output_tokens: 201.8,
        load: Load::Burst { completed_per_s: 4.03, mean_ttft_ms: 115690.3, mean_tpot_ms: 57.86 },
        decode: Some(Measured { ms: 57.86, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-32b trt-llm all at once",
        source: &GPUSTACK_QWEN3_32B,
        setup: "TensorRT-LLM 1.2.0rc1, Qwen3-32B BF16, 1× H100 SXM, 1,000 ShareGPT prompts at once",
        inputs: "model=qwen3-32b gpu=h100-sxm",
        prompt_tokens: 217.4,
        output_tokens: 201.7,
        load: Load::Burst { completed_per_s: 6.35, mean_ttft_ms: 65281.52, mean_tpot_ms: 61.9 },
        decode: Some(Measured { ms: 61.9, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-235b vllm all at once",
        source: &GPUSTACK_QWEN3_235B,
        setup: "vLLM 0.11.0, Qwen3-235B-A22B-Instruct-2507 BF16, 8× H100 SXM, TP 8, 984 ShareGPT prompts at once",
        inputs: "model=qwen3-235b-a22b gpu=h100-sxm tp=8",
        prompt_tokens: 216.4,
        output_tokens: 197.0,
        load: Load::Burst { completed_per_s: 20.38, mean_ttft_ms: 8730.69, mean_tpot_ms: 147.56 },
        decode: Some(Measured { ms: 147.56, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack qwen3-235b sglang all at once",
        source: &GPUSTACK_QWEN3_235B,
        setup: "SGLang 0.5.5.post1, Qwen3-235B-A22B-Instruct-2507 BF16, 8× H100 SXM, TP 8, 984 ShareGPT prompts at once",
        inputs: "model=qwen3-235b-a22b gpu=h100-sxm tp=8",
        prompt_tokens: 217.6,
        output_tokens: 197.0,
        load: Load::Burst { completed_per_s: 18.5, mean_ttft_ms: 11715.28, mean_tpot_ms: 178.35 },
        decode: Some(Measured { ms: 178.35, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "gpustack gpt-oss h100 trt-llm all at once",
        source: &GPUSTACK_OSS_H100,
        setup: "TensorRT-LLM 1.0.0, gpt-oss-120b, 1× H100 SXM, 1,000 ShareGPT prompts at once",
        inputs: "model=gpt-oss-120b gpu=h100-sxm",
        prompt_tokens: 215.3,
        output_tokens: 193.9,
        load: Load::Burst { completed_per_s: 5.23, mean_ttft_ms: 55896.64, mean_tpot_ms: 233.2 },
        decode: Some(Measured { ms: 233.2, what: "mean TPOT", includes_prefills: true, unscored: Some("saturated: every prompt at once with no concurrency cap, so TPOT is mostly preemption and waiting behind prefills; the running batch is only guessed from Little's law. Shown for the throughput ceiling, not fitted") }),
        ttft: None,
    },
    Case {
        id: "sglang minimax mi300x tp2 c1",
        source: &SGLANG_31044,
        setup: "SGLang 0.5.13.post1 (ROCm, triton attention), MiniMax-M2.7 FP8 (block-scaled), 2× MI300X, TP 2 × EP 2, FP8 KV cache, random 1k/1k",
        inputs: "model=minimax-m2 gpu=mi300x tp=2 ep=2 kv_dtype=fp8",
        prompt_tokens: 1000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 14.94, what: "TPOT (mean or median unstated)", includes_prefills: true, unscored: None }),
        ttft: Some(Measured { ms: 210.0, what: "TTFT (mean or median unstated)", includes_prefills: false, unscored: None }),
    },
    Case {
        id: "sglang minimax mi300x tp2 c16",
        source: &SGLANG_31044,
        setup: "SGLang 0.5.13.post1 (ROCm, triton attention), MiniMax-M2.7 FP8 (block-scaled), 2× MI300X, TP 2 × EP 2, FP8 KV cache, random 1k/1k",
        inputs: "model=minimax-m2 gpu=mi300x tp=2 ep=2 kv_dtype=fp8",
        prompt_tokens: 1000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 16 },
        decode: Some(Measured { ms: 31.8, what: "TPOT (mean or median unstated)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang minimax mi300x tp4 c64",
        source: &SGLANG_31044,
        setup: "SGLang 0.5.13.post1 (ROCm, triton attention), MiniMax-M2.7 FP8 (block-scaled), 4× MI300X, TP 4 × EP 4, FP8 KV cache, random 1k/1k",
        inputs: "model=minimax-m2 gpu=mi300x tp=4 ep=4 kv_dtype=fp8",
        prompt_tokens: 1000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 64 },
        decode: Some(Measured { ms: 42.48, what: "TPOT (mean or median unstated)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang minimax gb300 c1",
        source: &SGLANG_COOKBOOK_MINIMAX,
        setup: "SGLang 0.5.10.post1, MiniMax-M2.7 FP8 (block-scaled), 2× GB300, TP 2, random 1k/1k",
        inputs: "model=minimax-m2 gpu=gb300 tp=2",
        prompt_tokens: 1000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 8.02, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: Some(Measured { ms: 50.28, what: "mean TTFT", includes_prefills: false, unscored: None }),
    },
    Case {
        id: "sglang minimax gb300 c100",
        source: &SGLANG_COOKBOOK_MINIMAX,
        setup: "SGLang 0.5.10.post1, MiniMax-M2.7 FP8 (block-scaled), 2× GB300, TP 2, random 1k/1k",
        inputs: "model=minimax-m2 gpu=gb300 tp=2",
        prompt_tokens: 1000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 100 },
        decode: Some(Measured { ms: 35.75, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang qwen3-next h200 tp2 c8",
        source: &SGLANG_10404,
        setup: "SGLang (about 0.5.2, with the PR's tuned MoE config), Qwen3-Next-80B-A3B-Instruct BF16, 2× H200, TP 2, random 1,000 in / 2,000 out",
        inputs: "model=qwen3-next-80b-a3b gpu=h200 tp=2",
        prompt_tokens: 1000.0,
        output_tokens: 2000.0,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 8.529, what: "8 in flight / 937.94 output tok/s (derived TPOT)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang qwen3-next h200 tp4 c8",
        source: &SGLANG_10404,
        setup: "SGLang (about 0.5.2, with the PR's tuned MoE config), Qwen3-Next-80B-A3B-Instruct BF16, 4× H200, TP 4, random 1,000 in / 2,000 out",
        inputs: "model=qwen3-next-80b-a3b gpu=h200 tp=4",
        prompt_tokens: 1000.0,
        output_tokens: 2000.0,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 7.03, what: "8 in flight / 1137.94 output tok/s (derived TPOT)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang qwen3-next h200 tp8 c8",
        source: &SGLANG_10404,
        setup: "SGLang (about 0.5.2, with the PR's tuned MoE config), Qwen3-Next-80B-A3B-Instruct BF16, 8× H200, TP 8, random 1,000 in / 2,000 out",
        inputs: "model=qwen3-next-80b-a3b gpu=h200 tp=8",
        prompt_tokens: 1000.0,
        output_tokens: 2000.0,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 6.455, what: "8 in flight / 1239.43 output tok/s (derived TPOT)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang qwen3-next h20 tp4 c32",
        source: &SGLANG_10467,
        setup: "SGLang (about 0.5.2, with the PR's tuned MoE config), Qwen3-Next-80B-A3B-Instruct BF16, 4× H20 96GB, TP 4, random 1,000 in / 2,000 out",
        inputs: "model=qwen3-next-80b-a3b gpu=h20 tp=4",
        prompt_tokens: 1000.0,
        output_tokens: 2000.0,
        load: Load::Closed { concurrency: 32 },
        decode: Some(Measured { ms: 14.328, what: "32 in flight / 2233.44 output tok/s (derived TPOT)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang qwen3-next h20 tp8 c32",
        source: &SGLANG_10467,
        setup: "SGLang (about 0.5.2, with the PR's tuned MoE config), Qwen3-Next-80B-A3B-Instruct BF16, 8× H20 96GB, TP 8, random 1,000 in / 2,000 out",
        inputs: "model=qwen3-next-80b-a3b gpu=h20 tp=8",
        prompt_tokens: 1000.0,
        output_tokens: 2000.0,
        load: Load::Closed { concurrency: 32 },
        decode: Some(Measured { ms: 11.832, what: "32 in flight / 2704.56 output tok/s (derived TPOT)", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "sglang qwen3-coder-next h100 tp2 c8",
        source: &SGLANG_18195,
        setup: "SGLang (February 2026, with the PR's tuned MoE config), Qwen3-Coder-Next FP8 (the Qwen3-Next architecture), 2× H100, TP 2, random lengths up to 1,024",
        inputs: "model=qwen3-next-80b-a3b gpu=h100-sxm tp=2 weight_dtype=fp8",
        prompt_tokens: 505.6,
        output_tokens: 512.0,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 8.25, what: "median ITL", includes_prefills: false, unscored: None }),
        ttft: None,
    },
    Case {
        id: "trt-llm r1 h200 1600 in c1",
        source: &TRTLLM_5929,
        setup: "TensorRT-LLM 0.21.0rc2 (trtllm-serve), DeepSeek-R1 FP8, 8× H200, TP 8, experts tensor-split, LLMPerf 1600 in / 600 out",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 1600.0,
        output_tokens: 600.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 13.78, what: "p50 ITL (published in seconds)", includes_prefills: false, unscored: None }),
        ttft: Some(Measured { ms: 164.63, what: "p50 TTFT (published in seconds)", includes_prefills: false, unscored: Some(TTFT_REPORT) }),
    },
    Case {
        id: "trt-llm r1 h200 ep8 1600 in c1",
        source: &TRTLLM_5929,
        setup: "TensorRT-LLM 0.21.0rc2 (trtllm-serve), DeepSeek-R1 FP8, 8× H200, TP 8 × EP 8, LLMPerf 1600 in / 600 out",
        inputs: "model=deepseek-r1 gpu=h200 tp=8 ep=8",
        prompt_tokens: 1600.0,
        output_tokens: 600.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 11.0, what: "p50 ITL (published in seconds)", includes_prefills: false, unscored: None }),
        ttft: Some(Measured { ms: 124.11, what: "p50 TTFT (published in seconds)", includes_prefills: false, unscored: Some(TTFT_REPORT) }),
    },
    Case {
        id: "trt-llm r1 b200 1600 in c1",
        source: &TRTLLM_5929,
        setup: "TensorRT-LLM 0.21.0rc2 (trtllm-serve), DeepSeek-R1-FP4 (NVFP4 MoE and linear layers; counted all FP4), 8× B200, TP 8, experts tensor-split, LLMPerf 1600 in / 600 out",
        inputs: "model=deepseek-r1 gpu=b200 tp=8 weight_dtype=fp4",
        prompt_tokens: 1600.0,
        output_tokens: 600.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 6.78, what: "p50 ITL (published in seconds)", includes_prefills: false, unscored: None }),
        ttft: Some(Measured { ms: 161.04, what: "p50 TTFT (published in seconds)", includes_prefills: false, unscored: Some(TTFT_REPORT) }),
    },
    Case {
        id: "trt-llm r1 h200 8192 in c1",
        source: &TRTLLM_5929,
        setup: "TensorRT-LLM 0.21.0rc2 (trtllm-serve), DeepSeek-R1 FP8, 8× H200, TP 8, experts tensor-split, LLMPerf 8192 in / 600 out",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 8192.0,
        output_tokens: 600.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 14.53, what: "p50 ITL (published in seconds)", includes_prefills: false, unscored: None }),
        ttft: Some(Measured { ms: 515.83, what: "p50 TTFT (published in seconds)", includes_prefills: false, unscored: Some(TTFT_REPORT) }),
    },
    Case {
        id: "trt-llm r1 b200 8192 in c1",
        source: &TRTLLM_5929,
        setup: "TensorRT-LLM 0.21.0rc2 (trtllm-serve), DeepSeek-R1-FP4 (NVFP4 MoE and linear layers; counted all FP4), 8× B200, TP 8, experts tensor-split, LLMPerf 8192 in / 600 out",
        inputs: "model=deepseek-r1 gpu=b200 tp=8 weight_dtype=fp4",
        prompt_tokens: 8192.0,
        output_tokens: 600.0,
        load: Load::Closed { concurrency: 1 },
        decode: Some(Measured { ms: 7.14, what: "p50 ITL (published in seconds)", includes_prefills: false, unscored: None }),
        ttft: Some(Measured { ms: 394.11, what: "p50 TTFT (published in seconds)", includes_prefills: false, unscored: Some(TTFT_REPORT) }),
    },
    Case {
        id: "trt-llm r1 h200 1600 in c8",
        source: &TRTLLM_5929,
        setup: "TensorRT-LLM 0.21.0rc2 (trtllm-serve), DeepSeek-R1 FP8, 8× H200, TP 8, experts tensor-split, LLMPerf 1600 in / 600 out",
        inputs: "model=deepseek-r1 gpu=h200 tp=8",
        prompt_tokens: 1600.0,
        output_tokens: 600.0,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 18.18, what: "p50 ITL (published in seconds)", includes_prefills: false, unscored: None }),
        ttft: None,
    },
    Case {
        id: "vllm qwen3-30b-a3b h100 c10",
        source: &VLLM_23151,
        setup: "vLLM (about 0.10.1, default MoE heuristics), Qwen3-30B-A3B BF16, 1× H100, TP 1, random 2,048 in / 1,024 out",
        inputs: "model=qwen3-30b-a3b gpu=h100-sxm",
        prompt_tokens: 2041.7,
        output_tokens: 1015.8,
        load: Load::Closed { concurrency: 10 },
        decode: Some(Measured { ms: 13.18, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "atom qwen3-235b mi355x tp8 10000 in c32",
        source: &ATOM_QWEN3_235B,
        setup: "ATOM (AITER kernels, January 2026), Qwen3-235B-A22B-Instruct-2507-FP8, 8× MI355X, TP 8 × EP 8, FP8 KV cache, 10,000 in / 1,000 out",
        inputs: "model=qwen3-235b-a22b-fp8 gpu=mi355x tp=8 ep=8 kv_dtype=fp8",
        prompt_tokens: 10000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 32 },
        decode: Some(Measured { ms: 19.08, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "atom qwen3-235b mi355x tp4 10000 in c32",
        source: &ATOM_QWEN3_235B,
        setup: "ATOM (AITER kernels, January 2026), Qwen3-235B-A22B-Instruct-2507-FP8, 4× MI355X, TP 4 × EP 4, FP8 KV cache, 10,000 in / 1,000 out",
        inputs: "model=qwen3-235b-a22b-fp8 gpu=mi355x tp=4 ep=4 kv_dtype=fp8",
        prompt_tokens: 10000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 32 },
        decode: Some(Measured { ms: 21.44, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "atom qwen3-235b mi355x tp8 4000 in c64",
        source: &ATOM_QWEN3_235B,
        setup: "ATOM (AITER kernels, January 2026), Qwen3-235B-A22B-Instruct-2507-FP8, 8× MI355X, TP 8 × EP 8, FP8 KV cache, 4,000 in / 1,000 out",
        inputs: "model=qwen3-235b-a22b-fp8 gpu=mi355x tp=8 ep=8 kv_dtype=fp8",
        prompt_tokens: 4000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 64 },
        decode: Some(Measured { ms: 17.52, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "atom qwen3-235b mi355x tp4 4000 in c64",
        source: &ATOM_QWEN3_235B,
        setup: "ATOM (AITER kernels, January 2026), Qwen3-235B-A22B-Instruct-2507-FP8, 4× MI355X, TP 4 × EP 4, FP8 KV cache, 4,000 in / 1,000 out",
        inputs: "model=qwen3-235b-a22b-fp8 gpu=mi355x tp=4 ep=4 kv_dtype=fp8",
        prompt_tokens: 4000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 64 },
        decode: Some(Measured { ms: 19.88, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "atom qwen3-235b mi355x tp8 1000 in c128",
        source: &ATOM_QWEN3_235B,
        setup: "ATOM (AITER kernels, January 2026), Qwen3-235B-A22B-Instruct-2507-FP8, 8× MI355X, TP 8 × EP 8, FP8 KV cache, 1,000 in / 1,000 out",
        inputs: "model=qwen3-235b-a22b-fp8 gpu=mi355x tp=8 ep=8 kv_dtype=fp8",
        prompt_tokens: 1000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 128 },
        decode: Some(Measured { ms: 16.47, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "atom qwen3-235b mi355x tp4 1000 in c128",
        source: &ATOM_QWEN3_235B,
        setup: "ATOM (AITER kernels, January 2026), Qwen3-235B-A22B-Instruct-2507-FP8, 4× MI355X, TP 4 × EP 4, FP8 KV cache, 1,000 in / 1,000 out",
        inputs: "model=qwen3-235b-a22b-fp8 gpu=mi355x tp=4 ep=4 kv_dtype=fp8",
        prompt_tokens: 1000.0,
        output_tokens: 1000.0,
        load: Load::Closed { concurrency: 128 },
        decode: Some(Measured { ms: 21.15, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "vllm+atom r1 mi355x 1024 in c4",
        source: &ATOM_409,
        setup: "vLLM with the ATOM plugin (ROCm nightly, about March 2026), DeepSeek-R1-0528 FP8, 8× MI355X (from the runner's name), TP 8, random 1,024/1,024 at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi355x tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 11.2, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "vllm+atom r1 mi355x 1024 in c8",
        source: &ATOM_409,
        setup: "vLLM with the ATOM plugin (ROCm nightly, about March 2026), DeepSeek-R1-0528 FP8, 8× MI355X (from the runner's name), TP 8, random 1,024/1,024 at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi355x tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 8 },
        decode: Some(Measured { ms: 11.98, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "vllm+atom r1 mi355x 1024 in c16",
        source: &ATOM_409,
        setup: "vLLM with the ATOM plugin (ROCm nightly, about March 2026), DeepSeek-R1-0528 FP8, 8× MI355X (from the runner's name), TP 8, random 1,024/1,024 at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi355x tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 16 },
        decode: Some(Measured { ms: 13.48, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "vllm+atom r1 mi355x 1024 in c32",
        source: &ATOM_409,
        setup: "vLLM with the ATOM plugin (ROCm nightly, about March 2026), DeepSeek-R1-0528 FP8, 8× MI355X (from the runner's name), TP 8, random 1,024/1,024 at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi355x tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 32 },
        decode: Some(Measured { ms: 17.8, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "vllm+atom r1 mi355x 1024 in c64",
        source: &ATOM_409,
        setup: "vLLM with the ATOM plugin (ROCm nightly, about March 2026), DeepSeek-R1-0528 FP8, 8× MI355X (from the runner's name), TP 8, random 1,024/1,024 at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi355x tp=8",
        prompt_tokens: 921.6,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 64 },
        decode: Some(Measured { ms: 21.27, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
    Case {
        id: "vllm+atom r1 mi355x 8192 in c4",
        source: &ATOM_409,
        setup: "vLLM with the ATOM plugin (ROCm nightly, about March 2026), DeepSeek-R1-0528 FP8, 8× MI355X (from the runner's name), TP 8, random 8,192/1,024 at ratio 0.8",
        inputs: "model=deepseek-r1 gpu=mi355x tp=8",
        prompt_tokens: 7372.8,
        output_tokens: 921.6,
        load: Load::Closed { concurrency: 4 },
        decode: Some(Measured { ms: 12.42, what: "mean TPOT", includes_prefills: true, unscored: None }),
        ttft: None,
    },
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

const fn l4(concurrency: u32, itl_p50: f64, ttft_p50: Option<f64>) -> Case {
    Case {
        id: match concurrency {
            1 => "l4 sweep, 1 in flight",
            2 => "l4 sweep, 2 in flight",
            4 => "l4 sweep, 4 in flight",
            8 => "l4 sweep, 8 in flight",
            16 => "l4 sweep, 16 in flight",
            _ => "l4 sweep, 32 in flight",
        },
        source: &L4_SWEEP,
        setup: "vLLM 0.23.0, Qwen2.5-0.5B-Instruct BF16, 1× L4 24GB, TP 1, 256 in / 128 out",
        // Qwen2.5-0.5B: 0.49 B parameters (embeddings tied), 24 layers, 2 KV heads of 64.
        inputs: "gpu=l4 tp=1 weight_dtype=bf16 kv_dtype=bf16 params=0.494e9 layers=24 kv_heads=2 head_dim=64",
        prompt_tokens: 256.0,
        output_tokens: 128.0,
        load: Load::Closed { concurrency },
        decode: Some(Measured {
            ms: itl_p50,
            what: "median ITL",
            includes_prefills: false,
            unscored: None,
        }),
        ttft: match ttft_p50 {
            Some(ms) => Some(Measured {
                ms,
                what: "median TTFT",
                includes_prefills: false,
                unscored: None,
            }),
            None => None,
        },
    }
}

pub const LLMD_MEMORY: Source = Source {
    key: "llmd-planner-empirical-mem",
    title: "llm-d-planner: vLLM empirical memory profiling results (vLLM 0.11.0 on H100)",
    location: "llm-d-incubation/llm-d-planner@e50305af90f0812e77e1827f3bc740fe75b76370:\
               docs/empirical-vllm-memory-results.md",
};

pub const VLLM_21348: Source = Source {
    key: "vllm-issue-21348",
    title: "vLLM issue 21348: KV cache size, vLLM against SGLang, Qwen3-235B-A22B-FP8 on 4× H100",
    location: "https://github.com/vllm-project/vllm/issues/21348",
};

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

impl Case {
    /// Sequences decoding together on average, and how that was found.
    pub fn running(&self) -> f64 {
        match self.load {
            Load::Paced {
                completed_per_s,
                mean_ttft_ms,
                mean_tpot_ms,
                ..
            }
            | Load::Burst {
                completed_per_s,
                mean_ttft_ms,
                mean_tpot_ms,
            } => {
                completed_per_s * (mean_ttft_ms + mean_tpot_ms * (self.output_tokens - 1.0))
                    / 1000.0
            }
            Load::Closed { concurrency } => f64::from(concurrency),
        }
    }

    /// Mean tokens in a running sequence's KV cache: the prompt and half the output.
    pub fn context(&self) -> f64 {
        self.prompt_tokens + self.output_tokens / 2.0
    }

    pub fn derivation(&self) -> String {
        let running = match self.load {
            Load::Paced { .. } | Load::Burst { .. } => format!(
                "running ≈ completed/s × (mean TTFT + mean TPOT × (output − 1)) = {:.1}",
                self.running()
            ),
            Load::Closed { concurrency } => format!("running = {concurrency} in flight"),
        };
        format!(
            "{running}; context ≈ prompt + output / 2 = {:.0} + {:.0} / 2 = {:.0} tokens",
            self.prompt_tokens,
            self.output_tokens,
            self.context()
        )
    }

    pub fn load_label(&self) -> String {
        match self.load {
            Load::Paced { rate, .. } => format!("Poisson arrivals at {rate} req/s"),
            Load::Burst { .. } => "all prompts at once".to_string(),
            Load::Closed { concurrency } => format!("{concurrency} in flight"),
        }
    }

    /// TTFT is held against a step estimate only when requests do not queue behind
    /// each other's prefill: paced arrivals, or one request in flight.
    pub fn ttft_comparable(&self) -> bool {
        match self.load {
            Load::Paced { .. } => true,
            Load::Burst { .. } => false,
            Load::Closed { concurrency } => concurrency == 1,
        }
    }
}
