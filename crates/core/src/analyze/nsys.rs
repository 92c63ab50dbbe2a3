//! Nsight Systems GPU kernel summary CSV: `nsys stats --report
//! cuda_gpu_kern_sum --format csv` (headers `Time (%),Total Time (ns),
//! Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name`) and the
//! older `gpukernsum` (`Time(%)`, `Average (ns)`, `Minimum (ns)`,
//! `Maximum (ns)`, sometimes without units). Lines before the header
//! ("Processing [...] with [...]") are skipped; a unit other than ns in a
//! header (`--timeunit`) is converted to ns.

use super::readers::{read_line_bounded, Line};
use super::AnalyzeError;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Read};

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 1;

/// Lines searched for the header.
const HEADER_SEARCH_LINES: usize = 1000;
const MAX_LINE: usize = 1 << 20;

/// One kernel row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NsysKernel {
    pub name: String,
    /// Share of total kernel time, % (as reported, else computed).
    pub time_pct: Option<f64>,
    pub total_ns: f64,
    pub instances: Option<u64>,
    pub avg_ns: Option<f64>,
    pub med_ns: Option<f64>,
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
}

/// Result of the nsys kernel-summary analyzer; kernels sorted by total time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NsysAnalysis {
    pub kernels: Vec<NsysKernel>,
    /// Sum of `total_ns` over all kernels.
    pub total_ns: f64,
    pub notes: Vec<String>,
}

/// Column roles, matched on the header text without its unit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Col {
    TimePct,
    Total,
    Instances,
    Avg,
    Med,
    Min,
    Max,
    StdDev,
    Name,
}

/// Role and ns-factor of a header cell such as `Avg (ns)` or `Total Time (us)`.
fn classify(header: &str) -> Option<(Col, f64)> {
    let h = header.trim();
    let (base, unit) = match (h.find('('), h.rfind(')')) {
        (Some(a), Some(b)) if b > a => (h[..a].trim(), h[a + 1..b].trim()),
        _ => (h, ""),
    };
    let base = base.to_ascii_lowercase();
    let factor = match unit {
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => 1.0,
    };
    let role = match base.as_str() {
        "time" if unit == "%" => Col::TimePct,
        "time (%)" | "time(%)" | "time %" => Col::TimePct,
        "total time" => Col::Total,
        "instances" | "count" | "calls" => Col::Instances,
        "avg" | "average" => Col::Avg,
        "med" | "median" => Col::Med,
        "min" | "minimum" => Col::Min,
        "max" | "maximum" => Col::Max,
        "stddev" | "std dev" => Col::StdDev,
        "name" => Col::Name,
        _ => return None,
    };
    Some((
        role,
        if role == Col::TimePct || role == Col::Instances {
            1.0
        } else {
            factor
        },
    ))
}

