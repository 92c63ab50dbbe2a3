use super::super::test_support::{gzip, open, real_fixtures};
use super::breakdown::{SHOWN_STREAMS, TIMELINE_BUCKETS};
use super::state::MAX_STREAMS;
use super::*;
use crate::analyze::Options;
use serde_json::{json, Value};
use std::collections::HashMap;

fn run(doc: &Value, opts: &Options) -> TraceAnalysis {
    analyze(doc.to_string().as_bytes(), opts).unwrap()
}

fn kernel(name: &str, ts: f64, dur: f64, stream: i64, corr: u64) -> Value {
    json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
           "args": {"device": 0, "stream": stream, "correlation": corr}})
}

fn launch(ts: f64, dur: f64, corr: u64) -> Value {
    json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
           "ts": ts, "dur": dur, "args": {"correlation": corr}})
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// HTA 0.5.0's temporal and idle breakdowns on the real fixtures, printed by
/// `tests/oracles/hta_temporal.py` (each fixture alone in a folder, read with
/// `TraceAnalysis(trace_dir, include_last_profiler_step)`): the fixture, that flag, the
/// rank, [idle, compute, non-compute, kernel_time (= span)] and per stream [host wait,
/// kernel wait, other], all µs. The AMD, NCCL and MI300X traces have fractional times
/// (HTA rounds them); the others whole µs. HTA raises on the two fixtures without GPU
/// kernels.
type HtaFixture = (
    &'static str,
    bool,
    i64,
    [f64; 4],
    &'static [(i64, [f64; 3])],
);
const HTA_TEMPORAL: &[HtaFixture] = &[
    (
        "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        true,
        0,
        [8780.0, 96.0, 35.0, 8911.0],
        &[(0, [8780.0, 0.0, 0.0])],
    ),
    (
        "hta__trace_file_list__inference_rank_1.json.gz",
        true,
        1,
        [1599.0, 30.0, 0.0, 1629.0],
        &[(7, [1599.0, 0.0, 0.0])],
    ),
    (
        "hta__nccl_parser_config__nccl_data.json.gz",
        false,
        0,
        [338_781.0, 75_169.0, 21_636.0, 435_586.0],
        &[(7, [357_247.0, 2155.0, 0.0]), (40, [381_499.0, 0.0, 0.0])],
    ),
    (
        "hta__nccl_parser_config__nccl_data.json.gz",
        true,
        0,
        [506_512.0, 113_012.0, 41_026.0, 660_550.0],
        &[(7, [542_749.0, 3224.0, 0.0]), (40, [583_942.0, 0.0, 0.0])],
    ),
    (
        "kineto__resnet50_num_workers_0__worker0.pt.trace.json.gz",
        false,
        0,
        [208_143.0, 504_477.0, 10_990.0, 723_610.0],
        &[(7, [197_384.0, 10_759.0, 0.0])],
    ),
    (
        "kineto__resnet50_num_workers_0__worker0.pt.trace.json.gz",
        true,
        0,
        [263_654.0, 605_209.0, 13_148.0, 882_011.0],
        &[(7, [250_839.0, 12_815.0, 0.0])],
    ),
    (
        "tracemap__1_mi300x_1000isl_10osl_32con.pt.trace.json.gz",
        false,
        0,
        [291_307.0, 235_095.0, 42_756.0, 569_158.0],
        &[
            (3, [269_704.0, 21_351.0, 509.0]),
            (8, [409_548.0, 0.0, 0.0]),
        ],
    ),
];

#[test]
fn longest_runs_and_gaps_say_where_to_look() {
    let doc = json!({"traceEvents": [
        launch(900.0, 5.0, 1),
        kernel("gemm", 1000.0, 50.0, 7, 1),
        kernel("gemm", 1100.0, 80.0, 7, 2),
        kernel("softmax", 1500.0, 10.0, 7, 3),
        kernel("gemm", 1520.0, 20.0, 7, 4),
    ]});
    let a = run(&doc, &Options::default());
    // The first complete event is the launch call at 900 µs.
    assert_eq!(a.first_ts_us, Some(900.0));
    let gemm = a.kernels.iter().find(|k| k.name == "gemm").unwrap();
    assert_eq!(gemm.longest_at_us, Some(1100.0));
    let idle = &a.idle[0];
    // Gaps: 50 (1050→1100), 320 (1180→1500), 10 (1510→1520).
    assert_eq!(idle.longest_gap_us, 320.0);
    assert_eq!(idle.longest_gap_at_us, Some(1180.0));
}

