//! Example proposals for `seed-demo`: one in review, one rolled out with what
//! production measured. Both go through the same parse and sizing as any proposal.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::core::pairs;
use crate::core::proposal::{outcome, Observed, State, JSON_INPUTS};

struct Example {
    key: &'static str,
    inputs: Value,
    /// The states it walks through after being created (owner-recorded for the demo).
    states: &'static [(State, &'static str, &'static str)],
    /// Observed figures as a fraction of the expected ones.
    observed: &'static [(&'static str, f64)],
}

fn examples() -> Vec<Example> {
    vec![
        Example {
            key: "demo-proposal-chat-api",
            inputs: json!({
                "title": "chat-api on H100 for the spring peak",
                "question": "serve chat-api at 45 req/s with p95 TTFT < 800 ms and p99 ITL < 60 ms",
                "model": "llama-3.1-8b", "gpu_type": "h100-sxm", "gpus_per_replica": 1, "tp": 1,
                "weight_dtype": "bf16", "kv_dtype": "bf16", "engine": "vllm",
                "engine_version": "0.6.3", "max_num_seqs": 256, "max_num_batched_tokens": 1536,
                "arrival_rate": 45, "prompt_tokens_mean": 1500, "prompt_tokens_p95": 4000,
                "output_tokens_mean": 300, "output_tokens_p95": 800,
                "shared_prefix_tokens": 600, "prefix_hit_rate": 0.8,
                "slo_ttft_p95_ms": 800, "slo_itl_p99_ms": 60, "gpu_hour_usd": 2.5,
                "headroom": 0.2
            }),
            states: &[
                (
                    State::InReview,
                    "general",
                    "Sized from last month's p95 lengths.",
                ),
                (
                    State::Approved,
                    "sizing",
                    "Chains re-derive; headroom 0.2 is fine for the peak.",
                ),
                (State::RolledOut, "general", "Deployed with 4 replicas."),
            ],
            observed: &[
                ("tokens_per_s_per_replica", 0.78),
                ("ttft_p95_ms", 1.35),
                ("itl_p99_ms", 1.12),
                ("cost_per_million_tokens_usd", 1.0),
            ],
        },
        Example {
            key: "demo-proposal-summarizer",
            inputs: json!({
                "title": "Summarizer on Llama 3.3 70B: TP 4 with FP8 KV",
                "question": "serve the summarizer at 6 req/s with p95 TTFT < 3 s and p99 ITL < 80 ms",
                "model": "llama-3.3-70b", "gpu_type": "h100-sxm", "gpus_per_replica": 4, "tp": 4,
                "weight_dtype": "bf16", "kv_dtype": "fp8", "engine": "vllm",
                "engine_version": "0.6.3", "max_num_seqs": 128, "max_num_batched_tokens": 768,
                "arrival_rate": 6, "prompt_tokens_mean": 3000, "prompt_tokens_p95": 8000,
                "output_tokens_mean": 250, "output_tokens_p95": 600,
                "slo_ttft_p95_ms": 3000, "slo_itl_p99_ms": 80, "gpu_hour_usd": 2.5,
                "headroom": 0.3
            }),
            states: &[(
                State::InReview,
                "workload",
                "p95 prompt is from the long-document tenant.",
            )],
            observed: &[],
        },
    ]
}

/// Adds the examples that are not there yet; returns how many were added.
pub async fn seed_demo(pool: &PgPool, owner: i64) -> anyhow::Result<usize> {
    let mut added = 0;
    for ex in examples() {
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM proposals WHERE demo_key = $1)")
                .bind(ex.key)
                .fetch_one(pool)
                .await?;
        if exists {
            continue;
        }
        let pairs =
            pairs::from_json(&ex.inputs, JSON_INPUTS).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let (input, sizing, sensitivity) =
            super::prepare(&pairs).map_err(|e| anyhow::anyhow!("example {}: {e:?}", ex.key))?;
        let id = super::create(pool, owner, &input, &sizing, &sensitivity).await?;
        sqlx::query("UPDATE proposals SET demo_key = $2 WHERE id = $1")
            .bind(id)
            .bind(ex.key)
            .execute(pool)
            .await?;
        let mut from = State::Draft;
        for (version, (to, section, comment)) in ex.states.iter().enumerate() {
            // Demo history is recorded by the owner, approval included.
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE proposals SET state = $2, version = version + 1 WHERE id = $1")
                .bind(id)
                .bind(to.slug())
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO proposal_events (proposal_id, version, actor_id, kind, from_state, \
                 to_state, section, comment) VALUES ($1, $2, $3, 'review', $4, $5, $6, $7)",
            )
            .bind(id)
            .bind(version as i32 + 2)
            .bind(owner)
            .bind(from.slug())
            .bind(to.slug())
            .bind(section)
            .bind(comment)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            from = *to;
        }
        if !ex.observed.is_empty() {
            let p = super::get(pool, id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("proposal {id} vanished"))?;
            let observed: Observed = ex
                .observed
                .iter()
                .filter_map(|(k, f)| Some((k.to_string(), outcome::expected(&p.sizing, k)? * f)))
                .collect();
            super::observe(
                pool,
                &p,
                owner,
                &observed,
                &[],
                "Prometheus, the first peak week",
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        added += 1;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_size() {
        for ex in examples() {
            let pairs = pairs::from_json(&ex.inputs, JSON_INPUTS).unwrap();
            let (_, s, _) =
                super::super::prepare(&pairs).unwrap_or_else(|e| panic!("{}: {e:?}", ex.key));
            assert!(s.replicas_needed >= 1);
        }
    }
}
