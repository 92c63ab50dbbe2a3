//! Issue #5, PyTorch traces: a ~1 GiB synthetic Kineto trace analyzed by our
//! `pytorch_trace` analyzer in a separate process (peak RSS from `wait4`, and the
//! child's own VmHWM), against HolisticTraceAnalysis computing its temporal and kernel
//! breakdown on the same file (also a separate process, wall time and peak RSS).
//!
//! `cargo bench --bench trace`
//! Env: PJ_TRACE_MB (default 1024, MiB of JSON), PJ_BENCH_RUNS (default 3, our runs),
//! PJ_HTA_PYTHON (default /tmp/htavenv/bin/python), PJ_HTA_TIMEOUT_S (default 900),
//! PJ_HTA_MEM_GB (address-space cap for HTA, default 16), PJ_TRACE_SMALL_MB (default
//! 100: the size both are also run on when HTA fails on the big one; set
//! PJ_TRACE_ALWAYS_SMALL=1 to run it anyway), PJ_TRACE_DIR (default /tmp),
//! PJ_TRACE_KEEP=1 (keep the generated traces and outputs).

#[path = "common/mod.rs"]
mod common;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{median, num, secs, Table, MIB};
use perfjournal::core::analyze::{self, Kind, Options};
use serde_json::Value;

/// Set in the child that analyzes one file and reports on stdout.
const CHILD_ENV: &str = "PJ_BENCH_ANALYZE_TRACE";

fn main() -> anyhow::Result<()> {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        return child(Path::new(&path));
    }
    let mb = common::env_usize("PJ_TRACE_MB", 1024);
    let small_mb = common::env_usize("PJ_TRACE_SMALL_MB", 100);
    let always_small = std::env::var("PJ_TRACE_ALWAYS_SMALL").is_ok_and(|v| v == "1");
    let runs = common::env_usize("PJ_BENCH_RUNS", 3);
    let timeout = Duration::from_secs(common::env_usize("PJ_HTA_TIMEOUT_S", 900) as u64);
    let dir = std::env::var_os("PJ_TRACE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let work = tempfile::Builder::new()
        .prefix("pj-bench-trace-")
        .tempdir_in(dir)?;

    println!(
        "{} CPUs, load average {} at the start",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::loadavg()
    );
    let big_ok = compare(work.path(), "big", mb, runs, timeout)?;
    if !big_ok || always_small {
        compare(work.path(), "small", small_mb, runs, timeout)?;
    }
    if std::env::var("PJ_TRACE_KEEP").is_ok_and(|v| v == "1") {
        println!("kept {}", work.keep().display());
    }
    // Otherwise the temporary directory (and the traces in it) goes on drop.
    Ok(())
}

