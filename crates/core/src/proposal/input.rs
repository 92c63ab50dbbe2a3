//! A proposal's inputs: one parse from raw `key → text` pairs into a typed value.
//! The web form hands its fields over as they are; the API turns its JSON object into
//! the same pairs ([`crate::pairs::from_json`] reading [`JSON_INPUTS`]), so both paths
//! check exactly the same things.

use serde::{Deserialize, Serialize};

use crate::estimate::{gpus, models, parse_number, Dtype, FieldSpec, ModelSpec};
use crate::pairs::{JsonReading, Pairs};
use crate::FieldError;

/// Which part of the form a field belongs to (reviews anchor comments to these too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Section {
    Question,
    Deployment,
    Workload,
    Slo,
    Cost,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Section::Question => "Question",
            Section::Deployment => "Deployment",
            Section::Workload => "Workload",
            Section::Slo => "SLOs",
            Section::Cost => "Cost and headroom",
        }
    }
}

const fn f(
    name: &'static str,
    label: &'static str,
    unit: &'static str,
    default: Option<&'static str>,
    required: bool,
    help: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        label,
        unit,
        default,
        help,
        required,
    }
}

/// Every accepted field, in form order, with its section.
pub const FIELDS: &[(Section, FieldSpec)] = &[
    (Section::Question, f("title", "Title", "", None, true, "A short name, e.g. chat-api on H100 at peak.")),
    (Section::Question, f("question", "Question", "", None, true,
        "What must hold, e.g. serve chat-api at 45 req/s with p95 TTFT < 800 ms and p99 ITL < 60 ms.")),
    (Section::Deployment, f("model", "Model", "", None, false,
        "Catalog name (llama-3.1-8b, llama-3.3-70b, …); with a config.json, the name the \
         proposal goes by (e.g. Qwen3-30B-A3B).")),
    (Section::Deployment, f("config", "config.json", "", None, false,
        "The text of a Hugging Face config.json, instead of a catalog model; it is named by \
         the model field, else its _name_or_path, else its model_type.")),
    (Section::Deployment, f("gpu_type", "GPU type", "", None, true,
        "h100-sxm, h100-pcie, h200, a100-80gb, a100-40gb, l40s, l4, b200 or mi300x.")),
    (Section::Deployment, f("gpus_per_replica", "GPUs per replica", "GPUs", None, true,
        "GPUs one replica runs on; equals TP × PP.")),
    (Section::Deployment, f("tp", "Tensor parallelism", "GPUs", Some("1"), false,
        "TP degree; must divide the model's attention heads.")),
    (Section::Deployment, f("pp", "Pipeline parallelism", "stages", Some("1"), false,
        "PP degree; the estimators model TP only, so 1.")),
    (Section::Deployment, f("weight_dtype", "Weight precision", "", Some("bf16"), false,
        "bf16, fp16, fp8, int8, int4 or fp4.")),
    (Section::Deployment, f("activation_dtype", "Activation precision", "", None, false,
        "bf16, fp16, fp8, int8 or fp4; blank: fp8 with fp8 weights (fp4 with fp4) where the GPU \
         has those tensor cores, else bf16. With the weights it sets the compute peak.")),
    (Section::Deployment, f("kv_dtype", "KV-cache precision", "", Some("bf16"), false,
        "bf16, fp16, fp8, int8, int4 or fp4.")),
    (Section::Deployment, f("engine", "Engine", "", None, true, "e.g. vllm or sglang.")),
    (Section::Deployment, f("engine_version", "Engine version", "", None, true, "e.g. 0.6.3.")),
    (Section::Deployment, f("max_num_seqs", "max_num_seqs", "sequences", Some("256"), false,
        "Most sequences the engine runs at once.")),
    (Section::Deployment, f("max_num_batched_tokens", "max_num_batched_tokens", "tokens",
        Some("8192"), false, "Token budget of one step (decode tokens + prefill chunk).")),
    (Section::Deployment, f("chunked_prefill", "Chunked prefill", "", Some("true"), false,
        "true or false.")),
    (Section::Deployment, f("prefix_caching", "Prefix caching", "", Some("true"), false,
        "true or false.")),
    (Section::Deployment, f("gpu_memory_utilization", "Memory utilization", "", Some("0.92"),
        false, "Fraction of GPU memory the engine may use, in (0, 1].")),
    (Section::Deployment, f("mfu", "MFU", "", Some("0.5"), false,
        "Fraction of peak compute prefill GEMMs reach, in (0, 1].")),
    (Section::Workload, f("arrival_rate", "Arrival rate at peak", "req/s", None, true,
        "Requests per second at the busiest hour.")),
    (Section::Workload, f("prompt_tokens_mean", "Prompt length, mean", "tokens", None, false, "Or give the histogram below.")),
    (Section::Workload, f("prompt_tokens_p95", "Prompt length, p95", "tokens", None, false, "Or give the histogram below.")),
    (Section::Workload, f("output_tokens_mean", "Output length, mean", "tokens", None, false, "Or give the histogram below.")),
    (Section::Workload, f("output_tokens_p95", "Output length, p95", "tokens", None, false, "Or give the histogram below.")),
    (Section::Workload, f("prompt_tokens_histogram", "Prompt length histogram", "tokens", None,
        false, "Instead of mean and p95: bucket upper bound:count pairs, e.g. 512:120, 2048:300, 8192:40.")),
    (Section::Workload, f("output_tokens_histogram", "Output length histogram", "tokens", None,
        false, "Instead of mean and p95, e.g. 128:200, 512:250, 1024:30.")),
    (Section::Workload, f("shared_prefix_tokens", "Shared prefix", "tokens", Some("0"), false,
        "Length of the prefix (system prompt) requests share.")),
    (Section::Workload, f("prefix_hit_rate", "Prefix hit rate", "", Some("0"), false,
        "Fraction of requests that find the shared prefix cached, in [0, 1].")),
    (Section::Slo, f("slo_ttft_p95_ms", "TTFT p95 SLO", "ms", None, true, "")),
    (Section::Slo, f("slo_itl_p99_ms", "ITL p99 SLO", "ms", None, true,
        "Inter-token latency (TPOT) at p99.")),
    (Section::Slo, f("slo_e2e_p95_ms", "E2E p95 SLO", "ms", None, false, "Optional.")),
    (Section::Cost, f("gpu_hour_usd", "Price per GPU-hour", "USD", None, true, "")),
    (Section::Cost, f("headroom", "Headroom", "", Some("0.2"), false,
        "Spare capacity at peak, e.g. 0.2 sizes for 120 % of the peak arrival rate.")),
    (Section::Cost, f("measured_tokens_per_s_per_replica", "Measured tokens/s per replica",
        "tokens/s", None, false, "Output tokens/s one replica sustained inside the SLO in a bench.")),
    (Section::Cost, f("measured_concurrency", "Bench concurrency", "requests", None, false,
        "Requests the bench kept in flight (e.g. --max-concurrency 64); required with a \
         measured throughput, which is compared with the estimate at this concurrency.")),
    (Section::Cost, f("use_measured", "Size from the measurement", "", Some("false"), false,
        "true: replicas come from the measured throughput instead of the estimate.")),
];

