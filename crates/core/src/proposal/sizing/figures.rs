//! The figures of a sizing as the page shows them: each with its worked formula, the
//! estimator run it came from and the inputs that drive it.

use super::*;

/// The figures the page shows, each with its worked formula, source and drivers:
/// memory, then the step and latencies at the chosen batch, then the fleet.
pub(super) fn figures(
    p: &ProposalInput,
    memory: &Memory,
    fx: &Fixed,
    op: &Operating,
    fleet: &Fleet,
    bench: Option<&AtBench>,
) -> Vec<Figure> {
    let mut figures = memory_figures(p, memory);
    figures.extend(step_figures(p, fx, op));
    figures.extend(fleet_figures(p, &op.point, fleet, bench));
    figures
}

/// Weights and KV capacity per GPU, and the concurrency the KV pool admits.
pub(super) fn memory_figures(p: &ProposalInput, memory: &Memory) -> Vec<Figure> {
    let (mem, admitted, kv_concurrency) = (&memory.mem, memory.admitted, memory.kv_concurrency);
    vec![
        figure(
            "weight_bytes_per_gpu",
            "Weights per GPU",
            num(&mem.chain, "weight_bytes_per_gpu") / 1e9,
            "GB",
            worked(
                &mem.chain,
                "weight_bytes_per_gpu",
                "params × bytes per weight / TP",
            ),
            "memory-fit",
            &["model", "weight_dtype", "tp"],
        ),
        figure(
            "max_kv_tokens",
            "KV capacity per GPU",
            num(&mem.chain, "max_kv_tokens"),
            "tokens",
            worked(
                &mem.chain,
                "max_kv_tokens",
                "(budget − weights) / KV bytes per token",
            ),
            "memory-fit",
            &["gpu_type", "gpu_memory_utilization", "kv_dtype", "tp"],
        ),
        figure(
            "kv_concurrency",
            "Concurrency the KV pool admits at p95 lengths",
            kv_concurrency as f64,
            "sequences",
            format!(
                "min({} sequences of {} + {} tokens, max_num_seqs {})",
                admitted, p.prompt_tokens_p95, p.output_tokens_p95, p.max_num_seqs
            ),
            "kv-pages",
            &[
                "prompt_tokens_p95",
                "output_tokens_p95",
                "kv_dtype",
                "max_num_seqs",
            ],
        ),
    ]
}

