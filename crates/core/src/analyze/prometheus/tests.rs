use super::super::test_support::{open, real_fixtures};
use super::*;

fn snap(text: &str) -> Snapshot {
    parse_snapshot(text.as_bytes()).unwrap()
}

fn vllm_scrape(scale: f64, preempt: f64) -> String {
    // TTFT histogram: 10 obs ≤ 0.1 s, 30 more ≤ 0.5 s, 10 more ≤ 1 s.
    let b = |c: f64| c * scale;
    format!(
        "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n\
         # TYPE vllm:time_to_first_token_seconds histogram\n\
         vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.1\",model_name=\"m\"}} {}\n\
         vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.5\",model_name=\"m\"}} {}\n\
         vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"1.0\",model_name=\"m\"}} {}\n\
         vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"+Inf\",model_name=\"m\"}} {}\n\
         vllm:time_to_first_token_seconds_sum{{engine=\"0\",model_name=\"m\"}} {}\n\
         vllm:time_to_first_token_seconds_count{{engine=\"0\",model_name=\"m\"}} {}\n\
         # TYPE vllm:num_requests_running gauge\n\
         vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} 7\n\
         vllm:num_requests_waiting{{engine=\"0\",model_name=\"m\"}} 2\n\
         vllm:gpu_cache_usage_perc{{engine=\"0\",model_name=\"m\"}} 0.5\n\
         # TYPE vllm:num_preemptions counter\n\
         vllm:num_preemptions_total{{engine=\"0\",model_name=\"m\"}} {preempt}\n\
         vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {}\n\
         vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"m\"}} {}\n\
         vllm:request_success_total{{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"}} {}\n\
         vllm:request_success_total{{engine=\"0\",finished_reason=\"length\",model_name=\"m\"}} {}\n",
        b(10.0),
        b(40.0),
        b(50.0),
        b(50.0),
        b(15.0),
        b(50.0),
        b(1000.0),
        b(250.0),
        b(45.0),
        b(5.0)
    )
}

#[test]
fn parses_lines_with_escapes_timestamps_and_exemplars() {
    let s = parse_sample_line(
        r#"http_requests_total{method="post",path="/a\"b\\c",} 1027 1395066363000"#,
    )
    .unwrap();
    assert_eq!(s.name, "http_requests_total");
    assert_eq!(s.label("path"), Some("/a\"b\\c"));
    assert_eq!(s.value, 1027.0);
    assert_eq!(parse_sample_line("x +Inf").unwrap().value, f64::INFINITY);
    assert!(parse_sample_line("x NaN").unwrap().value.is_nan());
    assert_eq!(
        parse_sample_line(r#"foo_bucket{le="0.5"} 3 # {trace_id="a"} 0.4"#)
            .unwrap()
            .value,
        3.0
    );
    assert!(parse_sample_line("not a metric").is_none());
    assert!(parse_sample_line("x{a=\"1\" 3").is_none());
    assert!(parse_sample_line("9x 3").is_none());
    assert!(parse_sample_line("x{}3").is_none());
}

#[test]
fn histogram_quantile_like_promql() {
    let b = [(0.1, 10.0), (0.5, 40.0), (1.0, 50.0), (f64::INFINITY, 50.0)];
    // rank 25 lies in (0.1, 0.5]: 0.1 + 0.4 * (15/30) = 0.3
    let (p50, lower) = bucket_quantile(0.5, &b).unwrap();
    assert!((p50 - 0.3).abs() < 1e-12 && !lower);
    // rank 5 in the first bucket, which starts at 0.
    assert!((bucket_quantile(0.1, &b).unwrap().0 - 0.05).abs() < 1e-12);
    // rank 49.5 in (0.5, 1]: 0.5 + 0.5 * 9.5/10
    assert!((bucket_quantile(0.99, &b).unwrap().0 - 0.975).abs() < 1e-12);
    let tail = [(1.0, 1.0), (f64::INFINITY, 10.0)];
    assert_eq!(bucket_quantile(0.5, &tail), Some((1.0, true)));
    assert_eq!(bucket_quantile(0.5, &[(f64::INFINITY, 3.0)]), None);
    assert_eq!(
        bucket_quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 0.0)]),
        None
    );
}

