//! A small Kineto trace with two GPU idle intervals and queues around it, with known
//! answers: idle 10–12 ms (after a late launch) and 30–35 ms (launched, started late),
//! the trace's zero at Unix time [`BASE_S`].

/// The trace's `baseTimeNanoseconds`, in seconds.
pub const BASE_S: f64 = 1_764_600_000.0;

/// Kernels [0, 10) ms, [12, 30) ms and [35, 50) ms on GPU 0 stream 7.
pub fn trace() -> Vec<u8> {
    let kernel = |ts_ms: f64, dur_ms: f64, corr: u64| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":{},"dur":{},"args":{{"device":0,"stream":7,"correlation":{corr}}}}}"#,
            ts_ms * 1000.0,
            dur_ms * 1000.0
        )
    };
    let launch = |ts_ms: f64, corr: u64| {
        format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{corr}}}}}"#,
            ts_ms * 1000.0
        )
    };
    let events = [
        launch(-0.1, 1),
        kernel(0.0, 10.0, 1),
        // Launched after the GPU went idle at 10 ms: host wait.
        launch(11.5, 2),
        kernel(12.0, 18.0, 2),
        // Launched at 29 ms, before the GPU went idle: a launch gap.
        launch(29.0, 3),
        kernel(35.0, 15.0, 3),
    ];
    format!(
        r#"{{"schemaVersion":1,"baseTimeNanoseconds":{},"traceEvents":[{}]}}"#,
        (BASE_S * 1e9) as u64,
        events.join(",")
    )
    .into_bytes()
}

/// Requests `(arrival ms after the trace's zero, queue_wait_ms, total_ms)`.
pub fn request_log(requests: &[(f64, f64, f64)]) -> Vec<u8> {
    requests
        .iter()
        .enumerate()
        .map(|(i, (at, wait, total))| {
            format!(
                "{{\"request_id\":\"r{i}\",\"arrival_ts\":{:.4},\"queue_wait_ms\":{wait},\"prefill_ms\":1,\"first_token_ms\":{},\"total_ms\":{total},\"prompt_tokens\":100,\"output_tokens\":10}}\n",
                BASE_S + at / 1000.0,
                wait + 1.0
            )
        })
        .collect::<String>()
        .into_bytes()
}

/// A request waits 9–11.5 ms (during the first idle interval); the log covers 0–50 ms.
pub fn log_with_a_bubble() -> Vec<u8> {
    request_log(&[(0.0, 0.0, 50.0), (9.0, 2.5, 20.0)])
}

/// Nobody waits: both idle intervals had an empty queue.
pub fn log_without_waiting() -> Vec<u8> {
    request_log(&[(0.0, 0.0, 50.0), (20.0, 0.0, 25.0)])
}
