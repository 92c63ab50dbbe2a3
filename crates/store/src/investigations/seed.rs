//! Example content: three finished investigations built on the reference chains, each
//! with a published journal entry, so a newcomer sees a whole walkthrough at once.
//! Loading twice changes nothing: every example carries a key the second run finds.

use serde_json::{json, Value};
use sqlx::PgPool;

use super::journal::{self, Revision};
use super::{db, store};
use crate::core::method::expected::{attach, parse_inputs, Observed};
use crate::core::method::record::{
    draft_entry, evaluate, observed_at, parse_step_in, step_pairs, Opening, Records,
};

struct Example {
    key: &'static str,
    title: &'static str,
    service: &'static str,
    symptom: &'static str,
    tags: &'static str,
    date: &'static str,
    steps: Vec<Value>,
    /// (step, estimator, inputs, result, observed)
    expected: Vec<(u8, &'static str, &'static str, &'static str, f64)>,
}

/// The step-0 setup shared by the examples, with per-example changes.
fn setup(extra: Value) -> Value {
    let mut base = json!({
        "reproducible": "yes",
        "code_revision": "a41c9e2",
        "container_image": "serving:2026.10.1",
        "engine": "vllm",
        "engine_version": "0.6.3",
        "model": "llama-3.1-8b",
        "model_revision": "main",
        "weight_dtype": "bf16",
        "kv_dtype": "bf16",
        "activation_dtype": "bf16",
        "gpu_type": "h100-sxm",
        "gpu_count": 1,
        "interconnect": "nvlink",
        "tp": 1, "pp": 1, "dp": 1,
        "max_num_seqs": 256,
        "max_num_batched_tokens": 8192,
        "chunked_prefill": true,
        "prefix_caching": true,
        "gpu_memory_utilization": 0.92,
        "block_size": 16,
        "sampling": "temperature 0.7, top_p 0.9",
        "cache_state": "warm",
    });
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    base
}

fn examples() -> Vec<Example> {
    let prefix = setup(json!({
        "prompt_len_dist": "3,000 tokens (2,560 shared system prompt)",
        "output_len_dist": "mean 180 tokens",
        "arrival_rate": 12.0,
        "success_criteria": "p95 TTFT under 600 ms at 12 req/s",
        "notes": "Replay of 20 minutes of production traffic at 12 req/s reproduces it every time.",
    }));
    let mut prefix_after = prefix.clone();
    prefix_after["code_revision"] = json!("b7720d1");

    let itl = setup(json!({
        "engine_version": "0.6.1",
        "prompt_len_dist": "mean 900 tokens",
        "output_len_dist": "mean 600 tokens",
        "concurrency": 64,
        "success_criteria": "p50 ITL under 16 ms at concurrency 64",
        "notes": "Fixed-concurrency benchmark at 64 sequences, context around 4,096 tokens.",
    }));
    let mut itl_after = itl.clone();
    itl_after["engine_version"] = json!("0.6.3");

    let preempt = setup(json!({
        "gpu_memory_utilization": 0.92,
        "prompt_len_dist": "2,048 tokens",
        "output_len_dist": "1,024 tokens",
        "concurrency": 200,
        "success_criteria": "p95 TTFT under 1 s at the evening peak",
        "notes": "200 concurrent requests of 2,048 + 1,024 tokens reproduce the peak.",
    }));
    let mut preempt_after = preempt.clone();
    preempt_after["max_num_seqs"] = json!(128);

    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("notes");
            o.remove("reproducible");
        }
        v
    };

    vec![
        Example {
            key: "demo-prefix-reuse",
            title: "TTFT tripled after the prompt template deploy",
            service: "support-chat",
            symptom: "p95 TTFT alert at 14:05, minutes after the new prompt template went out. Prompt lengths unchanged.",
            tags: "ttft, prefix-cache, vllm",
            date: "2026-10-02",
            steps: vec![
                prefix.clone(),
                json!({"metric": "ttft", "percentile": "p95", "observed": 1450, "target": 600}),
                json!({
                    "tokenize": {"p50": 4, "p95": 7, "p99": 9},
                    "queue_wait": {"p50": 40, "p95": 160, "p99": 260},
                    "prefill": {"p50": 820, "p95": 1180, "p99": 1400},
                    "network": {"p50": 12, "p95": 20, "p99": 35},
                }),
                json!({"gpu_total": 930, "cpu_total": 210, "wall": 1000}),
                json!({"kernels": [
                    {"name": "flash_attn_fwd (prefill)", "sm_pct": 78, "dram_pct": 31},
                    {"name": "gemm bf16 (qkv, mlp)", "sm_pct": 82, "dram_pct": 40},
                ]}),
                json!({"kernels": [
                    {"name": "flash_attn_fwd (prefill)", "share": 0.52, "occupancy_pct": 62, "notes": "full-length prompts: no cached blocks hit"},
                    {"name": "gemm bf16 (qkv, mlp)", "share": 0.38, "occupancy_pct": 71, "notes": ""},
                    {"name": "rmsnorm", "share": 0.03, "occupancy_pct": 45, "notes": "memory-bound, small"},
                ]}),
                json!({"candidates": [
                    {"description": "Move the per-request date out of the shared system prompt", "share": 0.8, "speedup": 5.0, "effort_days": 0.5},
                    {"description": "FP8 GEMMs for prefill", "share": 0.38, "speedup": 1.6, "effort_days": 5},
                    {"description": "Fused rmsnorm kernel", "share": 0.03, "speedup": 2, "effort_days": 2},
                ]}),
                json!({
                    "change": "code revision: the template puts the date after the shared prefix",
                    "after_config": strip(&prefix_after),
                    "after_value": 540,
                    "verdict": "confirmed",
                    "findings": "The new template starts with the current date, so no two requests share a cached prefix: every request prefills all 3,000 tokens instead of 568.",
                    "quality": "200 paired generations at temperature 0: identical",
                    "effort": "2 hours",
                }),
            ],
            expected: vec![(
                2,
                "prefix-reuse",
                "prompt_tokens=3000 cached_tokens_before=2432",
                "prefill_ratio",
                4.9,
            )],
        },
        Example {
            key: "demo-decode-overhead",
            title: "Bad ITL with fine TTFT on the 8B model",
            service: "code-assist",
            symptom: "Streaming feels choppy: p50 ITL 24 ms while TTFT is well within target.",
            tags: "itl, decode, cuda-graphs",
            date: "2026-10-16",
            steps: vec![
                itl.clone(),
                json!({"metric": "itl", "percentile": "p50", "observed": 24, "target": 16}),
                json!({
                    "queue_wait": {"p50": 8, "p95": 30, "p99": 60},
                    "prefill": {"p50": 70, "p95": 120, "p99": 150},
                    "decode": {"p50": 24, "p95": 29, "p99": 35},
                }),
                json!({"gpu_total": 66, "cpu_total": 48, "wall": 100}),
                json!({
                    "kernels": [{"name": "paged_attention_v2", "sm_pct": 24, "dram_pct": 71}],
                    "decode": {"measured_ms": 24, "batch": 64, "context": 4096},
                }),
                json!({"kernels": [
                    {"name": "paged_attention_v2", "share": 0.41, "occupancy_pct": 50, "notes": "long scoreboard stalls"},
                    {"name": "gemm bf16", "share": 0.27, "occupancy_pct": 66, "notes": ""},
                    {"name": "launch gaps between kernels", "share": 0.28, "notes": "no CUDA graph for batch 64: eager launches"},
                    {"name": "rmsnorm", "share": 0.04, "occupancy_pct": 40, "notes": ""},
                ]}),
                json!({"candidates": [
                    {"description": "Capture CUDA graphs for batch 64 (engine upgrade)", "share": 0.3, "speedup": 8, "effort_days": 0.5},
                    {"description": "FP8 KV cache", "share": 0.41, "speedup": 1.6, "effort_days": 2},
                    {"description": "Fused rmsnorm", "share": 0.04, "speedup": 2, "effort_days": 3},
                ]}),
                json!({
                    "change": "engine version 0.6.1 → 0.6.3, which captures CUDA graphs up to batch 256",
                    "after_config": strip(&itl_after),
                    "after_value": 18.0,
                    "verdict": "confirmed",
                    "findings": "Batches above 32 ran eagerly: 0.6.1 captured CUDA graphs only up to batch 32, so every decode step paid kernel-launch gaps.",
                    "quality": "Eval suite pass@1 unchanged (71.2% both); 100 paired greedy generations identical",
                    "effort": "half a day",
                }),
            ],
            expected: vec![(
                4,
                "decode-floor",
                "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096",
                "floor_ms",
                24.0,
            )],
        },
        Example {
            key: "demo-preemption",
            title: "Constant preemption at the evening peak",
            service: "batch-summaries",
            symptom: "At peak the engine logs preemptions every few seconds and p95 TTFT climbs to nearly 5 s.",
            tags: "preemption, kv-cache, capacity",
            date: "2026-11-05",
            steps: vec![
                preempt.clone(),
                json!({"metric": "ttft", "percentile": "p95", "observed": 4800, "target": 1000}),
                json!({
                    "tokenize": {"p50": 5, "p95": 9, "p99": 12},
                    "queue_wait": {"p50": 1900, "p95": 4100, "p99": 5200},
                    "prefill": {"p50": 210, "p95": 520, "p99": 700},
                }),
                json!({"gpu_total": 910, "cpu_total": 260, "wall": 1000}),
                json!({"kernels": [
                    {"name": "flash_attn_fwd (recompute of preempted prompts)", "sm_pct": 74, "dram_pct": 33},
                ]}),
                json!({"kernels": [
                    {"name": "flash_attn_fwd", "share": 0.46, "notes": "a third of it re-prefills preempted requests"},
                    {"name": "gemm bf16", "share": 0.41, "notes": ""},
                ]}),
                json!({"candidates": [
                    {"description": "Cap max_num_seqs at 128 so admitted requests fit at full length", "share": 0.85, "speedup": 30, "effort_days": 0.2},
                    {"description": "FP8 KV cache to double the page pool", "share": 0.85, "speedup": 2.5, "effort_days": 2},
                    {"description": "A second replica for the peak", "share": 0.85, "speedup": 2, "effort_days": 3},
                ]}),
                json!({
                    "change": "max_num_seqs 256 → 128",
                    "after_config": strip(&preempt_after),
                    "after_value": 880,
                    "verdict": "confirmed",
                    "findings": "The 26,483-page KV pool holds 200 prompts (25,600 pages) but not their outputs (38,400 pages at full length): only 137 requests can finish together, so the scheduler preempts and recomputes constantly.",
                    "quality": "Summaries are deterministic at temperature 0: 200 paired outputs identical",
                    "effort": "30 minutes",
                }),
            ],
            expected: vec![(
                2,
                "kv-pages",
                "model=llama-3.1-8b device_bytes=80e9 gpu_memory_utilization=0.92 other_bytes=2e9 page_tokens=16 requests=200 prompt_tokens=2048 output_tokens=1024",
                "max_full_length_requests",
                200.0,
            )],
        },
    ]
}

