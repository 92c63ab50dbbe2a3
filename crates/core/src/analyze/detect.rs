//! Content-based kind detection. Extensions lie (`.json` holds JSONL, `.txt`
//! holds Prometheus text), so only the bytes decide.

use super::readers::starts_gzip;
use super::Kind;
use std::io::Read;

/// How many leading bytes [`detect`] wants (more is ignored; less works but a
/// Kineto trace with many devices puts `traceEvents` a few KiB in).
pub const DETECT_HEAD_BYTES: usize = 64 << 10;

/// True when the content starts with the gzip magic bytes `1f 8b` (RFC 1952).
pub fn is_gzip(head: &[u8]) -> bool {
    starts_gzip(head)
}

/// Decide the kind of an artifact from its first bytes (ideally
/// [`DETECT_HEAD_BYTES`], already decompressed; a gzip head is inflated as far
/// as it goes). Rules, first match wins:
/// - JSON with a `"Test name"` key (vLLM's benchmark summary table) → `sweep`;
/// - JSON object with `traceEvents` (or Kineto's `schemaVersion` +
///   `deviceProperties`) → `pytorch_trace`; a JSON array of events with `ph` too;
/// - JSON object with benchmark keys (vLLM `ttfts`/`num_prompts`/
///   `request_throughput`/`mean_ttft_ms`, GenAI-Perf `time_to_first_token`/
///   `input_config`, GuideLLM `benchmarks`) → `vllm_bench`, also as JSON Lines;
/// - JSON object(s) with per-request fields (`queue_wait_ms`, `first_token_ms` …)
///   → `request_log`;
/// - `==PROF==`/`==ERROR==` lines or a CSV header with `Kernel Name` and
///   `Metric Name`/`ID` → `ncu_csv`;
/// - JSON object(s) with `resourceSpans` (OTLP JSON traces) → `otlp_spans`;
/// - a CSV header with `Total Time` and `Instances` → `nsys_kern_sum`;
/// - a `# gpu …` dmon header or an nvidia-smi `--query-gpu` CSV header → `gpu_telemetry`;
/// - Prometheus text (`# HELP`/`# TYPE` or `name{labels} value` lines) →
///   `prometheus`, or `gpu_telemetry` when most samples are `DCGM_` metrics;
/// - the SQLite 3 header (`SQLite format 3\0`) → `nsys_sqlite` (the Nsight tables are
///   checked when it is analysed: another SQLite file fails there, saying why);
/// - anything else → `unknown`.
pub fn detect(head: &[u8]) -> Kind {
    if is_gzip(head) {
        let mut out = Vec::new();
        let mut dec = flate2::read::MultiGzDecoder::new(head).take(DETECT_HEAD_BYTES as u64);
        let mut chunk = [0u8; 8192];
        // A truncated head ends in an error; what was inflated before it is enough.
        while let Ok(n) = dec.read(&mut chunk) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
        }
        if out.is_empty() || is_gzip(&out) {
            return Kind::Unknown;
        }
        return detect_plain(&out);
    }
    detect_plain(head)
}

fn detect_plain(head: &[u8]) -> Kind {
    let head = &head[..head.len().min(DETECT_HEAD_BYTES)];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    // An SQLite database: the exports of Nsight Systems are; whether this one is (its
    // CUPTI tables) is told when it is read, as the tables need not lie in the head.
    if super::nsys_sqlite::is_sqlite(head) {
        return Kind::NsysSqlite;
    }
    // NUL bytes early on mean a binary file (nsys-rep, pickle …).
    if head.iter().take(4096).any(|&b| b == 0) {
        return Kind::Unknown;
    }
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    // A benchmark summary table: rows (or pandas columns) keyed "Test name".
    if (t.starts_with('{') || t.starts_with('[')) && has_key(t, "Test name") {
        return Kind::Sweep;
    }
    if t.starts_with('{') {
        return detect_json_object(t);
    }
    if t.starts_with('[') {
        let looks_like_events = t.contains("\"ph\"") && t.contains("\"ts\"");
        return if looks_like_events {
            Kind::PytorchTrace
        } else {
            Kind::Unknown
        };
    }
    detect_text(t)
}

