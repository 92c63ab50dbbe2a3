//! Search at scale: 100,000 generated journal entries, the search query's latency
//! (uncached, release build), and the search page's throughput over loopback HTTP at
//! 32 concurrent connections.
//!
//! Run: `DATABASE_URL=postgres://… cargo bench --bench search`. The entries go into a
//! database named `perfjournal_bench` on that server, kept between runs (generation
//! takes a minute or two); `BENCH_FRESH=1` rebuilds it. `BENCH_SECONDS` sets how long
//! each load phase runs (default 10).

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perfjournal::auth::{password, users, Role};
use perfjournal::config::Config;
use perfjournal::core::memory::SearchQuery;
use perfjournal::state::AppState;
use rand::{Rng, SeedableRng};
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

const ENTRIES: i64 = 100_000;
const CONNECTIONS: usize = 32;
const PASSWORD: &str = "benchmark password";

const METRICS: [(&str, &str, &str); 6] = [
    ("p95", "TTFT", "ms"),
    ("p50", "ITL", "ms"),
    ("p99", "TPOT", "ms"),
    ("p95", "E2E latency", "ms"),
    ("p50", "throughput", "tok/s"),
    ("p99", "queue wait", "ms"),
];
const PHASES: [&str; 6] = [
    "Queue wait",
    "Prefill",
    "Decode",
    "Tokenize",
    "Network",
    "Detokenize",
];
/// (cause, change)
const CAUSES: [(&str, &str); 16] = [
    (
        "chunked prefill was off and long prompts blocked decode steps",
        "enabled chunked prefill with a 4,096-token budget",
    ),
    (
        "the prefix cache hit rate fell after the prompt template put the date first",
        "moved the date after the shared system prompt",
    ),
    (
        "KV cache preemption at high concurrency recomputed whole sequences",
        "lowered max_num_seqs to 128",
    ),
    (
        "the tokenizer ran single-threaded in the API server",
        "switched to the fast tokenizer with a thread pool",
    ),
    (
        "a buffering proxy held the first token until the response filled a chunk",
        "disabled proxy buffering for streaming routes",
    ),
    (
        "NCCL all-reduce over PCIe dominated tensor-parallel decode",
        "moved the replica to NVLink hosts",
    ),
    (
        "decode ran at 35% of its bandwidth floor because of small batches",
        "raised the batch size with a longer scheduling window",
    ),
    (
        "an implicit synchronisation from .item() stalled every step",
        "removed the host read of the sampled token",
    ),
    (
        "CUDA graphs were disabled for the new batch sizes",
        "captured graphs for the batch sizes in use",
    ),
    (
        "the FP8 KV cache fell back to BF16 after the upgrade",
        "pinned the kv cache dtype to fp8",
    ),
    (
        "detokenizing per token with a slow Python loop",
        "detokenized incrementally in the Rust path",
    ),
    (
        "admission control capped the running batch at 32",
        "raised the admission limit to match memory",
    ),
    (
        "speculative decoding rejected most draft tokens on code prompts",
        "turned speculative decoding off for the code tenant",
    ),
    (
        "GPU memory utilisation left too few KV blocks",
        "raised gpu_memory_utilization to 0.92",
    ),
    (
        "a noisy neighbour throttled the GPU clocks",
        "moved the replica off the shared host",
    ),
    (
        "the load balancer sent long prompts to one replica",
        "balanced by prompt tokens instead of requests",
    ),
];
const MODELS: [&str; 6] = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "qwen-2.5-7b",
    "qwen-2.5-72b",
    "mistral-7b",
    "mixtral-8x7b",
];
const GPUS: [&str; 5] = ["h100-sxm", "h100-pcie", "a100-80gb", "l40s", "h200"];
const ENGINES: [&str; 4] = [
    "vLLM 0.6.3",
    "vLLM 0.5.4",
    "SGLang 0.3.2",
    "TensorRT-LLM 0.12",
];

/// The queries the latency and throughput phases send (a mix of words, phrases, OR,
/// exclusions, typos, facets and browsing).
const QUERIES: [&str; 24] = [
    "q=prefill",
    "q=chunked+prefill",
    "q=%22prefix+cache%22",
    "q=preemption+OR+admission",
    "q=tokenizer+-python",
    "q=nccl+all-reduce",
    "q=ttft+queue",
    "q=decode+bandwidth+floor",
    "q=proxy+buffering",
    "q=prefil+chunkd",
    "q=kv+cache+preemptoin",
    "q=prefill&metric=ttft",
    "metric=itl",
    "q=cache&phase=prefill",
    "q=graphs&gpu=h100-sxm",
    "q=speculative+decoding",
    "q=fp8",
    "q=noisy+neighbour",
    "",
    "metric=ttft&phase=queue_wait",
    "q=load+balancer+long+prompts",
    "q=%22gpu+memory%22",
    "q=throughput&from=2025-01-01&to=2025-06-30",
    "q=detokenized+incrementally",
];

/// This process's resident memory (Linux), in MiB.
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

