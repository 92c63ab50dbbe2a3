//! The databases built here follow NVIDIA's documented Nsight Systems export schema
//! (Nsight Systems User Guide, "SQLite Schema Reference", as documented for the 2021.5
//! through 2025.x releases): see `example.rs` for the tables and what they hold.

use super::*;
use crate::analyze::pytorch_trace::KernelStat;

fn example() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(EXAMPLE_EXPORT_SQL).unwrap();
    conn
}

fn run(conn: &Connection) -> NsysSqliteAnalysis {
    analyze(conn, &Options::default()).unwrap()
}

fn kernel<'a>(a: &'a NsysSqliteAnalysis, prefix: &str) -> &'a KernelStat {
    a.trace
        .kernels
        .iter()
        .find(|k| k.name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no kernel {prefix}: {:?}", a.trace.kernels))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn the_temporal_breakdown_matches_the_trace_definitions_in_microseconds() {
    let a = run(&example());
    let t = &a.trace.temporal[0];
    // First GPU work at 1000 µs, last end at 1400 µs.
    assert!(close(t.span_us, 400.0), "{t:?}");
    // 50 + 40 (gemm) + 10 (copy) + 5 (set) + 100 (nccl).
    assert!(close(t.busy_us, 205.0), "{t:?}");
    assert!(close(t.idle_us, 195.0));
    // Compute: the gemm kernels only (NCCL is communication, copies and sets memory).
    assert!(close(t.compute_us, 90.0));
    assert!(close(t.non_compute_us, 115.0));
    assert_eq!(a.trace.rank, 0);
    assert_eq!(a.trace.gpu_window_us, Some([1000.0, 1400.0]));
    assert!(!a.trace.notes.iter().any(|n| n.contains("distributedInfo")));
    assert!(a.trace.notes[0].contains("3 kernels, 1 memory copies, 1 memory sets"));
    assert_eq!(a.trace.base_time_ns, Some(1_764_748_800_000_000_000));
}

#[test]
fn the_kernel_table_names_kernels_by_their_demangled_names_with_categories() {
    let a = run(&example());
    let gemm = kernel(&a, "void gemm_kernel<float>");
    assert_eq!(gemm.count, 2);
    assert!(close(gemm.sum_us, 90.0));
    assert!(close(gemm.max_us, 50.0));
    assert_eq!(gemm.category, "COMP");
    assert_eq!(gemm.longest_at_us, Some(1000.0));
    let nccl = kernel(&a, "ncclKernel_AllReduce");
    assert_eq!(nccl.category, "COMM");
    assert!(close(nccl.sum_us, 100.0));
    let copy = kernel(&a, "Memcpy HtoD");
    assert_eq!(copy.category, "MEM");
    assert_eq!(kernel(&a, "Memset").category, "MEM");
    let mem = a
        .trace
        .kernel_categories
        .iter()
        .find(|c| c.category == "MEM")
        .unwrap();
    assert_eq!(mem.count, 2);
    assert!(close(mem.sum_us, 15.0));
    assert_eq!(a.trace.events.kernels, 3);
    assert_eq!(a.trace.events.memcpy, 1);
    assert_eq!(a.trace.events.memset, 1);
    assert_eq!(a.trace.events.runtime, 4);
}

#[test]
fn launch_delays_come_from_the_runtime_calls_joined_by_correlation_id() {
    let a = run(&example());
    let l = &a.trace.launch;
    // Three kernels and the copy have a launch call; the set has none.
    assert_eq!(l.matched, 4);
    assert_eq!(l.unmatched, 1);
    // kernel start − launch end: 5, 5, 90 µs and 5 µs for the copy.
    assert!(close(l.launch_delay_us.max.unwrap(), 90.0), "{l:?}");
    assert!(close(l.launch_delay_us.min.unwrap(), 5.0));
    assert_eq!(l.negative_delays, 0);
    // Idle on stream 7: host waits before the second gemm (10), the copy (40 ... 50 µs
    // after the gemm) and the NCCL kernel (125); the 10 µs before the set is kernel wait.
    let idle = &a.trace.idle[0];
    assert_eq!((idle.device, idle.stream), (0, 7));
    assert!(close(idle.host_wait_us, 185.0), "{idle:?}");
    assert!(close(idle.kernel_wait_us, 10.0), "{idle:?}");
    assert!(close(idle.other_us, 0.0));
}