/// A checked proposal input. Token counts are whole numbers; lengths are per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalInput {
    pub title: String,
    pub question: String,
    pub model: Option<String>,
    pub config: Option<String>,
    pub gpu_type: String,
    pub gpus_per_replica: u64,
    pub tp: u64,
    pub pp: u64,
    pub weight_dtype: String,
    /// Blank: the estimators' default, which follows the weights (see
    /// `core::estimate::precision`).
    #[serde(default)]
    pub activation_dtype: Option<String>,
    pub kv_dtype: String,
    pub engine: String,
    pub engine_version: String,
    pub max_num_seqs: u64,
    pub max_num_batched_tokens: u64,
    pub chunked_prefill: bool,
    pub prefix_caching: bool,
    pub gpu_memory_utilization: f64,
    pub mfu: f64,
    pub arrival_rate: f64,
    pub prompt_tokens_mean: u64,
    pub prompt_tokens_p95: u64,
    pub output_tokens_mean: u64,
    pub output_tokens_p95: u64,
    /// The histograms the mean and p95 were read from, when given that way.
    #[serde(default)]
    pub prompt_tokens_histogram: Option<String>,
    #[serde(default)]
    pub output_tokens_histogram: Option<String>,
    pub shared_prefix_tokens: u64,
    pub prefix_hit_rate: f64,
    pub slo_ttft_p95_ms: f64,
    pub slo_itl_p99_ms: f64,
    pub slo_e2e_p95_ms: Option<f64>,
    pub gpu_hour_usd: f64,
    pub headroom: f64,
    pub measured_tokens_per_s_per_replica: Option<f64>,
    /// Requests in flight during the bench that measured it (required with it).
    #[serde(default)]
    pub measured_concurrency: Option<u64>,
    pub use_measured: bool,
}