/// Keys that only benchmark summaries carry.
const BENCH_KEYS: &[&str] = &[
    "ttfts",
    "itls",
    "num_prompts",
    "request_throughput",
    "mean_ttft_ms",
    "median_ttft_ms",
    "output_throughput",
    "request_goodput:",
    "time_to_first_token",
    "inter_token_latency",
    "request_latency",
    "input_config",
    "benchmarks",
];

/// Keys of the per-request telemetry (methodology.md) that are specific enough.
const REQUEST_KEYS: &[&str] = &[
    "queue_wait_ms",
    "first_token_ms",
    "prefill_ms",
    "tokenize_ms",
    "decode_ms",
    "detokenize_ms",
    "total_ms",
    "itl_p50_ms",
    "itl_p99_ms",
    "batch_size_at_admission",
    "kv_blocks_used",
    "prefix_cache_hit_tokens",
];

fn has_key(text: &str, key: &str) -> bool {
    // Quoted key followed by a colon (allowing spaces), to skip values that
    // merely contain the word.
    let needle = format!("\"{key}\"");
    let mut from = 0;
    while let Some(i) = text[from..].find(&needle) {
        let after = &text[from + i + needle.len()..];
        if after.trim_start().starts_with(':') {
            return true;
        }
        from += i + needle.len();
    }
    false
}

fn detect_json_object(t: &str) -> Kind {
    // OTLP JSON (an export request, or the Collector's file exporter: one per line).
    if has_key(t, "resourceSpans") {
        return Kind::OtlpSpans;
    }
    if has_key(t, "traceEvents") || (has_key(t, "schemaVersion") && has_key(t, "deviceProperties"))
    {
        return Kind::PytorchTrace;
    }
    let first_line = t.lines().next().unwrap_or("");
    // A complete first line that parses on its own: judge by its keys.
    if let Ok(serde_json::Value::Object(map)) =
        serde_json::from_str::<serde_json::Value>(first_line)
    {
        if BENCH_KEYS.iter().any(|k| map.contains_key(*k)) {
            return Kind::VllmBench;
        }
        if REQUEST_KEYS.iter().any(|k| map.contains_key(*k))
            || (map.contains_key("request_id")
                && (map.contains_key("prompt_tokens") || map.contains_key("output_tokens")))
        {
            return Kind::RequestLog;
        }
        if map.contains_key("completed") && map.contains_key("duration") {
            return Kind::VllmBench;
        }
        return Kind::Unknown;
    }
    // Pretty-printed, or a first line longer than the head: scan the keys.
    if BENCH_KEYS.iter().any(|k| has_key(t, k)) {
        return Kind::VllmBench;
    }
    if REQUEST_KEYS.iter().any(|k| has_key(t, k)) {
        return Kind::RequestLog;
    }
    if has_key(t, "completed") && has_key(t, "duration") {
        return Kind::VllmBench;
    }
    Kind::Unknown
}

/// Field names of `nvidia-smi --query-gpu` that mark its CSV header.
const SMI_QUERY_FIELDS: &[&str] = &[
    "utilization.gpu",
    "utilization.memory",
    "power.draw",
    "temperature.gpu",
    "clocks.sm",
    "clocks.current.sm",
    "memory.used",
    "memory.total",
    "pstate",
];

