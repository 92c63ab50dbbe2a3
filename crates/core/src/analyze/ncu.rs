//! Nsight Compute CSV: `ncu --csv --page details` (long: one row per metric,
//! columns "ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit",
//! "Metric Value", then rule columns) and `--page raw` (wide: one row per
//! kernel launch, a second header row with units).
//!
//! Per kernel we keep the Speed-of-Light and occupancy numbers and classify
//! the regime from SM throughput vs DRAM throughput (methodology step 4):
//! * **compute-bound**: SM ≥ 60 % and DRAM < 40 %;
//! * **memory-bound**: SM < 40 % and DRAM ≥ 60 %;
//! * **latency-bound**: both < 40 % (neither unit is kept busy: small grids,
//!   dependencies, launch overhead);
//! * **balanced**: anything else (both high, or either in the 40–60 % band).
//!
//! DRAM throughput falls back to "Memory Throughput" % when absent. Traps
//! handled: thousands separators ("12,904"), `n/a`, `==PROF==`/`==ERROR==`
//! lines mixed into the CSV (a file of only errors yields
//! `profile_error: "profile failed: …"`), rule rows shorter than the header,
//! and duration units (ns/us/ms/s, nsecond/usecond/msecond/second).

use super::readers::{read_line_bounded, Line};
use super::AnalyzeError;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::rc::Rc;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 1;

/// Percent at or above which a unit counts as highly utilized.
pub const HIGH_PCT: f64 = 60.0;
/// Percent below which a unit counts as lightly utilized.
pub const LOW_PCT: f64 = 40.0;

/// Kernels kept (a profile of more launches is cut, with a note).
const MAX_KERNELS: usize = 100_000;
const MAX_LINE: usize = 16 << 20;

/// One profiled kernel launch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NcuKernel {
    /// ncu's launch ID.
    pub id: String,
    pub name: String,
    /// Compute (SM) throughput, % of peak.
    pub sm_pct: Option<f64>,
    /// DRAM throughput, % of peak.
    pub dram_pct: Option<f64>,
    /// Memory throughput (max of L1/L2/DRAM), % of peak.
    pub memory_pct: Option<f64>,
    pub achieved_occupancy_pct: Option<f64>,
    pub theoretical_occupancy_pct: Option<f64>,
    pub duration_us: Option<f64>,
    /// `compute-bound`, `memory-bound`, `latency-bound`, `balanced`, or null
    /// when SM or memory throughput is missing.
    pub regime: Option<String>,
    pub block_size: Option<String>,
    pub grid_size: Option<String>,
    pub device: Option<String>,
}

/// Result of the Nsight Compute analyzer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NcuAnalysis {
    pub kernels: Vec<NcuKernel>,
    /// `details` or `raw`.
    pub format: String,
    /// Set when the file holds no kernels but ncu reported errors:
    /// "profile failed: <first ==ERROR== line>".
    pub profile_error: Option<String>,
    /// The first few `==ERROR==`/`==WARNING==` lines.
    pub messages: Vec<String>,
    pub notes: Vec<String>,
}

impl NcuAnalysis {
    /// ncu wrote errors and no kernel: the artifact page warns with `profile_error`, and
    /// lists say "failed profile" instead of "done" ([`listed_status`]).
    pub fn profile_failed(&self) -> bool {
        self.profile_error.is_some()
    }
}

/// An artifact's status as lists show it, (label, extra CSS class): a finished analysis
/// of an Nsight Compute file that holds only errors (its `profile_error` is set) is a
/// "failed profile", not "done".
pub fn listed_status<'a>(
    kind: &str,
    status: &'a str,
    profile_error: Option<&str>,
) -> (&'a str, &'static str) {
    if kind == super::Kind::NcuCsv.slug() && status == "done" && profile_error.is_some() {
        ("failed profile", "failed")
    } else {
        (status, "")
    }
}

/// Classify from SM and DRAM (or memory) throughput percentages.
pub fn regime(sm_pct: Option<f64>, mem_pct: Option<f64>) -> Option<&'static str> {
    let (s, d) = (sm_pct?, mem_pct?);
    Some(if s >= HIGH_PCT && d < LOW_PCT {
        "compute-bound"
    } else if s < LOW_PCT && d >= HIGH_PCT {
        "memory-bound"
    } else if s < LOW_PCT && d < LOW_PCT {
        "latency-bound"
    } else {
        "balanced"
    })
}