async fn generate(pool: &PgPool, author: i64) -> anyhow::Result<()> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
    let chunk = 10_000;
    for start in (0..ENTRIES).step_by(chunk) {
        let n = chunk.min((ENTRIES - start) as usize);
        let mut cols: [Vec<String>; 10] = Default::default();
        for i in 0..n {
            let (pct, metric, unit) = METRICS[rng.random_range(0..METRICS.len())];
            let phase = PHASES[rng.random_range(0..PHASES.len())];
            let (cause, change) = CAUSES[rng.random_range(0..CAUSES.len())];
            let model = MODELS[rng.random_range(0..MODELS.len())];
            let gpu = GPUS[rng.random_range(0..GPUS.len())];
            let engine = ENGINES[rng.random_range(0..ENGINES.len())];
            let observed = rng.random_range(120..4000);
            let target = observed / rng.random_range(2..6);
            let prompt = rng.random_range(200..8000);
            let output = rng.random_range(50..1200);
            let rate = rng.random_range(2..80);
            let day = chrono::NaiveDate::from_ymd_opt(2023, 1, 1).unwrap()
                + chrono::Duration::days(rng.random_range(0..1400));
            let values = [
                format!("{metric} on {model}: {cause} (#{})", start as usize + i),
                day.to_string(),
                format!("{pct} {metric} {observed} {unit} vs target {target} {unit} on {model}, {gpu}, {engine}"),
                format!("prompt tokens mean {prompt}; output tokens mean {output}; {rate} req/s"),
                format!("{pct} {metric} {observed} {unit}"),
                format!("{phase} dominates the {pct} {metric}. {cause}."),
                format!("{change}."),
                format!("{pct} {metric} {target} {unit}; verdict: confirmed"),
                "200 paired generations identical".to_string(),
                format!("{} hours", rng.random_range(1..40)),
            ];
            for (c, v) in cols.iter_mut().zip(values) {
                c.push(v);
            }
        }
        sqlx::query(
            "INSERT INTO journal_entries (title, entry_date, symptom, workload, baseline, diagnosis, \
             change, result, quality, effort, published_at, author_id) \
             SELECT t, d::date, s, w, b, g, c, r, q, e, now(), $11 FROM unnest($1::text[], $2::text[], \
             $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], \
             $10::text[]) AS x(t, d, s, w, b, g, c, r, q, e)",
        )
        .bind(&cols[0])
        .bind(&cols[1])
        .bind(&cols[2])
        .bind(&cols[3])
        .bind(&cols[4])
        .bind(&cols[5])
        .bind(&cols[6])
        .bind(&cols[7])
        .bind(&cols[8])
        .bind(&cols[9])
        .bind(author)
        .execute(pool)
        .await?;
    }
    Ok(())
}

async fn prepare() -> anyhow::Result<(PgPool, i64)> {
    let url = std::env::var("DATABASE_URL").map_err(|_| {
        anyhow::anyhow!(
            "set DATABASE_URL to a PostgreSQL server the benchmark may create a database on"
        )
    })?;
    let options = PgConnectOptions::from_str(&url)?.database("perfjournal_bench");
    if std::env::var_os("BENCH_FRESH").is_some() {
        // A plain connection: the server's own database is not the app's to migrate.
        let admin = PgPool::connect_with(PgConnectOptions::from_str(&url)?).await?;
        sqlx::query("DROP DATABASE IF EXISTS perfjournal_bench WITH (FORCE)")
            .execute(&admin)
            .await?;
        admin.close().await;
    }
    let pool = perfjournal::db::connect(options).await?;
    let author = match users::credentials(&pool, "bench").await? {
        Some((u, _)) => u.id,
        None => {
            let hash = password::hash(PASSWORD.into()).await?;
            users::create(&pool, "bench", &hash, Role::Admin, false)
                .await?
                .id
        }
    };
    let have: i64 = sqlx::query_scalar("SELECT count(*) FROM journal_entries")
        .fetch_one(&pool)
        .await?;
    if have < ENTRIES {
        let t = Instant::now();
        generate(&pool, author).await?;
        println!(
            "generated {ENTRIES} journal entries in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let t = Instant::now();
    let rebuilt = perfjournal::search::refresh(&pool).await?;
    if rebuilt > 0 {
        println!(
            "built {rebuilt} search documents in {:.1} s ({:.0} per second)",
            t.elapsed().as_secs_f64(),
            rebuilt as f64 / t.elapsed().as_secs_f64()
        );
        sqlx::query("VACUUM ANALYZE search_documents")
            .execute(&pool)
            .await?;
    }
    let docs: i64 = sqlx::query_scalar("SELECT count(*) FROM search_documents")
        .fetch_one(&pool)
        .await?;
    println!("{docs} search documents");
    Ok((pool, author))
}

fn parse(query: &str) -> SearchQuery {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
    SearchQuery::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap()
}

async fn query_latency(pool: &PgPool) -> anyhow::Result<()> {
    let searcher = perfjournal::search::Searcher::new();
    let before = rss_mib();
    let t = Instant::now();
    let (documents, bytes) = searcher.warm(pool).await?;
    println!(
        "loaded {documents} documents into the search index in {:.2} s: {:.1} MiB of index; resident memory {:.0} MiB before, {:.0} MiB after",
        t.elapsed().as_secs_f64(),
        bytes as f64 / (1024.0 * 1024.0),
        before,
        rss_mib()
    );
    let queries: Vec<SearchQuery> = QUERIES.iter().map(|q| parse(q)).collect();
    for q in &queries {
        searcher.search_uncached(pool, q).await?;
    }
    let mut all = Vec::new();
    let mut worst: Vec<(Duration, &str, i64)> = Vec::new();
    for (q, text) in queries.iter().zip(QUERIES) {
        let mut times = Vec::new();
        let mut total = 0;
        for _ in 0..15 {
            let t = Instant::now();
            let outcome = searcher.search_uncached(pool, q).await?;
            times.push(t.elapsed());
            total = outcome.total;
        }
        times.sort();
        worst.push((percentile(&times, 0.5), text, total));
        all.extend(times);
    }
    all.sort();
    println!(
        "search query (uncached, results + all facet counts + snippets), {} runs: p50 {}, p95 {}, p99 {}, max {}",
        all.len(),
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.95)),
        ms(percentile(&all, 0.99)),
        ms(*all.last().unwrap())
    );
    worst.sort_by_key(|w| std::cmp::Reverse(w.0));
    for (d, q, total) in &worst {
        println!("  median {:>9}  {total:>6} matches  ?{q}", ms(*d));
    }
    Ok(())
}

