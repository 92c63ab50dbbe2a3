//! One point of a load sweep (a server measured at one offered load) and what is known
//! of points alone: their load, their order, how many loads they cover. Below both the
//! sweep reader ([`super::sweep`]) and the benchmark reader ([`super::vllm_bench`]),
//! which both make points.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::fmt::format_number;
use crate::metric::{Metric, Percentile};
use crate::stats::Summary;

/// Latency statistics of one point, in milliseconds; `None` where the source has none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

impl LatencyStats {
    pub(crate) fn from_summary(s: &Summary) -> Self {
        LatencyStats {
            mean: s.mean,
            p50: s.p50,
            p90: s.p90,
            p95: s.p95,
            p99: s.p99,
        }
    }

    /// The value at a percentile.
    pub fn at(&self, p: Percentile) -> Option<f64> {
        match p {
            Percentile::P50 => self.p50,
            Percentile::P90 => self.p90,
            Percentile::P95 => self.p95,
            Percentile::P99 => self.p99,
        }
        .filter(|v| v.is_finite())
    }

    pub(crate) fn any(&self) -> bool {
        [self.mean, self.p50, self.p90, self.p95, self.p99]
            .iter()
            .any(Option::is_some)
    }
}

/// One measured load level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Which sweep of the source this point belongs to (a test name without its rate;
    /// empty when the source holds one sweep).
    pub series: String,
    /// The row's test name, the run's name or the artifact's file name.
    pub label: String,
    /// Offered request rate (req/s); `null` when unbounded or when concurrency set the load.
    pub offered_rate: Option<f64>,
    /// Concurrency limit, when that set the load.
    pub concurrency: Option<f64>,
    /// Every request sent at once (vLLM `inf`, GuideLLM `throughput`).
    pub unbounded: bool,
    /// Achieved successful requests per second.
    pub achieved_rps: Option<f64>,
    /// Achieved output tokens per second.
    pub output_tps: Option<f64>,
    /// Successful requests measured at this point.
    pub requests: Option<u64>,
    pub ttft_ms: LatencyStats,
    pub tpot_ms: LatencyStats,
    pub itl_ms: LatencyStats,
    pub e2el_ms: LatencyStats,
    /// The artifact this point came from (a sweep made of artifacts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<i64>,
}

impl SweepPoint {
    /// The latency statistics of one metric (TTFT, TPOT, ITL, E2E).
    pub fn latency(&self, m: Metric) -> Option<&LatencyStats> {
        match m {
            Metric::Ttft => Some(&self.ttft_ms),
            Metric::Tpot => Some(&self.tpot_ms),
            Metric::Itl => Some(&self.itl_ms),
            Metric::E2e => Some(&self.e2el_ms),
            _ => None,
        }
    }

    /// The offered load as people say it: "4 req/s", "unbounded", "concurrency 16".
    pub fn load_text(&self) -> String {
        if self.unbounded {
            return "unbounded rate".into();
        }
        match (self.offered_rate, self.concurrency) {
            (Some(r), _) => format!("{} req/s", short(r)),
            (None, Some(c)) => format!("concurrency {}", short(c)),
            (None, None) => self.label.clone(),
        }
    }

    /// Where the point sits in load order: concurrency-set points (GuideLLM's
    /// synchronous run) before rates, rates ascending, unbounded last.
    fn load_key(&self) -> (u8, f64) {
        if self.unbounded {
            return (3, 0.0);
        }
        match (self.offered_rate, self.concurrency) {
            (Some(r), _) => (2, r),
            (None, Some(c)) => (1, c),
            (None, None) => (0, 0.0),
        }
    }
}

/// A number in a sentence: up to two decimals, trailing zeros dropped ("4", "6.3").
pub(crate) fn short(x: f64) -> String {
    let decimals = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    let s = format_number(x, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Points in load order (stable for equal loads).
pub fn order(points: &mut [SweepPoint]) {
    points.sort_by(|a, b| {
        a.series.cmp(&b.series).then_with(|| {
            let (ka, kb) = (a.load_key(), b.load_key());
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
        })
    });
}

/// How a run's load was set, read from its recorded settings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Load {
    pub offered_rate: Option<f64>,
    pub concurrency: Option<f64>,
    pub unbounded: bool,
}

/// The load of a benchmark run: vLLM `request_rate` (a number or `"inf"`) and
/// `max_concurrency`; GuideLLM `strategy.type_` (`synchronous` = concurrency 1,
/// `concurrent` = `strategy.streams`, `throughput` = unbounded, `constant`/`poisson` =
/// `strategy.rate`); GenAI-Perf `perf_analyzer.stimulus.{concurrency,request_rate}` or
/// the older top-level `concurrency` / `request_rate`.
pub fn load_of(config: &Map<String, Value>) -> Load {
    let get = |k: &str| config.get(k);
    let strategy = get("strategy.type_")
        .or(get("strategy.type"))
        .and_then(Value::as_str);
    if let Some(s) = strategy {
        return match s {
            "synchronous" => Load {
                concurrency: Some(1.0),
                ..Load::default()
            },
            "concurrent" => Load {
                concurrency: num(get("strategy.streams")),
                ..Load::default()
            },
            "throughput" => Load {
                unbounded: true,
                ..Load::default()
            },
            _ => Load {
                offered_rate: num(get("strategy.rate")),
                ..Load::default()
            },
        };
    }
    let conc = num(get("max_concurrency"))
        .or(num(get("perf_analyzer.stimulus.concurrency")))
        .or(num(get("concurrency")));
    let rate_value = get("request_rate").or(get("perf_analyzer.stimulus.request_rate"));
    let rate = num(rate_value);
    let rate_inf = rate_value
        .and_then(Value::as_str)
        .is_some_and(|s| s.trim().eq_ignore_ascii_case("inf"));
    match (rate, conc) {
        (Some(r), c) => Load {
            offered_rate: Some(r),
            concurrency: c,
            unbounded: false,
        },
        (None, Some(c)) => Load {
            concurrency: Some(c),
            ..Load::default()
        },
        (None, None) => Load {
            unbounded: rate_inf,
            ..Load::default()
        },
    }
}

/// True when the point says how its load was set.
pub fn load_known(p: &SweepPoint) -> bool {
    p.unbounded || p.offered_rate.is_some() || p.concurrency.is_some()
}

/// How many different loads the points ran at.
pub fn distinct_loads(points: &[SweepPoint]) -> usize {
    points
        .iter()
        .map(|p| {
            let (k, v) = p.load_key();
            (k, v.to_bits())
        })
        .collect::<BTreeSet<_>>()
        .len()
}

/// A number or a numeric string ("1,024") of a JSON field, when finite.
pub(crate) fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().replace(',', "").parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}
