//! Step 1 — define the metric: one metric, one percentile, the observed value
//! and the target, with units. "Slow" without a number is refused.

use serde::{Deserialize, Serialize};

use super::FieldError;
use crate::fmt::format_number;
use crate::stats::Statistic;

/// The metric an investigation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Time to first token.
    Ttft,
    /// Inter-token latency.
    Itl,
    /// Time per output token.
    Tpot,
    /// End-to-end request latency.
    E2e,
    /// Output tokens (or requests) per second.
    Throughput,
    /// Time from arrival to admission into the running batch.
    QueueWait,
    /// Serving cost per million tokens.
    CostPerMillion,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::Ttft,
        Metric::Itl,
        Metric::Tpot,
        Metric::E2e,
        Metric::Throughput,
        Metric::QueueWait,
        Metric::CostPerMillion,
    ];

    pub fn slug(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Itl => "itl",
            Metric::Tpot => "tpot",
            Metric::E2e => "e2e",
            Metric::Throughput => "throughput",
            Metric::QueueWait => "queue_wait",
            Metric::CostPerMillion => "cost_per_million",
        }
    }

    pub fn from_slug(slug: &str) -> Option<Metric> {
        let s = slug.trim().to_lowercase().replace(['-', ' '], "_");
        Metric::ALL.into_iter().find(|m| m.slug() == s)
    }

    pub fn label(self) -> &'static str {
        match self {
            Metric::Ttft => "Time to first token (TTFT)",
            Metric::Itl => "Inter-token latency (ITL)",
            Metric::Tpot => "Time per output token (TPOT)",
            Metric::E2e => "End-to-end latency",
            Metric::Throughput => "Throughput",
            Metric::QueueWait => "Queue wait",
            Metric::CostPerMillion => "Cost per million tokens",
        }
    }

    /// The name used inside sentences ("p95 TTFT").
    pub fn short_label(self) -> &'static str {
        match self {
            Metric::Ttft => "TTFT",
            Metric::Itl => "ITL",
            Metric::Tpot => "TPOT",
            Metric::E2e => "E2E latency",
            Metric::Throughput => "throughput",
            Metric::QueueWait => "queue wait",
            Metric::CostPerMillion => "cost per 1M tokens",
        }
    }

    pub fn default_unit(self) -> Unit {
        match self {
            Metric::Throughput => Unit::TokPerS,
            Metric::CostPerMillion => Unit::Usd,
            _ => Unit::Ms,
        }
    }

    /// Whether the metric is read at a percentile of a per-request (or per-token)
    /// distribution. A throughput is a rate over the whole run and a cost per million
    /// tokens a ratio over it: neither is a percentile statistic.
    pub fn has_percentile(self) -> bool {
        !matches!(self, Metric::Throughput | Metric::CostPerMillion)
    }

    /// Only throughput improves upwards; latencies and cost improve downwards.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Throughput)
    }

    /// Whether `unit` can express this metric.
    pub fn accepts(self, unit: Unit) -> bool {
        match self {
            Metric::Throughput => matches!(unit, Unit::TokPerS | Unit::ReqPerS),
            Metric::CostPerMillion => unit == Unit::Usd,
            _ => unit.dimension() == Dimension::Time,
        }
    }

    /// Typical (observed, target) values used in help text.
    fn example(self) -> (&'static str, &'static str) {
        match self {
            Metric::Ttft => ("3200", "800"),
            Metric::Itl => ("145", "50"),
            Metric::Tpot => ("60", "40"),
            Metric::E2e => ("12000", "8000"),
            Metric::Throughput => ("1800", "2500"),
            Metric::QueueWait => ("2300", "200"),
            Metric::CostPerMillion => ("1.20", "0.80"),
        }
    }
}

pub use crate::quantity::Unit;
use crate::quantity::{self, Dimension};

/// `(value, unit)` in the unit metric values are stored in: times become ms.
fn canonical(unit: Unit, value: f64) -> (f64, Unit) {
    match unit.convert(value, Unit::Ms) {
        Some(ms) => (ms, Unit::Ms),
        None => (value, unit),
    }
}