#[test]
fn a_stream_per_event_stays_bounded() {
    // Every kernel on its own stream: the structures and the stored analysis stay small,
    // and the analysis says what it pooled.
    let n = MAX_STREAMS + 500;
    let events: Vec<Value> = (0..n)
        .map(|i| kernel(&format!("k{i}"), i as f64 * 10.0, 5.0, i as i64, i as u64))
        .collect();
    let a = run(&json!({ "traceEvents": events }), &Options::default());
    assert!(a.timeline.len() <= SHOWN_STREAMS, "{}", a.timeline.len());
    assert!(a.idle.len() <= SHOWN_STREAMS, "{}", a.idle.len());
    assert!(a.idle.iter().any(|r| r.stream == POOLED));
    assert_eq!(
        a.idle.iter().map(|r| r.kernels).sum::<u64>(),
        n as u64,
        "every event counted"
    );
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("pooled as \"other streams\"")),
        "{:?}",
        a.notes
    );
    let stored = serde_json::to_vec(&a).unwrap().len();
    assert!(stored < 200_000, "stored analysis {stored} bytes");
}

#[test]
fn timeline_buckets_hold_each_streams_busy_fraction() {
    // Stream 7 busy for the first half of 0–120 µs, stream 8 for the last quarter.
    let doc = json!({"traceEvents": [
        kernel("a", 0.0, 60.0, 7, 1), launch(-5.0, 1.0, 1),
        kernel("b", 90.0, 30.0, 8, 2), launch(-4.0, 1.0, 2),
    ]});
    let t = run(&doc, &Options::default()).timeline;
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].stream, t[1].stream), (7, 8));
    assert_eq!(t[0].busy.len(), TIMELINE_BUCKETS);
    assert!(close(t[0].bucket_us, 1.0));
    assert!(close(t[0].busy[0], 1.0) && close(t[0].busy[59], 1.0) && close(t[0].busy[60], 0.0));
    assert!(close(t[1].busy[89], 0.0) && close(t[1].busy[90], 1.0) && close(t[1].busy[119], 1.0));
}

#[test]
fn idle_intervals_per_device_with_what_preceded_them() {
    let step = |name: &str, ts: f64, dur: f64| {
        json!({"ph": "X", "cat": "user_annotation", "name": name, "pid": 100, "tid": 100,
               "ts": ts, "dur": dur})
    };
    let doc = json!({
        "baseTimeNanoseconds": 1_700_000_000_000_000_000u64,
        "traceEvents": [
            step("ProfilerStep#1", -20.0, 720.0), step("ProfilerStep#2", 700.0, 300.0),
            step("ProfilerStep#3", 1000.0, 100.0),
            launch(-10.0, 5.0, 1), kernel("a", 0.0, 100.0, 7, 1),
            // Launched before the GPU went idle, started 100 µs later.
            launch(50.0, 5.0, 2), kernel("b", 200.0, 100.0, 7, 2),
            // Launched after the GPU went idle: host wait.
            launch(350.0, 5.0, 3), kernel("c", 400.0, 50.0, 7, 3),
            // A synchronisation covers the start of the next gap.
            launch(450.0, 150.0, 10),
            {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7,
             "ts": 450.0, "dur": 150.0, "args": {"stream": 7, "correlation": 10}},
            launch(599.0, 1.0, 4), kernel("d", 600.0, 50.0, 7, 4),
            // A step boundary (700) inside the gap.
            launch(750.0, 5.0, 5), kernel("e", 800.0, 50.0, 7, 5),
            // Another stream keeps the device busy: a 10 µs gap is not kept.
            launch(855.0, 1.0, 6), kernel("f", 860.0, 10.0, 9, 6)
        ]
    });
    let a = run(&doc, &Options::default());
    let got: Vec<(f64, f64, Preceded, i64)> = a
        .idle_intervals
        .iter()
        .map(|i| (i.start_us, i.dur_us, i.preceded_by, i.stream))
        .collect();
    assert_eq!(
        got,
        [
            (100.0, 100.0, Preceded::LaunchGap, 7),
            (300.0, 100.0, Preceded::HostWait, 7),
            (450.0, 150.0, Preceded::Sync, 7),
            (650.0, 150.0, Preceded::StepEnd, 7),
        ]
    );
    assert_eq!(a.idle_intervals_found, 4);
    assert_eq!(a.gpu_window_us, Some([0.0, 870.0]));
}