#[test]
fn memory_work_is_summed_per_copy_kind_with_its_bandwidth() {
    let a = run(&example());
    let htod = a.memory.iter().find(|m| m.kind == "Memcpy HtoD").unwrap();
    assert_eq!((htod.count, htod.bytes), (1, 10_000_000));
    assert!(close(htod.total_us, 10.0));
    // 10 MB in 10 µs = 1000 GB/s.
    assert!(close(htod.gb_per_s.unwrap(), 1000.0));
    let set = a.memory.iter().find(|m| m.kind == "Memset").unwrap();
    assert_eq!(set.bytes, 1000);
}

#[test]
fn nvtx_ranges_are_summed_per_name_with_the_gpu_busy_time_under_them() {
    let a = run(&example());
    assert_eq!(a.nvtx_ranges, 3, "the mark is not a range");
    assert_eq!(a.nvtx_names, 2);
    let allreduce = &a.nvtx[0];
    assert_eq!(allreduce.name, "allreduce", "its text comes from StringIds");
    assert!(close(allreduce.total_us, 200.0));
    assert!(close(allreduce.gpu_busy_us, 100.0));
    assert!(close(allreduce.gpu_busy_ratio.unwrap(), 0.5));
    let decode = &a.nvtx[1];
    assert_eq!(decode.name, "decode");
    assert_eq!(decode.count, 2);
    assert!(close(decode.total_us, 180.0));
    assert!(close(decode.max_us, 140.0));
    // 90 µs of gemm under the first, the copy and the set (15 µs) under the second.
    assert!(close(decode.gpu_busy_us, 105.0), "{decode:?}");
}

#[test]
fn gpus_are_listed_with_their_catalog_entry() {
    let a = run(&example());
    assert_eq!(a.gpus.len(), 1);
    let g = &a.gpus[0];
    assert_eq!(g.device, 0);
    assert_eq!(g.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(g.sm_count, Some(132));
    assert_eq!(g.total_memory_bytes, Some(85_017_755_648));
    assert_eq!(g.clock_hz, Some(1.98e9));
    assert_eq!(g.memory_bandwidth_bps, Some(3.35232e12));
    assert_eq!(g.catalog.as_deref(), Some("h100-sxm"));
    assert_eq!(g.catalog_hbm_bps, Some(3.35e12));
    // The trace's device list carries the name and SM count too.
    let d = &a.trace.devices[0];
    assert_eq!(d.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(d.num_sms, Some(132));
    assert!(close(d.busy_us, 205.0));
}

#[test]
fn newer_exports_name_the_cuda_device_of_a_gpu_in_their_own_table() {
    // The GPU table without cuDevice (GPU id 3), and the CUDA id it had in the process.
    let conn = example();
    conn.execute_batch(
        "CREATE TABLE g2 AS SELECT vmId, id, name, totalMemory, smCount FROM TARGET_INFO_GPU;
         DROP TABLE TARGET_INFO_GPU; ALTER TABLE g2 RENAME TO TARGET_INFO_GPU;
         UPDATE TARGET_INFO_GPU SET id = 3;
         CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER);
         INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (3, 0, 100);",
    )
    .unwrap();
    let a = run(&conn);
    assert_eq!(a.gpus[0].device, 0);
    assert_eq!(a.trace.devices[0].num_sms, Some(132));
    // Seen under two CUDA ids: the GPU id stays.
    conn.execute_batch(
        "PRAGMA query_only = OFF; INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (3, 1, 200);",
    )
    .unwrap();
    assert_eq!(run(&conn).gpus[0].device, 3);
}

#[test]
fn optional_tables_may_be_missing() {
    let conn = example();
    conn.execute_batch(
        "DROP TABLE NVTX_EVENTS; DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY;
         DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET; DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME;
         DROP TABLE TARGET_INFO_GPU; DROP TABLE TARGET_INFO_SESSION_START_TIME;",
    )
    .unwrap();
    let a = run(&conn);
    assert!(close(a.trace.temporal[0].busy_us, 190.0));
    assert!(a.nvtx.is_empty() && a.memory.is_empty() && a.gpus.is_empty());
    assert_eq!(a.trace.launch.matched, 0);
    assert_eq!(a.trace.launch.unmatched, 3);
    let notes = a.trace.notes.join("\n");
    assert!(
        notes.contains("no CUPTI_ACTIVITY_KIND_RUNTIME table"),
        "{notes}"
    );
    assert!(notes.contains("no NVTX_EVENTS table"), "{notes}");
    assert_eq!(a.tables, vec!["CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"]);
}

#[test]
fn an_export_without_kernel_rows_has_an_empty_breakdown() {
    let conn = example();
    conn.execute_batch(
        "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY;
         DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;",
    )
    .unwrap();
    let a = run(&conn);
    assert!(a.trace.temporal.is_empty());
    assert!(a.trace.notes.iter().any(|n| n.contains("no GPU kernels")));
    // The ranges are still read; no GPU work lies under them.
    assert_eq!(a.nvtx_ranges, 3);
    assert_eq!(a.nvtx[0].gpu_busy_us, 0.0);
}

#[test]
fn a_sqlite_file_that_is_not_an_nsight_export_is_refused_by_name() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE TABLE trials (id INTEGER PRIMARY KEY, value REAL);")
        .unwrap();
    let err = analyze(&conn, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "not an Nsight Systems export: no CUPTI_ACTIVITY_KIND_KERNEL table"
    );
    // A view of that name is not a table either.
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT 1 AS start;")
        .unwrap();
    assert!(analyze(&conn, &Options::default()).is_err());
}