/// The batch inside the SLOs and the step times and latencies at it.
pub(super) fn step_figures(p: &ProposalInput, fx: &Fixed, op: &Operating) -> Vec<Figure> {
    let (point, limited_by, hi) = (&op.point, op.limited_by, op.ceiling);
    let floor_ms = point.floor_ms();
    let mixed_ms = point.mixed_ms();
    vec![
        figure(
            "batch",
            "Running batch inside the SLOs",
            point.batch as f64,
            "sequences",
            format!(
                "largest batch ≤ {} whose ITL, TTFT{} stay within the SLOs (set by {})",
                hi,
                if p.slo_e2e_p95_ms.is_some() {
                    " and E2E"
                } else {
                    ""
                },
                limited_by.replace('_', " ")
            ),
            "decode-floor, mixed-step",
            &[
                "slo_itl_p99_ms",
                "slo_ttft_p95_ms",
                "max_num_batched_tokens",
            ],
        ),
        figure(
            "decode_floor_ms",
            "Decode floor",
            floor_ms,
            "ms",
            format!(
                "{} ({} seqs × {} tokens of context)",
                worked(
                    &point.floor.chain,
                    "floor_ms",
                    "(weights + KV read) / HBM bandwidth"
                ),
                point.batch,
                fx.context
            ),
            "decode-floor",
            &[
                "model",
                "weight_dtype",
                "kv_dtype",
                "gpu_type",
                "prompt_tokens_mean",
                "output_tokens_mean",
            ],
        ),
        figure(
            "decode_step_ms",
            "Decode step",
            point.decode_step_ms,
            "ms",
            if p.tp > 1 {
                format!(
                    "{} floor + {} all-reduce",
                    fmt::ms(floor_ms),
                    fmt::ms(point.allreduce_ms)
                )
            } else {
                format!("{} floor (TP 1: no all-reduce)", fmt::ms(floor_ms))
            },
            if p.tp > 1 {
                "tp-allreduce"
            } else {
                "decode-floor"
            },
            &["tp", "gpu_type"],
        ),
        figure(
            "decode_expected_ms",
            "Decode step a well-run server takes",
            num(&point.floor.chain, "expected_ms"),
            "ms",
            format!(
                "{} floor at the bandwidth kernels reach, plus the fixed costs per layer, MoE \
                 layer, collective and step (fitted on published runs): {}× the floor; sizing \
                 keeps the floors, so the batch is an upper bound",
                fmt::ms(floor_ms),
                fmt::num(num(&point.floor.chain, "expected_ms") / floor_ms)
            ),
            "decode-floor",
            &["tp", "gpu_type", "model"],
        ),
        figure(
            "itl_p99_ms",
            "ITL p99 (a step with a prefill chunk)",
            point.itl_p99_ms,
            "ms",
            format!(
                "{} mixed step ({} chunk tokens + {} decode) + {} all-reduce",
                fmt::ms(mixed_ms),
                point.chunk,
                point.batch,
                fmt::ms(point.allreduce_ms)
            ),
            "mixed-step",
            &["max_num_batched_tokens", "chunked_prefill", "mfu"],
        ),
        figure(
            "ttft_p95_ms",
            "TTFT p95 (prefill of a p95 prompt, no queueing)",
            point.ttft_p95_ms,
            "ms",
            format!(
                "⌈{} computed tokens / {} per chunk⌉ = {} steps × {}",
                fmt::num(fx.computed_p95),
                point.chunk,
                fmt::num(point.prefill_chunks),
                fmt::ms(point.itl_p99_ms)
            ),
            "mixed-step",
            &[
                "prompt_tokens_p95",
                "shared_prefix_tokens",
                "prefix_hit_rate",
            ],
        ),
        figure(
            "e2e_p95_ms",
            "E2E p95",
            point.e2e_p95_ms,
            "ms",
            format!(
                "{} TTFT + {} output tokens × {}",
                fmt::ms(point.ttft_p95_ms),
                p.output_tokens_p95,
                fmt::ms(point.decode_step_ms)
            ),
            "decode-floor, mixed-step",
            &["output_tokens_p95"],
        ),
        figure(
            "requests_per_s_per_replica",
            "Requests/s per replica",
            point.requests_per_s,
            "req/s",
            format!(
                "1000 / ({} chunk steps × {} + max(0, {} − {}) decode steps × {})",
                fmt::num(point.mixed_per_request),
                fmt::ms(point.itl_p99_ms),
                fmt::num(point.decode_per_request),
                fmt::num(point.mixed_per_request),
                fmt::ms(point.decode_step_ms)
            ),
            "decode-floor, mixed-step",
            &[
                "prompt_tokens_mean",
                "output_tokens_mean",
                "prefix_hit_rate",
            ],
        ),
    ]
}

