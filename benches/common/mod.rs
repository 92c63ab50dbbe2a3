//! Small helpers shared by the benchmark programs: statistics over repeated runs,
//! a plain-text table, and peak memory of child processes.
#![allow(dead_code)]

use std::time::Duration;

/// Reads a positive integer from the environment, else the default.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(default)
}

/// The 1/5/15-minute load averages: the machine is shared, so every report says how
/// busy it was.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Clock ticks per second of the CPU times in /proc (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// CPU-seconds every core of the machine has spent since boot (a) busy: user, nice,
/// system and interrupts, not idle or waiting on I/O; and (b) stolen: wanted by this
/// virtual machine but given to others by its host. From /proc/stat. The difference of
/// (a) over a phase is the work that phase cost the whole machine, whichever process
/// (the server, PostgreSQL's backends, psql, the client) did it; (b) says how much the
/// host held back meanwhile.
pub fn machine_cpu_secs() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    // cpu user nice system idle iowait irq softirq steal ...
    let f: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    if f.len() < 8 {
        return (f64::NAN, f64::NAN);
    }
    let t = clock_ticks();
    ((f[0] + f[1] + f[2] + f[5] + f[6]) / t, f[7] / t)
}

/// CPU-seconds in one /proc `stat` line: utime + stime (fields 14 and 15 of the line, 11
/// and 12 after the name), with cutime + cstime (16, 17: what the process's exited
/// children used) when `children`. `None` when the line does not parse.
fn stat_cpu_secs(stat: &str, children: bool) -> Option<f64> {
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let ticks = after
        .split_whitespace()
        .skip(11)
        .take(if children { 4 } else { 2 })
        .map(|v| v.parse::<f64>().ok())
        .collect::<Option<Vec<f64>>>()?;
    Some(ticks.iter().sum::<f64>() / clock_ticks())
}

/// The numbered entries of a /proc directory (processes, or one process's threads), each
/// with its `stat` line.
fn proc_stats(dir: &str) -> impl Iterator<Item = (u32, String)> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let id = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            Some((id, stat))
        })
}

/// CPU-seconds process `pid` has used so far, all its threads (user and system).
pub fn process_cpu_secs(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat_cpu_secs(&stat, false))
        .unwrap_or(f64::NAN)
}

/// CPU-seconds all of PostgreSQL's processes on this machine have used so far: every
/// live process named `postgres` (the postmaster, its backends and workers), with what
/// the postmaster's exited children used, so a backend that ends between two snapshots
/// (psql's) still counts. The difference over a phase is PostgreSQL's share of its work.
pub fn postgres_cpu_secs() -> f64 {
    proc_stats("/proc")
        .filter(|(_, stat)| {
            stat.split_once(" (")
                .is_some_and(|(_, rest)| rest.starts_with("postgres) "))
        })
        .filter_map(|(_, stat)| stat_cpu_secs(&stat, true))
        .sum()
}

/// CPU-seconds (user + system) each thread of process `pid` has used so far, by thread id.
/// The difference of two snapshots shows whether one thread bounds a run.
pub fn thread_cpu_secs(pid: u32) -> std::collections::HashMap<u32, f64> {
    proc_stats(&format!("/proc/{pid}/task"))
        .filter_map(|(tid, stat)| Some((tid, stat_cpu_secs(&stat, false)?)))
        .collect()
}

/// The largest per-thread CPU-seconds between two [`thread_cpu_secs`] snapshots.
pub fn busiest_thread_secs(
    before: &std::collections::HashMap<u32, f64>,
    after: &std::collections::HashMap<u32, f64>,
) -> f64 {
    after
        .iter()
        .map(|(tid, t)| t - before.get(tid).copied().unwrap_or(0.0))
        .fold(0.0, f64::max)
}

/// Seconds of a duration, as f64.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Median of a non-empty sample (mean of the middle two when even).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

pub fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

pub const MB: f64 = 1_000_000.0;
pub const MIB: f64 = 1024.0 * 1024.0;