#[test]
fn an_export_without_cuda_activity_says_it_holds_no_gpu_work() {
    // What `nsys profile --trace=osrt` exports: Nsight's own tables, no CUDA ones.
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT);
         CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE OSRT_API (start INTEGER, end INTEGER, nameId INTEGER);",
    )
    .unwrap();
    let err = analyze(&conn, &Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("an Nsight Systems export that holds no GPU work"),
        "{err}"
    );
    assert!(!err.contains("not an Nsight Systems export"), "{err}");
}

#[test]
fn text_where_a_time_belongs_is_refused_naming_the_table_and_column() {
    let conn = example();
    conn.execute_batch(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE correlationId = 2;",
    )
    .unwrap();
    let err = analyze(&conn, &Options::default()).unwrap_err().to_string();
    assert!(
        err.contains("CUPTI_ACTIVITY_KIND_KERNEL.start holds text, not an integer"),
        "{err}"
    );
}

#[test]
fn rows_without_times_are_left_out_and_said() {
    let conn = example();
    conn.execute_batch(
        "CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL;
         DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k2;
         UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = NULL WHERE correlationId = 3;",
    )
    .unwrap();
    let a = run(&conn);
    assert_eq!(a.trace.events.kernels, 2);
    assert!(a
        .trace
        .notes
        .iter()
        .any(|n| n.contains("1 GPU rows without a start or end")));
}

#[test]
fn names_are_bounded_and_strings_without_an_index_are_not_looked_up() {
    let conn = example();
    let long = "k".repeat(100_000);
    conn.execute("UPDATE StringIds SET value = ?1 WHERE id = 1", [&long])
        .unwrap();
    let a = run(&conn);
    let k = kernel(&a, "kkk");
    assert_eq!(k.name.len(), MAX_NAME_CHARS);

    let conn = example();
    conn.execute_batch(
        "CREATE TABLE s2 AS SELECT * FROM StringIds; DROP TABLE StringIds;
         CREATE TABLE StringIds (id TEXT, value TEXT); INSERT INTO StringIds SELECT * FROM s2;",
    )
    .unwrap();
    let a = run(&conn);
    assert!(kernel(&a, "string 1").count == 2);
    assert!(a
        .trace
        .notes
        .iter()
        .any(|n| n.contains("names are shown as string ids")));
}

