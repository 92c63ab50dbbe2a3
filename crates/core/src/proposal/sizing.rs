//! Sizing a proposal with the estimators themselves: every estimator figure below is
//! the `results` of [`estimate::run`] on the inputs recorded beside it, so the page,
//! the API and the standalone estimator cannot disagree. What this module adds is
//! only the composition (which estimator answers which question, and the arithmetic
//! joining their results), written out as worked lines.
//!
//! The model of one replica at running batch B (every figure per replica):
//! - concurrency the KV pool admits at the p95 lengths = kv-pages `max_full_length_requests`
//!   with requests = max_num_seqs (capped at max_num_seqs);
//! - decode step = decode-floor `floor_ms` (TP 1) or tp-allreduce `step_ms` (TP > 1);
//! - chunk = max_num_batched_tokens − B with chunked prefill (a whole p95 prompt without);
//! - ITL p99 = mixed-step `step_ms` (a full chunk rides along) + the all-reduce time;
//! - TTFT p95 = ⌈computed p95 prompt / chunk⌉ × ITL p99 (no queueing);
//! - per request, prefill needs computed / chunk mixed steps and decode needs output / B
//!   steps of the batch; time per request = m × mixed + max(0, output/B − m) × decode;
//! - the largest B ≤ admitted concurrency that meets the SLOs is the running batch.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input::{field_for_estimator_key, ProposalInput};
use crate::estimate::{self, fmt, Chain, EstimateError, Inputs};
use crate::FieldError;

mod figures;
use figures::figures;

/// One estimator call: what it answers, its exact inputs and its chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub estimator: String,
    pub purpose: String,
    pub inputs: BTreeMap<String, String>,
    pub chain: Chain,
}

/// A sized figure as the page shows it: value, unit, the worked formula, where it
/// comes from and which inputs drive it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub key: String,
    pub label: String,
    pub value: f64,
    pub unit: String,
    pub formula: String,
    /// The estimator whose result this is (or which the arithmetic builds on).
    pub source: String,
    pub drivers: Vec<String>,
}

impl Figure {
    pub fn display_value(&self) -> String {
        let v = fmt::num(self.value);
        if self.unit.is_empty() {
            v
        } else {
            format!("{v} {}", self.unit)
        }
    }
}

/// An SLO the proposal's settings cannot meet even at batch 1: by how much, and
/// (in `message`) which setting would meet it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloFinding {
    /// The SLO field: slo_itl_p99_ms, slo_ttft_p95_ms or slo_e2e_p95_ms.
    pub slo: String,
    pub target_ms: f64,
    pub estimated_ms: f64,
    /// estimated − target.
    pub over_by_ms: f64,
    /// estimated / target.
    pub over_ratio: f64,
    pub message: String,
}

impl SloFinding {
    fn new(slo: &str, target_ms: f64, estimated_ms: f64, message: String) -> Self {
        SloFinding {
            slo: slo.to_string(),
            target_ms,
            estimated_ms,
            over_by_ms: estimated_ms - target_ms,
            over_ratio: estimated_ms / target_ms,
            message,
        }
    }

    /// `ITL p99 SLO 60 ms: estimated 152 ms, 92 ms (2.53×) over. <message>`
    pub fn line(&self) -> String {
        let what = match self.slo.as_str() {
            "slo_itl_p99_ms" => "ITL p99",
            "slo_ttft_p95_ms" => "TTFT p95",
            _ => "E2E p95",
        };
        format!(
            "{what} SLO {}: estimated {}, {} ({}×) over; {}",
            fmt::ms(self.target_ms),
            fmt::ms(self.estimated_ms),
            fmt::ms(self.over_by_ms),
            fmt::num(self.over_ratio),
            self.message
        )
    }
}

fn yes() -> bool {
    true
}

/// The sized proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// Whether the settings meet every SLO; when not, the figures are those of batch 1
    /// and `slo_findings` say which SLO fails, by how much and what would meet it.
    #[serde(default = "yes")]
    pub meets_slo: bool,
    #[serde(default)]
    pub slo_findings: Vec<SloFinding>,
    /// The memory-fit estimator's `results`, max_model_len = prompt p95 + output p95.
    pub memory_fit: BTreeMap<String, Value>,
    pub max_model_len: u64,
    /// Sequences the KV pool holds at full p95 length, capped at max_num_seqs.
    pub kv_concurrency: u64,
    /// The running batch inside the SLOs.
    pub batch: u64,
    /// What set the batch: kv_pool, max_num_seqs, itl_slo, ttft_slo, e2e_slo or step_budget.
    pub limited_by: String,
    pub context_tokens: u64,
    pub computed_prompt_tokens_mean: f64,
    pub computed_prompt_tokens_p95: f64,
    pub chunk_tokens: u64,
    pub decode_floor_ms: f64,
    pub allreduce_ms: f64,
    pub decode_step_ms: f64,
    pub mixed_step_ms: f64,
    pub itl_p99_ms: f64,
    pub prefill_ms: f64,
    pub ttft_p95_ms: f64,
    pub e2e_p95_ms: f64,
    pub requests_per_s_per_replica: f64,
    /// Output tokens/s one replica sustains inside the SLOs (the estimate).
    pub estimated_tokens_per_s_per_replica: f64,
    /// What sizing used: the estimate, or the measurement when the person said so.
    pub tokens_per_s_per_replica: f64,
    pub measured_tokens_per_s_per_replica: Option<f64>,
    /// Requests the bench kept in flight, as the proposal says.
    #[serde(default)]
    pub measured_concurrency: Option<u64>,
    /// The running batch the estimate is compared at: the bench's concurrency, capped by
    /// what the replica admits (KV pool, max_num_seqs, step budget).
    #[serde(default)]
    pub compared_batch: Option<u64>,
    /// The estimated output tokens/s at `compared_batch`: like for like with the bench.
    #[serde(default)]
    pub estimated_tokens_per_s_at_measured_concurrency: Option<f64>,
    pub uses_measurement: bool,
    pub replicas_needed: u64,
    pub gpus: u64,
    pub cost_per_hour_usd: f64,
    /// USD per million output tokens at the peak arrival rate.
    pub cost_per_million_tokens_usd: f64,
    pub figures: Vec<Figure>,
    pub runs: Vec<Run>,
}