/// Parse an ncu number: thousands separators removed, `n/a` and empty → None.
pub(crate) fn parse_number(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") || t == "-" {
        return None;
    }
    let cleaned: String = t.chars().filter(|c| *c != ',' && *c != '_').collect();
    cleaned.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Factor to microseconds for a time unit, `None` for non-time units.
fn to_us(unit: &str) -> Option<f64> {
    match unit.trim() {
        "ns" | "nsecond" | "nseconds" => Some(1e-3),
        "us" | "usecond" | "useconds" | "µs" => Some(1.0),
        "ms" | "msecond" | "mseconds" => Some(1e3),
        "s" | "second" | "seconds" => Some(1e6),
        _ => None,
    }
}

/// What we extract from a metric, by its display name or raw name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Field {
    Sm,
    Dram,
    Memory,
    Achieved,
    Theoretical,
    Duration,
}

fn field_of(metric: &str, unit: &str) -> Option<Field> {
    let pct = unit.trim() == "%" || unit.trim().is_empty();
    Some(match metric.trim() {
        "Compute (SM) Throughput"
        | "SM [%]"
        | "sm__throughput.avg.pct_of_peak_sustained_elapsed" => Field::Sm,
        "DRAM Throughput" | "dram__throughput.avg.pct_of_peak_sustained_elapsed" if pct => {
            Field::Dram
        }
        "Memory Throughput"
        | "Memory [%]"
        | "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
            if unit.trim() == "%" || metric.contains("pct") =>
        {
            Field::Memory
        }
        "Achieved Occupancy" | "sm__warps_active.avg.pct_of_peak_sustained_active" => {
            Field::Achieved
        }
        "Theoretical Occupancy" | "sm__maximum_warps_per_active_cycle_pct" => Field::Theoretical,
        "Duration" | "gpu__time_duration.sum" | "gpu__time_duration" => Field::Duration,
        _ => return None,
    })
}

fn set_field(k: &mut NcuKernel, f: Field, value: Option<f64>, unit: &str) {
    let Some(v) = value else { return };
    let slot = match f {
        Field::Sm => &mut k.sm_pct,
        Field::Dram => &mut k.dram_pct,
        Field::Memory => &mut k.memory_pct,
        Field::Achieved => &mut k.achieved_occupancy_pct,
        Field::Theoretical => &mut k.theoretical_occupancy_pct,
        Field::Duration => {
            // ncu's default duration unit is nanoseconds when none is given.
            let factor = if unit.trim().is_empty() {
                Some(1e-3)
            } else {
                to_us(unit)
            };
            if let (Some(fct), None) = (factor, k.duration_us) {
                k.duration_us = Some(v * fct);
            }
            return;
        }
    };
    if slot.is_none() {
        *slot = Some(v);
    }
}

/// Drops `==PROF==`/`==ERROR==`/`==WARNING==` lines (outside quoted fields)
/// so the rest parses as CSV; remembers the messages.
struct ProfLineFilter<R> {
    inner: R,
    line: Vec<u8>,
    pos: usize,
    in_quotes: bool,
    done: bool,
    messages: Rc<RefCell<Vec<String>>>,
    first_error: Rc<RefCell<Option<String>>>,
}