/// Generates one trace of `mb` MiB, runs both analyzers on it, prints the tables;
/// true when HTA finished.
fn compare(
    work: &Path,
    label: &str,
    mb: usize,
    runs: usize,
    timeout: Duration,
) -> anyhow::Result<bool> {
    // HTA takes a directory of per-rank files.
    let trace_dir = work.join(label);
    std::fs::create_dir_all(&trace_dir)?;
    let trace = trace_dir.join("rank0.trace.json");
    let t = Instant::now();
    let shape = generate(&trace, (mb as u64) << 20)?;
    let bytes = std::fs::metadata(&trace)?.len() as f64;
    println!(
        "\ngenerated {} ({:.1} MiB, {} events: {} GPU kernels incl. {} nccl, {} memcpy/memset, \
         {} ProfilerSteps, streams 7/13/20) in {:.1} s",
        trace.display(),
        bytes / MIB,
        num(shape.events as f64, 0),
        num(shape.kernels as f64, 0),
        num(shape.nccl as f64, 0),
        num(shape.mem as f64, 0),
        shape.steps,
        secs(t.elapsed())
    );

    // Page cache warm for both sides: each reads the file once before timing.
    warm(&trace)?;
    let mut ours = Vec::new();
    let mut our_rss = Vec::new();
    let mut our_hwm = Vec::new();
    let mut our_result = Value::Null;
    for run in 1..=runs {
        let out = work.join(format!("ours-{label}-{run}.json"));
        let started = Instant::now();
        let child = Command::new(std::env::current_exe()?)
            .env(CHILD_ENV, &trace)
            .stdout(Stdio::from(std::fs::File::create(&out)?))
            .spawn()?;
        let r = common::wait_child(child, started, Duration::from_secs(3600));
        anyhow::ensure!(r.status.success(), "our analyzer failed: {:?}", r.status);
        let report: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
        ours.push(secs(r.wall));
        our_rss.push(r.max_rss_bytes as f64 / MIB);
        our_hwm.push(report["vm_hwm_kib"].as_f64().unwrap_or(f64::NAN) / 1024.0);
        println!(
            "ours run {run}/{runs}: {:.2} s wall ({:.2} s analyzing), peak RSS {:.1} MiB",
            secs(r.wall),
            report["analyze_s"].as_f64().unwrap_or(f64::NAN),
            r.max_rss_bytes as f64 / MIB
        );
        our_result = report["result"].clone();
    }

    warm(&trace)?;
    let hta = run_hta(work, label, &trace_dir, timeout)?;
    println!("load average {} after both", common::loadavg());

    let mut t = Table::new(&["analyzer", "wall (s)", "MB/s", "peak RSS (MiB)", "notes"]);
    t.row(vec![
        "perfjournal pytorch_trace (separate process)".into(),
        num(median(&ours), 2),
        num(bytes / 1e6 / median(&ours), 1),
        num(common::max(&our_rss), 1),
        format!(
            "median of {runs}; runs {}; VmHWM {} MiB",
            ours.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" "),
            num(common::max(&our_hwm), 1)
        ),
    ]);
    match &hta {
        HtaOutcome::Done {
            wall,
            rss_mib,
            report,
        } => {
            let work_s = report["load_s"].as_f64().unwrap_or(f64::NAN)
                + report["temporal_s"].as_f64().unwrap_or(f64::NAN)
                + report["kernel_s"].as_f64().unwrap_or(f64::NAN);
            t.row(vec![
                "HTA: TraceAnalysis + temporal + kernel breakdown".into(),
                num(secs(*wall), 2),
                num(bytes / 1e6 / secs(*wall), 1),
                num(*rss_mib, 1),
                format!(
                    "import {:.1} s, load {:.1} s, temporal {:.1} s, kernel {:.1} s",
                    report["import_s"].as_f64().unwrap_or(f64::NAN),
                    report["load_s"].as_f64().unwrap_or(f64::NAN),
                    report["temporal_s"].as_f64().unwrap_or(f64::NAN),
                    report["kernel_s"].as_f64().unwrap_or(f64::NAN)
                ),
            ]);
            t.print(&format!(
                "PyTorch trace, {:.1} MiB uncompressed",
                bytes / MIB
            ));
            let ratio_wall = secs(*wall) / median(&ours);
            let ratio_work = work_s / median(&ours);
            println!(
                "speed-up vs HTA: {ratio_wall:.1}x on process wall time, {ratio_work:.1}x on HTA's \
                 load + breakdowns alone (imports excluded); target >= 10x: {}",
                if ratio_work >= 10.0 { "MET" } else if ratio_wall >= 10.0 { "MET on wall time only" } else { "NOT MET" }
            );
            let peak = common::max(&our_rss);
            println!(
                "our peak RSS {peak:.1} MiB; target < 300 MB (286 MiB): {}",
                if peak * MIB < 300e6 { "MET" } else { "NOT MET" }
            );
            agreement(&our_result, report);
            Ok(true)
        }
        HtaOutcome::Failed { wall, rss_mib, why } => {
            t.row(vec![
                "HTA: TraceAnalysis + temporal + kernel breakdown".into(),
                "-".into(),
                "-".into(),
                num(*rss_mib, 1),
                format!("did not finish after {:.0} s: {why}", secs(*wall)),
            ]);
            t.print(&format!(
                "PyTorch trace, {:.1} MiB uncompressed",
                bytes / MIB
            ));
            Ok(false)
        }
    }
}