/// One row of the sensitivity table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub label: String,
    pub replicas_needed: Option<u64>,
    pub cost_per_hour_usd: Option<f64>,
    pub cost_per_million_tokens_usd: Option<f64>,
    /// Replicas relative to the proposal (+2 means two more).
    pub replicas_change: Option<i64>,
    /// Why the variant cannot be served as configured.
    pub problem: Option<String>,
}

/// A figure of a chain: its result, or else the worked line of that key.
fn num(chain: &Chain, key: &str) -> f64 {
    chain
        .results
        .get(key)
        .or_else(|| chain.lines.iter().find(|l| l.key == key).map(|l| &l.value))
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// The worked formula of a chain's line, numbers substituted, as the estimator wrote it.
fn worked(chain: &Chain, key: &str, fallback: &str) -> String {
    chain
        .lines
        .iter()
        .find(|l| l.key == key)
        .map_or_else(|| fallback.to_string(), |l| l.formula.clone())
}

fn run_estimator(name: &str, purpose: &str, inputs: Inputs) -> Result<Run, Vec<FieldError>> {
    match estimate::run(name, &inputs) {
        Ok(chain) => Ok(Run {
            estimator: name.to_string(),
            purpose: purpose.to_string(),
            inputs,
            chain,
        }),
        Err(EstimateError::Invalid(errors)) => Err(errors
            .into_iter()
            .map(|e| {
                FieldError::new(
                    field_for_estimator_key(&e.field),
                    format!("{} (from the {name} estimator)", e.message),
                )
            })
            .collect()),
        Err(e) => Err(vec![FieldError::new("model", e.to_string())]),
    }
}

fn inputs(pairs: &[(&str, String)]) -> Inputs {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

impl ProposalInput {
    /// The model/GPU fields every model estimator shares; `compute` true for the
    /// estimators that turn FLOPs into time (they take the activation dtype too).
    fn setup(&self, compute: bool) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        // A config.json sets the architecture; a model beside it is only its name.
        match (&self.model, &self.config) {
            (_, Some(c)) => v.push(("config", c.clone())),
            (Some(m), None) => v.push(("model", m.clone())),
            _ => {}
        }
        v.push(("gpu", self.gpu_type.clone()));
        v.push(("tp", self.tp.to_string()));
        v.push(("weight_dtype", self.weight_dtype.clone()));
        if let (true, Some(a)) = (compute, &self.activation_dtype) {
            v.push(("activation_dtype", a.clone()));
        }
        v.push(("kv_dtype", self.kv_dtype.clone()));
        v
    }

    fn with(&self, compute: bool, extra: &[(&'static str, String)]) -> Inputs {
        let mut v = self.setup(compute);
        v.extend(extra.iter().cloned());
        inputs(&v)
    }

    /// Tokens already cached per request (the shared prefix times its hit rate).
    fn cached_tokens(&self) -> f64 {
        if self.prefix_caching {
            self.shared_prefix_tokens as f64 * self.prefix_hit_rate
        } else {
            0.0
        }
    }
}

/// The replica at one running batch.
struct Point {
    batch: u64,
    chunk: u64,
    floor: Run,
    allreduce: Option<Run>,
    mixed: Run,
    decode_step_ms: f64,
    allreduce_ms: f64,
    itl_p99_ms: f64,
    prefill_chunks: f64,
    ttft_p95_ms: f64,
    e2e_p95_ms: f64,
    mixed_per_request: f64,
    decode_per_request: f64,
    requests_per_s: f64,
}

impl Point {
    /// The decode floor of this batch (without the all-reduce).
    fn floor_ms(&self) -> f64 {
        num(&self.floor.chain, "floor_ms")
    }

    /// The step carrying a prefill chunk (without the all-reduce).
    fn mixed_ms(&self) -> f64 {
        num(&self.mixed.chain, "step_ms")
    }

    fn meets(&self, p: &ProposalInput) -> Option<&'static str> {
        if self.itl_p99_ms > p.slo_itl_p99_ms {
            Some("itl_slo")
        } else if self.ttft_p95_ms > p.slo_ttft_p95_ms {
            Some("ttft_slo")
        } else if p.slo_e2e_p95_ms.is_some_and(|e| self.e2e_p95_ms > e) {
            Some("e2e_slo")
        } else {
            None
        }
    }
}

struct Fixed {
    context: u64,
    computed_mean: f64,
    computed_p95: f64,
}

fn at_batch(p: &ProposalInput, fx: &Fixed, batch: u64) -> Result<Point, Vec<FieldError>> {
    let chunk = if p.chunked_prefill {
        p.max_num_batched_tokens - batch
    } else {
        fx.computed_p95.ceil() as u64
    };
    // At peak the scheduler fills the step's whole token budget with prefill chunks of
    // waiting prompts (several prompts when one is shorter than the chunk), so the step
    // carrying prefill carries `chunk` tokens, not one prompt's.
    let in_step = chunk.max(1);
    let ctx = fx.context.to_string();
    let b = batch.to_string();
    let floor = run_estimator(
        "decode-floor",
        "Decode step floor at the running batch",
        p.with(false, &[("batch", b.clone()), ("context", ctx.clone())]),
    )?;
    let allreduce = if p.tp > 1 {
        Some(run_estimator(
            "tp-allreduce",
            "Decode step with the TP all-reduce",
            p.with(false, &[("batch", b.clone()), ("context", ctx.clone())]),
        )?)
    } else {
        None
    };
    let mixed = run_estimator(
        "mixed-step",
        "A decode step carrying a prefill chunk",
        p.with(
            true,
            &[
                ("batch", b),
                ("context", ctx),
                ("chunk_tokens", in_step.to_string()),
                ("mfu", p.mfu.to_string()),
            ],
        ),
    )?;
    let (decode_step_ms, allreduce_ms) = match &allreduce {
        Some(a) => (num(&a.chain, "step_ms"), num(&a.chain, "allreduce_ms")),
        None => (num(&floor.chain, "floor_ms"), 0.0),
    };
    let itl_p99_ms = num(&mixed.chain, "step_ms") + allreduce_ms;
    let prefill_chunks = (fx.computed_p95 / chunk as f64).ceil().max(1.0);
    let ttft_p95_ms = prefill_chunks * itl_p99_ms;
    let e2e_p95_ms = ttft_p95_ms + p.output_tokens_p95 as f64 * decode_step_ms;
    let mixed_per_request = fx.computed_mean / in_step as f64;
    let decode_per_request = p.output_tokens_mean as f64 / batch as f64;
    let request_ms = mixed_per_request * itl_p99_ms
        + (decode_per_request - mixed_per_request).max(0.0) * decode_step_ms;
    Ok(Point {
        batch,
        chunk: in_step,
        floor,
        allreduce,
        mixed,
        decode_step_ms,
        allreduce_ms,
        itl_p99_ms,
        prefill_chunks,
        ttft_p95_ms,
        e2e_p95_ms,
        mixed_per_request,
        decode_per_request,
        requests_per_s: 1000.0 / request_ms,
    })
}

/// Mean tokens in a sequence's KV cache while it decodes: the prompt and half the output.
fn decode_context(p: &ProposalInput) -> u64 {
    (p.prompt_tokens_mean as f64 + p.output_tokens_mean as f64 / 2.0).round() as u64
}

/// The decode step at batch 1 (with the all-reduce when TP > 1) for another weight
/// precision and TP; None when that setup is not valid (e.g. TP not dividing the heads).
fn step_at_one(p: &ProposalInput, weight_dtype: &str, tp: u64) -> Option<f64> {
    let mut q = p.clone();
    q.weight_dtype = weight_dtype.to_string();
    q.tp = tp;
    let name = if tp > 1 {
        "tp-allreduce"
    } else {
        "decode-floor"
    };
    let inputs = q.with(
        false,
        &[
            ("batch", "1".to_string()),
            ("context", decode_context(p).to_string()),
        ],
    );
    let chain = estimate::run(name, &inputs).ok()?;
    Some(num(&chain, if tp > 1 { "step_ms" } else { "floor_ms" }))
}

/// Which SLOs not even a batch of one meets, by how much, and what would meet each.
fn infeasible(p: &ProposalInput, one: &Point) -> Vec<SloFinding> {
    let mut findings = Vec::new();
    let floor = num(&one.floor.chain, "floor_ms");
    if one.decode_step_ms > p.slo_itl_p99_ms {
        // Fewer bytes per GPU per step: FP8 weights, more TP, or both; the first that fits.
        let mut options = vec![("FP8 weights".to_string(), "fp8", p.tp)];
        for tp in [p.tp * 2, p.tp * 4, p.tp * 8] {
            options.push((format!("TP {tp}"), p.weight_dtype.as_str(), tp));
            options.push((format!("FP8 weights and TP {tp}"), "fp8", tp));
        }
        let works = options.into_iter().find_map(|(label, dtype, tp)| {
            let ms = step_at_one(p, dtype, tp)?;
            (ms < p.slo_itl_p99_ms).then(|| format!("{label} (a {} floor)", fmt::ms(ms)))
        });
        findings.push(SloFinding::new(
            "slo_itl_p99_ms",
            p.slo_itl_p99_ms,
            one.decode_step_ms,
            format!(
                "the decode floor alone is {} at batch 1{}; an ITL SLO of {} needs {}",
                fmt::ms(floor),
                if p.tp > 1 {
                    format!(" ({} with the TP all-reduce)", fmt::ms(one.decode_step_ms))
                } else {
                    String::new()
                },
                fmt::ms(p.slo_itl_p99_ms),
                works.unwrap_or_else(|| {
                    "more memory bandwidth than FP8 weights at 8× the TP give: a faster GPU or \
                     a smaller model"
                        .to_string()
                })
            ),
        ));
    } else if one.itl_p99_ms > p.slo_itl_p99_ms {
        let compute = num(&one.mixed.chain, "compute_ms");
        let tokens = num(&one.mixed.chain, "step_tokens").max(1.0);
        let kv = num(&one.mixed.chain, "kv_ms");
        let room = p.slo_itl_p99_ms - kv - one.allreduce_ms;
        let fits = (room / (compute / tokens)).floor().max(0.0) as u64;
        let what = if p.chunked_prefill {
            format!("a max_num_batched_tokens of at most {}", fits.max(2))
        } else {
            format!(
                "chunked prefill with max_num_batched_tokens of at most {}",
                fits.max(2)
            )
        };
        findings.push(SloFinding::new(
            "slo_itl_p99_ms",
            p.slo_itl_p99_ms,
            one.itl_p99_ms,
            format!(
                "a step carrying a {}-token prefill chunk takes {}; an ITL SLO of {} needs {} \
                 (or more TP)",
                one.chunk,
                fmt::ms(one.itl_p99_ms),
                fmt::ms(p.slo_itl_p99_ms),
                what
            ),
        ));
    }
    if one.ttft_p95_ms > p.slo_ttft_p95_ms {
        findings.push(SloFinding::new(
            "slo_ttft_p95_ms",
            p.slo_ttft_p95_ms,
            one.ttft_p95_ms,
            format!(
                "prefilling a p95 prompt takes {} even at batch 1 ({} chunks of {} tokens at {} \
                 each); a TTFT SLO of {} needs a larger max_num_batched_tokens, more TP or a \
                 higher prefix hit rate",
                fmt::ms(one.ttft_p95_ms),
                fmt::num(one.prefill_chunks),
                one.chunk,
                fmt::ms(one.itl_p99_ms),
                fmt::ms(p.slo_ttft_p95_ms)
            ),
        ));
    }
    if let Some(e2e) = p.slo_e2e_p95_ms.filter(|e| one.e2e_p95_ms > *e) {
        findings.push(SloFinding::new(
            "slo_e2e_p95_ms",
            e2e,
            one.e2e_p95_ms,
            format!(
                "a p95 request takes {} end to end even at batch 1; an E2E SLO below that cannot \
                 be met by this deployment",
                fmt::ms(one.e2e_p95_ms)
            ),
        ));
    }
    findings
}

fn figure(
    key: &str,
    label: &str,
    value: f64,
    unit: &str,
    formula: String,
    source: &str,
    drivers: &[&str],
) -> Figure {
    Figure {
        key: key.to_string(),
        label: label.to_string(),
        value,
        unit: unit.to_string(),
        formula,
        source: source.to_string(),
        drivers: drivers.iter().map(|d| d.to_string()).collect(),
    }
}

/// Sizes a proposal. Errors are field errors saying what would work.
pub fn size(p: &ProposalInput) -> Result<Sizing, Vec<FieldError>> {
    let memory = memory(p)?;
    let (fx, reuse) = fixed_inputs(p)?;
    let op = operating_point(p, &fx, &memory)?;
    let fleet = fleet(p, &op.point)?;
    let bench = at_bench(p, &fx, &op)?;
    let figures = figures(p, &memory, &fx, &op, &fleet, bench.as_ref());
    let mut sizing = assemble(p, memory, fx, reuse, op, fleet, figures);
    if let Some(b) = bench {
        sizing.compared_batch = Some(b.batch);
        sizing.estimated_tokens_per_s_at_measured_concurrency = Some(b.estimated_tps);
    }
    Ok(sizing)
}

/// The estimate at the bench's concurrency, for a like-for-like comparison with a
/// measured throughput.
struct AtBench {
    concurrency: u64,
    /// The concurrency capped by what the replica admits.
    batch: u64,
    estimated_tps: f64,
    measured_tps: f64,
}

fn at_bench(
    p: &ProposalInput,
    fx: &Fixed,
    op: &Operating,
) -> Result<Option<AtBench>, Vec<FieldError>> {
    let (Some(measured_tps), Some(concurrency)) =
        (p.measured_tokens_per_s_per_replica, p.measured_concurrency)
    else {
        return Ok(None);
    };
    let batch = concurrency.clamp(1, op.ceiling.max(1));
    let point = if batch == op.point.batch {
        None
    } else {
        Some(at_batch(p, fx, batch)?)
    };
    let rps = point
        .as_ref()
        .map_or(op.point.requests_per_s, |x| x.requests_per_s);
    Ok(Some(AtBench {
        concurrency,
        batch,
        estimated_tps: rps * p.output_tokens_mean as f64,
        measured_tps,
    }))
}

/// What memory allows at every batch: the memory-fit and KV-pool runs, and how many
/// p95-length sequences the pool holds.
struct Memory {
    mem: Run,
    kv: Run,
    max_model_len: u64,
    /// p95-length sequences the KV pool holds.
    admitted: u64,
    /// `admitted`, capped at max_num_seqs.
    kv_concurrency: u64,
}

/// Memory fit at the p95 sequence, then the KV pool from the same ledger; an error when
/// the model does not fit or the pool holds not one p95-length sequence.
fn memory(p: &ProposalInput) -> Result<Memory, Vec<FieldError>> {
    let max_model_len = p.prompt_tokens_p95 + p.output_tokens_p95;
    let util = p.gpu_memory_utilization.to_string();
    let mem = run_estimator(
        "memory-fit",
        "Memory fit per GPU at the longest (p95) sequence",
        p.with(
            false,
            &[
                ("gpu_memory_utilization", util.clone()),
                ("max_model_len", max_model_len.to_string()),
                (
                    "max_num_batched_tokens",
                    p.max_num_batched_tokens.to_string(),
                ),
            ],
        ),
    )?;
    if mem.chain.results.get("fits") != Some(&Value::Bool(true)) {
        return Err(vec![FieldError::new(
            "weight_dtype",
            format!(
                "does not fit at any concurrency: {} (memory-fit)",
                mem.chain.sanity
            ),
        )]);
    }
    // One ledger: the KV pool is what memory-fit leaves after weights, activations and
    // overhead, so both figures on the page come from the same memory.
    let other =
        num(&mem.chain, "activation_bytes_per_gpu") + num(&mem.chain, "overhead_bytes_per_gpu");
    let kv = run_estimator(
        "kv-pages",
        "KV pool and the p95-length sequences it holds",
        p.with(
            false,
            &[
                ("gpu_memory_utilization", util),
                ("other_bytes", other.to_string()),
                ("requests", p.max_num_seqs.to_string()),
                ("prompt_tokens", p.prompt_tokens_p95.to_string()),
                ("output_tokens", p.output_tokens_p95.to_string()),
            ],
        ),
    )?;
    let admitted = num(&kv.chain, "max_full_length_requests") as u64;
    if admitted == 0 {
        return Err(vec![FieldError::new(
            "prompt_tokens_p95",
            format!(
                "the KV pool ({} pages) cannot hold even one p95-length sequence ({} tokens): use \
                 FP8 KV, more TP or shorter sequences",
                fmt::num(num(&kv.chain, "pool_pages")),
                max_model_len
            ),
        )]);
    }
    let kv_concurrency = admitted.min(p.max_num_seqs);

    Ok(Memory {
        mem,
        kv,
        max_model_len,
        admitted,
        kv_concurrency,
    })
}

/// The inputs that do not depend on the batch: decode context and the prompt tokens
/// computed per request (after the prefix cache), with the prefix-reuse run when the
/// cache holds anything.
fn fixed_inputs(p: &ProposalInput) -> Result<(Fixed, Option<Run>), Vec<FieldError>> {
    let cached = p.cached_tokens();
    let (computed_mean, reuse) = if cached > 0.0 {
        let reuse = run_estimator(
            "prefix-reuse",
            "Prompt tokens computed per request with the prefix cache",
            inputs(&[
                ("prompt_tokens", p.prompt_tokens_mean.to_string()),
                ("shared_prefix_tokens", p.shared_prefix_tokens.to_string()),
                ("hit_rate", p.prefix_hit_rate.to_string()),
            ]),
        )?;
        (num(&reuse.chain, "computed_before"), Some(reuse))
    } else {
        (p.prompt_tokens_mean as f64, None)
    };
    let fx = Fixed {
        context: decode_context(p),
        computed_mean,
        computed_p95: (p.prompt_tokens_p95 as f64 - cached).max(1.0),
    };
    Ok((fx, reuse))
}

/// The batch the replica runs at, and why.
struct Operating {
    point: Point,
    /// What set the batch (see [`Sizing::limited_by`]).
    limited_by: &'static str,
    /// The largest batch searched: the KV pool, max_num_seqs or the step budget.
    ceiling: u64,
    /// Empty unless not even batch 1 meets the SLOs.
    slo_findings: Vec<SloFinding>,
}

/// The largest batch meeting the SLOs (the step budget leaves room for a chunk), by
/// bisection between batch 1 and the ceiling; batch 1 with findings when not even it
/// meets them.
fn operating_point(
    p: &ProposalInput,
    fx: &Fixed,
    memory: &Memory,
) -> Result<Operating, Vec<FieldError>> {
    let mut hi = memory.kv_concurrency;
    let mut cap = if memory.admitted < p.max_num_seqs {
        "kv_pool"
    } else {
        "max_num_seqs"
    };
    if p.chunked_prefill && hi >= p.max_num_batched_tokens {
        hi = p.max_num_batched_tokens - 1;
        cap = "step_budget";
    }
    if hi == 0 {
        return Err(vec![FieldError::new(
            "max_num_batched_tokens",
            "must be at least 2 with chunked prefill (one decode token and one prefill token)",
        )]);
    }
    let one = at_batch(p, fx, 1)?;
    let mut slo_findings = Vec::new();
    let (point, limited_by) = if let Some(why) = one.meets(p) {
        // Saved as a document under review: the figures at batch 1 and why it fails.
        slo_findings = infeasible(p, &one);
        (one, why)
    } else {
        let top = at_batch(p, fx, hi)?;
        match top.meets(p) {
            None => (top, cap),
            Some(why) => {
                let (mut lo, mut lo_point, mut hi) = (1, one, hi);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    let m = at_batch(p, fx, mid)?;
                    if m.meets(p).is_none() {
                        lo = mid;
                        lo_point = m;
                    } else {
                        hi = mid;
                    }
                }
                debug_assert_eq!(lo_point.batch, lo);
                (lo_point, why)
            }
        }
    };
    Ok(Operating {
        point,
        limited_by,
        ceiling: hi,
        slo_findings,
    })
}

/// Throughput per replica (estimated, or measured when the person said so), the
/// replicas the peak arrival rate needs with headroom, and what they cost.
struct Fleet {
    estimated_tps: f64,
    /// What sizing used.
    tps: f64,
    uses_measurement: bool,
    per_replica_rps: f64,
    replicas: u64,
    gpus: u64,
    cost_per_hour: f64,
    cost_per_million: f64,
    cost: Run,
}

fn fleet(p: &ProposalInput, point: &Point) -> Result<Fleet, Vec<FieldError>> {
    let out_mean = p.output_tokens_mean as f64;
    let estimated_tps = point.requests_per_s * out_mean;
    let uses_measurement = p.use_measured && p.measured_tokens_per_s_per_replica.is_some();
    let tps = if uses_measurement {
        p.measured_tokens_per_s_per_replica.unwrap_or(estimated_tps)
    } else {
        estimated_tps
    };
    let per_replica_rps = tps / out_mean;
    let needed_rps = p.arrival_rate * (1.0 + p.headroom);
    let replicas = (needed_rps / per_replica_rps - 1e-9).ceil().max(1.0) as u64;
    let gpus = replicas * p.gpus_per_replica;
    let cost = run_estimator(
        "cost",
        "Fleet cost per hour and per million output tokens at peak",
        inputs(&[
            ("gpu_hour_usd", p.gpu_hour_usd.to_string()),
            ("gpus", gpus.to_string()),
            (
                "output_tokens_per_s",
                (p.arrival_rate * out_mean).to_string(),
            ),
            (
                "input_tokens_per_s",
                (p.arrival_rate * p.prompt_tokens_mean as f64).to_string(),
            ),
        ]),
    )?;
    let cost_per_hour = num(&cost.chain, "usd_per_hour");
    let cost_per_million = num(&cost.chain, "usd_per_million_output_tokens");
    Ok(Fleet {
        estimated_tps,
        tps,
        uses_measurement,
        per_replica_rps,
        replicas,
        gpus,
        cost_per_hour,
        cost_per_million,
        cost,
    })
}

/// The [`Sizing`]: every figure, and the runs in the order they were made.
fn assemble(
    p: &ProposalInput,
    memory: Memory,
    fx: Fixed,
    reuse: Option<Run>,
    op: Operating,
    fleet: Fleet,
    figures: Vec<Figure>,
) -> Sizing {
    let Operating {
        point,
        limited_by,
        slo_findings,
        ..
    } = op;
    let mut runs = vec![memory.mem.clone(), memory.kv];
    runs.extend(reuse);
    runs.push(point.floor.clone());
    if let Some(a) = &point.allreduce {
        runs.push(a.clone());
    }
    runs.push(point.mixed.clone());
    runs.push(fleet.cost);
    Sizing {
        meets_slo: slo_findings.is_empty(),
        slo_findings,
        memory_fit: memory.mem.chain.results,
        max_model_len: memory.max_model_len,
        kv_concurrency: memory.kv_concurrency,
        batch: point.batch,
        limited_by: limited_by.to_string(),
        context_tokens: fx.context,
        computed_prompt_tokens_mean: fx.computed_mean,
        computed_prompt_tokens_p95: fx.computed_p95,
        chunk_tokens: point.chunk,
        decode_floor_ms: point.floor_ms(),
        allreduce_ms: point.allreduce_ms,
        decode_step_ms: point.decode_step_ms,
        mixed_step_ms: point.mixed_ms(),
        itl_p99_ms: point.itl_p99_ms,
        prefill_ms: point.ttft_p95_ms,
        ttft_p95_ms: point.ttft_p95_ms,
        e2e_p95_ms: point.e2e_p95_ms,
        requests_per_s_per_replica: point.requests_per_s,
        estimated_tokens_per_s_per_replica: fleet.estimated_tps,
        tokens_per_s_per_replica: fleet.tps,
        measured_tokens_per_s_per_replica: p.measured_tokens_per_s_per_replica,
        measured_concurrency: p.measured_concurrency,
        compared_batch: None,
        estimated_tokens_per_s_at_measured_concurrency: None,
        uses_measurement: fleet.uses_measurement,
        replicas_needed: fleet.replicas,
        gpus: fleet.gpus,
        cost_per_hour_usd: fleet.cost_per_hour,
        cost_per_million_tokens_usd: fleet.cost_per_million,
        figures,
        runs,
    }
}

fn scaled(v: u64, factor: f64) -> u64 {
    ((v as f64) * factor).round().max(1.0) as u64
}

/// How replicas and cost move when the workload is heavier than proposed.
pub fn sensitivity(p: &ProposalInput, base: &Sizing) -> Vec<Variant> {
    let mut variants: Vec<(String, ProposalInput)> = Vec::new();
    for (pct, factor) in [(30, 1.3), (50, 1.5)] {
        let mut v = p.clone();
        v.prompt_tokens_mean = scaled(p.prompt_tokens_mean, factor);
        v.prompt_tokens_p95 = scaled(p.prompt_tokens_p95, factor);
        variants.push((format!("prompt length +{pct} %"), v));
    }
    for (pct, factor) in [(30, 1.3), (50, 1.5)] {
        let mut v = p.clone();
        v.output_tokens_mean = scaled(p.output_tokens_mean, factor);
        v.output_tokens_p95 = scaled(p.output_tokens_p95, factor);
        variants.push((format!("output length +{pct} %"), v));
    }
    for (pct, factor) in [(30, 1.3), (50, 1.5)] {
        let mut v = p.clone();
        v.arrival_rate = p.arrival_rate * factor;
        variants.push((format!("arrival rate +{pct} %"), v));
    }
    let mut v = p.clone();
    v.prefix_hit_rate = p.prefix_hit_rate / 2.0;
    variants.push(("prefix hit rate halves".to_string(), v));

    variants
        .into_iter()
        .map(|(label, v)| match size(&v) {
            Ok(s) if !s.meets_slo => Variant {
                label,
                replicas_needed: None,
                cost_per_hour_usd: None,
                cost_per_million_tokens_usd: None,
                replicas_change: None,
                problem: Some(
                    s.slo_findings
                        .iter()
                        .map(|f| format!("{}: {}", f.slo, f.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            },
            Ok(s) => Variant {
                label,
                replicas_needed: Some(s.replicas_needed),
                cost_per_hour_usd: Some(s.cost_per_hour_usd),
                cost_per_million_tokens_usd: Some(s.cost_per_million_tokens_usd),
                replicas_change: Some(s.replicas_needed as i64 - base.replicas_needed as i64),
                problem: None,
            },
            Err(errors) => Variant {
                label,
                replicas_needed: None,
                cost_per_hour_usd: None,
                cost_per_million_tokens_usd: None,
                replicas_change: None,
                problem: Some(
                    errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::input::{parse, tests::chat_api};
    use super::*;
    use crate::pairs::Pairs;

    fn with(changes: &[(&str, &str)]) -> Pairs {
        let mut pairs = chat_api();
        for (k, v) in changes {
            pairs.insert(*k, *v);
        }
        pairs
    }

    fn sized(changes: &[(&str, &str)]) -> Result<Sizing, Vec<FieldError>> {
        size(&parse(&with(changes)).unwrap())
    }

    #[test]
    fn every_estimator_figure_is_the_standalone_result() {
        let s = sized(&[]).unwrap();
        let names: Vec<_> = s.runs.iter().map(|r| r.estimator.as_str()).collect();
        assert_eq!(
            names,
            [
                "memory-fit",
                "kv-pages",
                "prefix-reuse",
                "decode-floor",
                "mixed-step",
                "cost"
            ]
        );
        for r in &s.runs {
            let again = estimate::run(&r.estimator, &r.inputs).unwrap();
            assert_eq!(again, r.chain, "{}", r.estimator);
        }
        assert_eq!(s.memory_fit, s.runs[0].chain.results);
        assert_eq!(s.runs[0].inputs["max_model_len"], "4800");
        assert_eq!(s.decode_floor_ms, num(&s.runs[3].chain, "floor_ms"));
        assert_eq!(s.mixed_step_ms, num(&s.runs[4].chain, "step_ms"));
        assert_eq!(s.cost_per_hour_usd, num(&s.runs[5].chain, "usd_per_hour"));
        assert_eq!(
            s.cost_per_hour_usd,
            s.replicas_needed as f64 * 1.0 * 2.5,
            "replicas × GPUs per replica × price"
        );
        assert_eq!(
            s.cost_per_million_tokens_usd,
            num(&s.runs[5].chain, "usd_per_million_output_tokens")
        );
        // 600 shared tokens at 80 % hits: 1500 − 480 computed
        assert_eq!(s.computed_prompt_tokens_mean, 1020.0);
    }

    #[test]
    fn the_batch_meets_the_slos_and_one_more_would_not_or_is_capped() {
        let s = sized(&[]).unwrap();
        assert!(s.itl_p99_ms <= 60.0 && s.ttft_p95_ms <= 800.0, "{s:?}");
        assert!(s.batch >= 1 && s.batch <= s.kv_concurrency);
        if s.limited_by == "itl_slo" || s.limited_by == "ttft_slo" {
            let p = parse(&chat_api()).unwrap();
            let fx = Fixed {
                context: s.context_tokens,
                computed_mean: s.computed_prompt_tokens_mean,
                computed_p95: s.computed_prompt_tokens_p95,
            };
            assert!(at_batch(&p, &fx, s.batch + 1).unwrap().meets(&p).is_some());
        }
        let tps = s.requests_per_s_per_replica * 300.0;
        assert!((s.tokens_per_s_per_replica - tps).abs() < 1e-9);
        let needed = 45.0 * 1.2 / s.requests_per_s_per_replica;
        assert_eq!(s.replicas_needed, needed.ceil() as u64);
    }

    #[test]
    fn tp_adds_the_allreduce_run() {
        let s = sized(&[
            ("model", "llama-3.3-70b"),
            ("tp", "4"),
            ("gpus_per_replica", "4"),
            ("max_num_batched_tokens", "512"),
        ])
        .unwrap();
        let tp = s
            .runs
            .iter()
            .find(|r| r.estimator == "tp-allreduce")
            .unwrap();
        assert_eq!(s.decode_step_ms, num(&tp.chain, "step_ms"));
        assert!(s.allreduce_ms > 0.0);
        assert_eq!(s.gpus, s.replicas_needed * 4);
    }

    #[test]
    fn itl_below_the_decode_floor_is_a_finding_saying_what_would_work() {
        let e = sized(&[("model", "llama-3.3-70b"), ("slo_itl_p99_ms", "10")]).unwrap_err();
        assert_eq!(
            e[0].field, "weight_dtype",
            "70B bf16 on one GPU does not fit: {e:?}"
        );
        let s = sized(&[
            ("model", "llama-3.3-70b"),
            ("tp", "2"),
            ("gpus_per_replica", "2"),
            ("slo_itl_p99_ms", "10"),
        ])
        .expect("an SLO the settings miss is a finding, not a refusal");
        assert!(!s.meets_slo);
        let f = &s.slo_findings[0];
        assert_eq!(f.slo, "slo_itl_p99_ms");
        assert_eq!(f.target_ms, 10.0);
        assert!((f.estimated_ms - s.decode_step_ms).abs() < 1e-9);
        assert!((f.over_by_ms - (s.decode_step_ms - 10.0)).abs() < 1e-9);
        assert!(
            f.message.contains("the decode floor alone is"),
            "{}",
            f.message
        );
        assert!(f.message.contains("FP8 weights"), "{}", f.message);
        assert!(f.message.contains("TP "), "{}", f.message);
        assert!(f.line().contains("over"), "{}", f.line());
        assert_eq!(s.batch, 1);
    }

    #[test]
    fn a_chunk_too_long_for_the_itl_slo_names_the_budget_that_fits() {
        let s = sized(&[
            ("slo_itl_p99_ms", "20"),
            ("max_num_batched_tokens", "16384"),
        ])
        .unwrap();
        assert!(!s.meets_slo);
        let f = &s.slo_findings[0];
        assert_eq!(f.slo, "slo_itl_p99_ms");
        assert!(
            f.message.contains("max_num_batched_tokens of at most"),
            "{}",
            f.message
        );
        // TTFT fails too at that chunk? Each failing SLO is its own finding.
        assert!(s.slo_findings.iter().all(|f| f.over_by_ms > 0.0));
        let ok = sized(&[]).unwrap();
        assert!(ok.meets_slo && ok.slo_findings.is_empty());
    }

    #[test]
    fn one_ledger_sizes_memory_with_the_proposals_own_batched_tokens() {
        // The demo: its own max_num_batched_tokens (1,536) sizes the profiling pass, whose
        // peak is the sampler run over min(1,536, 1,024) sequences of the 128,256 vocab.
        let s = sized(&[]).unwrap();
        let act = s.memory_fit["activation_bytes_per_gpu"].as_f64().unwrap();
        assert!((act - 1024.0 * 128_256.0 * 38.9).abs() < 1.0, "{act}");
        // The issue's 70B proposal at 768 tokens: only 768 sequences to sample.
        let at768 = sized(&[
            ("model", "llama-3.1-70b"),
            ("tp", "4"),
            ("gpus_per_replica", "4"),
            ("weight_dtype", "fp8"),
            ("max_num_batched_tokens", "768"),
        ])
        .unwrap();
        let act = at768.memory_fit["activation_bytes_per_gpu"]
            .as_f64()
            .unwrap();
        assert!((act - 768.0 * 128_256.0 * 38.9).abs() < 1.0, "{act}");
        // kv-pages runs on the same ledger: its pool is memory-fit's KV room, in pages.
        for s in [&s, &at768] {
            let kv = s.runs.iter().find(|r| r.estimator == "kv-pages").unwrap();
            let pages = num(&kv.chain, "pool_pages");
            let tokens = s.memory_fit["max_kv_tokens"].as_f64().unwrap();
            assert!(
                pages * 16.0 <= tokens && tokens < (pages + 1.0) * 16.0,
                "{pages} pages vs {tokens} tokens"
            );
            let admitted = num(&kv.chain, "max_full_length_requests");
            assert_eq!(admitted, (pages / 300.0).floor());
        }
    }

    #[test]
    fn fp8_proposal_computes_at_the_fp8_peak() {
        let s = sized(&[
            ("model", "llama-3.1-70b"),
            ("tp", "4"),
            ("gpus_per_replica", "4"),
            ("weight_dtype", "fp8"),
            ("max_num_batched_tokens", "2048"),
            ("slo_itl_p99_ms", "200"),
            ("slo_ttft_p95_ms", "2000"),
        ])
        .unwrap();
        let mixed = s.runs.iter().find(|r| r.estimator == "mixed-step").unwrap();
        assert_eq!(
            mixed.chain.inputs["compute_precision"],
            serde_json::json!("FP8")
        );
        let w8a16 = sized(&[
            ("model", "llama-3.1-70b"),
            ("tp", "4"),
            ("gpus_per_replica", "4"),
            ("weight_dtype", "fp8"),
            ("activation_dtype", "bf16"),
            ("max_num_batched_tokens", "2048"),
            ("slo_itl_p99_ms", "200"),
            ("slo_ttft_p95_ms", "2000"),
        ])
        .unwrap();
        let slow = w8a16
            .runs
            .iter()
            .find(|r| r.estimator == "mixed-step")
            .unwrap();
        assert_eq!(
            slow.chain.inputs["compute_precision"],
            serde_json::json!("BF16")
        );
    }

    #[test]
    fn tp_not_dividing_heads_is_named() {
        let e = sized(&[("tp", "3"), ("gpus_per_replica", "3")]).unwrap_err();
        assert_eq!(e[0].field, "tp");
        assert!(e[0].message.contains("must divide"), "{e:?}");
    }

    #[test]
    fn measurement_replaces_the_estimate_only_when_asked() {
        let base = sized(&[]).unwrap();
        let shown = sized(&[
            ("measured_tokens_per_s_per_replica", "1000"),
            ("measured_concurrency", "64"),
        ])
        .unwrap();
        assert_eq!(shown.replicas_needed, base.replicas_needed);
        assert!(shown
            .figures
            .iter()
            .any(|f| f.key == "estimate_over_measured"));
        let used = sized(&[
            ("measured_tokens_per_s_per_replica", "1000"),
            ("measured_concurrency", "64"),
            ("use_measured", "true"),
        ])
        .unwrap();
        assert!(used.uses_measurement);
        assert_eq!(
            used.replicas_needed,
            (45.0_f64 * 1.2 / (1000.0 / 300.0)).ceil() as u64
        );
    }

    /// The guide's example: Qwen3-30B-A3B BF16 on 2×H100 SXM, TP 2, batch 256 and
    /// max_num_batched_tokens 8,192: the step carrying prefill carries the whole rest of
    /// the budget, 8,192 − 256 = 7,936 tokens (not one 1,100-token prompt).
    fn qwen_moe(slo_itl: &str) -> Result<Sizing, Vec<FieldError>> {
        sized(&[
            ("model", "qwen3-30b-a3b"),
            ("gpus_per_replica", "2"),
            ("tp", "2"),
            ("max_num_seqs", "256"),
            ("max_num_batched_tokens", "8192"),
            ("prompt_tokens_mean", "1000"),
            ("prompt_tokens_p95", "1100"),
            ("output_tokens_mean", "200"),
            ("output_tokens_p95", "400"),
            ("shared_prefix_tokens", "0"),
            ("prefix_hit_rate", "0"),
            ("slo_ttft_p95_ms", "2000"),
            ("slo_itl_p99_ms", slo_itl),
        ])
    }

    #[test]
    fn itl_p99_carries_the_whole_chunk_budget() {
        let s = qwen_moe("100").unwrap();
        assert_eq!((s.batch, s.chunk_tokens), (256, 7936), "{s:?}");
        let mixed = s.runs.iter().find(|r| r.estimator == "mixed-step").unwrap();
        assert_eq!(mixed.inputs["chunk_tokens"], "7936");
        assert_eq!(mixed.inputs["context"], "1100");
        let alone = estimate::run("mixed-step", &mixed.inputs).unwrap();
        let ar = s
            .runs
            .iter()
            .find(|r| r.estimator == "tp-allreduce")
            .unwrap();
        let expected = num(&alone, "step_ms") + num(&ar.chain, "allreduce_ms");
        assert!((s.itl_p99_ms - expected).abs() < 1e-9);
        assert_eq!(fmt::ms(s.itl_p99_ms), "59.9 ms");
        // Against a 50 ms SLO the settings fail, and the finding names the budget.
        let tight = qwen_moe("50").unwrap();
        assert!(!tight.meets_slo);
        let f = &tight.slo_findings[0];
        assert_eq!(f.slo, "slo_itl_p99_ms");
        assert!(
            f.message.contains("max_num_batched_tokens of at most"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_measurement_is_compared_at_the_benchs_concurrency() {
        let p = parse(&with(&[
            ("measured_tokens_per_s_per_replica", "1000"),
            ("measured_concurrency", "16"),
        ]))
        .unwrap();
        let s = size(&p).unwrap();
        assert_eq!(s.compared_batch, Some(16));
        let fx = Fixed {
            context: s.context_tokens,
            computed_mean: s.computed_prompt_tokens_mean,
            computed_p95: s.computed_prompt_tokens_p95,
        };
        let at16 = at_batch(&p, &fx, 16).unwrap().requests_per_s * 300.0;
        assert_eq!(s.estimated_tokens_per_s_at_measured_concurrency, Some(at16));
        let f = s
            .figures
            .iter()
            .find(|f| f.key == "estimate_over_measured")
            .unwrap();
        assert!((f.value - at16 / 1000.0).abs() < 1e-12);
        assert!(
            f.formula.contains("the bench's 16 requests in flight"),
            "{}",
            f.formula
        );
        assert!(
            f.formula.contains(&format!("sized batch of {}", s.batch)),
            "{}",
            f.formula
        );
        assert!(
            f.formula.contains("what the bench measured"),
            "{}",
            f.formula
        );
        // A bench at more concurrency than the replica runs is compared at its cap.
        let big = sized(&[
            ("measured_tokens_per_s_per_replica", "1000"),
            ("measured_concurrency", "100000"),
        ])
        .unwrap();
        let cap = big.compared_batch.unwrap();
        assert!(cap < 100000);
        let f = big
            .figures
            .iter()
            .find(|f| f.key == "estimate_over_measured")
            .unwrap();
        assert!(f.formula.contains("capped at"), "{}", f.formula);
    }

    #[test]
    fn a_measured_throughput_needs_the_benchs_concurrency() {
        let e = parse(&with(&[("measured_tokens_per_s_per_replica", "1000")])).unwrap_err();
        assert!(
            e.iter().any(|e| e.field == "measured_concurrency"
                && e.message
                    .contains("is required with measured_tokens_per_s_per_replica")),
            "{e:?}"
        );
        let e = parse(&with(&[("measured_concurrency", "64")])).unwrap_err();
        assert_eq!(e[0].field, "measured_concurrency");
    }

    #[test]
    fn a_config_keeps_the_name_the_person_gave() {
        let config = r#"{"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
            "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
            "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
            "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
            "vocab_size": 151936, "torch_dtype": "bfloat16"}"#;
        let named = parse(&with(&[("model", "Qwen3-30B-A3B"), ("config", config)])).unwrap();
        assert_eq!(named.model_name(), "Qwen3-30B-A3B");
        let mut pairs = with(&[("config", config)]);
        pairs.remove("model");
        let bare = parse(&pairs).unwrap();
        assert_eq!(bare.model_name(), "qwen3_moe");
        let with_path = config.replacen('{', r#"{"_name_or_path": "Qwen/Qwen3-30B-A3B","#, 1);
        pairs.insert("config", with_path.as_str());
        assert_eq!(parse(&pairs).unwrap().model_name(), "Qwen/Qwen3-30B-A3B");
        // The config sizes it, whatever the name.
        let s = size(&named).unwrap();
        assert!(s
            .runs
            .iter()
            .all(|r| r.inputs.contains_key("config") || !r.inputs.contains_key("model")));
    }

    #[test]
    fn sensitivity_moves_the_right_way() {
        let p = parse(&chat_api()).unwrap();
        let s = size(&p).unwrap();
        let rows = sensitivity(&p, &s);
        assert_eq!(rows.len(), 7);
        for r in &rows {
            if let Some(change) = r.replicas_change {
                if r.label.contains('+') {
                    assert!(change >= 0, "{r:?}");
                }
            }
        }
        let arrival = rows
            .iter()
            .find(|r| r.label == "arrival rate +50 %")
            .unwrap();
        assert!(arrival.replicas_needed.unwrap() > s.replicas_needed);
        assert_eq!(
            arrival.cost_per_hour_usd.unwrap(),
            arrival.replicas_needed.unwrap() as f64 * 2.5
        );
    }
}
