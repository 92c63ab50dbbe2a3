//! Property tests: every parser and every estimator takes any input without a panic,
//! a wrap-around or a hang; what it cannot use it refuses with an error. No database.
//!
//! Quick (256 cases each, part of `cargo test`), or at length:
//! `PROPTEST_CASES=200000 cargo test --release --test prop_inputs prop_`

use std::collections::BTreeMap;

use perfjournal::core::analyze::{analyze, detect, Kind, Options};
use perfjournal::core::estimate::models::ModelSpec;
use perfjournal::core::estimate::{registry, run, Inputs};
use perfjournal::core::method::expected::parse_inputs;
use perfjournal::core::method::record::{parse_step_in, Records};
use perfjournal::core::metric::{Percentile, Unit};
use perfjournal::core::pairs::Pairs;
use perfjournal::core::recall::bundle::parse_import;
use perfjournal::core::recall::{tsquery, SearchQuery};
use proptest::prelude::*;

/// A small valid example of each analyzed kind: mutations of these reach deep into each
/// parser, where random bytes would stop at the first line.
const SEEDS: &[(Kind, &str)] = &[
    (
        Kind::RequestLog,
        "{\"request_id\": \"a\", \"arrival_ts\": \"2025-01-01T00:00:00.25+01:00\", \"tokenize_ms\": 1, \"queue_wait_ms\": 20.5, \"prefill_ms\": 40, \"decode_ms\": 300, \"ttft_ms\": 61, \"e2e_ms\": 361, \"prompt_tokens\": 512, \"output_tokens\": 64, \"status\": \"ok\", \"finish_reason\": \"stop\"}\n\
         {\"request_id\": \"b\", \"arrival_ts\": 1735689600.5, \"queue_wait_ms\": 1, \"prefill_ms\": 30, \"decode_ms\": 200, \"ttft_ms\": 31, \"e2e_ms\": 231, \"prompt_tokens\": 100, \"output_tokens\": 20}\n",
    ),
    (
        Kind::VllmBench,
        "{\"date\": \"20250101-000000\", \"backend\": \"vllm\", \"model_id\": \"meta-llama/Llama-3.1-8B-Instruct\", \"num_prompts\": 3, \"completed\": 3, \"duration\": 2.5, \"request_rate\": \"inf\", \"max_concurrency\": 8, \"total_input_tokens\": 300, \"total_output_tokens\": 60, \"request_throughput\": 1.2, \"output_throughput\": 24, \"mean_ttft_ms\": 50, \"median_ttft_ms\": 48, \"p99_ttft_ms\": 90, \"mean_tpot_ms\": 10, \"p99_tpot_ms\": 14, \"mean_itl_ms\": 10, \"p99_itl_ms\": 20, \"input_lens\": [100, 100, 100], \"output_lens\": [20, 20, 20], \"ttfts\": [0.05, 0.04, 0.09], \"itls\": [[0.01, 0.011], [0.009], [0.02, 0.01]], \"errors\": [\"\", \"\", \"\"]}\n",
    ),
    (
        Kind::Prometheus,
        "# HELP vllm:time_to_first_token_seconds TTFT\n# TYPE vllm:time_to_first_token_seconds histogram\n\
         vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.1\"} 5\n\
         vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"1.0\"} 9\n\
         vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 10\n\
         vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 3.5\n\
         vllm:time_to_first_token_seconds_count{model_name=\"m\"} 10\n\
         # TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 4 1700000000000\n",
    ),
    (
        Kind::PytorchTrace,
        "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100\"}], \"traceEvents\": [\
         {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 100, \"dur\": 50},\
         {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 110, \"dur\": 5, \"args\": {\"correlation\": 7}},\
         {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 120, \"dur\": 30, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 7}},\
         {\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Sync\", \"pid\": 0, \"tid\": 7, \"ts\": 150, \"dur\": 10, \"args\": {\"device\": 0, \"stream\": 7}},\
         {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"pid\": 0, \"tid\": 7, \"ts\": 170, \"dur\": 4, \"args\": {\"device\": 0, \"stream\": 7, \"bytes\": 4096}}]}",
    ),
    (
        Kind::NcuCsv,
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\"\n\
         \"0\",\"1\",\"python\",\"h\",\"gemm\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"12.5\",\"\",\"\",\"\"\n\
         \"0\",\"1\",\"python\",\"h\",\"gemm\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"71.2\",\"\",\"\",\"\"\n",
    ),
    (
        Kind::NsysKernSum,
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n\
         61.5,1234567,100,12345.7,12000.0,11000,15000,800.1,\"sm90_xmma_gemm\"\n\
         38.5,772000,50,15440.0,15000.0,14000,17000,500.0,\"flash_fwd_kernel\"\n",
    ),
    (
        Kind::Sweep,
        "[{\"Test name\": \"serving_llama8B_tp1_sharegpt_qps_1\", \"GPU\": \"H100\", \"# of req.\": 200, \"Tput (req/s)\": 0.99, \"Output Tput (tok/s)\": 190.5, \"Mean TTFT (ms)\": 30.1, \"Median TTFT (ms)\": 28, \"P99 TTFT (ms)\": 60.2, \"Mean ITL (ms)\": 10, \"P99 ITL (ms)\": 22},\n\
         {\"Test name\": \"serving_llama8B_tp1_sharegpt_qps_inf\", \"Tput (req/s)\": 9.5, \"P99 TTFT (ms)\": 2400, \"Median TPOT (ms)\": 31}]\n",
    ),
    (
        Kind::GpuTelemetry,
        "# gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk\n# Idx     W     C     C     %     %     %     %   MHz   MHz\n    0   350    60    55    90    40     0     0  2619  1980\n    0   348    61    55    88    41     0     0  2619  1980\n",
    ),
];