fn detect_text(t: &str) -> Kind {
    let mut prom_comments = 0usize;
    let mut prom_samples = 0usize;
    let mut dcgm_samples = 0usize;
    let mut other_lines = 0usize;
    let mut first_content_line = true;
    let complete = t.ends_with('\n');
    let lines: Vec<&str> = t.lines().take(2000).collect();
    let last = lines.len().saturating_sub(1);
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("==PROF==")
            || line.starts_with("==ERROR==")
            || line.starts_with("==WARNING==")
        {
            return Kind::NcuCsv;
        }
        if line.contains("Kernel Name") && (line.contains("Metric Name") || line.contains("\"ID\""))
        {
            return Kind::NcuCsv;
        }
        if line.contains("Total Time") && line.contains("Instances") && line.contains("Name") {
            return Kind::NsysKernSum;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let mut tokens = rest.split_whitespace();
            let first = tokens.next().unwrap_or("");
            if first == "gpu" || (first == "Date" && rest.split_whitespace().any(|w| w == "gpu")) {
                return Kind::GpuTelemetry;
            }
            if first == "HELP" || first == "TYPE" || first == "perfjournal-capture" {
                prom_comments += 1;
            }
            continue;
        }
        if first_content_line && line.contains(',') {
            let lower = line.to_ascii_lowercase();
            if SMI_QUERY_FIELDS.iter().any(|f| lower.contains(f)) {
                return Kind::GpuTelemetry;
            }
        }
        first_content_line = false;
        match super::prometheus::parse_sample_line(line) {
            Some(s) => {
                prom_samples += 1;
                if s.name.starts_with("DCGM_") {
                    dcgm_samples += 1;
                }
            }
            // The head may end mid-line; don't count that fragment.
            None if i == last && !complete => {}
            None => other_lines += 1,
        }
    }
    if prom_samples + prom_comments > 0 && other_lines * 10 <= prom_samples + prom_comments {
        if dcgm_samples * 2 > prom_samples {
            return Kind::GpuTelemetry;
        }
        return Kind::Prometheus;
    }
    Kind::Unknown
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{gzip, real_fixtures};
    use super::*;

    #[test]
    fn json_kinds() {
        let trace = br#"{"schemaVersion": 1, "traceEvents": [{"ph": "X"}]}"#;
        assert_eq!(detect(trace), Kind::PytorchTrace);
        let pretty = b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n";
        assert_eq!(detect(pretty), Kind::PytorchTrace);
        assert_eq!(
            detect(br#"[{"ph":"X","ts":1,"dur":2}]"#),
            Kind::PytorchTrace
        );
        assert_eq!(detect(b"[1,2,3]"), Kind::Unknown);

        let req = b"{\"request_id\":\"a\",\"queue_wait_ms\":3}\n{\"request_id\":\"b\"}\n";
        assert_eq!(detect(req), Kind::RequestLog);
        let req2 = b"{\"request_id\":\"a\",\"prompt_tokens\":3,\"output_tokens\":4}";
        assert_eq!(detect(req2), Kind::RequestLog);

        let bench = br#"{"date": "x", "num_prompts": 10, "request_rate": "inf", "ttfts": [0.1]}"#;
        assert_eq!(detect(bench), Kind::VllmBench);
        let jsonl = b"{\"completed\": 3, \"duration\": 1.0, \"request_throughput\": 3}\n{\"completed\": 4}\n";
        assert_eq!(detect(jsonl), Kind::VllmBench);
        // First line cut by the head limit: the key scan still decides.
        let cut =
            br#"{"date": "20250101", "backend": "vllm", "num_prompts": 200, "ttfts": [0.1, 0.2"#;
        assert_eq!(detect(cut), Kind::VllmBench);
        let genai = b"{\n \"request_throughput\": {\"unit\": \"requests/sec\", \"avg\": 2.0},\n \"time_to_first_token\": {\"unit\": \"ms\"";
        assert_eq!(detect(genai), Kind::VllmBench);
        let guidellm = b"{\n  \"benchmarks\": [\n    {\"type_\": \"generative_benchmark\"";
        assert_eq!(detect(guidellm), Kind::VllmBench);
        assert_eq!(detect(br#"{"hello": "world"}"#), Kind::Unknown);
        let table = b"[\n  {\n    \"Test name\": \"serving_llama8B_tp1_sharegpt_qps_1\",\n    \"Tput (req/s)\": 0.9";
        assert_eq!(detect(table), Kind::Sweep);
        let columns = br#"{"Test name": {"0": "serving_x_qps_1"}, "P99 TTFT (ms)": {"0": 50}}"#;
        assert_eq!(detect(columns), Kind::Sweep);
        // A value mentioning a key name is not the key.
        assert_eq!(detect(br#"{"note": "traceEvents", "x": 1}"#), Kind::Unknown);
    }

    #[test]
    fn text_kinds() {
        let ncu_err = b"==PROF== Connected to process 1\n==ERROR== failed\n";
        assert_eq!(detect(ncu_err), Kind::NcuCsv);
        let ncu = b"\"ID\",\"Process ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\"\n";
        assert_eq!(detect(ncu), Kind::NcuCsv);
        let ncu_raw = b"\"ID\",\"Process ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"\",\"nsecond\"\n";
        assert_eq!(detect(ncu_raw), Kind::NcuCsv);
        let nsys = b"Processing [report.sqlite] with [cuda_gpu_kern_sum.py]... \n\n Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n";
        assert_eq!(detect(nsys), Kind::NsysKernSum);
        let old_nsys = b"Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n";
        assert_eq!(detect(old_nsys), Kind::NsysKernSum);
        let dmon = b"# gpu    pwr  gtemp  mtemp     sm    mem\n# Idx      W      C      C      %      %\n    0     69     38      -      0      0\n";
        assert_eq!(detect(dmon), Kind::GpuTelemetry);
        let dmon_dt = b"#Date       Time        gpu    pwr     sm\n#YYYYMMDD   HH:MM:SS    Idx      W      %\n";
        assert_eq!(detect(dmon_dt), Kind::GpuTelemetry);
        let query = b"timestamp, index, name, utilization.gpu [%], utilization.memory [%], power.draw [W]\n";
        assert_eq!(detect(query), Kind::GpuTelemetry);
        let prom = b"# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3.0\n";
        assert_eq!(detect(prom), Kind::Prometheus);
        let bare = b"tgi_queue_size 4\ntgi_batch_current_size 12\n";
        assert_eq!(detect(bare), Kind::Prometheus);
        let dcgm = b"# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\"} 87\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 310.5\n";
        assert_eq!(detect(dcgm), Kind::GpuTelemetry);
        assert_eq!(detect(b"just some notes\nnothing here\n"), Kind::Unknown);
        assert_eq!(detect(b""), Kind::Unknown);
        // The SQLite header (an Nsight Systems export, told for sure when read); a binary
        // file without it stays unknown, as does a header cut short.
        assert_eq!(detect(b"SQLite format 3\0\x10\0\x01\x01"), Kind::NsysSqlite);
        assert_eq!(
            detect(&gzip(b"SQLite format 3\0\x10\0\x01\x01")),
            Kind::NsysSqlite
        );
        assert_eq!(detect(b"SQLite format 3"), Kind::Unknown);
        assert_eq!(detect(b"PK\x03\x04\0\0\0"), Kind::Unknown);
    }

    #[test]
    fn gzip_heads_are_inflated() {
        let body = b"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\"}]}".repeat(50);
        let gz = gzip(&body);
        assert!(is_gzip(&gz));
        assert!(!is_gzip(b"{}"));
        assert_eq!(detect(&gz), Kind::PytorchTrace);
        // Only part of the compressed stream.
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| {
                format!("{{\"request_id\":\"r{i}\",\"queue_wait_ms\":{i}}}\n").into_bytes()
            })
            .collect();
        let gz = gzip(&big);
        assert_eq!(detect(&gz[..4096]), Kind::RequestLog);
    }

    #[test]
    fn every_real_fixture_is_detected() {
        let Some(root) = real_fixtures() else { return };
        let cases = [
            ("ncu/llmperfopt__kernel_0001__ncu.details.csv", Kind::NcuCsv),
            ("ncu/llmperfopt__kernel_0001__ncu.section_Occupancy.csv", Kind::NcuCsv),
            ("ncu/llmperfopt__kernel_0001__ncu.section_SpeedOfLight.csv", Kind::NcuCsv),
            ("ncu/llmperfopt__raw_error_only.csv", Kind::NcuCsv),
            ("nsys/llmperfopt__decode__summary_cuda_gpu_kern_sum.csv", Kind::NsysKernSum),
            ("prometheus/sglang_docs_production_metrics_example.prom", Kind::Prometheus),
            ("pytorch_trace/hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", Kind::PytorchTrace),
            ("pytorch_trace/hta__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz", Kind::PytorchTrace),
            ("pytorch_trace/hta__distributed_info_unavailable__distributed_info_not_found.json.gz", Kind::PytorchTrace),
            ("pytorch_trace/hta__trace_file_list__inference_rank_1.json.gz", Kind::PytorchTrace),
            (
                "vllm_bench/llmk8s__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_04.json",
                Kind::VllmBench,
            ),
        ];
        for (rel, want) in cases {
            let mut f = super::super::test_support::open(&root, rel);
            let mut head = vec![0u8; DETECT_HEAD_BYTES];
            let mut n = 0;
            while n < head.len() {
                let k = f.read(&mut head[n..]).unwrap();
                if k == 0 {
                    break;
                }
                n += k;
            }
            assert_eq!(detect(&head[..n]), want, "{rel}");
            // The raw head (compressed or not) and a small head also work.
            assert_eq!(detect(&head[..n.min(4096)]), want, "{rel} (4 KiB head)");
        }
    }
}
