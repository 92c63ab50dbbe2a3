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
