//! GPU utilization telemetry from three sources:
//! * `nvidia-smi dmon`: whitespace columns under `#` header lines that repeat
//!   (names, then units); `-` means N/A; `-o DT` prepends date and time.
//!   `sm` and `mem` are the same counters as `utilization.gpu` / `.memory`.
//! * `nvidia-smi --query-gpu=… --format=csv`: units in the header
//!   (`utilization.gpu [%]`), values like `45 %`, `[N/A]`.
//! * DCGM exporter Prometheus text: `DCGM_FI_DEV_GPU_UTIL` (%),
//!   `DCGM_FI_DEV_MEM_COPY_UTIL` (%), `DCGM_FI_DEV_POWER_USAGE` (W),
//!   `DCGM_FI_PROF_SM_ACTIVE` (0–1). Values at or above 0x7FFFFFF0 are DCGM's
//!   "blank" sentinels (field not supported) and are skipped.
//!
//! `sm_util` is the fraction of time a kernel was running (nvidia-smi's
//! utilization.gpu), not SM occupancy; DCGM's SM-active is reported apart.

use super::prometheus::parse_sample_line;
use super::readers::{read_line_bounded, Line};
use super::request_log::days_from_civil;
use super::AnalyzeError;
use crate::stats::{mean, Summary};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufReader, Read};

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 1;

/// Points per GPU in `series` (bucket means).
pub const MAX_SERIES_POINTS: usize = 500;

/// Samples kept per GPU (about 2 months of 1 s samples).
const MAX_SAMPLES_PER_GPU: usize = 5_000_000;
/// Samples kept over all GPUs (memory stays in the low hundreds of MB whatever the file).
const MAX_SAMPLES_TOTAL: usize = 5_000_000;
/// Distinct GPUs kept; samples of further GPUs are left out (and counted in the note).
const MAX_GPUS: usize = 256;
const MAX_LINE: usize = 1 << 20;

/// DCGM's smallest "blank" value for 32-bit fields; larger 64-bit and float
/// blanks are bigger still.
const DCGM_BLANK: f64 = 2_147_483_632.0;

/// Per-GPU statistics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuStats {
    pub gpu: String,
    pub samples: u64,
    /// Kernel-active time, % (dmon `sm`, `utilization.gpu`, DCGM GPU_UTIL).
    pub sm_util: Summary,
    /// Memory-controller busy time, % (dmon `mem`, `utilization.memory`, DCGM MEM_COPY_UTIL).
    pub mem_util: Summary,
    pub power_w: Summary,
    /// DCGM `PROF_SM_ACTIVE` × 100, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_active_pct: Option<Summary>,
}

/// A chart series per GPU: at most [`MAX_SERIES_POINTS`] bucket means.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSeries {
    pub gpu: String,
    /// Seconds since the first sample (or the sample index when the source
    /// has no clock; dmon's default interval is 1 s).
    pub t: Vec<f64>,
    pub sm: Vec<Option<f64>>,
    pub mem: Vec<Option<f64>>,
    pub power_w: Vec<Option<f64>>,
}

/// Result of the GPU telemetry analyzer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuTelemetryAnalysis {
    /// `dmon`, `query_gpu` or `dcgm`.
    pub source: String,
    pub gpus: Vec<GpuStats>,
    pub series: Vec<GpuSeries>,
    /// True when `t` comes from timestamps in the file.
    pub has_clock: bool,
    pub notes: Vec<String>,
}

#[derive(Default)]
struct GpuAcc {
    t: Vec<f64>,
    sm: Vec<f64>,
    mem: Vec<f64>,
    power: Vec<f64>,
    sm_active: Vec<f64>,
}

struct Collector {
    order: Vec<String>,
    gpus: HashMap<String, GpuAcc>,
    dropped: u64,
    /// Samples kept over all GPUs (at most [`MAX_SAMPLES_TOTAL`]).
    kept: usize,
}

impl Collector {
    fn new() -> Self {
        Collector {
            order: Vec::new(),
            gpus: HashMap::new(),
            dropped: 0,
            kept: 0,
        }
    }