#[test]
fn temporal_kernel_and_idle_breakdowns() {
    // Stream 7: gemm [0,100), nccl [110,160) overlapping memcpy on stream 8 [150,200).
    // Stream 7 then waits for the host: launch of k3 at 300 > previous end 160.
    let doc = json!({
        "schemaVersion": 1,
        "distributedInfo": {"rank": 3, "world_size": 8},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85_000_000_000u64, "numSms": 132}],
        "traceEvents": [
            launch(-10.0, 5.0, 1), kernel("gemm", 0.0, 100.0, 7, 1),
            launch(50.0, 5.0, 2), kernel("ncclDevKernel_AllReduce", 110.0, 50.0, 7, 2),
            launch(60.0, 5.0, 3),
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 8,
             "ts": 150.0, "dur": 50.0, "args": {"device": 0, "stream": 8, "correlation": 3, "bytes": 1024}},
            launch(300.0, 10.0, 4), kernel("gemm", 400.0, 100.0, 7, 4),
            kernel("gemm", 520.0, 10.0, 7, 99),
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
            {"ph": "i", "name": "marker", "ts": 1}
        ]
    });
    let a = run(&doc, &Options::default());
    assert_eq!(a.rank, 3);
    let t = &a.temporal[0];
    assert!(close(t.span_us, 530.0));
    // busy = [0,100) + [110,200) + [400,500) + [520,530) = 300
    assert!(close(t.busy_us, 300.0));
    assert!(close(t.idle_us, 230.0));
    assert!(close(t.compute_us, 210.0));
    assert!(close(t.non_compute_us, 90.0));
    assert!(close(a.gpu_busy_ratio.unwrap(), 300.0 / 530.0));
    let gemm = a.kernels.iter().find(|k| k.name == "gemm").unwrap();
    assert_eq!((gemm.count, gemm.category.as_str()), (3, "COMP"));
    assert!(close(gemm.sum_us, 210.0) && close(gemm.min_us, 10.0) && close(gemm.max_us, 100.0));
    assert_eq!(a.kernels[0].name, "gemm");
    let cats: HashMap<_, _> = a
        .kernel_categories
        .iter()
        .map(|c| (c.category.as_str(), c.sum_us))
        .collect();
    assert!(close(cats["COMM"], 50.0) && close(cats["MEM"], 50.0));
    // Stream 7 gaps: 10 (kernel wait), 240 (host wait: launch at 300 > 160),
    // 20 (k 99 has no launch: kernel wait).
    let s7 = a.idle.iter().find(|r| r.stream == 7).unwrap();
    assert!(close(s7.host_wait_us, 240.0), "{s7:?}");
    assert!(close(s7.kernel_wait_us, 30.0), "{s7:?}");
    assert!(close(s7.other_us, 0.0));
    assert_eq!(s7.kernels, 4);
    // Launch delays: 0-(−5)=5, 110-55=55, 150-65=85, 400-310=90.
    assert_eq!(a.launch.matched, 4);
    assert_eq!(a.launch.unmatched, 1);
    assert!(close(a.launch.launch_delay_us.max.unwrap(), 90.0));
    assert!(close(a.launch.launch_delay_us.min.unwrap(), 5.0));
    let d = &a.devices[0];
    assert_eq!(d.name.as_deref(), Some("NVIDIA H100"));
    assert_eq!(d.num_sms, Some(132));
    assert_eq!(d.streams, 2);
    assert!(close(d.busy_us, 300.0));
    let v = serde_json::to_value(&a).unwrap();
    for k in [
        "temporal",
        "kernels",
        "idle",
        "launch",
        "gpu_busy_ratio",
        "devices",
        "notes",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
    for k in ["rank", "span_us", "idle_us", "compute_us", "non_compute_us"] {
        assert!(v["temporal"][0].get(k).is_some(), "{k}");
    }
    for k in [
        "name", "category", "count", "sum_us", "mean_us", "min_us", "max_us",
    ] {
        assert!(v["kernels"][0].get(k).is_some(), "{k}");
    }
    for k in [
        "rank",
        "stream",
        "host_wait_us",
        "kernel_wait_us",
        "other_us",
    ] {
        assert!(v["idle"][0].get(k).is_some(), "{k}");
    }
}

#[test]
fn other_gap_when_long_and_not_host_bound() {
    let doc = json!({"traceEvents": [
        launch(0.0, 1.0, 1), kernel("a", 10.0, 10.0, 7, 1),
        launch(2.0, 1.0, 2), kernel("b", 100.0, 10.0, 7, 2),
    ]});
    let a = run(&doc, &Options::default());
    let s = &a.idle[0];
    assert!(close(s.other_us, 80.0) && close(s.host_wait_us, 0.0) && close(s.kernel_wait_us, 0.0));
    assert!(a.notes.iter().any(|n| n.contains("rank 0 assumed")));
}

#[test]
fn last_profiler_step_filter_like_hta() {
    let step = |n: u32, ts: f64, dur: f64| {
        json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{n}"),
               "pid": 100, "tid": 100, "ts": ts, "dur": dur})
    };
    let doc = json!({"traceEvents": [
        step(1, 0.0, 100.0), launch(10.0, 1.0, 1), kernel("a", 20.0, 10.0, 7, 1),
        step(2, 100.0, 100.0), launch(110.0, 1.0, 2), kernel("b", 120.0, 10.0, 7, 2),
        launch(250.0, 1.0, 3), kernel("c", 260.0, 10.0, 7, 3),
        kernel("orphan", 40.0, 10.0, 7, 77)
    ]});
    let dropped = run(&doc, &Options::default());
    assert_eq!(dropped.profiler_steps, 2);
    assert_eq!(dropped.excluded_gpu_events, 3);
    assert!(close(dropped.temporal[0].span_us, 10.0));
    let kept = run(
        &doc,
        &Options {
            include_last_profiler_step: true,
            ..Options::default()
        },
    );
    // c launched after the last step ended, orphan never launched: both out.
    assert_eq!(kept.excluded_gpu_events, 2);
    assert!(close(kept.temporal[0].span_us, 110.0));
}

