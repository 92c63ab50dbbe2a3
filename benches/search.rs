//! Search and pages at scale: 100,000 generated journal entries whose text draws on a
//! vocabulary of thousands of words (every distinct word of this repository's own
//! documentation, templates and sources, Zipf-distributed), then
//! 1. the search query's latency in process (uncached, release build);
//! 2. the search page's throughput from an in-process client at 32 connections;
//! 3. **the real server under an outside load generator**: the release binary started as
//!    a child process on the same database, `wrk` (Debian's package) driving `/healthz`,
//!    random journal entry pages, varied 1–3-word searches (single client and 32
//!    connections), the `/journal` first page, the first search after a 10,000-entry
//!    `perfjournal import`, and the server's resident memory. Each figure is printed next
//!    to `/healthz` in the same run: that ratio survives a busy machine.
//!
//! Run: `DATABASE_URL=postgres://… cargo bench --bench search`. The entries go into a
//! database named `perfjournal_bench_v2` on that server, kept between runs (generation
//! takes a minute or two); `BENCH_FRESH=1` rebuilds it. `BENCH_SECONDS` sets how long
//! each load phase runs (default 10); `BENCH_ONLY=outside` runs only phase 3.

mod common;
#[path = "common/server.rs"]
mod server;

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perfjournal::config::Config;
use perfjournal::core::recall::SearchQuery;
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

/// Every distinct word (4–14 letters, lower case) of the repository's README, docs,
/// templates and sources, in a seeded random order: rank = position, for Zipf draws.
fn vocabulary() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .extension()
                .is_some_and(|e| e == "rs" || e == "md" || e == "html")
            {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "templates", "src"] {
        walk(&root.join(dir), &mut files);
    }
    let mut words = std::collections::BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for w in text.split(|c: char| !c.is_ascii_alphabetic()) {
            if (4..=14).contains(&w.len()) {
                words.insert(w.to_ascii_lowercase());
            }
        }
    }
    let mut words: Vec<String> = words.into_iter().collect();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
    for i in (1..words.len()).rev() {
        words.swap(i, rng.random_range(0..=i));
    }
    words
}

/// A Zipf-like draw: rank r comes up about in proportion to 1/r.
fn zipf<'a>(rng: &mut impl Rng, words: &'a [String]) -> &'a str {
    let n = words.len() as f64;
    let rank = n.powf(rng.random::<f64>()) as usize;
    &words[rank.saturating_sub(1).min(words.len() - 1)]
}