/// Signs in over HTTP and returns the session cookie.
async fn login(client: &reqwest::Client, base: &str) -> anyhow::Result<String> {
    let page = client.get(format!("{base}/login")).send().await?;
    let cookie = page
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or_default()
        .to_string();
    let html = page.text().await?;
    let marker = "name=\"_csrf\" value=\"";
    let at = html
        .find(marker)
        .ok_or_else(|| anyhow::anyhow!("no CSRF field"))?
        + marker.len();
    let csrf = &html[at..at + html[at..].find('"').unwrap()];
    let body =
        serde_urlencoded::to_string([("name", "bench"), ("password", PASSWORD), ("_csrf", csrf)])?;
    let reply = client
        .post(format!("{base}/login"))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", base)
        .body(body)
        .send()
        .await?;
    anyhow::ensure!(
        reply.status().is_redirection(),
        "login failed: {}",
        reply.status()
    );
    Ok(reply
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map_or(cookie, str::to_string))
}

/// Sends requests from 32 connections for the given time; `path(n)` makes the n-th URL.
async fn load(
    client: &reqwest::Client,
    cookie: &str,
    seconds: u64,
    path: Arc<dyn Fn(u64) -> String + Send + Sync>,
) -> (f64, Vec<Duration>, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONNECTIONS {
        let (client, cookie, stop, counter, errors, path) = (
            client.clone(),
            cookie.to_string(),
            stop.clone(),
            counter.clone(),
            errors.clone(),
            path.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let t = Instant::now();
                match client.get(path(n)).header("cookie", &cookie).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        times.push(t.elapsed());
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            times
        }));
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut times = Vec::new();
    for t in tasks {
        times.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed().as_secs_f64();
    times.sort();
    (
        times.len() as f64 / elapsed,
        times,
        errors.load(Ordering::Relaxed),
    )
}

async fn page_throughput(pool: PgPool) -> anyhow::Result<()> {
    let blobs = tempfile::tempdir()?;
    let state = AppState::new(
        pool,
        Config::default(),
        perfjournal::storage::BlobStore::local(blobs.path())?,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let app = perfjournal::server::app(state);
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .unwrap();
    });
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(CONNECTIONS)
        .build()?;
    let cookie = login(&client, &base).await?;
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);

    let b = base.clone();
    let mixed =
        Arc::new(move |n: u64| format!("{b}/search?{}", QUERIES[n as usize % QUERIES.len()]));
    let (rps, times, errors) = load(&client, &cookie, seconds, mixed).await;
    println!(
        "search page, {CONNECTIONS} connections, the {} queries above repeated (answers cached between data changes): {rps:.0} requests/s, p50 {}, p95 {}, {errors} errors",
        QUERIES.len(),
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.95)),
    );
    let b = base.clone();
    // A different end date per request: every request runs the full query.
    let distinct = Arc::new(move |n: u64| {
        let day =
            chrono::NaiveDate::from_ymd_opt(2027, 1, 1).unwrap() + chrono::Duration::days(n as i64);
        let q = QUERIES[n as usize % QUERIES.len()];
        let q = if q.contains("to=") { "q=prefill" } else { q };
        format!("{b}/search?{q}&to={day}")
    });
    let (rps, times, errors) = load(&client, &cookie, seconds, distinct).await;
    println!(
        "search page, {CONNECTIONS} connections, every request a new search (no cache hits): {rps:.0} requests/s, p50 {}, p95 {}, {errors} errors",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.95)),
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (pool, _) = prepare().await?;
        query_latency(&pool).await?;
        page_throughput(pool).await
    })
}