#[test]
fn traps_big_ints_strings_old_cats_and_bad_utf8() {
    let mut text = String::from(
        r#"{"traceEvents": [
              {"ph": "X", "cat": "Kernel", "name": "old_kernel", "pid": 0, "tid": "stream 7",
               "ts": 1665536373729077, "dur": 4,
               "args": {"stream": 7, "correlation": 538860, "External id": 0, "grid": [64, 1, 1]}},
              {"ph": "X", "cat": "", "name": "nccl:all_reduce", "pid": "Spans", "tid": "x", "ts": 1, "dur": 1},
              {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1665536373729000, "dur": 2,
               "args": {"Process Group ID": 18446744073709551615000, "pg id": -92233720368547758070, "seq": "7"}},
              {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
               "ts": "1665536373729070", "dur": 2.5, "args": {"correlation": "538860", "stream": "0x0"}},
              {"ph": "X", "cat": "cpu_op", "name": "bad "#,
    );
    let mut bytes = std::mem::take(&mut text).into_bytes();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(br#" name", "pid": 1, "tid": 1, "ts": 3, "dur": 1}]}"#);
    let a = analyze(&bytes[..], &Options::default()).unwrap();
    assert_eq!(a.events.kernels, 1);
    assert_eq!(a.events.cpu_ops, 2);
    assert_eq!(a.launch.matched, 1);
    assert!(close(a.launch.launch_delay_us.mean.unwrap(), 4.5));
    assert_eq!(a.idle[0].stream, 7);
    assert!(a.notes.iter().any(|n| n.contains("UTF-8")), "{:?}", a.notes);
    // The same through gzip and the top-level analyze().
    let gz = gzip(&bytes);
    let top = super::super::analyze(
        super::super::Kind::PytorchTrace,
        &gz[..],
        &Options::default(),
        &|_| {},
    )
    .unwrap();
    assert_eq!(top.kind(), super::super::Kind::PytorchTrace);
}

#[test]
fn stream_synchronisation_counts_in_the_span_as_idle() {
    // Kernels 0–100 and 150–200; a stream sync 200–260 after the last kernel and
    // one 90–120 overlapping a kernel. HTA's span runs to the end of the sync.
    let sync = |ts: f64, dur: f64, corr: u64| {
        json!({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7,
               "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7, "correlation": corr}})
    };
    let doc = json!({"traceEvents": [
        launch(-10.0, 5.0, 1), kernel("gemm", 0.0, 100.0, 7, 1),
        launch(140.0, 5.0, 2), kernel("gemm", 150.0, 50.0, 7, 2),
        sync(200.0, 60.0, 3), sync(90.0, 30.0, 4),
        // A sync with no stream (a context sync) is not on a GPU stream.
        json!({"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": 0,
               "ts": 300.0, "dur": 50.0, "args": {"device": 0, "stream": -1}}),
    ]});
    let a = run(&doc, &Options::default());
    let t = &a.temporal[0];
    assert!(close(t.span_us, 260.0), "{t:?}");
    assert!(close(t.idle_us, 110.0), "{t:?}");
    // 100–120 (the overlapping sync past the kernel) and 200–260.
    assert!(close(t.sync_us, 80.0), "{t:?}");
    assert!(
        a.notes.iter().any(|n| n.contains("cuda_sync")),
        "{:?}",
        a.notes
    );
}

#[test]
fn negative_launch_delays_are_counted_and_explained() {
    // The second kernel starts 20 µs before its 50 µs launch call returns.
    let doc = json!({"traceEvents": [
        launch(0.0, 5.0, 1), kernel("a", 10.0, 5.0, 7, 1),
        launch(20.0, 50.0, 2), kernel("b", 50.0, 5.0, 7, 2),
    ]});
    let a = run(&doc, &Options::default());
    assert_eq!(a.launch.negative_delays, 1);
    assert!(close(a.launch.launch_delay_us.min.unwrap(), -20.0));
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("before their launch call returned")),
        "{:?}",
        a.notes
    );
}

#[test]
fn cpu_only_trace_says_what_it_holds() {
    let mut events = Vec::new();
    for i in 0..1234 {
        events.push(json!({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": i, "dur": 1}));
    }
    events.push(json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 2000}));
    let a = run(
        &json!({"deviceProperties": [{"id": 0, "name": "A100"}], "traceEvents": events}),
        &Options::default(),
    );
    assert!(a.temporal.is_empty());
    assert_eq!(a.gpu_busy_ratio, None);
    assert!(
        a.notes
            .iter()
            .any(|n| n == "no GPU kernels: 1,234 CPU ops, 1 user annotations only"),
        "{:?}",
        a.notes
    );
    assert_eq!(a.devices[0].name.as_deref(), Some("A100"));
}

#[test]
fn bare_array_truncated_and_broken_traces() {
    let arr = json!([kernel("k", 0.0, 5.0, 1, 1), kernel("k", 10.0, 5.0, 1, 2)]);
    let a = run(&arr, &Options::default());
    assert!(close(a.temporal[0].span_us, 15.0));
    // Cut mid-write: the events before the cut are analyzed, with a note.
    let full = json!({"traceEvents": [kernel("k", 0.0, 5.0, 1, 1), kernel("k", 10.0, 5.0, 1, 2)]})
        .to_string();
    let cut = &full[..full.len() - 20];
    let a = analyze(cut.as_bytes(), &Options::default()).unwrap();
    assert!(
        a.notes.iter().any(|n| n.contains("ends early")),
        "{:?}",
        a.notes
    );
    assert_eq!(a.events.kernels, 1);
    let e = analyze(&b"{\"traceEvents\": [}"[..], &Options::default()).unwrap_err();
    assert!(
        matches!(e, AnalyzeError::Malformed { line: Some(1), .. }),
        "{e:?}"
    );
    let e = analyze(
        &b"{\"traceEvents\": [{\"ph\": \"X\"}], \"x\": tru}"[..],
        &Options::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("column"), "{e}");
}

#[test]
fn agrees_with_hta_on_real_fixtures() {
    let Some(root) = real_fixtures() else { return };
    for &(file, include, rank, [idle, compute, non_compute, span], streams) in HTA_TEMPORAL {
        let opts = Options {
            include_last_profiler_step: include,
            ..Options::default()
        };
        let a = real_trace(&root, file, &opts);
        let t = &a.temporal[0];
        assert_eq!(t.rank, rank, "{file}");
        let ours = [t.idle_us, t.compute_us, t.non_compute_us, t.span_us];
        println!(
            "{file} (last step kept: {include}): ours {ours:?}, exact {:?}",
            t.exact
        );
        assert_eq!(
            ours,
            [idle, compute, non_compute, span],
            "{file}, {include}"
        );
        assert_eq!(a.idle.len(), streams.len(), "{file}");
        for &(stream, want) in streams {
            let r = a.idle.iter().find(|r| r.stream == stream).unwrap();
            let got = [r.host_wait_us, r.kernel_wait_us, r.other_us];
            assert_eq!(got, want, "{file}, {include}, stream {stream}");
        }
        // Rounded (and exact figures kept) exactly when the times have fractions.
        assert_eq!(a.rounded, t.exact.is_some(), "{file}");
        assert_eq!(
            a.rounded,
            file.starts_with("hta__amd")
                || file.starts_with("hta__nccl")
                || file.starts_with("tracemap"),
            "{file}"
        );
        if !include {
            continue;
        }
        // The idle intervals kept for attribution lie in the GPU window, are at least
        // the minimum long, and cannot add up to more than the (exact) idle time of
        // the one device.
        let [w0, w1] = a.gpu_window_us.unwrap();
        let kept: f64 = a.idle_intervals.iter().map(|i| i.dur_us).sum();
        let idle_exact = t.exact.as_ref().map_or(t.idle_us, |x| x.idle_us);
        assert!(kept <= idle_exact + 1e-6, "{file}: {kept} > {idle_exact}");
        assert!(a
            .idle_intervals
            .iter()
            .all(|i| i.dur_us >= IDLE_INTERVAL_MIN_US
                && i.start_us >= w0
                && i.start_us + i.dur_us <= w1));
        assert!(a
            .idle_intervals
            .windows(2)
            .all(|p| p[0].start_us <= p[1].start_us));
        assert_eq!(
            a.idle_intervals_found,
            a.idle_intervals.len() as u64,
            "{file}"
        );
        println!(
            "{file}: {} idle intervals, {kept:.1} µs",
            a.idle_intervals.len()
        );
    }
}

use super::super::Analysis;

/// The vLLM MI300X decode trace of the real fixtures (fractional times).
const MI300X: &str = "tracemap__1_mi300x_1000isl_10osl_32con.pt.trace.json.gz";

/// A real fixture of `pytorch_trace/`, analyzed as an upload is.
fn real_trace(root: &std::path::Path, file: &str, opts: &Options) -> TraceAnalysis {
    let f = open(root, &format!("pytorch_trace/{file}"));
    match super::super::analyze(super::super::Kind::PytorchTrace, f, opts, &|_| {}).unwrap() {
        Analysis::PytorchTrace(a) => a,
        other => panic!("{file}: {:?}", other.kind()),
    }
}

#[test]
fn real_fixtures_without_gpu_kernels() {
    let Some(root) = real_fixtures() else { return };
    let f = open(
        &root,
        "pytorch_trace/hta__distributed_info_unavailable__distributed_info_not_found.json.gz",
    );
    let Analysis::PytorchTrace(a) = super::super::analyze(
        super::super::Kind::PytorchTrace,
        f,
        &Options::default(),
        &|_| {},
    )
    .unwrap() else {
        panic!()
    };
    assert!(a.temporal.is_empty());
    assert!(
        a.notes
            .iter()
            .any(|n| n.starts_with("no GPU kernels: 2,424 CPU ops")),
        "{:?}",
        a.notes
    );
    let f = open(
        &root,
        "pytorch_trace/hta__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz",
    );
    let Analysis::PytorchTrace(a) = super::super::analyze(
        super::super::Kind::PytorchTrace,
        f,
        &Options::default(),
        &|_| {},
    )
    .unwrap() else {
        panic!()
    };
    assert!(
        a.notes.iter().any(|n| n.contains("cuda_profiler_range")),
        "{:?}",
        a.notes
    );
    assert_eq!(a.rank, 0);
    assert_eq!(a.devices.len(), 8);
    // AMD: HIP runtime recognized, launches joined by correlation.
    let f = open(
        &root,
        "pytorch_trace/hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    );
    let Analysis::PytorchTrace(a) = super::super::analyze(
        super::super::Kind::PytorchTrace,
        f,
        &Options::default(),
        &|_| {},
    )
    .unwrap() else {
        panic!()
    };
    assert!(a.notes.iter().any(|n| n.contains("ROCm")));
    assert_eq!(a.launch.matched, 16);
    assert_eq!(a.base_time_ns, Some(1_735_632_360_000_000_000));
    assert_eq!(a.devices[0].device, 2);
}

/// A deterministic synthetic trace: 3 profiler steps, two streams,
/// compute, NCCL and memcpy work, host-bound and launch-bound gaps, all on
/// whole microseconds so HTA's rounding changes nothing.
fn hta_synthetic_trace() -> Value {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let names = [
        "gemm_kernel",
        "elementwise",
        "ncclDevKernel_AllReduce_Sum",
        "Memcpy DtoD (Device -> Device)",
    ];
    let gaps = [0, 2, 5, 20, 45, 100];
    let mut ev = Vec::new();
    let mut ts: u64 = 1000;
    let mut gpu_free = [1100u64, 1100u64];
    let mut corr = 1u64;
    for step in 1..=3 {
        let step_start = ts;
        for j in 0..60 {
            let s = if j % 3 == 0 { 1 } else { 0 };
            let stream = 7 + s as i64;
            let name = names[rnd(4) as usize];
            let cat = if name.starts_with("Memcpy") {
                "gpu_memcpy"
            } else {
                "kernel"
            };
            let ldur = 3 + rnd(10);
            ev.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
                           "ts": ts, "dur": ldur, "args": {"correlation": corr}}));
            let start = (gpu_free[s] + gaps[rnd(6) as usize]).max(ts + ldur + 1 + rnd(8));
            let d = 2 + rnd(79);
            ev.push(json!({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": start, "dur": d,
                           "args": {"device": 0, "stream": stream, "correlation": corr}}));
            gpu_free[s] = start + d;
            ts += ldur + 1 + rnd(30);
            corr += 1;
        }
        ev.push(
            json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"),
                       "pid": 10, "tid": 10, "ts": step_start, "dur": ts - step_start + 1}),
        );
        ts += 5;
    }
    json!({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": ev})
}

/// HTA 0.5.0 on [`hta_synthetic_trace`] written to a file, with
/// `TraceAnalysis(trace_dir, include_last_profiler_step=…)`:
/// `get_temporal_breakdown()` (idle, compute, non-compute, span) and
/// `get_idle_time_breakdown()` per stream (host wait, kernel wait, other), µs.
/// (include_last_profiler_step, [idle, compute, non-compute, span],
/// [(stream, [host wait, kernel wait, other])]).
type HtaRun = (bool, [f64; 4], [(i64, [f64; 3]); 2]);
const HTA_SYNTHETIC: [HtaRun; 2] = [
    (
        true,
        [2632.0, 3856.0, 2240.0, 8728.0],
        [(7, [0.0, 707.0, 2940.0]), (8, [690.0, 268.0, 660.0])],
    ),
    (
        false,
        [1725.0, 2616.0, 1672.0, 6013.0],
        [(7, [0.0, 475.0, 1960.0]), (8, [386.0, 214.0, 425.0])],
    ),
];

#[test]
fn matches_hta_on_synthetic_trace() {
    let doc = hta_synthetic_trace();
    for (include, temporal, idle) in HTA_SYNTHETIC {
        let opts = Options {
            include_last_profiler_step: include,
            ..Options::default()
        };
        let a = run(&doc, &opts);
        let t = &a.temporal[0];
        let ours = [t.idle_us, t.compute_us, t.non_compute_us, t.span_us];
        assert_eq!(ours, temporal, "include_last_profiler_step={include}");
        for (stream, [host, kernel, other]) in idle {
            let r = a.idle.iter().find(|r| r.stream == stream).unwrap();
            assert_eq!(
                [r.host_wait_us, r.kernel_wait_us, r.other_us],
                [host, kernel, other],
                "stream {stream}, include_last_profiler_step={include}"
            );
        }
    }
}

/// A large synthetic trace, streamed from a generator reader: checks the
/// result and that nothing per event is kept beyond the GPU records.
#[test]
fn streams_a_large_generated_trace() {
    struct Gen {
        i: u64,
        n: u64,
        buf: Vec<u8>,
        pos: usize,
        done: bool,
    }
    impl Read for Gen {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            while self.pos >= self.buf.len() {
                if self.done {
                    return Ok(0);
                }
                self.buf.clear();
                self.pos = 0;
                if self.i == 0 {
                    self.buf
                        .extend_from_slice(b"{\"schemaVersion\": 1, \"traceEvents\": [");
                }
                let end = (self.i + 1000).min(self.n);
                while self.i < end {
                    let i = self.i;
                    let sep = if i == 0 { "" } else { "," };
                    let ts = i as f64 * 10.0;
                    self.buf.extend_from_slice(format!(
                        "{sep}{{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":{ts},\"dur\":2,\"args\":{{\"correlation\":{i},\"cbid\":211}}}},\
                         {{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k{}\",\"pid\":0,\"tid\":7,\"ts\":{},\"dur\":5.5,\"args\":{{\"device\":0,\"stream\":7,\"correlation\":{i},\"grid\":[1,1,1],\"registers per thread\":32}}}}",
                        i % 17,
                        ts + 3.0
                    ).as_bytes());
                    self.i += 1;
                }
                if self.i == self.n {
                    self.buf.extend_from_slice(b"]}");
                    self.done = true;
                }
            }
            let k = out.len().min(self.buf.len() - self.pos);
            out[..k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
            Ok(k)
        }
    }
    let n = 200_000;
    let a = analyze(
        Gen {
            i: 0,
            n,
            buf: Vec::new(),
            pos: 0,
            done: false,
        },
        &Options::default(),
    )
    .unwrap();
    assert_eq!(a.events.kernels, n);
    assert_eq!(a.launch.matched, n);
    assert!(close(a.launch.launch_delay_us.p50.unwrap(), 1.0));
    assert_eq!(a.kernels.len(), 17);
    let t = &a.temporal[0];
    assert!((t.busy_us - 5.5 * n as f64).abs() < 1e-3);
    // Each 4.5 µs gap: the next launch starts 1.5 µs after the previous
    // kernel ended, so the GPU waited on the host.
    assert!((a.idle[0].host_wait_us - 4.5 * (n - 1) as f64).abs() < 1e-3);
    assert_eq!(a.idle[0].kernel_wait_us, 0.0);
}

#[test]
fn kernels_of_a_cuda_graph_launch_join_it_and_their_share_is_given() {
    let graph = json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 100, "tid": 100,
                       "ts": 100.0, "dur": 50.0, "args": {"correlation": 9}});
    let doc = json!({"traceEvents": [
        launch(10.0, 5.0, 1),
        kernel("prefill_gemm", 20.0, 60.0, 7, 1),
        graph,
        kernel("decode_attn", 120.0, 10.0, 7, 9),
        kernel("decode_mlp", 131.0, 20.0, 7, 9),
        kernel("decode_norm", 152.0, 10.0, 7, 9),
    ]});
    let a = run(&doc, &Options::default());
    let l = &a.launch;
    assert_eq!((l.graph_launches, l.graph_gpu_events), (1, 3));
    assert!(close(l.graph_gpu_us, 40.0));
    assert!(close(l.graph_share.unwrap(), 0.4));
    assert_eq!(l.matched, 4, "every graph kernel joins the one launch");
    assert_eq!(l.multi_kernel_launches, 1);
    // Counted in the breakdowns like any kernel.
    assert_eq!(a.kernels.len(), 4);
    assert!(close(a.temporal[0].compute_us, 100.0));
}