    fn gpu(&mut self, id: &str) -> Option<&mut GpuAcc> {
        if self.kept >= MAX_SAMPLES_TOTAL {
            self.dropped += 1;
            return None;
        }
        if !self.gpus.contains_key(id) {
            if self.gpus.len() >= MAX_GPUS {
                self.dropped += 1;
                return None;
            }
            self.order.push(id.to_string());
            self.gpus.insert(id.to_string(), GpuAcc::default());
        }
        let g = self.gpus.get_mut(id)?;
        if g.t.len() >= MAX_SAMPLES_PER_GPU {
            self.dropped += 1;
            return None;
        }
        self.kept += 1;
        Some(g)
    }

    fn push(
        &mut self,
        id: &str,
        t: Option<f64>,
        sm: Option<f64>,
        mem: Option<f64>,
        power: Option<f64>,
        sm_active: Option<f64>,
    ) {
        let Some(g) = self.gpu(id) else { return };
        let t = t.unwrap_or(g.t.len() as f64);
        g.t.push(t);
        g.sm.push(sm.unwrap_or(f64::NAN));
        g.mem.push(mem.unwrap_or(f64::NAN));
        g.power.push(power.unwrap_or(f64::NAN));
        g.sm_active.push(sm_active.unwrap_or(f64::NAN));
    }

    fn finish(
        self,
        source: &str,
        has_clock: bool,
        mut notes: Vec<String>,
    ) -> Result<GpuTelemetryAnalysis, AnalyzeError> {
        if self.order.is_empty() {
            return Err(AnalyzeError::malformed(format!(
                "no GPU samples found in the {source} data"
            )));
        }
        if self.dropped > 0 {
            notes.push(format!(
                "{} samples were left out (beyond {MAX_SAMPLES_PER_GPU} per GPU, \
                 {MAX_SAMPLES_TOTAL} in all, or past {MAX_GPUS} GPUs)",
                self.dropped
            ));
        }
        let t0 = self
            .gpus
            .values()
            .filter_map(|g| g.t.iter().copied().reduce(f64::min))
            .reduce(f64::min)
            .unwrap_or(0.0);
        let mut gpus = Vec::new();
        let mut series = Vec::new();
        let mut ids = self.order.clone();
        ids.sort_by(|a, b| match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.cmp(b),
        });
        let mut gpus_map = self.gpus;
        for id in ids {
            let Some(g) = gpus_map.remove(&id) else {
                continue;
            };
            let sm_active = Summary::from_values(&mut g.sm_active.clone());
            gpus.push(GpuStats {
                gpu: id.clone(),
                samples: g.t.len() as u64,
                sm_util: Summary::from_values(&mut g.sm.clone()),
                mem_util: Summary::from_values(&mut g.mem.clone()),
                power_w: Summary::from_values(&mut g.power.clone()),
                sm_active_pct: (sm_active.count > 0).then_some(sm_active),
            });
            let t: Vec<f64> = if has_clock {
                g.t.iter().map(|x| x - t0).collect()
            } else {
                g.t.clone()
            };
            series.push(downsample(&id, &t, &g.sm, &g.mem, &g.power));
        }
        Ok(GpuTelemetryAnalysis {
            source: source.to_string(),
            gpus,
            series,
            has_clock,
            notes,
        })
    }
}

/// Mean of the readings present (a missing reading is NaN), `None` when there are none.
fn mean_present(v: &[f64]) -> Option<f64> {
    let present: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    mean(&present)
}

/// Split into at most [`MAX_SERIES_POINTS`] equal buckets and average each.
fn downsample(gpu: &str, t: &[f64], sm: &[f64], mem: &[f64], power: &[f64]) -> GpuSeries {
    let n = t.len();
    let buckets = n.min(MAX_SERIES_POINTS);
    let mut s = GpuSeries {
        gpu: gpu.to_string(),
        ..GpuSeries::default()
    };
    for b in 0..buckets {
        let (lo, hi) = (
            b * n / buckets,
            ((b + 1) * n / buckets).max(b * n / buckets + 1),
        );
        s.t.push(mean_present(&t[lo..hi]).unwrap_or(0.0));
        s.sm.push(mean_present(&sm[lo..hi]));
        s.mem.push(mean_present(&mem[lo..hi]));
        s.power_w.push(mean_present(&power[lo..hi]));
    }
    s
}