impl ProposalInput {
    /// The model as the person named it (the catalog name, or the name given beside a
    /// config.json), else the config's `_name_or_path`, else its `model_type`; for the
    /// page, facets and evidence matching.
    pub fn model_name(&self) -> String {
        match (&self.model, &self.config) {
            (Some(m), _) => m.clone(),
            (None, Some(c)) => serde_json::from_str::<serde_json::Value>(c)
                .ok()
                .and_then(|v| {
                    ["_name_or_path", "model_type"].iter().find_map(|k| {
                        v.get(k)
                            .and_then(|n| n.as_str())
                            .map(str::trim)
                            .filter(|n| !n.is_empty())
                            .map(str::to_string)
                    })
                })
                .unwrap_or_else(|| "config.json".to_string()),
            (None, None) => String::new(),
        }
    }

    /// Back to raw pairs (to prefill the edit form, or to re-parse a variant).
    pub fn to_pairs(&self) -> Pairs {
        let mut p = Pairs::default();
        let mut put = |k: &str, v: String| {
            p.insert(k, v);
        };
        put("title", self.title.clone());
        put("question", self.question.clone());
        if let Some(m) = &self.model {
            put("model", m.clone());
        }
        if let Some(c) = &self.config {
            put("config", c.clone());
        }
        put("gpu_type", self.gpu_type.clone());
        put("gpus_per_replica", self.gpus_per_replica.to_string());
        put("tp", self.tp.to_string());
        put("pp", self.pp.to_string());
        put("weight_dtype", self.weight_dtype.clone());
        if let Some(a) = &self.activation_dtype {
            put("activation_dtype", a.clone());
        }
        put("kv_dtype", self.kv_dtype.clone());
        put("engine", self.engine.clone());
        put("engine_version", self.engine_version.clone());
        put("max_num_seqs", self.max_num_seqs.to_string());
        put(
            "max_num_batched_tokens",
            self.max_num_batched_tokens.to_string(),
        );
        put("chunked_prefill", self.chunked_prefill.to_string());
        put("prefix_caching", self.prefix_caching.to_string());
        put(
            "gpu_memory_utilization",
            self.gpu_memory_utilization.to_string(),
        );
        put("mfu", self.mfu.to_string());
        put("arrival_rate", self.arrival_rate.to_string());
        match &self.prompt_tokens_histogram {
            Some(h) => put("prompt_tokens_histogram", h.clone()),
            None => {
                put("prompt_tokens_mean", self.prompt_tokens_mean.to_string());
                put("prompt_tokens_p95", self.prompt_tokens_p95.to_string());
            }
        }
        match &self.output_tokens_histogram {
            Some(h) => put("output_tokens_histogram", h.clone()),
            None => {
                put("output_tokens_mean", self.output_tokens_mean.to_string());
                put("output_tokens_p95", self.output_tokens_p95.to_string());
            }
        }
        put(
            "shared_prefix_tokens",
            self.shared_prefix_tokens.to_string(),
        );
        put("prefix_hit_rate", self.prefix_hit_rate.to_string());
        put("slo_ttft_p95_ms", self.slo_ttft_p95_ms.to_string());
        put("slo_itl_p99_ms", self.slo_itl_p99_ms.to_string());
        if let Some(e) = self.slo_e2e_p95_ms {
            put("slo_e2e_p95_ms", e.to_string());
        }
        put("gpu_hour_usd", self.gpu_hour_usd.to_string());
        put("headroom", self.headroom.to_string());
        if let Some(m) = self.measured_tokens_per_s_per_replica {
            put("measured_tokens_per_s_per_replica", m.to_string());
        }
        if let Some(c) = self.measured_concurrency {
            put("measured_concurrency", c.to_string());
        }
        put("use_measured", self.use_measured.to_string());
        p
    }
}

/// How a proposal's inputs (and its observed figures) read from JSON: strings as they
/// are, numbers and booleans as text, a `config` object as its JSON text, nulls left out,
/// anything else refused by key.
pub const JSON_INPUTS: JsonReading = JsonReading::Fields {
    whole: &["config"],
    not_object: "must be a JSON object of the proposal's inputs, e.g. {\"title\": …, \"model\": \"llama-3.1-8b\", …}",
};