/// Percentile of the metric distribution the investigation targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Percentile {
    P50,
    P90,
    P95,
    P99,
}

impl Percentile {
    pub const ALL: [Percentile; 4] = [
        Percentile::P50,
        Percentile::P90,
        Percentile::P95,
        Percentile::P99,
    ];

    pub fn slug(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P95 => "p95",
            Percentile::P99 => "p99",
        }
    }

    /// The probability, e.g. 0.95 for p95.
    pub fn fraction(self) -> f64 {
        match self {
            Percentile::P50 => 0.50,
            Percentile::P90 => 0.90,
            Percentile::P95 => 0.95,
            Percentile::P99 => 0.99,
        }
    }

    pub fn statistic(self) -> Statistic {
        Statistic::Quantile(self.fraction())
    }

    pub fn parse(raw: &str) -> Option<Percentile> {
        match raw.trim().to_lowercase().as_str() {
            "p50" | "50" | "median" => Some(Percentile::P50),
            "p90" | "90" => Some(Percentile::P90),
            "p95" | "95" => Some(Percentile::P95),
            "p99" | "99" => Some(Percentile::P99),
            _ => None,
        }
    }
}

/// "3,200 ms", "14.5 ms", "1,800 tok/s", "$1.20". Fewer decimals for larger
/// numbers: three significant digits is what a reader compares.
pub fn format_value(value: f64, unit: Unit) -> String {
    if unit == Unit::Usd {
        return format!("${}", format_number(value, 2));
    }
    let decimals = match value.abs() {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    format!("{} {}", format_number(value, decimals), unit.slug())
}

/// One measured value of a metric at a percentile ("p99 ITL 145 ms"), or of a metric
/// that has none ("throughput 1,800 tok/s").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MetricReading {
    pub metric: Metric,
    #[serde(default)]
    pub percentile: Option<Percentile>,
    pub value: f64,
    pub unit: Unit,
}

/// "p95 TTFT", or "throughput" for a metric without a percentile.
pub fn metric_name(metric: Metric, percentile: Option<Percentile>) -> String {
    match percentile {
        Some(p) => format!("{} {}", p.slug(), metric.short_label()),
        None => metric.short_label().to_string(),
    }
}

impl MetricReading {
    pub fn line(&self) -> String {
        format!(
            "{} {}",
            metric_name(self.metric, self.percentile),
            format_value(self.value, self.unit)
        )
    }
}

/// A second metric the change moved (a trade-off), with its own before and after at its
/// own percentile: "p95 TTFT of prompts over 16k tokens 1.9 s → 2.6 s".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TradeOff {
    pub before: MetricReading,
    pub after: MetricReading,
    /// Which requests it is about, in the engineer's words (may be empty).
    #[serde(default)]
    pub scope: String,
}

impl TradeOff {
    /// Change from before to after, in % of before.
    pub fn change_pct(&self) -> f64 {
        (self.after.value - self.before.value) / self.before.value * 100.0
    }

    /// How the metric moved for the service: better, worse or unchanged (within 1 %).
    pub fn verdict(&self) -> &'static str {
        let pct = self.change_pct();
        if pct.abs() < 1.0 {
            "unchanged"
        } else if (pct > 0.0) == self.after.metric.higher_is_better() {
            "better"
        } else {
            "worse"
        }
    }

    /// "p95 TTFT (prompts over 16k tokens) 1.90 s → 2.60 s (+36.8%, worse)".
    pub fn line(&self) -> String {
        let scope = match self.scope.trim() {
            "" => String::new(),
            s => format!(" ({s})"),
        };
        format!(
            "{}{scope} {} → {} ({:+.1}%, {})",
            metric_name(self.after.metric, self.after.percentile),
            format_value(self.before.value, self.before.unit),
            format_value(self.after.value, self.after.unit),
            self.change_pct(),
            self.verdict()
        )
    }
}