/// A table printed with aligned columns (first column left, the rest right).
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn print(&self, title: &str) {
        let n = self.headers.len();
        let mut width = vec![0usize; n];
        for r in std::iter::once(&self.headers).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        println!("\n{title}");
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                let pad = width[i] - c.chars().count();
                if i == 0 {
                    out.push_str(c);
                    out.push_str(&" ".repeat(pad));
                } else {
                    out.push_str("  ");
                    out.push_str(&" ".repeat(pad));
                    out.push_str(c);
                }
            }
            println!("{}", out.trim_end());
        };
        line(&self.headers);
        println!("{}", "-".repeat(width.iter().sum::<usize>() + 2 * (n - 1)));
        for r in &self.rows {
            line(r);
        }
    }
}

/// Formats a number with thousands separators and a fixed number of decimals.
pub fn num(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    let mut out = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    if v < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

/// How a child process ended, with its wall time and peak resident memory.
pub struct ChildRun {
    pub wall: Duration,
    /// `ru_maxrss` of the child itself (from `wait4`), bytes.
    pub max_rss_bytes: u64,
    pub status: std::process::ExitStatus,
    pub timed_out: bool,
}

/// Waits for a spawned child with `wait4`, so its own `ru_maxrss` is read (not the
/// maximum over every child this process ever had); kills it after `timeout`.
pub fn wait_child(
    child: std::process::Child,
    started: std::time::Instant,
    timeout: Duration,
) -> ChildRun {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as libc::pid_t;
    let mut timed_out = false;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: plain syscall on our own child; `usage` is a zeroed out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            // Linux reports ru_maxrss in KiB.
            return ChildRun {
                wall: started.elapsed(),
                max_rss_bytes: usage.ru_maxrss as u64 * 1024,
                status: std::process::ExitStatus::from_raw(status),
                timed_out,
            };
        }
        if r < 0 {
            panic!("wait4 failed: {}", std::io::Error::last_os_error());
        }
        if !timed_out && started.elapsed() > timeout {
            timed_out = true;
            // SAFETY: signalling our own child, which has not been reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server URL pointed at another database (query parameters kept).
pub fn url_with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let rest = base
        .strip_prefix("postgres://")
        .or_else(|| base.strip_prefix("postgresql://"));
    let host_part = match rest {
        Some(r) => r.split_once('/').map(|(h, _)| h).unwrap_or(r),
        None => base,
    };
    format!("postgres://{host_part}/{db}{query}")
}

/// Signs in over HTTP (the login form, its CSRF field) and returns the session cookie.
pub async fn login(
    client: &reqwest::Client,
    base: &str,
    name: &str,
    password: &str,
) -> anyhow::Result<String> {
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
    let csrf = &html[at..at + html[at..].find('"').unwrap_or(0)];
    let body =
        serde_urlencoded::to_string([("name", name), ("password", password), ("_csrf", csrf)])?;
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

/// Per-request JSONL (and the same rows as CSV, in gen_requests.py's column order, when
/// `csv` is given) with the method's fields: tenants `batch` (a third, long queues) and
/// `chat`, two model versions, one request every 20 ms; deterministic for a seed.
/// `slower` scales queue wait and prefill (1.0: gen_requests.py's shape).
pub fn write_requests(
    rows: usize,
    seed: u64,
    slower: f64,
    jsonl: &std::path::Path,
    csv: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use rand::{Rng, SeedableRng};
    use std::io::Write;
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    // Box-Muller: the crate set has no distributions beyond uniform.
    let normal = |rng: &mut rand_pcg::Pcg64| {
        let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
        let u2: f64 = rng.random();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let mut j = std::io::BufWriter::new(std::fs::File::create(jsonl)?);
    let mut c = match csv {
        Some(p) => Some(std::io::BufWriter::new(std::fs::File::create(p)?)),
        None => None,
    };
    let r3 = |v: f64| (v * 1000.0).round() / 1000.0;
    for i in 0..rows {
        let tenant = if i % 3 == 0 { "batch" } else { "chat" };
        let pt = (7.3 + 0.6 * normal(&mut rng)).exp() as i64;
        let ot = ((5.3 + 0.7 * normal(&mut rng)).exp() as i64).max(1);
        let tok = r3(0.2 + pt as f64 * 0.0004 + rng.random::<f64>() * 0.3);
        let mean_queue = if tenant == "batch" { 1800.0 } else { 40.0 };
        let queue = r3(-(1.0 - rng.random::<f64>()).ln() * mean_queue * slower);
        let prefill = r3(pt as f64 * 0.045 * (1.0 + rng.random::<f64>() * 0.2) * slower);
        let itl50 = r3(20.0 + rng.random::<f64>() * 4.0);
        let itl99 = r3(itl50 * (1.5 + rng.random::<f64>() * 4.0));
        let decode = r3(ot as f64 * itl50 * 1.05);
        let detok = r3(ot as f64 * 0.01);
        let first = r3(tok + queue + prefill + 0.5);
        let total = r3(first + decode + detok);
        let arrival = 1_764_400_000.0 + i as f64 * 0.02;
        let batch: i64 = rng.random_range(1..=175);
        let kv = (pt + ot + 15) / 16;
        let hit = (pt as f64 * rng.random::<f64>() * 0.8) as i64;
        let model = format!("llama-3.1-8b@rev{}", i % 2);
        writeln!(
            j,
            "{{\"request_id\": \"r{i:08}\", \"arrival_ts\": {arrival:?}, \"tokenize_ms\": {tok:?}, \
             \"queue_wait_ms\": {queue:?}, \"prefill_ms\": {prefill:?}, \"first_token_ms\": {first:?}, \
             \"decode_ms\": {decode:?}, \"itl_p50_ms\": {itl50:?}, \"itl_p99_ms\": {itl99:?}, \
             \"detokenize_ms\": {detok:?}, \"total_ms\": {total:?}, \"prompt_tokens\": {pt}, \
             \"output_tokens\": {ot}, \"batch_size_at_admission\": {batch}, \"kv_blocks_used\": {kv}, \
             \"prefix_cache_hit_tokens\": {hit}, \"model_version\": \"{model}\", \"tenant\": \"{tenant}\"}}"
        )?;
        if let Some(c) = c.as_mut() {
            writeln!(
            c,
            "r{i:08},{arrival:?},{tok:?},{queue:?},{prefill:?},{first:?},{decode:?},{itl50:?},{itl99:?},\
             {detok:?},{total:?},{pt},{ot},{batch},{kv},{hit},{model},{tenant}"
        )?;
        }
    }
    j.flush()?;
    if let Some(c) = c.as_mut() {
        c.flush()?;
    }
    Ok(())
}

/// The id of the admin user `name`, created with `password` when missing.
pub async fn admin_user(pool: &sqlx::PgPool, name: &str, password: &str) -> anyhow::Result<i64> {
    use perfjournal::auth::{password as pw, users, Role};
    Ok(match users::credentials(pool, name).await? {
        Some((u, _)) => u.id,
        None => {
            let hash = pw::hash(password.into()).await?;
            users::create(pool, name, &hash, Role::Admin, false)
                .await?
                .id
        }
    })
}

/// The big PyTorch trace of the trace benchmarks: HTA's `trace_diff/test` trace (from
/// PERFJOURNAL_REAL_FIXTURES, else `../shared/fixtures/real`) repeated `copies` times along
/// time by `../shared/tools/gen_big_trace.py` (27 copies: 790.2 MB); made once and kept in
/// `data` as `hta-test-x{copies}.json`.
pub fn big_trace(
    manifest: &std::path::Path,
    data: &std::path::Path,
    copies: usize,
) -> anyhow::Result<std::path::PathBuf> {
    let fixtures = std::env::var_os("PERFJOURNAL_REAL_FIXTURES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| manifest.join("../shared/fixtures/real"));
    let source = fixtures.join("pytorch_trace/hta__trace_diff__test__test.json.gz");
    let tool = manifest.join("../shared/tools/gen_big_trace.py");
    let plain = data.join(format!("hta-test-x{copies}.json"));
    if plain.exists() {
        return Ok(plain);
    }
    anyhow::ensure!(
        source.exists() && tool.exists(),
        "the bench needs {} and {}",
        source.display(),
        tool.display()
    );
    let t = std::time::Instant::now();
    let partial = plain.with_extension("partial");
    let status = std::process::Command::new("python3")
        .arg(&tool)
        .arg(&source)
        .arg(copies.to_string())
        .arg(&partial)
        .status()?;
    anyhow::ensure!(status.success(), "gen_big_trace.py failed");
    std::fs::rename(&partial, &plain)?;
    println!(
        "generated {} in {:.0} s",
        plain.display(),
        secs(t.elapsed())
    );
    Ok(plain)
}