/// Loads the examples that are not there yet, owned by `owner`; returns how many
/// were added (0 on a second run).
pub async fn seed_demo(pool: &PgPool, owner: i64) -> anyhow::Result<usize> {
    let mut added = 0;
    for ex in examples() {
        if db::by_demo_key(pool, ex.key).await?.is_some() {
            continue;
        }
        let opening = Opening::parse(ex.title, ex.service, ex.symptom, ex.tags)
            .map_err(|e| anyhow::anyhow!("example {}: {e:?}", ex.key))?;
        let id = db::create(pool, owner, &opening, Some(ex.key)).await?;
        let mut records = Records::default();
        for (step, data) in ex.steps.iter().enumerate() {
            let step = step as u8;
            let record = parse_step_in(step, &step_pairs(step, data), &records)
                .map_err(|e| anyhow::anyhow!("example {} step {step}: {e:?}", ex.key))?;
            store(pool, id, owner, &mut records, record, None, None).await?;
        }
        for (step, estimator, inputs, key, observed) in &ex.expected {
            let (_, inputs) = parse_inputs(inputs).map_err(|e| anyhow::anyhow!("{e}"))?;
            let observed = Observed {
                value: *observed,
                unit: observed_at(*step, &records).map(|q| q.unit),
            };
            let e = attach(estimator, inputs, key, Some(observed))
                .map_err(|e| anyhow::anyhow!("example {}: {e:?}", ex.key))?;
            db::attach_expected(pool, id, owner, *step, &e).await?;
        }
        db::set_status(pool, id, owner, "resolved").await?;
        let entry = draft_entry(&records, &evaluate(&records), ex.date);
        let revision = Revision {
            title: ex.title.to_string(),
            entry,
        };
        journal::create(pool, owner, Some(id), &revision, true, Some(ex.key)).await?;
        added += 1;
    }
    crate::proposals::seed::seed_demo(pool, owner).await?;
    Ok(added)
}

/// Who owns the examples when no one is named: the first admin.
pub async fn default_owner(pool: &PgPool) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT id FROM users WHERE role = 'admin' ORDER BY id LIMIT 1")
        .fetch_optional(pool)
        .await
}