/// Text with one of a few mutations: a byte range replaced by other text (often
/// multi-byte characters or digits), cut short, or a piece repeated.
fn mutated(seed: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let len = seed.len();
    (
        0..=len,
        0usize..64,
        prop_oneof![
            "[0-9eE.+-]{0,12}",
            "[\\PC]{0,6}",
            Just(String::new()),
            "[\"{}\\[\\],:]{0,4}",
            Just("é".to_string()),
            Just("18446744073709551616".to_string()),
            Just("-1e308".to_string()),
            Just("NaN".to_string()),
        ],
        0u8..4,
    )
        .prop_map(move |(at, cut, insert, how)| {
            let bytes = seed.as_bytes();
            let end = (at + cut).min(len);
            let mut out = bytes[..at].to_vec();
            match how {
                0 => {
                    out.extend(insert.as_bytes());
                    out.extend(&bytes[end..]);
                }
                1 => {}
                2 => {
                    out.extend(&bytes[at..end]);
                    out.extend(&bytes[at..]);
                }
                _ => {
                    out.extend(insert.as_bytes());
                    out.extend(&bytes[at..]);
                }
            }
            out
        })
}

fn any_kind() -> impl Strategy<Value = Kind> {
    prop::sample::select(Kind::ALL.to_vec())
}

fn run_analysis(kind: Kind, bytes: &[u8]) {
    let _ = detect(bytes);
    let _ = analyze(kind, bytes, &Options::default(), &|_| {});
}

/// A value a field might hold: numbers of every size and sign, timestamps, text.
fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        (0u32..100_000).prop_map(|v| v.to_string()),
        "[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,9})?(Z|[+-][0-9é]{1,2}:[0-9é]{1,2})?",
        "[\\PC]{0,12}",
        "[0-9]{1,4}(\\.[0-9]{1,3})? ?(ms|s|µs|us|%|GB|GiB|tokens|req/s|,[0-9]{3})?",
    ]
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        any::<f64>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        (0u64..1 << 33).prop_map(serde_json::Value::from),
        field_value().prop_map(serde_json::Value::from),
        any::<bool>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ]
}

const REQUEST_LOG_KEYS: &[&str] = &[
    "request_id",
    "arrival_ts",
    "tokenize_ms",
    "queue_wait_ms",
    "prefill_ms",
    "decode_ms",
    "ttft_ms",
    "e2e_ms",
    "itl_ms",
    "prompt_tokens",
    "output_tokens",
    "cached_tokens",
    "status",
    "finish_reason",
    "tenant",
    "model_version",
];

const CONFIG_KEYS: &[&str] = &[
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
    "intermediate_size",
    "head_dim",
    "model_type",
    "tie_word_embeddings",
    "attention_bias",
    "num_local_experts",
    "n_routed_experts",
    "num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "n_shared_experts",
    "first_k_dense_replace",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
];