/// Our temporal breakdown next to HTA's, as shares of the span, as a sanity check
/// that both read the same trace the same way.
fn agreement(ours: &Value, hta: &Value) {
    let (Some(o), Some(h)) = (ours["temporal"].get(0), hta["temporal"].get(0)) else {
        return;
    };
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let span = f(o, "span_us");
    let mut t = Table::new(&["rank 0 (µs)", "ours", "HTA", "diff / span"]);
    for (label, ok, hk) in [
        ("span", "span_us", "kernel_time(us)"),
        ("idle", "idle_us", "idle_time(us)"),
        ("compute", "compute_us", "compute_time(us)"),
        ("non-compute", "non_compute_us", "non_compute_time(us)"),
    ] {
        let (a, b) = (f(o, ok), f(h, hk));
        t.row(vec![
            label.into(),
            num(a, 0),
            num(b, 0),
            format!("{:.3}%", (a - b).abs() / span * 100.0),
        ]);
    }
    t.print(
        if std::env::var("HTA_DISABLE_NS_ROUNDING").is_ok_and(|v| v == "1") {
            "Temporal breakdown, ours vs HTA (HTA_DISABLE_NS_ROUNDING=1: fractional µs kept)"
        } else {
            "Temporal breakdown, ours vs HTA (HTA rounds starts up, ends down to whole µs)"
        },
    );
}

enum HtaOutcome {
    Done {
        wall: Duration,
        rss_mib: f64,
        report: Value,
    },
    Failed {
        wall: Duration,
        rss_mib: f64,
        why: String,
    },
}

const HTA_SCRIPT: &str = r#"
import json, resource, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
temporal = ta.get_temporal_breakdown(visualize=False)
t3 = time.perf_counter()
kernel_types, kernels = ta.get_gpu_kernel_breakdown(visualize=False)
t4 = time.perf_counter()
json.dump({
    "import_s": t1 - t0, "load_s": t2 - t1, "temporal_s": t3 - t2, "kernel_s": t4 - t3,
    "temporal": json.loads(temporal.to_json(orient="records")),
    "kernel_types": json.loads(kernel_types.to_json(orient="records")),
    "kernels": len(kernels),
    "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}, sys.stdout)
"#;

fn run_hta(
    work: &Path,
    label: &str,
    trace_dir: &Path,
    timeout: Duration,
) -> anyhow::Result<HtaOutcome> {
    let python =
        std::env::var("PJ_HTA_PYTHON").unwrap_or_else(|_| "/tmp/htavenv/bin/python".into());
    let mem_cap = common::env_usize("PJ_HTA_MEM_GB", 16) as u64 * (1 << 30);
    let script = work.join("hta_breakdown.py");
    std::fs::write(&script, HTA_SCRIPT)?;
    let out = work.join(format!("hta-{label}-out.json"));
    let err = work.join(format!("hta-{label}-err.txt"));
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .arg(trace_dir)
        .stdout(Stdio::from(std::fs::File::create(&out)?))
        .stderr(Stdio::from(std::fs::File::create(&err)?));
    // A cap on address space, so a runaway parse fails with MemoryError instead of
    // pushing the shared machine into the OOM killer.
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: mem_cap,
                rlim_max: mem_cap,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    println!(
        "running HTA ({python}, address space capped at {} GiB, timeout {} s) …",
        mem_cap >> 30,
        timeout.as_secs()
    );
    let started = Instant::now();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ok(HtaOutcome::Failed {
                wall: Duration::ZERO,
                rss_mib: f64::NAN,
                why: format!("{python} could not start: {e}"),
            })
        }
    };
    let r = common::wait_child(child, started, timeout);
    let rss_mib = r.max_rss_bytes as f64 / MIB;
    if r.timed_out {
        return Ok(HtaOutcome::Failed {
            wall: r.wall,
            rss_mib,
            why: format!("killed at the {} s timeout", timeout.as_secs()),
        });
    }
    if !r.status.success() {
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Ok(HtaOutcome::Failed {
            wall: r.wall,
            rss_mib,
            why: format!("{:?}: {last}", r.status),
        });
    }
    let report: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    println!("HTA: {:.1} s wall, peak RSS {rss_mib:.0} MiB", secs(r.wall));
    Ok(HtaOutcome::Done {
        wall: r.wall,
        rss_mib,
        report,
    })
}