/// The metric an investigation must move, and by how much.
///
/// Gap ratio `g = observed / target` for lower-is-better metrics and
/// `g = target / observed` for throughput, so `g > 1` always means "worse
/// than the target by a factor g".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MetricTarget {
    pub metric: Metric,
    /// `None` for a metric without one ([`Metric::has_percentile`]).
    #[serde(default)]
    pub percentile: Option<Percentile>,
    pub observed: f64,
    pub target: f64,
    /// Unit of `observed` and `target` (never seconds: they are stored as ms).
    pub unit: Unit,
}

/// Raw step-1 form fields as typed by the user.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricForm {
    pub metric: String,
    pub percentile: String,
    pub observed: String,
    pub target: String,
    /// Optional: defaults to the metric's unit; a unit typed after the number
    /// ("3.2 s") is honoured too.
    pub unit: String,
    /// The person confirmed a target that [`IMPLAUSIBLE_TARGETS`] flags.
    pub confirm_target: bool,
}

/// A target at or beyond which a metric's target is almost surely a slip (seconds typed
/// for milliseconds, a rate for a count): such a target is kept only once confirmed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TargetLimit {
    pub metric: Metric,
    /// In `unit`; a target ≥ this is asked to be confirmed.
    pub at_least: f64,
    pub unit: Unit,
    /// Why such a target is unlikely.
    pub why: &'static str,
}

impl TargetLimit {
    /// "≥ 1 s", "≥ 1,000,000 tok/s".
    pub fn threshold(&self) -> String {
        format!("≥ {}", readable(self.at_least, self.unit))
    }
}

/// The table the step-1 page shows beside the form.
pub const IMPLAUSIBLE_TARGETS: [TargetLimit; 8] = [
    TargetLimit {
        metric: Metric::Ttft,
        at_least: 60_000.0,
        unit: Unit::Ms,
        why: "an interactive first token a minute away; usually ms typed as s",
    },
    TargetLimit {
        metric: Metric::Itl,
        at_least: 1_000.0,
        unit: Unit::Ms,
        why: "one token a second is slower than reading; usually ms typed as s",
    },
    TargetLimit {
        metric: Metric::Tpot,
        at_least: 1_000.0,
        unit: Unit::Ms,
        why: "one token a second is slower than reading; usually ms typed as s",
    },
    TargetLimit {
        metric: Metric::E2e,
        at_least: 1_800_000.0,
        unit: Unit::Ms,
        why: "half an hour per request is a batch job, not a latency target",
    },
    TargetLimit {
        metric: Metric::QueueWait,
        at_least: 600_000.0,
        unit: Unit::Ms,
        why: "ten minutes in the queue is a timeout, not a target",
    },
    TargetLimit {
        metric: Metric::Throughput,
        at_least: 1_000_000.0,
        unit: Unit::TokPerS,
        why: "beyond a large cluster's output; check the unit (tok/s vs req/s)",
    },
    TargetLimit {
        metric: Metric::Throughput,
        at_least: 100_000.0,
        unit: Unit::ReqPerS,
        why: "beyond a large cluster's request rate; check the unit",
    },
    TargetLimit {
        metric: Metric::CostPerMillion,
        at_least: 1_000.0,
        unit: Unit::Usd,
        why: "a thousand dollars per million tokens; check the unit",
    },
];

/// A value for a sentence, times in s from a second up ("60 s", "140 ms").
fn readable(value: f64, unit: Unit) -> String {
    let (value, unit) = match unit {
        Unit::Ms if value >= 1_000.0 => (value / 1_000.0, Unit::S),
        _ => (value, unit),
    };
    match (value.fract() == 0.0, unit) {
        (true, Unit::Usd) => format!("${}", format_number(value, 0)),
        (true, _) => format!("{} {}", format_number(value, 0), unit.slug()),
        (false, _) => format_value(value, unit),
    }
}