fn config_json() -> impl Strategy<Value = String> {
    let sizes = prop_oneof![
        (1u64..70_000).prop_map(serde_json::Value::from),
        (1u64..1 << 34).prop_map(serde_json::Value::from),
        json_value(),
    ];
    prop::collection::btree_map(
        prop::sample::select(CONFIG_KEYS),
        sizes,
        0..CONFIG_KEYS.len(),
    )
    .prop_map(|m| {
        let obj: serde_json::Map<String, serde_json::Value> =
            m.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        serde_json::Value::Object(obj).to_string()
    })
}

const STEP_WORDS: &[&str] = &[
    "after_value",
    "batch",
    "change",
    "chunked_prefill",
    "classification",
    "concurrency",
    "confirmed",
    "context",
    "cpu_total",
    "description",
    "dram_pct",
    "effort",
    "effort_days",
    "engine",
    "estimate",
    "findings",
    "floor_ms",
    "gpu",
    "gpu_count",
    "gpu_total",
    "gpu_type",
    "kv_dtype",
    "max_num_batched_tokens",
    "metric",
    "model",
    "name",
    "notes",
    "observed",
    "occupancy_pct",
    "p50",
    "p90",
    "p95",
    "p99",
    "percentile",
    "phase",
    "phase_total_ms",
    "quality",
    "share",
    "sm_pct",
    "speedup",
    "target",
    "time_ms",
    "title",
    "tp",
    "unit",
    "verdict",
    "version",
    "wall",
    "weight_dtype",
    "workload",
];

fn step_key() -> impl Strategy<Value = String> {
    let word = prop::sample::select(STEP_WORDS);
    prop_oneof![
        word.prop_map(str::to_string),
        (
            prop::sample::select(&["rows", "phases", "kernels", "candidates"][..]),
            0usize..4,
            prop::sample::select(STEP_WORDS),
        )
            .prop_map(|(list, i, w)| format!("{list}[{i}][{w}]")),
        "[a-z_\\[\\]0-9]{1,12}",
    ]
}