struct Reader<'a> {
    pairs: &'a Pairs,
    errors: Vec<FieldError>,
}

impl<'a> Reader<'a> {
    fn text(&self, key: &str) -> Option<&'a str> {
        self.pairs.get(key)
    }

    fn default(key: &str) -> Option<&'static str> {
        FIELDS
            .iter()
            .find(|(_, s)| s.name == key)
            .and_then(|(_, s)| s.default)
    }

    fn fail(&mut self, key: &str, msg: impl Into<String>) {
        self.errors.push(FieldError::new(key, msg));
    }

    fn string(&mut self, key: &str, max: usize) -> Option<String> {
        match self.text(key) {
            None => {
                self.fail(key, "is required");
                None
            }
            Some(s) if s.chars().count() > max => {
                self.fail(key, format!("must be at most {max} characters"));
                None
            }
            Some(s) => Some(s.to_string()),
        }
    }

    /// A number: given, else the field's default, else "is required" (when `required`).
    fn number(&mut self, key: &str, check: fn(f64) -> Result<(), &'static str>) -> Option<f64> {
        let raw = self.text(key).or_else(|| Self::default(key));
        let Some(raw) = raw else {
            self.fail(key, "is required");
            return None;
        };
        let unit = FIELDS
            .iter()
            .find(|(_, s)| s.name == key)
            .map_or("", |(_, s)| s.unit);
        match crate::quantity::read_field(raw, unit).map_err(|e| e.to_string()) {
            Ok(v) => match check(v) {
                Ok(()) => Some(v),
                Err(want) => {
                    self.fail(key, format!("must be {want} (got {raw})"));
                    None
                }
            },
            Err(e) => {
                self.fail(key, e);
                None
            }
        }
    }

    fn optional(
        &mut self,
        key: &str,
        check: fn(f64) -> Result<(), &'static str>,
    ) -> Option<Option<f64>> {
        if self.text(key).is_none() {
            return Some(None);
        }
        self.number(key, check).map(Some)
    }

    fn count(&mut self, key: &str) -> Option<u64> {
        self.number(key, |v| {
            if v.fract() == 0.0 && (1.0..9.0e15).contains(&v) {
                Ok(())
            } else {
                Err("a whole number of at least 1")
            }
        })
        .map(|v| v as u64)
    }

    /// Mean and p95 of `which` (prompt or output) lengths: given directly, or read from
    /// a histogram (then the histogram's text too).
    fn lengths(&mut self, which: &str) -> (Option<u64>, Option<u64>, Option<String>) {
        let (mean, p95, hist) = (
            format!("{which}_tokens_mean"),
            format!("{which}_tokens_p95"),
            format!("{which}_tokens_histogram"),
        );
        match self.text(&hist) {
            Some(text) => {
                if self.text(&mean).is_some() || self.text(&p95).is_some() {
                    self.fail(
                        &hist,
                        format!("give {mean} and {p95}, or a histogram, not both"),
                    );
                    return (None, None, None);
                }
                match histogram_summary(text) {
                    Ok((m, p)) => (Some(m), Some(p), Some(text.to_string())),
                    Err(e) => {
                        self.fail(&hist, e);
                        (None, None, None)
                    }
                }
            }
            None => {
                let mut read = |key: &str| {
                    if self.text(key).is_none() {
                        self.fail(key, format!("is required (or give {hist})"));
                        None
                    } else {
                        self.count(key)
                    }
                };
                let m = read(&mean);
                let p = read(&p95);
                (m, p, None)
            }
        }
    }

    fn flag(&mut self, key: &str) -> Option<bool> {
        let raw = self
            .text(key)
            .or_else(|| Self::default(key))
            .unwrap_or("false");
        match raw.to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "1" => Some(true),
            "false" | "off" | "no" | "0" => Some(false),
            _ => {
                self.fail(key, format!("must be true or false (got {raw})"));
                None
            }
        }
    }

    fn dtype(&mut self, key: &str) -> Option<String> {
        let raw = self
            .text(key)
            .or_else(|| Self::default(key))
            .unwrap_or("bf16");
        match Dtype::parse(raw) {
            Ok(d) => Some(d.name().to_string()),
            Err(e) => {
                self.fail(key, e);
                None
            }
        }
    }
}