impl MetricTarget {
    /// The row of [`IMPLAUSIBLE_TARGETS`] this target reaches, if any.
    pub fn implausible(&self) -> Option<&'static TargetLimit> {
        IMPLAUSIBLE_TARGETS.iter().find(|l| {
            l.metric == self.metric
                && self
                    .unit
                    .convert(self.target, l.unit)
                    .is_some_and(|t| t >= l.at_least)
        })
    }
}

impl MetricTarget {
    /// See the type's doc for the formula.
    pub fn gap_ratio(&self) -> f64 {
        if self.metric.higher_is_better() {
            self.target / self.observed
        } else {
            self.observed / self.target
        }
    }

    pub fn meets_target(&self) -> bool {
        self.gap_ratio() <= 1.0
    }

    /// The observed value as a reading.
    pub fn reading(&self) -> MetricReading {
        MetricReading {
            metric: self.metric,
            percentile: self.percentile,
            value: self.observed,
            unit: self.unit,
        }
    }

    /// "p95 TTFT 3,200 ms vs target 800 ms (4.0× over)".
    pub fn symptom_line(&self) -> String {
        let gap = self.gap_ratio();
        let verdict = if gap <= 1.0 {
            "meets target".to_string()
        } else {
            let digits = if gap < 1.1 { 2 } else { 1 };
            let word = if self.metric.higher_is_better() {
                "short"
            } else {
                "over"
            };
            format!("{gap:.digits$}× {word}")
        };
        format!(
            "{} {} vs target {} ({verdict})",
            metric_name(self.metric, self.percentile),
            format_value(self.observed, self.unit),
            format_value(self.target, self.unit),
        )
    }

    /// Parse the raw form. Every problem is reported against its field, with
    /// what to type instead.
    pub fn parse(form: &MetricForm) -> Result<MetricTarget, Vec<FieldError>> {
        let mut errors = Vec::new();
        let metric = Metric::from_slug(&form.metric);
        if metric.is_none() {
            let names: Vec<&str> = Metric::ALL.iter().map(|m| m.short_label()).collect();
            errors.push(FieldError::new(
                "metric",
                format!("Choose one metric: {}", names.join(", ")),
            ));
        }
        let pct_text = form.percentile.trim();
        let percentile = Percentile::parse(pct_text);
        let wants_percentile = metric.is_none_or(Metric::has_percentile);
        if let Some(m) = metric.filter(|_| !wants_percentile && !pct_text.is_empty()) {
            // A rate or a cost over the run: no percentile, and none is invented.
            errors.push(FieldError::new(
                "percentile",
                format!(
                    "{} is measured over the whole run, not as a percentile of requests: \
                     leave the percentile blank",
                    m.label()
                ),
            ));
        } else if wants_percentile && percentile.is_none() {
            errors.push(FieldError::new(
                "percentile",
                "Choose the percentile the target is about: p50, p90, p95 or p99",
            ));
        }
        let percentile = percentile.filter(|_| wants_percentile);
        let form_unit = if form.unit.trim().is_empty() {
            None
        } else {
            let parsed = Unit::parse(&form.unit);
            if parsed.is_none() {
                errors.push(FieldError::new(
                    "unit",
                    format!(
                        "'{}' is not a unit: use ms, s, tok/s, req/s or usd",
                        form.unit.trim()
                    ),
                ));
            }
            parsed
        };
        if let (Some(m), Some(u)) = (metric, form_unit) {
            if !m.accepts(u) {
                errors.push(unit_mismatch("unit", m, u));
            }
        }

        // A unit that cannot measure the metric (tok/s left over from a throughput, for
        // an ITL) is refused above; the amounts are read in the metric's own unit, so no
        // second error asks for them in the wrong one.
        let unit = form_unit
            .filter(|u| metric.is_none_or(|m| m.accepts(*u)))
            .or(metric.map(Metric::default_unit))
            .unwrap_or(Unit::Ms);
        let pct = percentile.map_or("value", Percentile::slug);
        let (ex_observed, ex_target) = metric.map_or(("3200", "800"), Metric::example);
        let observed = parse_amount(
            &form.observed,
            "observed",
            metric,
            unit,
            pct,
            ex_observed,
            "a measurement",
        );
        let target = parse_amount(
            &form.target,
            "target",
            metric,
            unit,
            pct,
            ex_target,
            "a target",
        );
        let (observed, target) = match (observed, target) {
            (Ok(o), Ok(t)) => (Some(o), Some(t)),
            (o, t) => {
                errors.extend(o.err());
                errors.extend(t.err());
                (None, None)
            }
        };
        match (metric, observed, target) {
            (Some(metric), Some((observed, unit)), Some((target, _))) if errors.is_empty() => {
                let parsed = MetricTarget {
                    metric,
                    percentile,
                    observed,
                    target,
                    unit,
                };
                match parsed.implausible() {
                    Some(limit) if !form.confirm_target => Err(vec![FieldError::new(
                        "target",
                        format!(
                            "The {} target of {} is implausible ({} targets {}: {}). Check the \
                             unit, or confirm the target is right and record again.",
                            metric.short_label(),
                            readable(target, unit),
                            metric.short_label(),
                            limit.threshold(),
                            limit.why
                        ),
                    )]),
                    _ => Ok(parsed),
                }
            }
            _ => Err(errors),
        }
    }
}