/// Analyze GPU telemetry; the source is recognized from the content.
pub fn analyze<R: Read>(reader: R) -> Result<GpuTelemetryAnalysis, AnalyzeError> {
    let mut r = BufReader::with_capacity(64 << 10, reader);
    let mut buf = Vec::new();
    let mut lines_iter = LineIter {
        r: &mut r,
        buf: &mut buf,
        line_no: 0,
    };
    // Find the first meaningful line to pick the parser.
    let mut pending: Vec<(u64, String)> = Vec::new();
    let source = loop {
        let Some((no, line)) = lines_iter.next_line()? else {
            return Err(AnalyzeError::malformed("the telemetry file is empty"));
        };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        pending.push((no, line.clone()));
        if let Some(rest) = trimmed.strip_prefix('#') {
            let first = rest.split_whitespace().next().unwrap_or("");
            if first == "gpu" || first == "Date" || first == "Time" {
                break "dmon";
            }
            // Prometheus comments (# HELP / # TYPE) precede DCGM samples.
            continue;
        }
        if parse_sample_line(trimmed).is_some() {
            break "dcgm";
        }
        if trimmed.contains(',') {
            break "query_gpu";
        }
        return Err(AnalyzeError::at_line(
            no,
            "not nvidia-smi dmon, --query-gpu CSV or DCGM exporter output",
        ));
    };
    match source {
        "dmon" => parse_dmon(pending, lines_iter),
        "dcgm" => parse_dcgm(pending, lines_iter),
        _ => parse_query(pending, lines_iter),
    }
}

struct LineIter<'a, R> {
    r: &'a mut BufReader<R>,
    buf: &'a mut Vec<u8>,
    line_no: u64,
}

impl<R: Read> LineIter<'_, R> {
    fn next_line(&mut self) -> Result<Option<(u64, String)>, AnalyzeError> {
        match read_line_bounded(self.r, self.buf, MAX_LINE)? {
            Line::Eof => Ok(None),
            Line::TooLong => Err(AnalyzeError::at_line(
                self.line_no + 1,
                "line longer than 1 MiB",
            )),
            Line::Got => {
                self.line_no += 1;
                Ok(Some((
                    self.line_no,
                    String::from_utf8_lossy(self.buf).into_owned(),
                )))
            }
        }
    }
}

/// A value that may be `-`, `N/A`, `[N/A]`, `[Not Supported]` or carry a unit.
fn value(s: &str) -> Option<f64> {
    let t = s.trim();
    let first = t.split_whitespace().next()?;
    first.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// `HH:MM:SS[.fff]` → seconds since midnight.
fn clock_seconds(s: &str) -> Option<f64> {
    let mut it = s.trim().split(':');
    let h: f64 = it.next()?.parse().ok()?;
    let m: f64 = it.next()?.parse().ok()?;
    let sec: f64 = it.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + sec)
}

/// `YYYYMMDD` or `YYYY/MM/DD` or `YYYY-MM-DD` → days since the epoch.
fn date_days(s: &str) -> Option<i64> {
    let d: String = s.chars().filter(char::is_ascii_digit).collect();
    if d.len() != 8 {
        return None;
    }
    Some(days_from_civil(
        d[0..4].parse().ok()?,
        d[4..6].parse().ok()?,
        d[6..8].parse().ok()?,
    ))
}

fn parse_dmon<R: Read>(
    pending: Vec<(u64, String)>,
    mut lines: LineIter<'_, R>,
) -> Result<GpuTelemetryAnalysis, AnalyzeError> {
    let mut col = Collector::new();
    let mut columns: Vec<String> = Vec::new();
    let mut has_clock = false;
    let mut last_clock: Option<f64> = None;
    let mut day_offset = 0.0;
    let mut bad_lines = 0u64;
    let mut handle = |no: u64, line: &str, columns: &mut Vec<String>| -> Result<(), AnalyzeError> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        if let Some(rest) = trimmed.strip_prefix('#') {
            let toks: Vec<String> = rest.split_whitespace().map(String::from).collect();
            // The names line has "gpu"; the units line ("Idx", "W", "%") follows.
            if toks.iter().any(|t| t == "gpu") {
                *columns = toks;
            }
            return Ok(());
        }
        if columns.is_empty() {
            return Err(AnalyzeError::at_line(
                no,
                "data before the '# gpu …' header",
            ));
        }
        let toks: Vec<&str> = trimmed.split_whitespace().collect();
        if toks.len() != columns.len() {
            bad_lines += 1;
            return Ok(());
        }
        let get = |name: &str| columns.iter().position(|c| c == name).map(|i| toks[i]);
        let Some(gpu) = get("gpu") else { return Ok(()) };
        let time = get("Time").and_then(clock_seconds);
        let t = time.map(|secs| {
            let days = get("Date").and_then(date_days);
            let mut t = secs + days.map_or(0.0, |d| d as f64 * 86_400.0);
            if days.is_none() {
                // Time of day only: carry over midnight.
                if let Some(prev) = last_clock {
                    if t + day_offset < prev - 43_200.0 {
                        day_offset += 86_400.0;
                    }
                }
                t += day_offset;
            }
            last_clock = Some(t);
            t
        });
        has_clock |= t.is_some();
        let num = |name: &str| get(name).and_then(value);
        col.push(gpu, t, num("sm"), num("mem"), num("pwr"), None);
        Ok(())
    };
    for (no, line) in pending {
        handle(no, &line, &mut columns)?;
    }
    while let Some((no, line)) = lines.next_line()? {
        handle(no, &line, &mut columns)?;
    }
    let mut notes = Vec::new();
    if bad_lines > 0 {
        notes.push(format!(
            "{bad_lines} lines with a different number of columns than the header were skipped"
        ));
    }
    if !has_clock {
        notes.push("no time columns (dmon -o DT adds them): t is the sample index".to_string());
    }
    col.finish("dmon", has_clock, notes)
}