/// A length histogram `upper:count, upper:count, …` (bucket upper bounds in tokens,
/// increasing) → (mean, p95): the mean counts each bucket at its midpoint (the first
/// bucket starts at 0); the p95 is the upper bound of the bucket that reaches 95 %.
pub fn histogram_summary(text: &str) -> Result<(u64, u64), String> {
    let example = "write upper bound:count pairs, e.g. 512:120, 2048:300, 8192:40";
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    for part in text
        .split([',', ';', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (upper, count) = part
            .split_once(':')
            .ok_or_else(|| format!("`{part}` has no count; {example}"))?;
        let upper = parse_number(upper).map_err(|e| format!("{e}; {example}"))?;
        let count = parse_number(count).map_err(|e| format!("{e}; {example}"))?;
        if upper < 1.0 || count < 0.0 {
            return Err(format!(
                "`{part}`: bounds are ≥ 1 token and counts ≥ 0; {example}"
            ));
        }
        if buckets.last().is_some_and(|(u, _)| *u >= upper) {
            return Err(format!("bucket bounds must increase (`{part}`); {example}"));
        }
        buckets.push((upper, count));
    }
    let total: f64 = buckets.iter().map(|(_, c)| c).sum();
    if total <= 0.0 {
        return Err(format!("the histogram holds no requests; {example}"));
    }
    let mut lower = 0.0;
    let mut sum = 0.0;
    for (upper, count) in &buckets {
        sum += (lower + upper) / 2.0 * count;
        lower = *upper;
    }
    let mut seen = 0.0;
    let p95 = buckets
        .iter()
        .find(|(_, c)| {
            seen += c;
            seen >= 0.95 * total
        })
        .map_or(lower, |(u, _)| *u);
    Ok(((sum / total).round().max(1.0) as u64, p95 as u64))
}

fn positive(v: f64) -> Result<(), &'static str> {
    if v > 0.0 {
        Ok(())
    } else {
        Err("greater than 0")
    }
}

fn fraction(v: f64) -> Result<(), &'static str> {
    if v > 0.0 && v <= 1.0 {
        Ok(())
    } else {
        Err("in (0, 1]")
    }
}

fn probability(v: f64) -> Result<(), &'static str> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err("in [0, 1]")
    }
}

fn non_negative(v: f64) -> Result<(), &'static str> {
    if v >= 0.0 {
        Ok(())
    } else {
        Err("0 or more")
    }
}

fn whole_or_zero(v: f64) -> Result<(), &'static str> {
    if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) {
        Ok(())
    } else {
        Err("a whole number of at least 0")
    }
}