/// The units a metric may be given in, its own unit first: "ms (or s)".
pub fn allowed_units(metric: Metric) -> &'static str {
    match metric {
        Metric::Throughput => "tok/s (or req/s)",
        Metric::CostPerMillion => "usd",
        _ => "ms (or s)",
    }
}

fn unit_mismatch(field: &str, metric: Metric, unit: Unit) -> FieldError {
    FieldError::new(
        field,
        format!(
            "'{}' does not measure {}: {} is in {}",
            unit.slug(),
            metric.short_label(),
            metric.short_label(),
            allowed_units(metric)
        ),
    )
}

/// Read "3200", "3,200", "3.2 s" or "~3200ms" into a value in the canonical
/// form of `unit`; returns `(value, canonical unit)`.
fn parse_amount(
    raw: &str,
    field: &str,
    metric: Option<Metric>,
    unit: Unit,
    pct: &str,
    example: &str,
    what: &str,
) -> Result<(f64, Unit), FieldError> {
    let text = raw.trim();
    let hint = format!("give the {field} {pct} in {}, e.g. {example}", unit.slug());
    if text.is_empty() {
        return Err(FieldError::new(
            field,
            format!("A number is required: {hint}"),
        ));
    }
    let (value, typed) = quantity::split(text).map_err(|e| {
        // A word where the number belongs reads best as "'slow' is not a measurement".
        let message = if text.starts_with(|c: char| c.is_ascii_digit() || ".~≈$+-".contains(c)) {
            format!("{e}: {hint}")
        } else {
            format!("'{text}' is not {what}: {hint}")
        };
        FieldError::new(field, message)
    })?;
    let typed_unit = typed.unwrap_or(unit);
    if let Some(m) = metric {
        if !m.accepts(typed_unit) {
            return Err(unit_mismatch(field, m, typed_unit));
        }
    }
    if !value.is_finite() || value <= 0.0 {
        return Err(FieldError::new(
            field,
            format!("The {field} value must be greater than 0: {hint}"),
        ));
    }
    let (value, typed_canonical) = canonical(typed_unit, value);
    let (_, wanted_canonical) = canonical(unit, 1.0);
    if typed_canonical != wanted_canonical {
        // tok/s typed into a req/s form, say: these cannot be converted.
        return Err(FieldError::new(
            field,
            format!(
                "'{}' and '{}' cannot be converted: give both values in {}",
                typed_unit.slug(),
                unit.slug(),
                unit.slug()
            ),
        ));
    }
    Ok((value, typed_canonical))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(metric: &str, pct: &str, observed: &str, target: &str, unit: &str) -> MetricForm {
        MetricForm {
            metric: metric.into(),
            percentile: pct.into(),
            observed: observed.into(),
            target: target.into(),
            unit: unit.into(),
            confirm_target: false,
        }
    }

    #[test]
    fn an_implausible_target_is_kept_only_once_confirmed() {
        let errors = MetricTarget::parse(&form("itl", "p99", "140 ms", "60 s", "")).unwrap_err();
        assert_eq!(errors[0].field, "target");
        assert!(
            errors[0]
                .message
                .starts_with("The ITL target of 60 s is implausible (ITL targets ≥ 1 s"),
            "{}",
            errors[0].message
        );
        let confirmed = MetricTarget::parse(&MetricForm {
            confirm_target: true,
            ..form("itl", "p99", "140 ms", "60 s", "")
        })
        .unwrap();
        assert_eq!(confirmed.target, 60_000.0);
        assert!(MetricTarget::parse(&form("itl", "p99", "140", "60", "")).is_ok());
        assert!(MetricTarget::parse(&form("ttft", "p95", "90 s", "59 s", "")).is_ok());
        assert!(MetricTarget::parse(&form("ttft", "p95", "90 s", "60 s", "")).is_err());
        assert!(MetricTarget::parse(&form("throughput", "", "20", "200000", "req/s")).is_err());
        assert!(MetricTarget::parse(&form("throughput", "", "20", "200000", "tok/s")).is_ok());
    }

    #[test]
    fn gap_ratio_latency_is_observed_over_target() {
        let t = MetricTarget::parse(&form("ttft", "p95", "3,200", "800", "ms")).unwrap();
        assert_eq!(t.gap_ratio(), 4.0);
        assert!(!t.meets_target());
        assert_eq!(
            t.symptom_line(),
            "p95 TTFT 3,200 ms vs target 800 ms (4.0× over)"
        );
    }

    #[test]
    fn gap_ratio_throughput_is_target_over_observed() {
        let t = MetricTarget::parse(&form("throughput", "", "2000", "2500", "tok/s")).unwrap();
        assert_eq!(t.gap_ratio(), 1.25);
        assert_eq!(
            t.symptom_line(),
            "throughput 2,000 tok/s vs target 2,500 tok/s (1.2× short)"
        );
        let ok = MetricTarget::parse(&form("throughput", "", "3000", "2500", "")).unwrap();
        assert!(ok.meets_target());
        assert!(ok.symptom_line().ends_with("(meets target)"));
    }

    #[test]
    fn seconds_are_converted_to_ms() {
        let t = MetricTarget::parse(&form("ttft", "p95", "3.2", "0.8", "s")).unwrap();
        assert_eq!((t.observed, t.target, t.unit), (3200.0, 800.0, Unit::Ms));
        let inline = MetricTarget::parse(&form("e2e", "p99", "12.5 s", "8000ms", "")).unwrap();
        assert_eq!((inline.observed, inline.target), (12500.0, 8000.0));
        let cost = MetricTarget::parse(&form("cost_per_million", "", "$1.20", "0.8", "")).unwrap();
        assert_eq!((cost.unit, cost.observed), (Unit::Usd, 1.2));
    }

    #[test]
    fn slow_is_not_a_measurement() {
        let errors = MetricTarget::parse(&form("ttft", "p95", "slow", "800", "ms")).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "observed");
        assert_eq!(
            errors[0].message,
            "'slow' is not a measurement: give the observed p95 in ms, e.g. 3200"
        );
        let errors = MetricTarget::parse(&form("ttft", "p95", "too slow", "fast", "")).unwrap_err();
        assert_eq!(
            errors[0].message,
            "'too slow' is not a measurement: give the observed p95 in ms, e.g. 3200"
        );
        assert_eq!(errors[1].field, "target");
        assert!(errors[1].message.starts_with("'fast' is not a target"));
        let empty = MetricTarget::parse(&form("itl", "p99", " ", "50", "")).unwrap_err();
        assert_eq!(
            empty[0].message,
            "A number is required: give the observed p99 in ms, e.g. 145"
        );
    }

    #[test]
    fn other_form_errors() {
        let errors = MetricTarget::parse(&form("speed", "p97", "0", "-3", "furlongs")).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["metric", "percentile", "unit", "observed", "target"]
        );
        let wrong_unit =
            MetricTarget::parse(&form("ttft", "p95", "3200", "800", "tok/s")).unwrap_err();
        assert_eq!(
            wrong_unit[0].message,
            "'tok/s' does not measure TTFT: TTFT is in ms (or s)"
        );
        // The unit left over from a throughput: one error, naming the ITL's own unit.
        let left_over =
            MetricTarget::parse(&form("itl", "p50", "23 ms", "14 ms", "tok/s")).unwrap_err();
        assert_eq!(left_over.len(), 1, "{left_over:?}");
        assert_eq!(left_over[0].field, "unit");
        assert_eq!(
            left_over[0].message,
            "'tok/s' does not measure ITL: ITL is in ms (or s)"
        );
        let mixed =
            MetricTarget::parse(&form("throughput", "", "40 req/s", "2500", "tok/s")).unwrap_err();
        assert_eq!(mixed[0].field, "observed");
    }

    #[test]
    fn a_throughput_has_no_percentile() {
        let t = MetricTarget::parse(&form("throughput", "", "1800", "2500", "tok/s")).unwrap();
        assert_eq!(t.percentile, None);
        assert_eq!(
            t.symptom_line(),
            "throughput 1,800 tok/s vs target 2,500 tok/s (1.4× short)"
        );
        assert_eq!(t.reading().line(), "throughput 1,800 tok/s");
        let cost = MetricTarget::parse(&form("cost_per_million", "", "1.20", "0.80", "")).unwrap();
        assert_eq!(cost.percentile, None);
        let given =
            MetricTarget::parse(&form("throughput", "p95", "1800", "2500", "tok/s")).unwrap_err();
        assert_eq!(given[0].field, "percentile");
        assert!(
            given[0].message.contains("not as a percentile of requests"),
            "{}",
            given[0].message
        );
        // A latency still needs one.
        let none = MetricTarget::parse(&form("ttft", "", "3200", "800", "ms")).unwrap_err();
        assert_eq!(none[0].field, "percentile");
        // Records stored with a percentile still read.
        let old: MetricTarget = serde_json::from_str(
            r#"{"metric":"itl","percentile":"p50","observed":23,"target":14,"unit":"ms"}"#,
        )
        .unwrap();
        assert_eq!(old.percentile, Some(Percentile::P50));
    }

    #[test]
    fn metric_properties() {
        assert!(Metric::Throughput.higher_is_better());
        let ttft = |value| MetricReading {
            metric: Metric::Ttft,
            percentile: Some(Percentile::P95),
            value,
            unit: Unit::Ms,
        };
        let t = TradeOff {
            before: ttft(1900.0),
            after: ttft(2600.0),
            scope: "prompts over 16k tokens".into(),
        };
        assert_eq!(t.verdict(), "worse");
        assert_eq!(
            t.line(),
            "p95 TTFT (prompts over 16k tokens) 1,900 ms → 2,600 ms (+36.8%, worse)"
        );
        let faster = TradeOff {
            after: ttft(1000.0),
            ..t.clone()
        };
        assert_eq!(faster.verdict(), "better");
        assert!(!Metric::CostPerMillion.higher_is_better());
        assert_eq!(Metric::from_slug("queue-wait"), Some(Metric::QueueWait));
        assert_eq!(serde_json::to_string(&Unit::TokPerS).unwrap(), "\"tok/s\"");
        assert_eq!(
            serde_json::to_string(&Metric::CostPerMillion).unwrap(),
            "\"cost_per_million\""
        );
        for m in Metric::ALL {
            assert_eq!(Metric::from_slug(m.slug()), Some(m));
            assert!(m.accepts(m.default_unit()));
        }
        let r = MetricReading {
            metric: Metric::Itl,
            percentile: Some(Percentile::P99),
            value: 52.0,
            unit: Unit::Ms,
        };
        assert_eq!(r.line(), "p99 ITL 52.0 ms");
    }
}