/// `2024/01/31 12:00:00.123` → epoch seconds.
fn smi_timestamp(s: &str) -> Option<f64> {
    let mut parts = s.split_whitespace();
    let days = date_days(parts.next()?)?;
    let secs = clock_seconds(parts.next()?)?;
    Some(days as f64 * 86_400.0 + secs)
}

fn parse_query<R: Read>(
    pending: Vec<(u64, String)>,
    mut lines: LineIter<'_, R>,
) -> Result<GpuTelemetryAnalysis, AnalyzeError> {
    let mut col = Collector::new();
    let mut header: Vec<String> = Vec::new();
    let mut has_clock = false;
    let mut bad_lines = 0u64;
    let mut handle = |no: u64, line: &str, header: &mut Vec<String>| -> Result<(), AnalyzeError> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        let cells: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        let looks_like_header = cells.iter().any(|c| {
            c.starts_with("utilization.")
                || c.starts_with("power.")
                || *c == "index"
                || *c == "timestamp"
        });
        if looks_like_header {
            *header = cells
                .iter()
                .map(|c| {
                    c.split(" [")
                        .next()
                        .unwrap_or(c)
                        .trim()
                        .to_ascii_lowercase()
                })
                .collect();
            return Ok(());
        }
        if header.is_empty() {
            return Err(AnalyzeError::at_line(
                no,
                "no nvidia-smi --query-gpu header before the data",
            ));
        }
        if cells.len() != header.len() {
            bad_lines += 1;
            return Ok(());
        }
        let get = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| header.iter().position(|h| h == n))
                .map(|i| cells[i])
        };
        let gpu = get(&[
            "index",
            "uuid",
            "gpu_uuid",
            "pci.bus_id",
            "gpu_bus_id",
            "name",
        ])
        .unwrap_or("0");
        let t = get(&["timestamp"]).and_then(smi_timestamp);
        has_clock |= t.is_some();
        let num = |names: &[&str]| get(names).and_then(value);
        col.push(
            gpu,
            t,
            num(&["utilization.gpu"]),
            num(&["utilization.memory"]),
            num(&["power.draw", "power.draw.instant", "power.draw.average"]),
            None,
        );
        Ok(())
    };
    for (no, line) in pending {
        handle(no, &line, &mut header)?;
    }
    while let Some((no, line)) = lines.next_line()? {
        handle(no, &line, &mut header)?;
    }
    let mut notes = Vec::new();
    if bad_lines > 0 {
        notes.push(format!(
            "{bad_lines} rows with a different number of fields than the header were skipped"
        ));
    }
    col.finish("query_gpu", has_clock, notes)
}

/// The optional timestamp (ms since the epoch) after a sample's value, in seconds.
fn sample_timestamp(line: &str) -> Option<f64> {
    let after = match line.rfind('}') {
        Some(i) => &line[i + 1..],
        None => line.split_once(char::is_whitespace)?.1,
    };
    let mut it = after.split_whitespace();
    it.next()?;
    let ts = it.next()?;
    ts.parse::<f64>().ok().map(|ms| ms / 1000.0)
}