#[test]
fn single_scrape() {
    let a = analyze_snapshot(&snap(&vllm_scrape(1.0, 3.0)));
    assert_eq!(a.engine, "vllm");
    assert!(!a.window);
    let t = &a.quantiles["ttft_s"];
    assert!((t.p50.unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(t.count, 50.0);
    assert!((t.mean.unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(a.gauges.running, Some(7.0));
    assert_eq!(a.gauges.waiting, Some(2.0));
    // Older name for KV usage is understood.
    assert_eq!(a.gauges.kv_usage, Some(0.5));
    assert_eq!(a.preemptions, Some(3.0));
    assert_eq!(a.prefix_cache_hit_rate, Some(0.25));
    assert_eq!(a.finished_reasons["stop"], 45.0);
    assert_eq!(a.counters["requests_success"], 50.0);
    assert_eq!(a.models, vec!["m".to_string()]);
    let v = serde_json::to_value(&a).unwrap();
    for k in [
        "engine",
        "window",
        "quantiles",
        "gauges",
        "preemptions",
        "prefix_cache_hit_rate",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
}

#[test]
fn escaped_names_in_a_scrape_are_read_as_the_engine_names() {
    let escaped = vllm_scrape(1.0, 3.0).replace("vllm:", "vllm_");
    assert!(!escaped.contains("vllm:"));
    let a = analyze_snapshot(&snap(&escaped));
    let b = analyze_snapshot(&snap(&vllm_scrape(1.0, 3.0)));
    assert_eq!(a.engine, "vllm");
    assert_eq!(a.quantiles, b.quantiles);
    assert_eq!(a.gauges, b.gauges);
    assert_eq!(a.prefix_cache_hit_rate, Some(0.25));
    assert_eq!(a.counters, b.counters);
}

#[test]
fn vllm_v0_minus_one_hit_rate_is_no_data() {
    // vLLM v0 exposes the hit rate as a gauge, -1 until the first prefix-cache query.
    let text = "# TYPE vllm:num_requests_running gauge\n\
                vllm:num_requests_running{model_name=\"m\"} 1\n\
                # TYPE vllm:gpu_prefix_cache_hit_rate gauge\n\
                vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} -1.0\n";
    let a = analyze_snapshot(&snap(text));
    assert_eq!(a.prefix_cache_hit_rate, None);
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("no data there, not a rate")),
        "{:?}",
        a.notes
    );
    // A real rate beside it is kept, alone.
    let text = format!("{text}vllm:gpu_prefix_cache_hit_rate{{model_name=\"n\"}} 0.4\n");
    assert_eq!(
        analyze_snapshot(&snap(&text)).prefix_cache_hit_rate,
        Some(0.4)
    );
}

#[test]
fn window_deltas_and_resets() {
    let a = snap(&vllm_scrape(1.0, 3.0));
    let b = snap(&vllm_scrape(3.0, 10.0));
    let w = window(&a, &b);
    assert!(w.window);
    let t = &w.quantiles["ttft_s"];
    assert_eq!(t.count, 100.0);
    assert!((t.p50.unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(w.preemptions, Some(7.0));
    assert_eq!(w.counters["prefix_cache_queries"], 2000.0);
    assert!(w.notes.iter().all(|n| !n.contains("reset")));
    // Restart: the later scrape has smaller counts.
    let r = window(&b, &a);
    assert!(r.notes.iter().any(|n| n.contains("reset")), "{:?}", r.notes);
    assert_eq!(r.quantiles["ttft_s"].count, 50.0);
    assert_eq!(r.preemptions, Some(3.0));
}

fn capture_of(scrapes: &[(&str, String)]) -> String {
    scrapes
        .iter()
        .map(|(ts, body)| capture_marker(ts, "http://10.0.0.5:8000/metrics") + body)
        .collect()
}

#[test]
fn capture_file_gives_the_window_and_a_series() {
    let text = capture_of(&[
        ("2026-12-01T10:00:00Z", vllm_scrape(1.0, 3.0)),
        ("2026-12-01T10:00:01Z", vllm_scrape(2.0, 5.0)),
        ("2026-12-01T10:00:03.500Z", vllm_scrape(3.0, 10.0)),
    ]);
    let a = analyze(text.as_bytes()).unwrap();
    // The window runs from the first scrape to the last.
    assert!(a.window);
    assert_eq!(a.quantiles["ttft_s"].count, 100.0);
    assert_eq!(a.preemptions, Some(7.0));
    let c = a.capture.as_ref().unwrap();
    assert_eq!(c.snapshots, 3);
    assert_eq!(c.seconds, 3.5);
    assert_eq!(c.url.as_deref(), Some("http://10.0.0.5:8000/metrics"));
    assert_eq!(c.started, "2026-12-01T10:00:00Z");
    assert_eq!(c.ended, "2026-12-01T10:00:03.500Z");
    let offsets: Vec<f64> = c.series.iter().map(|p| p.offset_s).collect();
    assert_eq!(offsets, vec![0.0, 1.0, 3.5]);
    assert!(c.series[0].rates.is_empty());
    // 1000 more prefix-cache queries in 1 s, then 1000 more in 2.5 s.
    assert_eq!(c.series[1].rates["prefix_cache_queries"], 1000.0);
    assert_eq!(c.series[2].rates["prefix_cache_queries"], 400.0);
    assert_eq!(c.series[2].rates["preemptions"], 2.0);
    assert_eq!(c.series[1].running, Some(7.0));
    assert_eq!(c.series[1].kv_usage, Some(0.5));
    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["capture"]["series"].as_array().unwrap().len(), 3);
}

#[test]
fn plain_scrapes_are_read_as_before_and_one_scrape_captures_say_so() {
    let plain = analyze(vllm_scrape(1.0, 3.0).as_bytes()).unwrap();
    assert!(plain.capture.is_none());
    assert!(serde_json::to_value(&plain)
        .unwrap()
        .get("capture")
        .is_none());
    let one =
        analyze(capture_of(&[("2026-12-01T10:00:00Z", vllm_scrape(1.0, 3.0))]).as_bytes()).unwrap();
    assert!(!one.window);
    assert_eq!(one.capture.as_ref().unwrap().snapshots, 1);
    assert!(
        one.notes.iter().any(|n| n.contains("one scrape")),
        "{:?}",
        one.notes
    );
}

#[test]
fn capture_resets_leave_a_gap_in_the_rates() {
    let text = capture_of(&[
        ("2026-12-01T10:00:00Z", vllm_scrape(3.0, 10.0)),
        ("2026-12-01T10:00:01Z", vllm_scrape(1.0, 3.0)),
    ]);
    let a = analyze(text.as_bytes()).unwrap();
    assert!(a.capture.unwrap().series[1].rates.is_empty());
    assert!(
        a.notes.iter().any(|n| n.contains("went down")),
        "{:?}",
        a.notes
    );
}

#[test]
fn malformed_captures_name_the_line() {
    let early = format!(
        "x 1\n{}",
        capture_of(&[("2026-12-01T10:00:00Z", "x 2\n".into())])
    );
    let e = analyze(early.as_bytes()).unwrap_err().to_string();
    assert!(
        e.starts_with("line 2:") && e.contains("before the first"),
        "{e}"
    );
    let bad_ts = "# perfjournal-capture ts=yesterday url=http://h/\nx 1\n";
    let e = analyze(bad_ts.as_bytes()).unwrap_err().to_string();
    assert!(e.starts_with("line 1:") && e.contains("RFC 3339"), "{e}");
    let empty = capture_of(&[
        ("2026-12-01T10:00:00Z", "x 1\n".into()),
        ("2026-12-01T10:00:01Z", String::new()),
    ]);
    let e = analyze(empty.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("10:00:01Z holds no"), "{e}");
    assert_eq!(
        capture_marker("2026-12-01T10:00:00Z", "http://h/a b"),
        "# perfjournal-capture ts=2026-12-01T10:00:00Z url=http://h/a%20b\n"
    );
}

#[test]
fn tgi_forward_by_method_and_new_vllm_names() {
    let text = "tgi_batch_forward_duration_bucket{method=\"prefill\",le=\"0.01\"} 1\n\
                tgi_batch_forward_duration_bucket{method=\"prefill\",le=\"+Inf\"} 2\n\
                tgi_batch_forward_duration_bucket{method=\"decode\",le=\"0.01\"} 9\n\
                tgi_batch_forward_duration_bucket{method=\"decode\",le=\"+Inf\"} 10\n\
                tgi_queue_size 4\n";
    let a = analyze_snapshot(&snap(text));
    assert_eq!(a.engine, "tgi");
    assert_eq!(a.quantiles["forward_prefill_s"].count, 2.0);
    assert_eq!(a.quantiles["forward_decode_s"].count, 10.0);
    assert_eq!(a.gauges.waiting, Some(4.0));
    let v1 = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.25\n\
              vllm:inter_token_latency_seconds_bucket{le=\"0.02\"} 5\n\
              vllm:inter_token_latency_seconds_bucket{le=\"+Inf\"} 5\n\
              vllm:iteration_tokens_total_bucket{le=\"1\"} 2\n\
              vllm:iteration_tokens_total_bucket{le=\"+Inf\"} 4\n";
    let a = analyze_snapshot(&snap(v1));
    assert_eq!(a.gauges.kv_usage, Some(0.25));
    assert_eq!(
        a.quantiles["itl_s"].metric,
        "vllm:inter_token_latency_seconds"
    );
    assert_eq!(a.quantiles["iteration_tokens"].count, 4.0);
}

#[test]
fn bad_lines_name_their_number() {
    let e = parse_snapshot("# HELP x y\nx 1\nthis is not prometheus\n".as_bytes()).unwrap_err();
    assert!(e.to_string().starts_with("line 3:"), "{e}");
    assert!(parse_snapshot("# only comments\n".as_bytes()).is_err());
}

#[test]
fn real_sglang_fixture() {
    let Some(root) = real_fixtures() else { return };
    let f = open(
        &root,
        "prometheus/sglang_docs_production_metrics_example.prom",
    );
    let a = analyze(f).unwrap();
    assert_eq!(a.engine, "sglang");
    assert_eq!(a.gauges.running, Some(162.0));
    assert_eq!(a.gauges.waiting, Some(2826.0));
    assert_eq!(a.gauges.kv_usage, Some(0.28));
    assert!((a.prefix_cache_hit_rate.unwrap() - 0.0075).abs() < 1e-3);
    let ttft = &a.quantiles["ttft_s"];
    assert_eq!(ttft.count, 11008.0);
    // Most TTFTs are beyond the 30 s bucket: the median is only a lower bound.
    assert_eq!(ttft.p50, Some(30.0));
    assert!(ttft.lower_bounds.contains(&"p50".to_string()));
    let itl = &a.quantiles["itl_s"];
    assert_eq!(itl.count, 7_400_757.0);
    // Rank 3.7M falls in (0.075, 0.1]: between 433,413 and 4,950,195.
    let p50 = itl.p50.unwrap();
    assert!(p50 > 0.075 && p50 < 0.1, "{p50}");
    assert!(a.quantiles.contains_key("e2e_s"));
    assert_eq!(a.counters["generation_tokens"], 7_557_572.0);
    assert_eq!(
        a.models,
        vec!["meta-llama/Llama-3.1-8B-Instruct".to_string()]
    );
}

#[test]
fn timestamped_scrapes_give_the_waiting_gauge_over_time() {
    let scrape = |t: u64, waiting: [u32; 2], success: u32| {
        format!(
            "# TYPE vllm:num_requests_waiting gauge\n\
             vllm:num_requests_waiting{{engine=\"0\"}} {} {t}\n\
             vllm:num_requests_waiting{{engine=\"1\"}} {} {t}\n\
             vllm:request_success_total{{finished_reason=\"stop\"}} {success} {t}\n",
            waiting[0], waiting[1]
        )
    };
    let text = [
        scrape(1_700_000_000_000, [0, 0], 10),
        scrape(1_700_000_002_000, [2, 1], 15),
        scrape(1_700_000_004_000, [0, 1], 20),
    ]
    .concat();
    let a = analyze(text.as_bytes()).unwrap();
    assert_eq!(
        a.waiting_series,
        [
            [1_700_000_000_000.0, 0.0],
            [1_700_000_002_000.0, 3.0],
            [1_700_000_004_000.0, 1.0]
        ]
    );
    // The summary is the last scrape's, not three scrapes summed.
    assert_eq!(a.gauges.waiting, Some(1.0));
    assert!(
        a.notes.iter().any(|n| n.contains("3 timestamps")),
        "{:?}",
        a.notes
    );
    // One untimestamped scrape keeps no series.
    assert!(analyze(&b"vllm:num_requests_waiting 4\n"[..])
        .unwrap()
        .waiting_series
        .is_empty());
}

#[test]
fn a_gauge_that_is_not_a_finite_number_is_not_shown_and_says_why() {
    for bad in ["+Inf", "NaN", "1e400"] {
        let text = vllm_scrape(1.0, 0.0).replace(
            "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 7",
            &format!("vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} {bad}"),
        );
        let a = analyze_snapshot(&snap(&text));
        assert_eq!(a.gauges.running, None, "{bad}");
        assert_eq!(a.gauges.waiting, Some(2.0));
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("vllm:num_requests_running") && n.contains("not a finite")),
            "{bad}: {:?}",
            a.notes
        );
    }
}