/// Reads the file once so both analyzers start with it in the page cache.
fn warm(path: &Path) -> anyhow::Result<()> {
    let mut f = std::fs::File::open(path)?;
    std::io::copy(&mut f, &mut std::io::sink())?;
    Ok(())
}

/// The child: analyze one file the way the worker does, then report.
fn child(path: &Path) -> anyhow::Result<()> {
    let t = Instant::now();
    let file = std::fs::File::open(path)?;
    let analysis = analyze::analyze(Kind::PytorchTrace, file, &Options::default(), &|_| {})?;
    let analyze_s = secs(t.elapsed());
    let json = analysis.to_json();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    let report = serde_json::json!({
        "analyze_s": analyze_s,
        "vm_hwm_kib": hwm,
        "result": {
            "temporal": json["temporal"],
            "events": json["events"],
            "kernel_categories": json["kernel_categories"],
            "notes": json["notes"],
        },
    });
    println!("{report}");
    Ok(())
}

// ---------------------------------------------------------------------------
// The synthetic trace

/// What went into a generated trace.
#[derive(Default)]
struct Shape {
    events: u64,
    kernels: u64,
    nccl: u64,
    mem: u64,
    steps: u64,
}

/// (cpu op, kernel name, mean GPU µs) of a transformer layer's forward and backward.
const LAYER: &[(&str, &str, f64)] = &[
    ("aten::layer_norm", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)", 14.0),
    ("aten::linear", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 180.0),
    ("aten::_flash_attention_forward", "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)", 220.0),
    ("aten::linear", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", 95.0),
    ("aten::add", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)", 9.0),
    ("aten::layer_norm", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)", 14.0),
    ("aten::linear", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", 310.0),
    ("aten::gelu", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)", 28.0),
    ("aten::linear", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 300.0),
    ("aten::add", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)", 9.0),
    ("aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 290.0),
    ("aten::gelu_backward", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)", 35.0),
    ("aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", 330.0),
    ("aten::_flash_attention_backward", "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, false, false, false, true>(Flash_bwd_params)", 520.0),
    ("aten::native_layer_norm_backward", "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)", 22.0),
    ("aten::sum", "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)", 18.0),
];

const NCCL_KERNEL: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
const OPTIMIZER_KERNEL: &str = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*)";

const PID: u32 = 28417;
const LAYERS: usize = 32;

/// Writes Kineto-shaped JSON until at least `target` bytes: per ProfilerStep an input
/// copy, 32 layers of forward/backward kernels on stream 7 launched from cpu_ops with
/// cudaLaunchKernel, an NCCL all-reduce per layer on stream 13, a fused optimizer on
/// stream 20, a memset and a copy back. Deterministic (fixed seed).
fn generate(path: &Path, target: u64) -> anyhow::Result<Shape> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
    let file = std::fs::File::create(path)?;
    let mut w = Counting {
        inner: BufWriter::with_capacity(1 << 20, file),
        bytes: 0,
    };
    let mut shape = Shape::default();
    write!(
        w,
        r#"{{
  "schemaVersion": 1,
  "deviceProperties": [
    {{
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
      "numSms": 132, "sharedMemPerBlockOptin": 232448
    }}
  ],
  "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 2, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7]}}], "nccl_version": "2.21.5"}},
  "record_shapes": 1,
  "with_stack": 0,
  "cuda_runtime_version": 12040,
  "cupti_version": 22,
  "cuda_driver_version": 12040,
  "trace_id": "2C6B0F3A1E9D4C7B8A5F6E2D1C0B9A87",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1764400000000000000,
  "traceEvents": [
"#
    )?;
    let meta = [
        format!(r#"{{"name": "process_name", "ph": "M", "ts": 5219875614000.000, "pid": {PID}, "tid": 0, "args": {{"name": "python3"}}}}"#),
        format!(r#"{{"name": "thread_name", "ph": "M", "ts": 5219875614000.000, "pid": {PID}, "tid": {PID}, "args": {{"name": "thread {PID} (python3)"}}}}"#),
        r#"{"name": "process_name", "ph": "M", "ts": 5219875614000.000, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}"#.to_string(),
        r#"{"name": "process_labels", "ph": "M", "ts": 5219875614000.000, "pid": 0, "tid": 0, "args": {"labels": "NVIDIA H100 80GB HBM3"}}"#.to_string(),
        r#"{"name": "thread_name", "ph": "M", "ts": 5219875614000.000, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}}"#.to_string(),
        r#"{"name": "thread_name", "ph": "M", "ts": 5219875614000.000, "pid": 0, "tid": 13, "args": {"name": "stream 13 "}}"#.to_string(),
        r#"{"name": "thread_name", "ph": "M", "ts": 5219875614000.000, "pid": 0, "tid": 20, "args": {"name": "stream 20 "}}"#.to_string(),
        r#"{"ph": "i", "cat": "user_annotation", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 28417, "tid": 28417, "ts": 5219875614100.000}"#.to_string(),
    ];
    for m in &meta {
        writeln!(w, "  {m},")?;
        shape.events += 1;
    }

    let mut g = Gen {
        cpu: 5_219_875_614_200.0,
        stream_free: [0.0; 3],
        // Real correlation ids are large; small ones also trip HTA, which downcasts the
        // column to int16 and then cannot store row indices above 32767 in it.
        correlation: 278_000_000,
        external: 1,
    };
    let mut step = 0u64;
    while w.bytes < target {
        let step_start = g.cpu;
        // Data loading between steps: the GPU waits for the host here.
        g.cpu += rng.random_range(150.0..900.0);
        let input_bytes = 8 * 4096 * 2;
        g.memcpy(
            &mut w,
            &mut rng,
            &mut shape,
            "Memcpy HtoD (Pageable -> Device)",
            1,
            input_bytes,
        )?;
        for layer in 0..LAYERS {
            for (op, kernel, mean) in LAYER {
                g.kernel(&mut w, &mut rng, &mut shape, op, kernel, *mean, 0)?;
            }
            // Gradient bucket all-reduce on the NCCL stream, overlapping compute.
            g.cpu += rng.random_range(2.0..6.0);
            writeln!(
                w,
                r#"  {{"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": {PID}, "tid": {PID}, "ts": {:.3}, "dur": {:.3}, "args": {{"External id": {}, "Record function id": 0}}}},"#,
                g.cpu, 12.5, g.external
            )?;
            shape.events += 1;
            g.kernel(
                &mut w,
                &mut rng,
                &mut shape,
                "c10d::allreduce_",
                NCCL_KERNEL,
                240.0 + layer as f64,
                1,
            )?;
            shape.nccl += 1;
        }
        g.memset(&mut w, &mut rng, &mut shape)?;
        for _ in 0..4 {
            g.kernel(
                &mut w,
                &mut rng,
                &mut shape,
                "Optimizer.step#AdamW.step",
                OPTIMIZER_KERNEL,
                410.0,
                2,
            )?;
        }
        g.memcpy(
            &mut w,
            &mut rng,
            &mut shape,
            "Memcpy DtoH (Device -> Pageable)",
            2,
            4,
        )?;
        // The step ends when the host is done and the copy back has landed.
        let step_end = g.cpu.max(g.stream_free[0]) + 5.0;
        writeln!(
            w,
            r#"  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": {PID}, "tid": {PID}, "ts": {step_start:.3}, "dur": {:.3}, "args": {{"External id": {}, "Record function id": 0}}}},"#,
            step_end - step_start,
            g.external
        )?;
        g.external += 1;
        shape.events += 1;
        shape.steps += 1;
        g.cpu = step_end;
        step += 1;
    }
    writeln!(
        w,
        r#"  {{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": {:.3}}}"#,
        g.cpu + 10.0
    )?;
    shape.events += 1;
    writeln!(w, "  ],\n  \"traceName\": \"{}\"\n}}", path.display())?;
    w.inner.flush()?;
    Ok(shape)
}

/// A writer that counts what went through it.
struct Counting<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Clocks of the simulated host thread and GPU streams (7, 13, 20).
struct Gen {
    cpu: f64,
    stream_free: [f64; 3],
    correlation: u64,
    external: u64,
}

const STREAMS: [u32; 3] = [7, 13, 20];

impl Gen {
    /// A launch from the host: returns (correlation, launch end); writes the runtime
    /// event and its flow start.
    fn launch<W: Write>(
        &mut self,
        w: &mut W,
        rng: &mut rand_pcg::Pcg64,
        shape: &mut Shape,
        api: &str,
        cbid: u32,
    ) -> anyhow::Result<(u64, f64, f64)> {
        use rand::Rng;
        self.correlation += 1;
        let c = self.correlation;
        let ts = self.cpu;
        let dur = rng.random_range(2.5..7.5);
        writeln!(
            w,
            r#"  {{"ph": "X", "cat": "cuda_runtime", "name": "{api}", "pid": {PID}, "tid": {PID}, "ts": {ts:.3}, "dur": {dur:.3}, "args": {{"External id": {}, "cbid": {cbid}, "correlation": {c}}}}},"#,
            self.external
        )?;
        writeln!(
            w,
            r#"  {{"ph": "s", "id": {c}, "pid": {PID}, "tid": {PID}, "ts": {ts:.3}, "cat": "ac2g", "name": "ac2g"}},"#
        )?;
        shape.events += 2;
        Ok((c, ts, ts + dur))
    }

    /// Where the GPU work of a launch ending at `launch_end` starts on stream `s`.
    fn gpu_start(&self, rng: &mut rand_pcg::Pcg64, s: usize, launch_end: f64) -> f64 {
        use rand::Rng;
        (self.stream_free[s] + rng.random_range(0.8..2.5))
            .max(launch_end + rng.random_range(2.0..9.0))
    }

    #[allow(clippy::too_many_arguments)]
    fn kernel<W: Write>(
        &mut self,
        w: &mut W,
        rng: &mut rand_pcg::Pcg64,
        shape: &mut Shape,
        op: &str,
        kernel: &str,
        mean: f64,
        s: usize,
    ) -> anyhow::Result<()> {
        use rand::Rng;
        let op_start = self.cpu;
        self.cpu += rng.random_range(3.0..9.0);
        let (c, _, launch_end) = self.launch(w, rng, shape, "cudaLaunchKernel", 211)?;
        self.cpu = launch_end + rng.random_range(1.0..4.0);
        writeln!(
            w,
            r#"  {{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": {PID}, "tid": {PID}, "ts": {op_start:.3}, "dur": {:.3}, "args": {{"External id": {}, "Record function id": 0, "Ev Idx": {}, "Input Dims": [[8, 2048, 4096], [4096, 4096], []], "Input type": ["c10::BFloat16", "c10::BFloat16", ""], "Input Strides": [[8388608, 4096, 1], [4096, 1], []], "Concrete Inputs": ["", "", ""]}}}},"#,
            self.cpu - op_start,
            self.external,
            self.external % 4096
        )?;
        let mut start = self.gpu_start(rng, s, launch_end);
        if s != 0 {
            // Side streams wait (cudaStreamWaitEvent) for the compute they depend on.
            start = start.max(self.stream_free[0]);
        }
        let dur = mean * rng.random_range(0.85..1.15);
        let stream = STREAMS[s];
        let grid = if mean > 100.0 {
            "[132, 1, 1]"
        } else {
            "[4096, 1, 1]"
        };
        writeln!(
            w,
            r#"  {{"ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, "tid": {stream}, "ts": {start:.3}, "dur": {dur:.3}, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": {stream}, "correlation": {c}, "registers per thread": 168, "shared memory": 213504, "blocks per SM": 1.0, "warps per SM": 12.0, "grid": {grid}, "block": [384, 1, 1], "est. achieved occupancy %": 19}}}},"#,
            self.external
        )?;
        writeln!(
            w,
            r#"  {{"ph": "f", "id": {c}, "pid": 0, "tid": {stream}, "ts": {start:.3}, "cat": "ac2g", "name": "ac2g", "bp": "e"}},"#
        )?;
        shape.events += 3;
        shape.kernels += 1;
        self.stream_free[s] = start + dur;
        self.external += 1;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn memcpy<W: Write>(
        &mut self,
        w: &mut W,
        rng: &mut rand_pcg::Pcg64,
        shape: &mut Shape,
        name: &str,
        kind: u32,
        bytes: u64,
    ) -> anyhow::Result<()> {
        let (c, _, launch_end) = self.launch(w, rng, shape, "cudaMemcpyAsync", 41)?;
        self.cpu = launch_end + 1.0;
        let start = self.gpu_start(rng, 0, launch_end);
        let dur = 2.0 + bytes as f64 / 25_000.0;
        writeln!(
            w,
            r#"  {{"ph": "X", "cat": "gpu_memcpy", "name": "{name}", "pid": 0, "tid": 7, "ts": {start:.3}, "dur": {dur:.3}, "args": {{"External id": {}, "device": 0, "context": 1, "stream": 7, "correlation": {c}, "bytes": {bytes}, "memory bandwidth (GB/s)": {:.3}, "kind": {kind}}}}},"#,
            self.external,
            bytes as f64 / dur / 1000.0
        )?;
        writeln!(
            w,
            r#"  {{"ph": "f", "id": {c}, "pid": 0, "tid": 7, "ts": {start:.3}, "cat": "ac2g", "name": "ac2g", "bp": "e"}},"#
        )?;
        shape.events += 2;
        shape.mem += 1;
        self.stream_free[0] = start + dur;
        self.external += 1;
        Ok(())
    }

    fn memset<W: Write>(
        &mut self,
        w: &mut W,
        rng: &mut rand_pcg::Pcg64,
        shape: &mut Shape,
    ) -> anyhow::Result<()> {
        let (c, _, launch_end) = self.launch(w, rng, shape, "cudaMemsetAsync", 51)?;
        self.cpu = launch_end + 1.0;
        let start = self.gpu_start(rng, 0, launch_end);
        let dur = 3.2;
        writeln!(
            w,
            r#"  {{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": {start:.3}, "dur": {dur:.3}, "args": {{"External id": {}, "device": 0, "context": 1, "stream": 7, "correlation": {c}, "bytes": 4194304, "memory bandwidth (GB/s)": 1310.720}}}},"#,
            self.external
        )?;
        shape.events += 1;
        shape.mem += 1;
        self.stream_free[0] = start + dur;
        self.external += 1;
        Ok(())
    }
}