/// The GPU events the analyzer keeps by default (launched before the last ProfilerStep)
/// in trace_diff/test, computed with the standard library's json module: 12,515 events,
/// 756,807 µs; the 10 cudaGraphLaunch calls among their launches ran 4,205 of them,
/// 222,967 µs (29.46%).
#[test]
fn cuda_graph_share_of_the_trace_diff_fixture() {
    let Some(root) = real_fixtures() else { return };
    let f = open(&root, "pytorch_trace/hta__trace_diff__test__test.json.gz");
    let a = super::super::analyze(
        super::super::Kind::PytorchTrace,
        f,
        &Options::default(),
        &|_| {},
    )
    .unwrap();
    let Analysis::PytorchTrace(a) = a else {
        panic!()
    };
    let l = &a.launch;
    assert_eq!(l.matched + l.unmatched, 12_515);
    assert_eq!((l.graph_launches, l.graph_gpu_events), (10, 4_205));
    assert!(
        (l.graph_gpu_us - 222_967.0).abs() < 1.0,
        "{}",
        l.graph_gpu_us
    );
    assert!(
        (l.graph_share.unwrap() - 0.294_615).abs() < 1e-4,
        "{:?}",
        l.graph_share
    );
}

/// The vLLM MI300X decode trace (12,900 GPU events, most of a few µs, times with
/// fractions of a µs): its figures are HTA's rounded ones (see [`HTA_TEMPORAL`]), the
/// exact ones are kept beside and differ by more than 1 %, and the notes say why.
#[test]
fn fractional_times_keep_the_exact_figures_beside_htas() {
    let Some(root) = real_fixtures() else { return };
    let a = real_trace(&root, MI300X, &Options::default());
    let t = &a.temporal[0];
    let x = t.exact.as_ref().unwrap();
    // The exact figures: the union of the trace's own intervals (see
    // tests/oracles/hta_temporal.py for HTA's).
    assert!((x.busy_us - 290_743.057).abs() < 0.01, "{x:?}");
    assert!((x.idle_us - 278_416.078).abs() < 0.01, "{x:?}");
    assert!((x.compute_us - 247_739.359).abs() < 0.01, "{x:?}");
    assert_eq!(exact_if_differs(t.idle_us, x.idle_us), Some(x.idle_us));
    assert_eq!(
        exact_if_differs(t.compute_us, x.compute_us),
        Some(x.compute_us)
    );
    // The span moves by a µs: not shown.
    assert_eq!(exact_if_differs(t.span_us, x.span_us), None);
    let s3 = a.idle.iter().find(|r| r.stream == 3).unwrap();
    let e3 = s3.exact.as_ref().unwrap();
    assert!((e3.kernel_wait_us - 8_614.404).abs() < 0.01, "{e3:?}");
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("round each start up and each end down")
                && n.contains("busy 290,743.1 µs")),
        "{:?}",
        a.notes
    );
}