async fn generate(pool: &PgPool, author: i64) -> anyhow::Result<()> {
    let words = vocabulary();
    println!("vocabulary: {} distinct words", words.len());
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
                {
                    let notes: Vec<&str> = (0..rng.random_range(6..16))
                        .map(|_| zipf(&mut rng, &words))
                        .collect();
                    format!("{phase} dominates the {pct} {metric}. {cause}. Notes: {}.", notes.join(" "))
                },
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
    let options = PgConnectOptions::from_str(&url)?.database("perfjournal_bench_v2");
    if std::env::var_os("BENCH_FRESH").is_some() {
        // A plain connection: the server's own database is not the app's to migrate.
        let admin = PgPool::connect_with(PgConnectOptions::from_str(&url)?).await?;
        sqlx::query("DROP DATABASE IF EXISTS perfjournal_bench_v2 WITH (FORCE)")
            .execute(&admin)
            .await?;
        admin.close().await;
    }
    let pool = perfjournal::db::connect(options).await?;
    let author = common::admin_user(&pool, "bench", PASSWORD).await?;
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
    let cookie = common::login(&client, &base, "bench", PASSWORD).await?;
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

/// The load script: `PJ_MODE` = plain (the URL as given), entry (a random journal entry
/// page between `PJ_LO` and `PJ_HI`) or search (1–3 Zipf-drawn words from `PJ_WORDS`);
/// `PJ_COOKIE` signs the requests in. `done` prints one RESULT line to parse.
const WRK_SCRIPT: &str = r#"
local mode = os.getenv("PJ_MODE") or "plain"
local cookie = os.getenv("PJ_COOKIE")
local lo = tonumber(os.getenv("PJ_LO") or "1")
local hi = tonumber(os.getenv("PJ_HI") or "1")
local words = {}
local counter = 0
function init(args)
  math.randomseed(os.time() + tonumber(tostring(wrk.thread):match("0x(%x+)") or "1", 16) % 100000)
  if mode == "search" then
    for w in io.lines(os.getenv("PJ_WORDS")) do words[#words + 1] = w end
  end
end
function request()
  local path = wrk.path
  if mode == "entry" then
    path = "/journal/" .. math.random(lo, hi)
  elseif mode == "search" then
    local q = {}
    for i = 1, math.random(1, 3) do
      q[i] = words[math.max(1, math.floor((#words) ^ math.random()))]
    end
    path = "/search?q=" .. table.concat(q, "+")
  end
  local headers = {}
  if cookie then headers["Cookie"] = cookie end
  return wrk.format("GET", path, headers)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(95), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
"#;

/// One wrk run's figures.
struct Wrk {
    rps: f64,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn wrk(
    url: &str,
    connections: usize,
    seconds: u64,
    env: &[(&str, &str)],
    script: &std::path::Path,
) -> anyhow::Result<Wrk> {
    let threads = connections.clamp(1, 2).to_string();
    let out = std::process::Command::new("wrk")
        .args([
            "-t",
            &threads,
            "-c",
            &connections.to_string(),
            "-d",
            &format!("{seconds}s"),
            "--timeout",
            "10s",
            "-s",
        ])
        .arg(script)
        .arg(url)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| anyhow::anyhow!("wrk did not run ({e}): apt-get install wrk"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "wrk printed no result: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    let v: Vec<f64> = line[7..]
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(f64::NAN))
        .collect();
    Ok(Wrk {
        rps: v[0] / (v[1] / 1e6),
        p50_ms: v[2] / 1000.0,
        p95_ms: v[3] / 1000.0,
        p99_ms: v[4] / 1000.0,
        errors: v[5] as u64,
    })
}

/// VmRSS and VmHWM of a process, MiB.
fn rss_of(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Phase 3: the release server as a child process, loaded from outside by wrk.
async fn outside_load(pool: PgPool, author: i64) -> anyhow::Result<()> {
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let url = std::env::var("DATABASE_URL")?;
    // The same server, the benchmark's database: postgres://…/NAME?params → …/perfjournal_bench_v2.
    let db_url = {
        let (head, params) = url
            .split_once('?')
            .map_or((url.as_str(), None), |(h, p)| (h, Some(p)));
        let after_scheme = head.find("://").map_or(0, |i| i + 3);
        let server = match head[after_scheme..].find('/') {
            Some(i) => &head[..after_scheme + i],
            None => head,
        };
        match params {
            Some(p) => format!("{server}/perfjournal_bench_v2?{p}"),
            None => format!("{server}/perfjournal_bench_v2"),
        }
    };
    // What autovacuum would have done by now on a deployment: the rows generation and
    // earlier runs' imports replaced (search_stale's queue above all, which every search
    // counts) are dead until vacuumed, and this machine's PostgreSQL runs with autovacuum
    // off (its CI configuration). Unvacuumed, a search here took 13 ms instead of 2.
    sqlx::query("VACUUM ANALYZE").execute(&pool).await?;
    let work = tempfile::tempdir()?;
    let mut server = server::Process::spawn(&db_url, work.path(), &[]).await?;
    let (pid, base, client, started) = (
        server.pid,
        server.base.clone(),
        server.client.clone(),
        server.started,
    );
    let data = server.data_dir().to_path_buf();
    let (_, token) = perfjournal::auth::tokens::create(&pool, author, "bench").await?;
    let search_api = |q: &str| {
        client
            .get(format!("{base}/api/v1/search?q={q}"))
            .bearer_auth(&token)
            .send()
    };
    // The index loads in the background at start; wait until it holds everything.
    loop {
        let v: serde_json::Value = serde_json::from_str(&search_api("").await?.text().await?)?;
        if v["total"].as_i64().unwrap_or(0) >= ENTRIES && v["pending_changes"] == 0 {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(300),
            "the index never loaded: {v}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "outside load: release server pid {pid} up with its index loaded after {:.1} s; load average {}",
        started.elapsed().as_secs_f64(),
        common::loadavg()
    );
    let cookie = common::login(&client, &base, "bench", PASSWORD).await?;
    let script = data.as_path().join("load.lua");
    std::fs::write(&script, WRK_SCRIPT)?;
    let words_file = data.as_path().join("words.txt");
    std::fs::write(&words_file, vocabulary().join("\n"))?;
    let (lo, hi): (i64, i64) = sqlx::query_as("SELECT min(id), max(id) FROM journal_entries")
        .fetch_one(&pool)
        .await?;
    let (lo, hi) = (lo.to_string(), hi.to_string());
    let words = words_file.to_string_lossy().to_string();

    let mut table = common::Table::new(&[
        "what (wrk, loopback)",
        "conns",
        "requests/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        "÷ /healthz",
    ]);
    let mut row = |what: &str, c: usize, w: &Wrk, health: Option<&Wrk>| {
        table.row(vec![
            what.to_string(),
            c.to_string(),
            common::num(w.rps, 0),
            common::num(w.p50_ms, 2),
            common::num(w.p95_ms, 2),
            common::num(w.p99_ms, 2),
            w.errors.to_string(),
            health.map_or("-".into(), |h| format!("{:.2}", w.rps / h.rps)),
        ]);
    };
    let plain = [("PJ_MODE", "plain")];
    let health32 = wrk(&format!("{base}/healthz"), 32, seconds, &plain, &script)?;
    let health64 = wrk(&format!("{base}/healthz"), 64, seconds, &plain, &script)?;
    let entry_env = [
        ("PJ_MODE", "entry"),
        ("PJ_COOKIE", cookie.as_str()),
        ("PJ_LO", lo.as_str()),
        ("PJ_HI", hi.as_str()),
    ];
    let entry = wrk(&base, 64, seconds, &entry_env, &script)?;
    let search_env = [
        ("PJ_MODE", "search"),
        ("PJ_COOKIE", cookie.as_str()),
        ("PJ_WORDS", words.as_str()),
    ];
    let search1 = wrk(&base, 1, seconds, &search_env, &script)?;
    let search32 = wrk(&base, 32, seconds, &search_env, &script)?;
    let health1 = wrk(&format!("{base}/healthz"), 1, seconds, &plain, &script)?;
    row("/healthz", 1, &health1, None);
    row("/healthz", 32, &health32, None);
    row("/healthz", 64, &health64, None);
    row(
        "journal entry page, random ids",
        64,
        &entry,
        Some(&health64),
    );
    row("search page, 1-3 random words", 1, &search1, Some(&health1));
    row(
        "search page, 1-3 random words",
        32,
        &search32,
        Some(&health32),
    );

    // The /journal first page: size and latency, one client.
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..30 {
        let t = Instant::now();
        let body = client
            .get(format!("{base}/journal"))
            .header("cookie", &cookie)
            .send()
            .await?
            .bytes()
            .await?;
        times.push(t.elapsed());
        size = body.len();
    }
    times.sort();
    let (rss, hwm) = rss_of(pid);
    table.print("the real server (release build) under wrk");
    println!(
        "/journal first page, one client, 30 requests: {size} bytes, p50 {}, max {}",
        ms(percentile(&times, 0.5)),
        ms(*times.last().unwrap())
    );
    println!("server resident memory after the load ({ENTRIES} entries indexed): {rss:.0} MiB now, peak {hwm:.0} MiB");

    // The first search after a 10,000-entry import (the CLI, on the same database).
    let words = vocabulary();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(std::process::id() as u64);
    let marker = format!("importmark{}", rng.random_range(100_000..999_999));
    let entries: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            let notes: Vec<&str> = (0..12).map(|_| zipf(&mut rng, &words)).collect();
            serde_json::json!({
                "title": format!("Imported {marker} {i}"), "date": "2026-06-01",
                "symptom": "p95 TTFT 3200 ms vs target 800 ms", "workload": "prompt 1500, 45 req/s",
                "baseline": "vLLM 0.6.3", "diagnosis": format!("queue wait dominates. {}", notes.join(" ")),
                "change": "raised max_num_seqs", "result": "p95 TTFT 900 ms", "quality": "unchanged",
                "effort": "1 day"
            })
        })
        .collect();
    let file = data.as_path().join("import.json");
    std::fs::write(
        &file,
        serde_json::json!({"format": "perfjournal-journal", "version": 1, "entries": entries})
            .to_string(),
    )?;
    let t = Instant::now();
    let import = tokio::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .args(["import", &file.to_string_lossy(), "--user", "bench"])
        .env("DATABASE_URL", &db_url)
        .env("PERFJOURNAL_DATA_DIR", data.as_path())
        .output()
        .await?;
    anyhow::ensure!(
        import.status.success(),
        "import failed: {}",
        String::from_utf8_lossy(&import.stderr)
    );
    let import_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let first: serde_json::Value =
        serde_json::from_str(&search_api("prefill").await?.text().await?)?;
    let first_ms = t.elapsed().as_secs_f64() * 1000.0;
    let caught_up = Instant::now();
    loop {
        let v: serde_json::Value = serde_json::from_str(&search_api(&marker).await?.text().await?)?;
        if v["total"] == 10_000 {
            break;
        }
        anyhow::ensure!(
            caught_up.elapsed() < Duration::from_secs(300),
            "the import never reached the index: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "import of 10,000 entries (CLI): {import_s:.1} s ({:.0} entries/s); the first search after it answered in {first_ms:.0} ms with {} changes still pending; all 10,000 searchable {:.1} s after the import finished",
        10_000.0 / import_s,
        first["pending_changes"],
        caught_up.elapsed().as_secs_f64() + first_ms / 1000.0
    );
    // Leave the dataset as it was for the next run.
    sqlx::query("DELETE FROM journal_entries WHERE title LIKE $1")
        .bind(format!("Imported {marker} %"))
        .execute(&pool)
        .await?;
    let (rss, hwm) = rss_of(pid);
    println!("server resident memory at the end: {rss:.0} MiB now, peak {hwm:.0} MiB");
    server.kill().await;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (pool, author) = prepare().await?;
        if std::env::var("BENCH_ONLY").as_deref() != Ok("outside") {
            query_latency(&pool).await?;
            page_throughput(pool.clone()).await?;
        }
        outside_load(pool, author).await
    })
}