proptest! {
    #[test]
    fn prop_analyzers_take_mutated_examples(
        (kind, bytes) in prop::sample::select(SEEDS.to_vec())
            .prop_flat_map(|(kind, seed)| (Just(kind), mutated(seed)))
    ) {
        run_analysis(kind, &bytes);
    }

    #[test]
    fn prop_analyzers_take_any_bytes(
        kind in any_kind(),
        bytes in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        run_analysis(kind, &bytes);
    }

    #[test]
    fn prop_request_log_rows_with_any_values(
        rows in prop::collection::vec(
            prop::collection::btree_map(prop::sample::select(REQUEST_LOG_KEYS), json_value(), 0..10),
            1..12,
        ),
    ) {
        let mut text = String::new();
        for row in rows {
            let obj: serde_json::Map<String, serde_json::Value> =
                row.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            text.push_str(&serde_json::Value::Object(obj).to_string());
            text.push('\n');
        }
        run_analysis(Kind::RequestLog, text.as_bytes());
    }

    #[test]
    fn prop_config_json_counts_never_wrap(text in config_json()) {
        if let Ok(spec) = ModelSpec::from_config_json(&text) {
            prop_assert!(spec.params().is_some(), "an accepted config has a count: {text}");
        }
    }

    #[test]
    fn prop_estimators_take_any_inputs(
        which in 0..registry().len(),
        values in prop::collection::vec(prop::option::weighted(0.8, field_value()), 24),
        model in prop::option::of(prop_oneof![
            prop::sample::select(&["llama-3.1-8b", "llama-3.3-70b", "mixtral-8x7b", "deepseek-v3", "qwen2.5-7b"][..])
                .prop_map(str::to_string),
            "[\\PC]{0,8}",
        ]),
        gpu in prop::option::of(prop::sample::select(&["h100-sxm", "a100-80g", "l40s", "b200", "x"][..])),
        config in prop::option::of(config_json()),
    ) {
        let info = &registry()[which];
        let mut inputs: Inputs = BTreeMap::new();
        for (field, value) in info.fields.iter().zip(values) {
            if let Some(v) = value {
                inputs.insert(field.name.to_string(), v);
            }
        }
        if let Some(m) = model {
            inputs.insert("model".into(), m);
        }
        if let Some(g) = gpu {
            inputs.insert("gpu".into(), g.to_string());
        }
        if let Some(c) = config {
            inputs.insert("config".into(), c);
        }
        let _ = run(info.name, &inputs);
    }

    #[test]
    fn prop_search_queries_parse_or_refuse(
        pairs in prop::collection::vec(
            (prop_oneof![
                prop::sample::select(&["q", "page", "sort", "kind", "model", "gpu", "engine", "tag", "from", "to"][..])
                    .prop_map(str::to_string),
                "[\\PC]{0,6}",
            ], "[\\PC]{0,40}"),
            0..8,
        ),
        text in "[\\PC]{0,60}",
    ) {
        let _ = SearchQuery::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let _ = tsquery::parse(&text);
    }

    #[test]
    fn prop_steps_parse_or_refuse(
        step in 0u8..9,
        pairs in prop::collection::vec((step_key(), field_value()), 0..16),
    ) {
        let _ = parse_step_in(step, &Pairs::new(pairs), &Records::default());
    }

    #[test]
    fn prop_small_parsers_take_any_text(text in "[\\PC\n]{0,200}") {
        let _ = parse_inputs(&text);
        let _ = Unit::parse(&text);
        let _ = Percentile::parse(&text);
        let _ = parse_import(&text);
        let _ = ModelSpec::from_config_json(&text);
    }

    #[test]
    fn prop_journal_import_takes_mutated_entries(
        bytes in mutated("# Journal\n\n## 2025-01-01 · Chunked prefill off made TTFT p95 3.2 s\n\n**SYMPTOM** p95 TTFT 3,200 ms against 800 ms\n\n**BASELINE** llama-3.1-8b on 1× h100-sxm, vllm 0.6.3\n\n**DIAGNOSIS** queue wait 84 % of TTFT\n\n**CHANGE** enable chunked prefill\n\n**RESULT** 3,200 → 780 ms, confirmed\n\n**TAGS** queue, prefill\n"),
    ) {
        let _ = parse_import(&String::from_utf8_lossy(&bytes));
    }
}

/// The seeds are valid examples, so their mutations start deep inside each parser.
#[test]
fn seeds_analyze() {
    for (kind, seed) in SEEDS {
        assert_eq!(detect(seed.as_bytes()), *kind, "{seed}");
        let result = analyze(*kind, seed.as_bytes(), &Options::default(), &|_| {});
        assert!(result.is_ok(), "{kind:?}: {:?}", result.err());
    }
}

/// The example Nsight Systems export as bytes (built once).
fn nsys_export() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        use perfjournal::core::analyze::nsys_sqlite::{Connection, EXAMPLE_EXPORT_SQL};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(EXAMPLE_EXPORT_SQL).unwrap();
        drop(conn);
        std::fs::read(&path).unwrap()
    })
}

proptest! {
    /// An Nsight Systems export with bytes overwritten anywhere (pages, schema, header)
    /// or cut short: SQLite reads it or refuses it, the analyzer never panics, and the
    /// spooled copy is gone afterwards.
    #[test]
    fn prop_nsys_sqlite_takes_corrupted_exports(
        edits in prop::collection::vec((0.0f64..1.0, any::<u8>(), 1usize..64), 1..6),
        cut in prop::option::of(0.0f64..1.0),
    ) {
        use perfjournal::artifacts::spool::{analyze as analyze_file, Spool};
        let mut bytes = nsys_export().to_vec();
        for (at, value, len) in edits {
            let start = (at * bytes.len() as f64) as usize;
            let end = (start + len).min(bytes.len());
            for b in &mut bytes[start..end] {
                *b = value;
            }
        }
        if let Some(cut) = cut {
            bytes.truncate((cut * bytes.len() as f64) as usize);
        }
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool { dir: dir.path().join("spool"), limit: 1 << 30 };
        let _ = analyze_file(Kind::NsysSqlite, &bytes[..], &Options::default(), &|_| {}, &spool);
        let left: Vec<_> = std::fs::read_dir(&spool.dir).unwrap().collect();
        prop_assert!(left.is_empty(), "spooled files left: {:?}", left);
    }
}