fn number(s: &str) -> Option<f64> {
    let cleaned: String = s.trim().chars().filter(|c| *c != ',').collect();
    cleaned.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Analyze a `cuda_gpu_kern_sum` / `gpukernsum` CSV.
pub fn analyze<R: Read>(reader: R) -> Result<NsysAnalysis, AnalyzeError> {
    let mut r = BufReader::with_capacity(64 << 10, reader);
    let mut line = Vec::new();
    let mut header_line = None;
    for n in 1..=HEADER_SEARCH_LINES {
        match read_line_bounded(&mut r, &mut line, MAX_LINE)? {
            Line::Eof => break,
            Line::TooLong => return Err(AnalyzeError::at_line(n as u64, "line longer than 1 MiB")),
            Line::Got => {}
        }
        let text = String::from_utf8_lossy(&line);
        if text.contains("Total Time") && text.contains("Instances") && text.contains("Name") {
            header_line = Some((n, text.trim_start_matches('\u{feff}').trim().to_string()));
            break;
        }
    }
    let Some((header_no, header_text)) = header_line else {
        return Err(AnalyzeError::malformed(
            "no kernel-summary header (Total Time, Instances, Name) found",
        ));
    };
    let rest = io::Cursor::new(format!("{header_text}\n").into_bytes()).chain(r);
    parse_table(rest, header_no as u64)
}

fn parse_table<R: BufRead>(input: R, header_line: u64) -> Result<NsysAnalysis, AnalyzeError> {
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let cols: Vec<Option<(Col, f64)>> = csv.headers()?.iter().map(classify).collect();
    let find = |c: Col| cols.iter().position(|x| x.map(|x| x.0) == Some(c));
    let (Some(total_c), Some(name_c)) = (find(Col::Total), find(Col::Name)) else {
        return Err(AnalyzeError::at_line(
            header_line,
            "header lacks Total Time or Name",
        ));
    };
    let factor = |i: usize| cols[i].map_or(1.0, |c| c.1);
    let mut out = NsysAnalysis::default();
    let mut skipped = 0u64;
    let mut record = csv::StringRecord::new();
    while csv.read_record(&mut record)? {
        let get =
            |c: Col| find(c).and_then(|i| record.get(i).and_then(number).map(|v| v * factor(i)));
        let (Some(total), Some(name)) = (record.get(total_c).and_then(number), record.get(name_c))
        else {
            if record.iter().any(|f| !f.is_empty()) {
                skipped += 1;
            }
            continue;
        };
        out.kernels.push(NsysKernel {
            name: name.to_string(),
            time_pct: get(Col::TimePct),
            total_ns: total * factor(total_c),
            instances: get(Col::Instances).map(|x| x.round() as u64),
            avg_ns: get(Col::Avg),
            med_ns: get(Col::Med),
            min_ns: get(Col::Min),
            max_ns: get(Col::Max),
            stddev_ns: get(Col::StdDev),
        });
    }
    if out.kernels.is_empty() {
        return Err(AnalyzeError::malformed("the kernel summary has no rows"));
    }
    out.total_ns = out.kernels.iter().map(|k| k.total_ns).sum();
    if out.total_ns > 0.0 {
        for k in &mut out.kernels {
            if k.time_pct.is_none() {
                k.time_pct = Some(k.total_ns / out.total_ns * 100.0);
            }
        }
    }
    out.kernels.sort_by(|a, b| {
        b.total_ns
            .total_cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    if skipped > 0 {
        out.notes.push(format!(
            "{skipped} rows without a numeric total time were skipped"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{open, real_fixtures};
    use super::*;

    #[test]
    fn new_headers_with_preamble() {
        let text = "Processing [report.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]... \n\n\
            Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n\
            20.0,200,2,100.0,100.0,90,110,14.1,small\n\
            80.0,800,4,200.0,200.0,150,250,40.8,\"void big<float, (int)4>(T1, T2)\"\n";
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(a.total_ns, 1000.0);
        assert_eq!(a.kernels[0].name, "void big<float, (int)4>(T1, T2)");
        assert_eq!(a.kernels[0].instances, Some(4));
        assert_eq!(a.kernels[0].med_ns, Some(200.0));
        assert_eq!(a.kernels[1].time_pct, Some(20.0));
        let v = serde_json::to_value(&a).unwrap();
        for k in [
            "name",
            "time_pct",
            "total_ns",
            "instances",
            "avg_ns",
            "med_ns",
            "min_ns",
            "max_ns",
        ] {
            assert!(v["kernels"][0].get(k).is_some(), "{k}");
        }
    }

    #[test]
    fn old_headers_and_units() {
        let text =
            "Time(%),Total Time (us),Instances,Average (us),Minimum (us),Maximum (us),Name\n\
                    60.0,\"1,500\",3,500,400,600,a\n40.0,1000,1,1000,1000,1000,b\n";
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(a.kernels[0].total_ns, 1_500_000.0);
        assert_eq!(a.kernels[0].avg_ns, Some(500_000.0));
        assert_eq!(a.kernels[0].min_ns, Some(400_000.0));
        assert_eq!(a.kernels[0].med_ns, None);
        let bare =
            "Time(%),Total Time,Instances,Average,Minimum,Maximum,Name\n100,42,1,42,42,42,k\n";
        let a = analyze(bare.as_bytes()).unwrap();
        assert_eq!(a.kernels[0].total_ns, 42.0);
        assert_eq!(a.kernels[0].max_ns, Some(42.0));
    }

    #[test]
    fn missing_header_and_empty_tables() {
        assert!(analyze("hello\nworld\n".as_bytes())
            .unwrap_err()
            .to_string()
            .contains("header"));
        let e = analyze("Time (%),Total Time (ns),Instances,Name\n".as_bytes()).unwrap_err();
        assert!(e.to_string().contains("no rows"), "{e}");
    }

    #[test]
    fn real_nsys_fixture() {
        let Some(root) = real_fixtures() else { return };
        let a = analyze(open(
            &root,
            "nsys/llmperfopt__decode__summary_cuda_gpu_kern_sum.csv",
        ))
        .unwrap();
        let k = &a.kernels[0];
        assert_eq!(k.total_ns, 61_602_133.0);
        assert_eq!(k.instances, Some(16448));
        assert_eq!(k.time_pct, Some(34.4));
        assert!(k.name.contains("gemvx::kernel"));
        assert!(a.kernels.windows(2).all(|w| w[0].total_ns >= w[1].total_ns));
        let pct: f64 = a.kernels.iter().filter_map(|k| k.time_pct).sum();
        assert!((pct - 100.0).abs() < 1.0, "{pct}");
        assert!((a.total_ns / 61_602_133.0 * 34.4 - 100.0).abs() < 1.0);
    }
}