#[test]
fn many_nvtx_names_are_pooled_past_the_limit() {
    let conn = example();
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {})
         INSERT INTO NVTX_EVENTS (start, end, eventType, text) SELECT i, i + 1, 59, 'r' || i FROM n;",
        MAX_NVTX_NAMES + 50
    ))
    .unwrap();
    let a = run(&conn);
    assert_eq!(a.nvtx.len(), NVTX_SHOWN);
    // The names kept apart, and the pooled entry.
    assert_eq!(a.nvtx_names, MAX_NVTX_NAMES as u64 + 1);
    assert!(a.nvtx.iter().any(|r| r.name == OTHER_RANGES));
    assert!(a
        .trace
        .notes
        .iter()
        .any(|n| n.contains("more than 10,000 distinct NVTX")));
}

#[test]
fn kernels_of_other_processes_do_not_join_this_processes_calls() {
    let conn = example();
    // The same correlation id in another process (pid 200): not this process's launch.
    conn.execute_batch(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,
           correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY,
           gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
           localMemoryPerThread, localMemoryTotal, gridId)
         VALUES (1500000, 1510000, 0, 1, 9, 1, 3355443200, 1, 2, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 9);",
    )
    .unwrap();
    let a = run(&conn);
    assert_eq!(a.trace.launch.matched, 4);
    assert_eq!(a.trace.launch.unmatched, 2);
}

#[test]
fn the_result_serializes_flat_like_a_trace_analysis_and_reads_back() {
    let a = run(&example());
    let v = serde_json::to_value(&a).unwrap();
    assert!(v["temporal"].is_array());
    assert_eq!(v["nvtx"][0]["name"], "allreduce");
    let trace: TraceAnalysis = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(trace, a.trace);
    let back: NsysSqliteAnalysis = serde_json::from_value(v).unwrap();
    assert_eq!(back, a);
}

#[test]
fn an_export_with_more_rows_than_are_kept_is_refused_saying_so() {
    let conn = example();
    // Five GPU rows and four calls, counted together: a limit of four refuses the GPU
    // rows, of eight the calls, of nine none.
    let err = analyze_bounded(&conn, &Options::default(), 4)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("the export holds more than 4 rows of GPU work and runtime/driver calls")
            && err.contains("ran out at its GPU rows (kernels, copies, sets)")
            && err.contains("256 MiB at most"),
        "{err}"
    );
    let err = analyze_bounded(&example(), &Options::default(), 8)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ran out at its runtime and driver calls"),
        "{err}"
    );
    assert!(analyze_bounded(&example(), &Options::default(), 9).is_ok());
    let conn = example();
    conn.execute_batch(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid,
           correlationId, nameId, returnValue) VALUES (1, 2, 1, 1677721701, 99, 5, 0),
           (3, 4, 1, 1677721701, 98, 5, 0);",
    )
    .unwrap();
    let err = analyze_bounded(&conn, &Options::default(), 9)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("more than 9 rows") && err.contains("runtime and driver calls"),
        "{err}"
    );
}

#[test]
fn busy_time_inside_a_window() {
    let mut b = Busy::default();
    for (s, e) in [(0.0, 10.0), (5.0, 20.0), (30.0, 40.0), (35.0, 36.0)] {
        b.add(s, e);
    }
    assert_eq!(b.within(0.0, 100.0), 30.0);
    assert_eq!(b.within(15.0, 35.0), 10.0);
    assert_eq!(b.within(20.0, 30.0), 0.0);
    assert_eq!(b.within(-5.0, 2.0), 2.0);
    assert_eq!(b.within(50.0, 40.0), 0.0);
}

#[test]
fn the_header_marks_sqlite() {
    assert!(is_sqlite(b"SQLite format 3\0\x10\x00"));
    assert!(!is_sqlite(b"SQLite format 2\0"));
}

/// The generated export the benchmark measures (`benches/nsys_sqlite.rs`), small: every
/// kernel read with its launch call, one NVTX range per hundred kernels.
#[test]
fn a_generated_export_is_read_whole() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&generated_export_sql(2_000)).unwrap();
    let a = analyze(&conn, &Options::default()).unwrap();
    assert_eq!(a.trace.events.kernels, 2_000);
    assert_eq!(a.trace.launch.matched, 2_000);
    assert_eq!(a.nvtx_ranges, 20);
}
