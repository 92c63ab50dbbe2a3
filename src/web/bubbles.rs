//! Bubble attribution on step 3's page: the latest attribution of the investigation (the
//! picture, the classes, the ranked bubbles and the method's reading of them), and a
//! form that runs one from the investigation's trace and queue artifacts.

use serde::Deserialize;
use sqlx::PgPool;

use crate::bubbles::{self, Ask, Stored};
use crate::charts;
use crate::core::analyze::pytorch_trace::Preceded;
use crate::core::analyze::Kind;
use crate::core::fmt::format_number;
use crate::core::method::bubbles::{advise, Advice, BubbleClass, DEFAULT_MIN_IDLE_US};
use crate::core::quantity::{self, Unit};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::investigations::db::{self, ArtifactLink};

/// One class row of the table.
pub struct ClassRow {
    pub slug: &'static str,
    pub label: &'static str,
    pub total_ms: String,
    pub share: String,
    pub count: u64,
    pub preceded_by: String,
}

/// One runtime bubble of the ranking.
pub struct RankedRow {
    pub at_ms: String,
    pub idle_ms: String,
    pub recoverable_ms: String,
    pub waiting: String,
    pub where_: String,
    pub preceded_by: &'static str,
}

/// What step 3 shows of the latest attribution.
pub struct BubblesView {
    pub stored: Stored,
    pub advice: Advice,
    pub svg: Option<String>,
    pub rows: Vec<ClassRow>,
    pub ranked: Vec<RankedRow>,
    pub intervals: usize,
}

/// The artifacts an attribution can be run from, and a refused form's values.
#[derive(Default)]
pub struct Sources {
    pub traces: Vec<ArtifactLink>,
    pub queues: Vec<ArtifactLink>,
    pub echo: Echo,
}

/// The attribution form as it was sent, with what was wrong.
#[derive(Default)]
pub struct Echo {
    pub trace: String,
    pub queue: String,
    pub offset_ms: String,
    pub min_idle_us: String,
    pub errors: Vec<FieldError>,
}

fn ms(us: f64) -> String {
    format!("{} ms", format_number(us / 1000.0, 2))
}

pub fn view(stored: Stored) -> BubblesView {
    let a = &stored.result;
    let rows = BubbleClass::ALL
        .into_iter()
        .filter_map(|c| a.summary(c).map(|s| (c, s)))
        .map(|(c, s)| ClassRow {
            slug: c.slug(),
            label: c.label(),
            total_ms: ms(s.total_us),
            share: format!("{}%", format_number(s.share * 100.0, 1)),
            count: s.count,
            preceded_by: Preceded::ALL
                .into_iter()
                .filter_map(|p| {
                    s.preceded_by
                        .get(p.slug())
                        .map(|n| format!("{} {n}", p.slug()))
                })
                .collect::<Vec<_>>()
                .join(", "),
        })
        .collect();
    let ranked = a
        .ranked
        .iter()
        .map(|i| RankedRow {
            at_ms: format!("+{}", ms(i.start_us - a.window_start_us)),
            idle_ms: ms(i.dur_us),
            recoverable_ms: ms(i.recoverable_us),
            waiting: format_number(i.waiting_max, 0),
            where_: format!("GPU {} stream {}", i.device, i.stream),
            preceded_by: i.preceded_by.label(),
        })
        .collect();
    BubblesView {
        advice: advise(a),
        svg: charts::bubbles::bubbles(a),
        rows,
        ranked,
        intervals: a.intervals.len(),
        stored,
    }
}

/// The investigation's latest attribution, ready to show.
pub async fn latest_view(pool: &PgPool, investigation: i64) -> Result<Option<BubblesView>> {
    Ok(bubbles::latest(pool, investigation).await?.map(view))
}

/// The investigation's analyzed traces and queues.
pub async fn sources(pool: &PgPool, investigation: i64) -> Result<Sources> {
    let mut s = Sources::default();
    for a in db::artifacts(pool, Some(investigation), None).await? {
        if a.status != "done" {
            continue;
        }
        match a.kind() {
            Kind::PytorchTrace | Kind::NsysSqlite => s.traces.push(a),
            Kind::RequestLog | Kind::OtlpSpans | Kind::Prometheus | Kind::PrometheusRange => {
                s.queues.push(a)
            }
            _ => {}
        }
    }
    Ok(s)
}

#[derive(Deserialize)]
pub struct RunForm {
    #[serde(default)]
    trace: String,
    #[serde(default)]
    queue: String,
    #[serde(default)]
    offset_ms: String,
    #[serde(default)]
    min_idle_us: String,
}

fn read_form(f: &RunForm) -> std::result::Result<Ask, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut id = |field: &str, raw: &str| {
        crate::core::json_input::typed_id(raw).unwrap_or_else(|| {
            errors.push(FieldError::new(field, "choose an artifact"));
            0
        })
    };
    let trace = id("trace", &f.trace);
    let queue = id("queue", &f.queue);
    let mut amount = |field: &str, raw: &str, unit: Unit, default: f64| {
        if raw.trim().is_empty() {
            return default;
        }
        quantity::read(raw, unit).unwrap_or_else(|e| {
            errors.push(FieldError::new(field, e.0));
            default
        })
    };
    let offset_ms = amount("offset_ms", &f.offset_ms, Unit::Ms, 0.0);
    let min_idle_us = amount("min_idle_us", &f.min_idle_us, Unit::Us, DEFAULT_MIN_IDLE_US);
    Ask::read(trace, queue, offset_ms, min_idle_us, errors)
}

impl Echo {
    /// The form as sent, with why it was refused, for step 3 to show again.
    pub fn of(form: RunForm, errors: Vec<FieldError>) -> Echo {
        Echo {
            trace: form.trace,
            queue: form.queue,
            offset_ms: form.offset_ms,
            min_idle_us: form.min_idle_us,
            errors,
        }
    }
}

/// Runs an attribution from the step-3 form and keeps it for investigation `id`
/// (the step-3 page's handler calls this; a refusal is `AppError::Invalid`, nothing kept).
pub async fn attribute_for(pool: &PgPool, id: i64, form: &RunForm, user: i64) -> Result<()> {
    let ask = read_form(form).map_err(AppError::Invalid)?;
    let (result, owner) = bubbles::run(pool, &ask).await?;
    if owner != Some(id) {
        return Err(AppError::field(
            "trace",
            format!(
                "artifact {} is not attached to investigation {id}",
                ask.trace
            ),
        ));
    }
    bubbles::store(pool, id, &ask, &result, user).await?;
    Ok(())
}