fn parse_dcgm<R: Read>(
    pending: Vec<(u64, String)>,
    mut lines: LineIter<'_, R>,
) -> Result<GpuTelemetryAnalysis, AnalyzeError> {
    // Each scrape gives one value per (GPU, field); a file may hold several
    // scrapes in a row, so a repeated field for a GPU starts its next sample.
    #[derive(Default)]
    struct Pending {
        t: Option<f64>,
        sm: Option<f64>,
        mem: Option<f64>,
        power: Option<f64>,
        sm_active: Option<f64>,
    }
    let mut col = Collector::new();
    let mut open: HashMap<String, Pending> = HashMap::new();
    let mut open_order: Vec<String> = Vec::new();
    let mut blanks = 0u64;
    let mut has_clock = false;
    let mut handle = |no: u64, line: &str, col: &mut Collector| -> Result<(), AnalyzeError> {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return Ok(());
        }
        let Some(s) = parse_sample_line(trimmed) else {
            return Err(AnalyzeError::at_line(no, "not a Prometheus sample line"));
        };
        let field = match s.name.as_str() {
            "DCGM_FI_DEV_GPU_UTIL" => 0,
            "DCGM_FI_DEV_MEM_COPY_UTIL" => 1,
            "DCGM_FI_DEV_POWER_USAGE" => 2,
            "DCGM_FI_PROF_SM_ACTIVE" => 3,
            _ => return Ok(()),
        };
        let gpu = s
            .label("gpu")
            .or(s.label("UUID"))
            .unwrap_or("0")
            .to_string();
        if !s.value.is_finite() || s.value >= DCGM_BLANK || s.value < 0.0 {
            blanks += 1;
            return Ok(());
        }
        // The optional sample timestamp is in milliseconds.
        let ts = sample_timestamp(trimmed);
        let p = open.entry(gpu.clone()).or_insert_with(|| {
            open_order.push(gpu.clone());
            Pending::default()
        });
        let slot = match field {
            0 => &mut p.sm,
            1 => &mut p.mem,
            2 => &mut p.power,
            _ => &mut p.sm_active,
        };
        if slot.is_some() {
            let done = std::mem::take(p);
            col.push(&gpu, done.t, done.sm, done.mem, done.power, done.sm_active);
        }
        let value = if field == 3 { s.value * 100.0 } else { s.value };
        match field {
            0 => p.sm = Some(value),
            1 => p.mem = Some(value),
            2 => p.power = Some(value),
            _ => p.sm_active = Some(value),
        }
        if ts.is_some() {
            has_clock = true;
            p.t = ts;
        }
        Ok(())
    };
    for (no, line) in pending {
        handle(no, &line, &mut col)?;
    }
    while let Some((no, line)) = lines.next_line()? {
        handle(no, &line, &mut col)?;
    }
    for gpu in &open_order {
        if let Some(p) = open.remove(gpu) {
            col.push(gpu, p.t, p.sm, p.mem, p.power, p.sm_active);
        }
    }
    let mut notes = Vec::new();
    if blanks > 0 {
        notes.push(format!(
            "{blanks} DCGM values were 'blank' sentinels (field not supported on this GPU) and were skipped"
        ));
    }
    col.finish("dcgm", has_clock, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dmon_with_repeated_headers_and_na() {
        let mut text = String::new();
        for block in 0..3 {
            text.push_str("# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n");
            text.push_str("# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz\n");
            for i in 0..4 {
                let sm = if i == 3 {
                    "-".to_string()
                } else {
                    format!("{}", 10 * (block * 4 + i))
                };
                text.push_str(&format!("    0    {}     38      -    {sm}      5      0      0      0      0   1593   1980\n", 100 + i));
                text.push_str(&format!("    1     70     35      -     90      {}      0      0      0      0   1593   1980\n", 40 + i));
            }
        }
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(a.source, "dmon");
        assert!(!a.has_clock);
        assert_eq!(a.gpus.len(), 2);
        let g0 = &a.gpus[0];
        assert_eq!(g0.gpu, "0");
        assert_eq!(g0.samples, 12);
        assert_eq!(g0.sm_util.count, 9);
        assert_eq!(g0.sm_util.max, Some(100.0));
        assert_eq!(g0.mem_util.mean, Some(5.0));
        assert_eq!(g0.power_w.min, Some(100.0));
        assert_eq!(a.gpus[1].sm_util.mean, Some(90.0));
        assert_eq!(a.series[0].t.len(), 12);
        assert_eq!(a.series[0].sm[3], None);
        let v = serde_json::to_value(&a).unwrap();
        for k in ["mean", "p50", "p95", "max"] {
            assert!(v["gpus"][0]["sm_util"].get(k).is_some(), "{k}");
        }
        for k in ["gpu", "t", "sm"] {
            assert!(v["series"][0].get(k).is_some(), "{k}");
        }
    }

    #[test]
    fn dmon_with_date_time_and_downsampling() {
        let mut text = String::from("#Date       Time        gpu    pwr     sm    mem\n#YYYYMMDD   HH:MM:SS    Idx      W      %      %\n");
        for i in 0..2000u32 {
            let (h, m, s) = (23, (i / 60) % 60, i % 60);
            let day = if i / 3600 > 0 { 20250102 } else { 20250101 };
            text.push_str(&format!(
                " {day}   {h:02}:{m:02}:{s:02}      0    300     {}     20\n",
                i % 100
            ));
        }
        let a = analyze(text.as_bytes()).unwrap();
        assert!(a.has_clock);
        let s = &a.series[0];
        assert_eq!(s.t.len(), MAX_SERIES_POINTS);
        assert!(
            s.t[0] < 2.0 && *s.t.last().unwrap() > 1990.0,
            "{:?}",
            &s.t[..3]
        );
        assert_eq!(a.gpus[0].samples, 2000);
    }

    #[test]
    fn query_gpu_csv() {
        let text = "timestamp, index, name, utilization.gpu [%], utilization.memory [%], power.draw [W]\n\
                    2025/01/01 12:00:00.000, 0, NVIDIA H100 80GB HBM3, 45 %, 12 %, 250.50 W\n\
                    2025/01/01 12:00:00.000, 1, NVIDIA H100 80GB HBM3, [N/A], 0 %, [Not Supported]\n\
                    2025/01/01 12:00:01.000, 0, NVIDIA H100 80GB HBM3, 55 %, 14 %, 260.50 W\n";
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(a.source, "query_gpu");
        assert!(a.has_clock);
        let g0 = &a.gpus[0];
        assert_eq!(g0.sm_util.mean, Some(50.0));
        assert_eq!(g0.power_w.max, Some(260.5));
        assert_eq!(a.series[0].t, vec![0.0, 1.0]);
        assert_eq!(a.gpus[1].sm_util.count, 0);
        assert_eq!(a.gpus[1].power_w.count, 0);
    }

    #[test]
    fn dcgm_text_with_sentinels_and_scrapes() {
        let scrape = |util: u32| {
            format!(
                "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n\
                 DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"h\"}} {util}\n\
                 DCGM_FI_DEV_GPU_UTIL{{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"h\"}} 100\n\
                 DCGM_FI_DEV_MEM_COPY_UTIL{{gpu=\"0\",UUID=\"GPU-a\"}} 30\n\
                 DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",UUID=\"GPU-a\"}} 310.5\n\
                 DCGM_FI_PROF_SM_ACTIVE{{gpu=\"0\",UUID=\"GPU-a\"}} 0.75\n\
                 DCGM_FI_PROF_SM_ACTIVE{{gpu=\"1\",UUID=\"GPU-b\"}} 140737488355328\n\
                 DCGM_FI_DEV_FB_USED{{gpu=\"0\"}} 1024\n"
            )
        };
        let text = format!("{}{}", scrape(80), scrape(90));
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(a.source, "dcgm");
        let g0 = &a.gpus[0];
        assert_eq!(g0.samples, 2);
        assert_eq!(g0.sm_util.mean, Some(85.0));
        assert_eq!(g0.sm_active_pct.as_ref().unwrap().mean, Some(75.0));
        assert_eq!(g0.power_w.mean, Some(310.5));
        assert!(a.gpus[1].sm_active_pct.is_none());
        assert!(
            a.notes.iter().any(|n| n.contains("sentinel")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn rejects_other_text() {
        assert!(analyze("hello world\n".as_bytes()).is_err());
        assert!(analyze("".as_bytes()).is_err());
        let e = analyze("# gpu sm\n".as_bytes()).unwrap_err();
        assert!(e.to_string().contains("no GPU samples"), "{e}");
    }
}
