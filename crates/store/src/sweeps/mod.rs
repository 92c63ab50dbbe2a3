//! Load sweeps in the shell: a sweep request (one sweep artifact, or several
//! single-load benchmark artifacts) read once from JSON or a form, its artifacts
//! loaded, and the core's answer (points, knee, SLO) computed. Nothing is stored: a
//! sweep is a view of artifacts that are.

use serde_json::Value;
use sqlx::PgPool;

use crate::artifacts::{self, Artifact};
use crate::core::analyze::sweep::{self, Knee, LatencyOf, Member, Slo, SloAnswer, SweepPoint};
use crate::core::analyze::vllm_bench::VllmBenchAnalysis;
use crate::core::analyze::{Analysis, Kind, Of};
use crate::core::FieldError;
use crate::error::Error;

/// Where a sweep's points come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// One artifact that is a sweep (a summary table, a GuideLLM sweep …).
    Artifact(i64),
    /// Several single-load benchmark artifacts.
    Artifacts(Vec<i64>),
}

/// A sweep question as asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub source: Source,
    /// Which series of a file holding several (a summary table of several tests).
    pub series: Option<String>,
    pub slo: Option<Slo>,
}

/// The answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub series: String,
    pub points: Vec<SweepPoint>,
    pub latency: Option<LatencyOf>,
    pub knee: Option<Knee>,
    pub slo: Option<SloAnswer>,
}

/// The SLO fields of a page's GET form (`slo_metric`, `slo_percentile`, `slo_max`),
/// kept as typed so a refused form comes back as it was.
#[derive(Debug, Default, serde::Deserialize)]
pub struct SloFields {
    #[serde(default)]
    pub slo_metric: String,
    #[serde(default)]
    pub slo_percentile: String,
    #[serde(default)]
    pub slo_max: String,
}

impl SloFields {
    /// Anything typed at all.
    pub fn asked(&self) -> bool {
        [&self.slo_metric, &self.slo_percentile, &self.slo_max]
            .iter()
            .any(|s| !s.trim().is_empty())
    }

    /// The SLO, errors named by the form's fields.
    pub fn parse(&self) -> Result<Slo, Vec<FieldError>> {
        Slo::parse(
            Some(&self.slo_metric),
            Some(&self.slo_percentile),
            Some(&self.slo_max),
            ["slo_metric", "slo_percentile", "slo_max"],
        )
    }

    /// The metric options: (value, label, selected); TTFT when none was chosen.
    pub fn metrics(&self) -> [(&'static str, &'static str, bool); 4] {
        let m = self.slo_metric.trim();
        [
            ("ttft", "TTFT", m == "ttft" || m.is_empty()),
            ("tpot", "TPOT", m == "tpot"),
            ("itl", "ITL", m == "itl"),
            ("e2e", "E2E latency", m == "e2e"),
        ]
    }

    /// The percentile options: (value, selected); p99 when none was chosen.
    pub fn percentiles(&self) -> [(&'static str, bool); 4] {
        let p = self.slo_percentile.trim();
        [
            ("p50", p == "p50"),
            ("p90", p == "p90"),
            ("p95", p == "p95"),
            ("p99", p == "p99" || p.is_empty()),
        ]
    }
}

fn positive_id(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().filter(|n| *n > 0),
        Value::String(s) => crate::core::json_input::typed_id(s),
        _ => None,
    }
}

/// Text of a JSON scalar for the core's parsers (numbers as written).
fn scalar_text(v: Option<&Value>) -> Result<Option<String>, ()> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(()),
    }
}

impl Question {
    /// Reads `{"artifact": id}` or `{"artifacts": [ids]}`, optional `"series"` and
    /// `"slo": {"metric", "percentile", "max_ms"}` (`max_ms` a number of ms, or text with
    /// a unit such as "0.2 s").
    pub fn from_json(body: &Value) -> Result<Question, Vec<FieldError>> {
        let Value::Object(m) = body else {
            return Err(vec![FieldError::new(
                "body",
                "expected a JSON object such as {\"artifacts\": [1, 2, 3], \"slo\": {\"metric\": \"ttft\", \"percentile\": \"p99\", \"max_ms\": 200}}",
            )]);
        };
        let mut errors = Vec::new();
        let source = match (m.get("artifact"), m.get("artifacts")) {
            (Some(_), Some(_)) => {
                errors.push(FieldError::new(
                    "artifact",
                    "give either `artifact` (one sweep file) or `artifacts` (single-load runs), not both",
                ));
                None
            }
            (Some(v), None) => match positive_id(v) {
                Some(id) => Some(Source::Artifact(id)),
                None => {
                    errors.push(FieldError::new(
                        "artifact",
                        "expected a positive artifact id",
                    ));
                    None
                }
            },
            (None, Some(Value::Array(items))) => {
                let ids: Vec<Option<i64>> = items.iter().map(positive_id).collect();
                if let Some(i) = ids.iter().position(Option::is_none) {
                    errors.push(FieldError::new(
                        "artifacts",
                        format!("item {} is not a positive artifact id", i + 1),
                    ));
                    None
                } else if ids.len() > 64 {
                    errors.push(FieldError::new("artifacts", "at most 64 artifacts"));
                    None
                } else {
                    Some(Source::Artifacts(ids.into_iter().flatten().collect()))
                }
            }
            (None, Some(_)) => {
                errors.push(FieldError::new(
                    "artifacts",
                    "expected a list of artifact ids",
                ));
                None
            }
            (None, None) => {
                errors.push(FieldError::new(
                    "artifacts",
                    "give `artifacts` (a list of ids of single-load benchmark runs) or `artifact` (the id of a sweep file)",
                ));
                None
            }
        };
        let series = match m.get("series") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                errors.push(FieldError::new(
                    "series",
                    "expected the series name as text",
                ));
                None
            }
        };
        let slo = match m.get("slo") {
            None | Some(Value::Null) => None,
            Some(Value::Object(s)) => {
                let text = |k: &str| {
                    scalar_text(s.get(k)).map_err(|_| {
                        FieldError::new(format!("slo.{k}"), "expected text or a number")
                    })
                };
                match (text("metric"), text("percentile"), text("max_ms")) {
                    (Ok(metric), Ok(pct), Ok(max)) => match Slo::parse(
                        metric.as_deref(),
                        pct.as_deref(),
                        max.as_deref(),
                        ["slo.metric", "slo.percentile", "slo.max_ms"],
                    ) {
                        Ok(slo) => Some(slo),
                        Err(e) => {
                            errors.extend(e);
                            None
                        }
                    },
                    (a, b, c) => {
                        errors.extend([a.err(), b.err(), c.err()].into_iter().flatten());
                        None
                    }
                }
            }
            Some(_) => {
                errors.push(FieldError::new(
                    "slo",
                    "expected an object such as {\"metric\": \"ttft\", \"percentile\": \"p99\", \"max_ms\": 200}",
                ));
                None
            }
        };
        match source {
            Some(source) if errors.is_empty() => Ok(Question {
                source,
                series,
                slo,
            }),
            _ => Err(errors),
        }
    }
}

