//! A small Kineto trace with two GPU idle intervals and queues around it, with known
//! answers: idle 10–12 ms (after a late launch) and 30–35 ms (launched, started late),
//! the trace's zero at Unix time [`BASE_S`].

use super::uploads::upload_analyzed;
use super::TestApp;

/// Uploads `body` through the API, attached to `investigation` when given; its id.
pub async fn upload(
    app: &mut TestApp,
    token: &str,
    name: &str,
    investigation: Option<i64>,
    body: Vec<u8>,
) -> i64 {
    let name = match investigation {
        Some(inv) => format!("{name}&investigation={inv}"),
        None => name.to_string(),
    };
    upload_analyzed(app, token, &name, body).await
}

/// Uploads [`trace`] and the request log `log`; their ids.
pub async fn upload_pair(
    app: &mut TestApp,
    token: &str,
    investigation: Option<i64>,
    log: Vec<u8>,
) -> (i64, i64) {
    let t = upload(app, token, "trace.json", investigation, trace()).await;
    let l = upload(app, token, "requests.jsonl", investigation, log).await;
    (t, l)
}

/// An investigation holding [`trace`] and [`log_with_a_bubble`]: (investigation, trace,
/// log).
pub async fn investigation_with_a_bubble(app: &mut TestApp, token: &str) -> (i64, i64, i64) {
    let inv = app.open_investigation(token, "idle GPU at p95").await;
    let (t, l) = upload_pair(app, token, Some(inv), log_with_a_bubble()).await;
    (inv, t, l)
}

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