impl<R: BufRead> Read for ProfLineFilter<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.line.len() {
            if self.done {
                return Ok(0);
            }
            self.pos = 0;
            match read_line_bounded(&mut self.inner, &mut self.line, MAX_LINE)? {
                Line::Eof => {
                    self.done = true;
                    self.line.clear();
                    return Ok(0);
                }
                Line::TooLong => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a CSV line is longer than 16 MiB",
                    ))
                }
                Line::Got => {}
            }
            if !self.in_quotes && self.line.starts_with(b"==") {
                let text = String::from_utf8_lossy(&self.line).trim().to_string();
                if text.starts_with("==ERROR==") && self.first_error.borrow().is_none() {
                    *self.first_error.borrow_mut() = Some(text.clone());
                }
                if (text.starts_with("==ERROR==") || text.starts_with("==WARNING=="))
                    && self.messages.borrow().len() < 10
                {
                    self.messages.borrow_mut().push(text);
                }
                self.line.clear();
                continue;
            }
            let quotes = self.line.iter().filter(|&&b| b == b'"').count();
            if quotes % 2 == 1 {
                self.in_quotes = !self.in_quotes;
            }
            self.line.push(b'\n');
        }
        let n = buf.len().min(self.line.len() - self.pos);
        buf[..n].copy_from_slice(&self.line[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Analyze an Nsight Compute CSV export.
pub fn analyze<R: Read>(reader: R) -> Result<NcuAnalysis, AnalyzeError> {
    let messages = Rc::new(RefCell::new(Vec::new()));
    let first_error = Rc::new(RefCell::new(None));
    let filter = ProfLineFilter {
        inner: BufReader::with_capacity(64 << 10, reader),
        line: Vec::new(),
        pos: 0,
        in_quotes: false,
        done: false,
        messages: messages.clone(),
        first_error: first_error.clone(),
    };
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(filter);

    let mut header: Option<Vec<String>> = None;
    let mut out = NcuAnalysis::default();
    let mut kernels: Vec<NcuKernel> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut units: Option<Vec<String>> = None;
    let mut truncated = false;
    let mut record = csv::StringRecord::new();

    while csv.read_record(&mut record)? {
        let Some(h) = &header else {
            // Anything before the header (application output) is skipped.
            if record.iter().any(|f| f.trim() == "Kernel Name") {
                header = Some(record.iter().map(|f| f.trim().to_string()).collect());
            }
            continue;
        };
        let col = |name: &str| h.iter().position(|c| c == name);
        let get = |i: Option<usize>| i.and_then(|i| record.get(i)).map(str::trim);
        let (id_c, name_c) = (col("ID"), col("Kernel Name"));
        let long = col("Metric Name").is_some() && col("Metric Value").is_some();
        if long {
            out.format = "details".into();
            let id = get(id_c).unwrap_or("").to_string();
            let metric = get(col("Metric Name")).unwrap_or("");
            if metric.is_empty() {
                // A rule row (shorter, or no metric): nothing to read.
                continue;
            }
            let idx = match by_id.get(&id) {
                Some(&i) => i,
                None => {
                    if kernels.len() >= MAX_KERNELS {
                        truncated = true;
                        continue;
                    }
                    kernels.push(NcuKernel {
                        id: id.clone(),
                        name: get(name_c).unwrap_or("").to_string(),
                        block_size: get(col("Block Size")).map(String::from),
                        grid_size: get(col("Grid Size")).map(String::from),
                        device: get(col("Device")).map(String::from),
                        ..NcuKernel::default()
                    });
                    by_id.insert(id, kernels.len() - 1);
                    kernels.len() - 1
                }
            };
            let unit = get(col("Metric Unit")).unwrap_or("");
            if let Some(f) = field_of(metric, unit) {
                let value = parse_number(get(col("Metric Value")).unwrap_or(""));
                set_field(&mut kernels[idx], f, value, unit);
            }
        } else {
            out.format = "raw".into();
            // The units row follows the header and has an empty ID.
            if units.is_none() {
                let id = get(id_c).unwrap_or("");
                if id.is_empty() || parse_number(id).is_none() {
                    units = Some(record.iter().map(|f| f.trim().to_string()).collect());
                    continue;
                }
                units = Some(Vec::new());
            }
            if kernels.len() >= MAX_KERNELS {
                truncated = true;
                continue;
            }
            let mut k = NcuKernel {
                id: get(id_c).unwrap_or("").to_string(),
                name: get(name_c).unwrap_or("").to_string(),
                block_size: get(col("Block Size")).map(String::from),
                grid_size: get(col("Grid Size")).map(String::from),
                device: get(col("Device")).map(String::from),
                ..NcuKernel::default()
            };
            let units = units.as_deref().unwrap_or(&[]);
            for (i, name) in h.iter().enumerate() {
                let unit = units.get(i).map(String::as_str).unwrap_or("");
                if let Some(f) = field_of(name, unit) {
                    set_field(&mut k, f, parse_number(record.get(i).unwrap_or("")), unit);
                }
            }
            kernels.push(k);
        }
    }

    for k in &mut kernels {
        k.regime = regime(k.sm_pct, k.dram_pct.or(k.memory_pct)).map(String::from);
    }
    out.messages = messages.borrow().clone();
    if truncated {
        out.notes.push(format!(
            "more than {MAX_KERNELS} kernel launches; the rest were left out"
        ));
    }
    if kernels
        .iter()
        .any(|k| k.dram_pct.is_none() && k.memory_pct.is_some())
    {
        out.notes.push(
            "DRAM throughput missing for some kernels; memory throughput was used for their regime"
                .into(),
        );
    }
    if kernels.is_empty() {
        if let Some(e) = first_error.borrow().clone() {
            out.profile_error = Some(format!("profile failed: {e}"));
            return Ok(out);
        }
        if header.is_none() {
            return Err(AnalyzeError::malformed(
                "no Nsight Compute CSV header (a \"Kernel Name\" column) found",
            ));
        }
        return Err(AnalyzeError::malformed(
            "the Nsight Compute CSV holds no kernel rows",
        ));
    }
    out.kernels = kernels;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{open, real_fixtures};
    use super::*;

    const HEADER: &str = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\"";

    fn row(id: u32, kernel: &str, section: &str, metric: &str, unit: &str, value: &str) -> String {
        format!("\"{id}\",\"1\",\"python\",\"h\",\"{kernel}\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"{section}\",\"{metric}\",\"{unit}\",\"{value}\",\n")
    }

    #[test]
    fn regimes() {
        assert_eq!(regime(Some(80.0), Some(20.0)), Some("compute-bound"));
        assert_eq!(regime(Some(20.0), Some(85.0)), Some("memory-bound"));
        assert_eq!(regime(Some(10.0), Some(20.0)), Some("latency-bound"));
        assert_eq!(regime(Some(70.0), Some(70.0)), Some("balanced"));
        assert_eq!(regime(Some(50.0), Some(10.0)), Some("balanced"));
        assert_eq!(regime(Some(60.0), Some(39.99)), Some("compute-bound"));
        assert_eq!(regime(None, Some(10.0)), None);
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("12,904"), Some(12904.0));
        assert_eq!(parse_number("9,096.60"), Some(9096.6));
        assert_eq!(parse_number("n/a"), None);
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("abc"), None);
    }

    #[test]
    fn details_page_with_prof_lines_and_rules() {
        let mut text = String::from("==PROF== Connected to process 123\n==WARNING== Note\n");
        text.push_str(HEADER);
        text.push('\n');
        let sol = "GPU Speed Of Light Throughput";
        text.push_str(&row(0, "gemm", sol, "Compute (SM) Throughput", "%", "85.5"));
        text.push_str(&row(0, "gemm", sol, "DRAM Throughput", "%", "12.1"));
        text.push_str(&row(0, "gemm", sol, "Duration", "msecond", "1.5"));
        text.push_str(&row(
            0,
            "gemm",
            "Memory Workload Analysis",
            "Memory Throughput",
            "Gbyte/s",
            "1,234.5",
        ));
        text.push_str(&row(0, "gemm", sol, "Memory Throughput", "%", "30.0"));
        text.push_str(&row(
            0,
            "gemm",
            "Occupancy",
            "Achieved Occupancy",
            "%",
            "45.2",
        ));
        text.push_str(&row(
            0,
            "gemm",
            "Occupancy",
            "Theoretical Occupancy",
            "%",
            "50",
        ));
        text.push_str("\"0\",\"1\",\"python\",\"h\",\"gemm\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"SpeedOfLight\",\"\",\"\",\"\",\"SOLBottleneck\",\"OPT\",\"A rule with a\nline break in it\"\n");
        text.push_str("==PROF== Disconnected\n");
        text.push_str(&row(1, "copy", sol, "Compute (SM) Throughput", "%", "5"));
        text.push_str(&row(1, "copy", sol, "DRAM Throughput", "%", "91"));
        text.push_str(&row(1, "copy", sol, "Duration", "usecond", "12,000"));
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(a.format, "details");
        assert_eq!(a.kernels.len(), 2);
        let g = &a.kernels[0];
        assert_eq!(g.name, "gemm");
        assert_eq!(g.sm_pct, Some(85.5));
        assert_eq!(g.dram_pct, Some(12.1));
        // The Gbyte/s "Memory Throughput" of another section is not a percentage.
        assert_eq!(g.memory_pct, Some(30.0));
        assert_eq!(g.duration_us, Some(1500.0));
        assert_eq!(g.achieved_occupancy_pct, Some(45.2));
        assert_eq!(g.regime.as_deref(), Some("compute-bound"));
        assert_eq!(g.grid_size.as_deref(), Some("(64, 1, 1)"));
        let c = &a.kernels[1];
        assert_eq!(c.duration_us, Some(12000.0));
        assert_eq!(c.regime.as_deref(), Some("memory-bound"));
        assert_eq!(a.messages, vec!["==WARNING== Note".to_string()]);
        assert!(a.profile_error.is_none());
    }

    #[test]
    fn raw_page_with_units_row() {
        let text = "\"ID\",\"Kernel Name\",\"Device\",\"dram__throughput.avg.pct_of_peak_sustained_elapsed\",\"gpu__time_duration.sum\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"sm__warps_active.avg.pct_of_peak_sustained_active\"\n\
                    \"\",\"\",\"\",\"%\",\"nsecond\",\"%\",\"%\"\n\
                    \"0\",\"k1\",\"0\",\"20.5\",\"6,460\",\"9.6\",\"11.7\"\n\
                    \"1\",\"k2\",\"0\",\"n/a\",\"1000\",\"70\",\"60\"\n";
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(a.format, "raw");
        assert_eq!(a.kernels.len(), 2);
        assert_eq!(a.kernels[0].duration_us, Some(6.46));
        assert_eq!(a.kernels[0].regime.as_deref(), Some("latency-bound"));
        assert_eq!(a.kernels[0].achieved_occupancy_pct, Some(11.7));
        assert_eq!(a.kernels[1].dram_pct, None);
        assert_eq!(a.kernels[1].regime, None);
    }

    #[test]
    fn lists_call_an_errors_only_profile_failed() {
        assert_eq!(
            listed_status("ncu_csv", "done", Some("profile failed: x")),
            ("failed profile", "failed")
        );
        assert_eq!(listed_status("ncu_csv", "done", None), ("done", ""));
        assert_eq!(
            listed_status("ncu_csv", "failed", Some("x")),
            ("failed", "")
        );
        assert_eq!(
            listed_status("nsys_kern_sum", "done", Some("x")),
            ("done", "")
        );
    }

    #[test]
    fn errors_only_means_profile_failed() {
        let text = "==PROF== Connected\n==ERROR== The application returned an error code (1).\n==ERROR== second\n";
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(
            a.profile_error.as_deref(),
            Some("profile failed: ==ERROR== The application returned an error code (1).")
        );
        assert!(a.kernels.is_empty());
        let e = analyze("a,b\n1,2\n".as_bytes()).unwrap_err();
        assert!(e.to_string().contains("Kernel Name"), "{e}");
        let e = analyze(format!("{HEADER}\n").as_bytes()).unwrap_err();
        assert!(e.to_string().contains("no kernel rows"), "{e}");
    }

    #[test]
    fn real_ncu_fixtures() {
        let Some(root) = real_fixtures() else { return };
        let a = analyze(open(&root, "ncu/llmperfopt__kernel_0001__ncu.details.csv")).unwrap();
        assert_eq!(a.kernels.len(), 1);
        let k = &a.kernels[0];
        assert!(k.name.starts_with("enable_if<!T7, void>::type kernel<"));
        assert_eq!(k.sm_pct, Some(9.61));
        assert_eq!(k.dram_pct, Some(20.52));
        assert_eq!(k.memory_pct, Some(20.52));
        assert_eq!(k.achieved_occupancy_pct, Some(11.68));
        assert_eq!(k.theoretical_occupancy_pct, Some(16.67));
        assert_eq!(k.duration_us, Some(6.46));
        assert_eq!(k.regime.as_deref(), Some("latency-bound"));
        let occ = analyze(open(
            &root,
            "ncu/llmperfopt__kernel_0001__ncu.section_Occupancy.csv",
        ))
        .unwrap();
        assert_eq!(occ.kernels[0].achieved_occupancy_pct, Some(11.68));
        assert_eq!(occ.kernels[0].regime, None);
        let sol = analyze(open(
            &root,
            "ncu/llmperfopt__kernel_0001__ncu.section_SpeedOfLight.csv",
        ))
        .unwrap();
        assert_eq!(sol.kernels[0].regime.as_deref(), Some("latency-bound"));
        let err = analyze(open(&root, "ncu/llmperfopt__raw_error_only.csv")).unwrap();
        assert_eq!(
            err.profile_error.as_deref(),
            Some("profile failed: ==ERROR== Option '--section .*SpeedOfLight.*' did not match any section.")
        );
    }
}