/// The sweep points a stored analysis carries: a summary table's, or a benchmark
/// file's when its runs ran at several loads. `None` for anything else.
pub fn points_of(a: &Artifact) -> Option<Vec<SweepPoint>> {
    if a.status != "done" {
        return None;
    }
    let points = match a.analysis.as_ref()? {
        Analysis::Sweep(x) => x.points.clone(),
        Analysis::VllmBench(x) => x.points.clone(),
        _ => return None,
    };
    (!points.is_empty()).then_some(points)
}

async fn artifact(pool: &PgPool, field: &str, id: i64) -> Result<Artifact, Error> {
    artifacts::get(pool, id)
        .await?
        .ok_or_else(|| Error::field(field, format!("no artifact {id}")))
}

/// The points of a question's source, every point of every series.
pub async fn load_points(pool: &PgPool, source: &Source) -> Result<Vec<SweepPoint>, Error> {
    match source {
        Source::Artifact(id) => {
            let a = artifact(pool, "artifact", *id).await?;
            points_of(&a).ok_or_else(|| {
                let why = if a.status != "done" {
                    format!("its analysis is {}", a.status)
                } else if a.kind() == Kind::VllmBench {
                    "it holds one run at one load; send several such runs as `artifacts`".into()
                } else {
                    format!("it is a {}, not a load sweep", a.kind)
                };
                Error::field(
                    "artifact",
                    format!("artifact {id} ({}) has no sweep: {why}", a.name),
                )
            })
        }
        Source::Artifacts(ids) => {
            let mut loaded = Vec::new();
            let mut errors = Vec::new();
            for id in ids {
                let a = artifact(pool, "artifacts", *id).await?;
                let analysis = (a.status == "done")
                    .then(|| a.analysis.as_ref().and_then(VllmBenchAnalysis::of).cloned())
                    .flatten();
                match analysis {
                    Some(x) => loaded.push((a, x)),
                    None => errors.push(FieldError::new(
                        "artifacts",
                        format!(
                            "artifact {id} ({}) is not an analysed benchmark run (kind {}, status {})",
                            a.name, a.kind, a.status
                        ),
                    )),
                }
            }
            if !errors.is_empty() {
                return Err(Error::Invalid(errors));
            }
            let members: Vec<Member> = loaded
                .iter()
                .map(|(a, x)| Member {
                    artifact_id: a.id,
                    name: &a.name,
                    result: &x.result,
                    runs_in_file: x.runs.len().max(1),
                })
                .collect();
            sweep::from_members(&members).map_err(|problems| {
                Error::Invalid(
                    problems
                        .into_iter()
                        .map(|p| FieldError::new("artifacts", p))
                        .collect(),
                )
            })
        }
    }
}

/// The knee and the SLO answer for one series of `points`.
pub fn answer(
    points: &[SweepPoint],
    series: Option<&str>,
    slo: Option<Slo>,
) -> Result<Answer, Vec<FieldError>> {
    let names = sweep::series_names(points);
    let chosen = match (series, names.as_slice()) {
        (Some(s), _) if names.iter().any(|n| n == s) => s.to_string(),
        (Some(s), _) => {
            return Err(vec![FieldError::new(
                "series",
                format!("no series {s:?}; the sweep has {}", quoted(&names)),
            )])
        }
        (None, [only]) => only.clone(),
        (None, _) => {
            return Err(vec![FieldError::new(
                "series",
                format!(
                    "the file holds {} sweeps: choose one of {}",
                    names.len(),
                    quoted(&names)
                ),
            )])
        }
    };
    let pts = sweep::series_points(points, &chosen);
    let latency = slo
        .map(|s| s.latency())
        .or_else(|| sweep::default_latency(&pts));
    let knee = latency.and_then(|l| sweep::knee(&pts, l));
    let slo = match slo {
        Some(s) => {
            Some(sweep::slo_answer(&pts, s).map_err(|why| vec![FieldError::new("slo", why)])?)
        }
        None => None,
    };
    Ok(Answer {
        series: chosen,
        points: pts.into_iter().cloned().collect(),
        latency,
        knee,
        slo,
    })
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