/// HTA 0.5.0's kernel-type time (`get_gpu_kernel_breakdown(include_memory_kernels=True)`)
/// and communication/computation overlap (`get_comm_comp_overlap`, rounded to 0.01 %)
/// on the two real traces with fractional times that hold several kernel types, printed
/// by `tests/oracles/hta_temporal.py`.
type HtaKernelTypes = (&'static str, &'static [(&'static str, f64)], f64);
const HTA_KERNEL_TYPES: &[HtaKernelTypes] = &[
    (
        "hta__nccl_parser_config__nccl_data.json.gz",
        &[
            ("COMPUTATION", 71_696.0),
            ("COMMUNICATION", 20_621.0),
            ("COMPUTATION overlapping COMMUNICATION", 3473.0),
            ("MEMORY", 831.0),
            ("COMMUNICATION overlapping MEMORY", 184.0),
        ],
        14.31,
    ),
    (
        "tracemap__1_mi300x_1000isl_10osl_32con.pt.trace.json.gz",
        &[
            ("COMPUTATION", 235_095.0),
            ("COMMUNICATION", 42_487.0),
            ("MEMORY", 269.0),
        ],
        0.0,
    ),
];

#[test]
fn kernel_types_and_overlap_agree_with_hta_on_fractional_times() {
    let Some(root) = real_fixtures() else { return };
    for &(file, types, overlap) in HTA_KERNEL_TYPES {
        let a = real_trace(&root, file, &Options::default());
        let d = a.distributed.unwrap();
        let ours: Vec<(&str, f64)> = d
            .kernel_types
            .iter()
            .map(|k| (k.kernel_type.as_str(), k.us))
            .collect();
        assert_eq!(ours, types, "{file}");
        let pct = d.comm_comp_overlap_pct.unwrap();
        assert!(
            ((pct * 100.0).round() / 100.0 - overlap).abs() < 1e-9,
            "{file}: {pct}"
        );
        // The collectives and steps keep the trace's own (fractional) times.
        assert!(d.collectives.iter().any(|c| c.us.fract() != 0.0), "{file}");
    }
}

/// The vLLM MI300X decode trace: the host runs far ahead of the GPU, so nearly every
/// launch waits more than HTA's 100 µs (12,699 of 12,910); the outlier rule flags only
/// the far tail. Its negative delays are 30 kernels of graph launches and 15
/// synchronous or async copies, counted apart. The figures are those of
/// `tests/oracles/launch_delays.py`, plain Python over the same file.
#[test]
fn launch_delay_outliers_and_negative_delays_on_a_real_vllm_trace() {
    let Some(root) = real_fixtures() else { return };
    let a = real_trace(&root, MI300X, &Options::default());
    let l = &a.launch;
    println!("{l:?}");
    assert_eq!(l.matched, 12_910);
    assert_eq!(l.negative_delays, 30);
    assert_eq!(l.negative_delays_in_graphs, 30);
    assert_eq!(l.negative_delay_copies, 15);
    // Median 3,278.1 µs, MAD 1,415.1 µs: above 10,621.0 µs, 979 of 12,910 (7.6 %).
    assert_eq!(l.delay_outliers, 979);
    assert!((l.delay_outlier_above_us.unwrap() - 10_620.998_792).abs() < 1e-3);
    let notes = a.notes.join("\n");
    assert!(
        notes.contains("30 of 12,840 kernels started before"),
        "{notes}"
    );
    assert!(
        notes.contains("all of them were run by CUDA-graph launches"),
        "{notes}"
    );
    assert!(
        notes.contains("15 memory copies or sets started before"),
        "{notes}"
    );
}