/// Parses and checks everything that can be checked without running an estimator;
/// every problem is reported, each under its field.
pub fn parse(pairs: &Pairs) -> Result<ProposalInput, Vec<FieldError>> {
    let mut r = Reader {
        pairs,
        errors: Vec::new(),
    };
    for key in pairs.by_name().into_keys() {
        if !FIELDS.iter().any(|(_, s)| s.name == key) {
            let known: Vec<_> = FIELDS.iter().map(|(_, s)| s.name).collect();
            r.fail(
                key,
                format!("is not a proposal input; known: {}", known.join(", ")),
            );
        }
    }
    let title = r.string("title", 200);
    let question = r.string("question", 2000);
    let (model, config) = match (r.text("model"), r.text("config")) {
        // The config sets the architecture; the model field names it as the person does.
        (Some(m), Some(c)) => match ModelSpec::from_config_json(c) {
            Ok(_) if m.trim().chars().count() > 200 => {
                r.fail("model", "must be at most 200 characters");
                (None, None)
            }
            Ok(_) => (Some(m.trim().to_string()), Some(c.to_string())),
            Err(e) => {
                r.fail("config", e);
                (None, None)
            }
        },
        (Some(m), None) => match models::find(m) {
            Some(c) => (Some(c.name.to_string()), None),
            None => {
                r.fail(
                    "model",
                    format!(
                        "unknown model `{m}`; known: {} (or paste a config.json)",
                        models::names()
                    ),
                );
                (None, None)
            }
        },
        (None, Some(c)) => match ModelSpec::from_config_json(c) {
            Ok(_) => (None, Some(c.to_string())),
            Err(e) => {
                r.fail("config", e);
                (None, None)
            }
        },
        (None, None) => {
            r.fail(
                "model",
                format!(
                    "is required: a catalog model ({}) or a config.json",
                    models::names()
                ),
            );
            (None, None)
        }
    };
    let gpu_type = match r.text("gpu_type") {
        None => {
            r.fail("gpu_type", format!("is required; known: {}", gpus::names()));
            None
        }
        Some(g) => match gpus::find(g) {
            Some(spec) => Some(spec.name.to_string()),
            None => {
                r.fail(
                    "gpu_type",
                    format!("unknown GPU `{g}`; known: {}", gpus::names()),
                );
                None
            }
        },
    };
    let gpus_per_replica = r.count("gpus_per_replica");
    let tp = r.count("tp");
    let pp = r.count("pp");
    let weight_dtype = r.dtype("weight_dtype");
    let activation_dtype = match r.text("activation_dtype") {
        None => Some(None),
        Some(_) => r.dtype("activation_dtype").map(Some),
    };
    let kv_dtype = r.dtype("kv_dtype");
    let engine = r.string("engine", 100);
    let engine_version = r.string("engine_version", 100);
    let max_num_seqs = r.count("max_num_seqs");
    let max_num_batched_tokens = r.count("max_num_batched_tokens");
    let chunked_prefill = r.flag("chunked_prefill");
    let prefix_caching = r.flag("prefix_caching");
    let util = r.number("gpu_memory_utilization", fraction);
    let mfu = r.number("mfu", fraction);
    let arrival_rate = r.number("arrival_rate", positive);
    let (prompt_mean, prompt_p95, prompt_hist) = r.lengths("prompt");
    let (output_mean, output_p95, output_hist) = r.lengths("output");
    let shared = r
        .number("shared_prefix_tokens", whole_or_zero)
        .map(|v| v as u64);
    let hit = r.number("prefix_hit_rate", probability);
    let ttft = r.number("slo_ttft_p95_ms", positive);
    let itl = r.number("slo_itl_p99_ms", positive);
    let e2e = r.optional("slo_e2e_p95_ms", positive);
    let price = r.number("gpu_hour_usd", positive);
    let headroom = r.number("headroom", non_negative);
    let measured = r.optional("measured_tokens_per_s_per_replica", positive);
    let measured_concurrency = match r.text("measured_concurrency") {
        None => Some(None),
        Some(_) => r.count("measured_concurrency").map(Some),
    };
    let use_measured = r.flag("use_measured");
    match (measured, measured_concurrency) {
        (Some(Some(_)), Some(None)) => r.fail(
            "measured_concurrency",
            "is required with measured_tokens_per_s_per_replica: the requests the bench kept in \
             flight (e.g. 64 for --max-concurrency 64), so the estimate is compared at the same \
             concurrency",
        ),
        (Some(None), Some(Some(_))) => r.fail(
            "measured_concurrency",
            "goes with measured_tokens_per_s_per_replica: give the throughput the bench measured \
             too, or leave it blank",
        ),
        _ => {}
    }

    if let (Some(m), Some(p)) = (prompt_mean, prompt_p95) {
        if p < m {
            r.fail(
                "prompt_tokens_p95",
                format!("must be at least the mean ({m} tokens)"),
            );
        }
    }
    if let (Some(m), Some(p)) = (output_mean, output_p95) {
        if p < m {
            r.fail(
                "output_tokens_p95",
                format!("must be at least the mean ({m} tokens)"),
            );
        }
    }
    if let (Some(s), Some(m)) = (shared, prompt_mean) {
        if s >= m {
            r.fail(
                "shared_prefix_tokens",
                format!("must be shorter than the mean prompt ({m} tokens)"),
            );
        }
    }
    if let (Some(g), Some(t), Some(p)) = (gpus_per_replica, tp, pp) {
        if p != 1 {
            r.fail(
                "pp",
                format!(
                    "the estimators model tensor parallelism only: set pp to 1 and tp to {g} \
                     (or size one pipeline stage per proposal)"
                ),
            );
        } else if g != t * p {
            r.fail(
                "gpus_per_replica",
                format!(
                    "must equal TP × PP = {t} × {p} = {}; or set tp to {g}",
                    t * p
                ),
            );
        }
    }
    if let (Some(true), Some(None)) = (use_measured, measured) {
        r.fail(
            "use_measured",
            "needs measured_tokens_per_s_per_replica (a bench of this deployment), or set it to false",
        );
    }
    if let (Some(true), Some(b), Some(p)) = (
        chunked_prefill.map(|c| !c),
        max_num_batched_tokens,
        prompt_p95,
    ) {
        if b < p {
            r.fail(
                "max_num_batched_tokens",
                format!(
                    "without chunked prefill a step must hold a whole prompt: at least {p} tokens \
                     (the p95 prompt), or turn chunked prefill on"
                ),
            );
        }
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    Ok(ProposalInput {
        title: title.unwrap_or_default(),
        question: question.unwrap_or_default(),
        model,
        config,
        gpu_type: gpu_type.unwrap_or_default(),
        gpus_per_replica: gpus_per_replica.unwrap_or(1),
        tp: tp.unwrap_or(1),
        pp: pp.unwrap_or(1),
        weight_dtype: weight_dtype.unwrap_or_default(),
        activation_dtype: activation_dtype.flatten(),
        kv_dtype: kv_dtype.unwrap_or_default(),
        engine: engine.unwrap_or_default().to_lowercase(),
        engine_version: engine_version.unwrap_or_default(),
        max_num_seqs: max_num_seqs.unwrap_or(1),
        max_num_batched_tokens: max_num_batched_tokens.unwrap_or(1),
        chunked_prefill: chunked_prefill.unwrap_or(true),
        prefix_caching: prefix_caching.unwrap_or(true),
        gpu_memory_utilization: util.unwrap_or(0.92),
        mfu: mfu.unwrap_or(crate::estimate::defaults::MFU.value),
        arrival_rate: arrival_rate.unwrap_or(1.0),
        prompt_tokens_mean: prompt_mean.unwrap_or(1),
        prompt_tokens_p95: prompt_p95.unwrap_or(1),
        output_tokens_mean: output_mean.unwrap_or(1),
        output_tokens_p95: output_p95.unwrap_or(1),
        prompt_tokens_histogram: prompt_hist,
        output_tokens_histogram: output_hist,
        shared_prefix_tokens: shared.unwrap_or(0),
        prefix_hit_rate: hit.unwrap_or(0.0),
        slo_ttft_p95_ms: ttft.unwrap_or(1.0),
        slo_itl_p99_ms: itl.unwrap_or(1.0),
        slo_e2e_p95_ms: e2e.flatten(),
        gpu_hour_usd: price.unwrap_or(1.0),
        headroom: headroom.unwrap_or(0.2),
        measured_tokens_per_s_per_replica: measured.flatten(),
        measured_concurrency: measured_concurrency.flatten(),
        use_measured: use_measured.unwrap_or(false),
    })
}

/// The estimator field each proposal field feeds, so an estimator's complaint can be
/// put beside the field the person typed.
pub(crate) fn field_for_estimator_key(key: &str) -> &str {
    match key {
        "gpu" => "gpu_type",
        "max_model_len" => "prompt_tokens_p95",
        "requests" => "max_num_seqs",
        "prompt_tokens" => "prompt_tokens_mean",
        "output_tokens" => "output_tokens_mean",
        "batch" => "max_num_seqs",
        "context" => "prompt_tokens_mean",
        "chunk_tokens" => "max_num_batched_tokens",
        "hit_rate" => "prefix_hit_rate",
        "gpus" => "gpus_per_replica",
        "hidden" => "config",
        "params" | "layers" | "kv_heads" | "head_dim" => "config",
        other => other,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pairs::from_json;

    pub fn chat_api() -> Pairs {
        [
            ("title", "chat-api on H100"),
            (
                "question",
                "serve chat-api at 45 req/s with p95 TTFT < 800 ms and p99 ITL < 60 ms",
            ),
            ("model", "llama-3.1-8b"),
            ("gpu_type", "h100-sxm"),
            ("gpus_per_replica", "1"),
            ("tp", "1"),
            ("engine", "vLLM"),
            ("engine_version", "0.6.3"),
            ("max_num_seqs", "256"),
            ("max_num_batched_tokens", "1536"),
            ("arrival_rate", "45"),
            ("prompt_tokens_mean", "1500"),
            ("prompt_tokens_p95", "4000"),
            ("output_tokens_mean", "300"),
            ("output_tokens_p95", "800"),
            ("shared_prefix_tokens", "600"),
            ("prefix_hit_rate", "0.8"),
            ("slo_ttft_p95_ms", "800"),
            ("slo_itl_p99_ms", "60"),
            ("gpu_hour_usd", "2.5"),
            ("headroom", "0.2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn has(errors: &[FieldError], field: &str, needle: &str) {
        assert!(
            errors
                .iter()
                .any(|e| e.field == field && e.message.contains(needle)),
            "no `{field}` error containing `{needle}` in {errors:?}"
        );
    }

    #[test]
    fn parses_with_defaults() {
        let p = parse(&chat_api()).unwrap();
        assert_eq!(p.model.as_deref(), Some("llama-3.1-8b"));
        assert_eq!(p.engine, "vllm");
        assert!(p.chunked_prefill && p.prefix_caching);
        assert_eq!(p.gpu_memory_utilization, 0.92);
        assert_eq!(p.pp, 1);
        assert_eq!(parse(&p.to_pairs()).unwrap(), p);
    }

    #[test]
    fn every_problem_is_named_with_what_would_work() {
        let mut pairs = chat_api();
        pairs.insert("gpu_type", "h1000");
        pairs.insert("gpus_per_replica", "2");
        pairs.insert("prompt_tokens_p95", "100");
        pairs.insert("prefix_hit_rate", "1.5");
        pairs.insert("arival_rate", "4");
        pairs.remove("title");
        let e = parse(&pairs).unwrap_err();
        has(&e, "gpu_type", "h100-sxm");
        has(&e, "gpus_per_replica", "TP × PP = 1 × 1");
        has(&e, "prompt_tokens_p95", "at least the mean");
        has(&e, "prefix_hit_rate", "[0, 1]");
        has(&e, "arival_rate", "arrival_rate");
        has(&e, "title", "required");
    }

    #[test]
    fn json_adapter_gives_the_same_value() {
        let json = serde_json::json!({
            "title": "chat-api on H100",
            "question": "serve chat-api at 45 req/s with p95 TTFT < 800 ms and p99 ITL < 60 ms",
            "model": "llama-3.1-8b", "gpu_type": "h100-sxm", "gpus_per_replica": 1, "tp": 1,
            "engine": "vLLM", "engine_version": "0.6.3", "max_num_seqs": 256,
            "max_num_batched_tokens": 1536, "arrival_rate": 45, "prompt_tokens_mean": 1500,
            "prompt_tokens_p95": 4000, "output_tokens_mean": 300, "output_tokens_p95": 800,
            "shared_prefix_tokens": 600, "prefix_hit_rate": 0.8, "slo_ttft_p95_ms": 800,
            "slo_itl_p99_ms": 60, "gpu_hour_usd": 2.5, "headroom": 0.2, "slo_e2e_p95_ms": null
        });
        let read = parse(&from_json(&json, JSON_INPUTS).unwrap()).unwrap();
        assert_eq!(read, parse(&chat_api()).unwrap());
        let e = from_json(&serde_json::json!({"tp": [1]}), JSON_INPUTS).unwrap_err();
        has(&e, "tp", "string, number or boolean");
    }

    #[test]
    fn a_histogram_gives_mean_and_p95() {
        // midpoints 256, 1280, 5120: (256×120 + 1280×300 + 5120×40) / 460 = 1346.8
        assert_eq!(
            histogram_summary("512:120, 2048:300, 8192:40"),
            Ok((1347, 8192))
        );
        assert_eq!(histogram_summary("512:100, 2048:900").unwrap().1, 2048);
        assert!(histogram_summary("512:1, 256:2")
            .unwrap_err()
            .contains("increase"));
        assert!(histogram_summary("512").unwrap_err().contains("no count"));
        let mut pairs = chat_api();
        pairs.remove("prompt_tokens_mean");
        pairs.remove("prompt_tokens_p95");
        pairs.insert("prompt_tokens_histogram", "512:120, 2048:300, 8192:40");
        let p = parse(&pairs).unwrap();
        assert_eq!((p.prompt_tokens_mean, p.prompt_tokens_p95), (1347, 8192));
        assert_eq!(parse(&p.to_pairs()).unwrap(), p);
        pairs.insert("prompt_tokens_mean", "100");
        has(
            &parse(&pairs).unwrap_err(),
            "prompt_tokens_histogram",
            "not both",
        );
        pairs.remove("prompt_tokens_mean");
        pairs.remove("prompt_tokens_histogram");
        has(
            &parse(&pairs).unwrap_err(),
            "prompt_tokens_mean",
            "or give prompt_tokens_histogram",
        );
    }

    #[test]
    fn pipeline_parallelism_is_refused_with_the_tp_alternative() {
        let mut pairs = chat_api();
        pairs.insert("pp", "2");
        pairs.insert("gpus_per_replica", "2");
        has(&parse(&pairs).unwrap_err(), "pp", "set pp to 1 and tp to 2");
    }
}
