//! Where the published measurements come from: one [`Source`] a publication, cited by
//! its cases.

use super::Source;

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