/// Throughput per replica, replicas at peak and their cost.
pub(super) fn fleet_figures(
    p: &ProposalInput,
    point: &Point,
    fleet: &Fleet,
    bench: Option<&AtBench>,
) -> Vec<Figure> {
    let Fleet {
        estimated_tps,
        tps,
        uses_measurement,
        per_replica_rps,
        replicas,
        cost_per_hour,
        cost_per_million,
        ..
    } = *fleet;
    let mut figures = vec![
        figure(
            "tokens_per_s_per_replica",
            "Output tokens/s per replica inside the SLOs",
            tps,
            "tokens/s",
            if uses_measurement {
                format!(
                    "measured {} (the estimate was {})",
                    fmt::num(tps),
                    fmt::num(estimated_tps)
                )
            } else {
                format!(
                    "{} req/s × {} output tokens",
                    fmt::num(point.requests_per_s),
                    p.output_tokens_mean
                )
            },
            if uses_measurement {
                "measurement"
            } else {
                "decode-floor, mixed-step"
            },
            &["output_tokens_mean", "measured_tokens_per_s_per_replica"],
        ),
        figure(
            "replicas_needed",
            "Replicas at peak",
            replicas as f64,
            "replicas",
            format!(
                "⌈{} req/s × (1 + {} headroom) / {} req/s per replica⌉",
                fmt::num(p.arrival_rate),
                fmt::num(p.headroom),
                fmt::num(per_replica_rps)
            ),
            "decode-floor, mixed-step",
            &["arrival_rate", "headroom"],
        ),
        figure(
            "cost_per_hour_usd",
            "Cost per hour",
            cost_per_hour,
            "USD/h",
            format!(
                "{} replicas × {} GPUs × ${}",
                replicas,
                p.gpus_per_replica,
                fmt::num(p.gpu_hour_usd)
            ),
            "cost",
            &["gpu_hour_usd", "gpus_per_replica"],
        ),
        figure(
            "cost_per_million_tokens_usd",
            "Cost per million output tokens at peak",
            cost_per_million,
            "USD",
            format!(
                "${} / ({} req/s × {} tokens × 3600 s) × 1e6",
                fmt::num(cost_per_hour),
                fmt::num(p.arrival_rate),
                p.output_tokens_mean
            ),
            "cost",
            &["arrival_rate", "output_tokens_mean"],
        ),
    ];
    if let Some(b) = bench {
        figures.push(measurement_figure(point, estimated_tps, b));
    }

    figures
}

/// Estimated ÷ measured output tokens/s, like for like (at the bench's concurrency),
/// said in words: which way the estimate errs and what the sized batch would give.
pub(super) fn measurement_figure(point: &Point, estimated_tps: f64, b: &AtBench) -> Figure {
    let ratio = b.estimated_tps / b.measured_tps;
    let direction = if ratio > 1.0 {
        format!(
            "the estimate is {}× what the bench measured: the server ran slower than the \
             floors the estimate assumes",
            fmt::num(ratio)
        )
    } else if ratio < 1.0 {
        format!(
            "the estimate is {}× what the bench measured ({}× lower): the bench beat the \
             floors, so an input (lengths, precision, concurrency) differs from the bench's",
            fmt::num(ratio),
            fmt::num(1.0 / ratio)
        )
    } else {
        "the estimate matches the bench".to_string()
    };
    let capped = if b.batch < b.concurrency {
        format!(
            " (the bench's {} requests in flight, capped at the {} the replica runs at once)",
            b.concurrency, b.batch
        )
    } else {
        format!(" (the bench's {} requests in flight)", b.concurrency)
    };
    let sized = if point.batch == b.batch {
        " The sized batch is the same concurrency.".to_string()
    } else {
        format!(
            " At the sized batch of {} sequences the estimate is {} tokens/s ({}× the \
             measurement), which compares a fuller batch with a lighter bench.",
            point.batch,
            fmt::num(estimated_tps),
            fmt::num(estimated_tps / b.measured_tps)
        )
    };
    figure(
        "estimate_over_measured",
        "Estimated ÷ measured output tokens/s per replica, at the bench's concurrency",
        ratio,
        "×",
        format!(
            "estimate at batch {}{capped}: {} tokens/s ÷ measured {} tokens/s = {}×; \
             {direction}.{sized}",
            b.batch,
            fmt::num(b.estimated_tps),
            fmt::num(b.measured_tps),
            fmt::num(ratio),
        ),
        "measurement",
        &["measured_tokens_per_s_per_replica", "measured_concurrency"],
    )
}
