//! Estimator pages: the list, one form per estimator (a GET form, so the URL reproduces
//! the estimate), the models catalog and the GPU catalog with provenance.

use crate::extract::Path;
use askama::Template;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use axum_htmx::{HxHistoryRestoreRequest, HxRequest, HxTarget};

use super::proposals::{record_rows, RecordRow};
use super::{render, FormErrors, PageCtx};
use crate::core::accuracy;
use crate::core::estimate::{
    self, gpus, models, Chain, Dtype, EstimateError, EstimatorInfo, FieldSpec, Inputs, Shown,
};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/estimators", get(list_estimators))
        .route("/estimators/models", get(list_models))
        .route("/estimators/gpus", get(list_gpus))
        .route("/estimators/accuracy", get(accuracy_page))
        .route("/estimators/{name}", get(show_estimator))
}

// ---------- list ----------

#[derive(Template)]
#[template(path = "estimators/index.html")]
struct IndexPage {
    ctx: PageCtx,
    estimators: &'static [EstimatorInfo],
}

async fn list_estimators(ctx: PageCtx) -> Result<impl IntoResponse> {
    render(&IndexPage {
        ctx,
        estimators: estimate::registry(),
    })
}

// ---------- one estimator ----------

const OVERRIDES: &[&str] = &[
    "params",
    "layers",
    "kv_heads",
    "head_dim",
    "hidden",
    "hbm_bytes",
    "bandwidth",
    "peak_flops",
];

pub enum FieldKind {
    Select(Vec<(String, String)>),
    TextArea,
    Text,
}

/// One form field as the template draws it.
pub struct FieldView {
    pub spec: &'static FieldSpec,
    pub value: String,
    pub kind: FieldKind,
    pub error: Option<String>,
}

impl FieldView {
    fn new(spec: &'static FieldSpec, inputs: &Inputs, errors: &[FieldError]) -> Self {
        let options = |items: Vec<(String, String)>, blank: &str| {
            let mut all = vec![(String::new(), blank.to_string())];
            all.extend(items);
            FieldKind::Select(all)
        };
        let dtypes = || {
            Dtype::ALL
                .iter()
                .map(|d| (d.name().to_string(), d.name().to_string()))
                .collect()
        };
        let kind = match spec.name {
            "model" => options(
                models::CATALOG
                    .iter()
                    .map(|m| (m.name.to_string(), format!("{} ({})", m.name, m.hf_repo)))
                    .collect(),
                "— none (use config.json or overrides) —",
            ),
            "gpu" => options(
                gpus::GPUS
                    .iter()
                    .map(|g| (g.name.to_string(), format!("{} — {}", g.name, g.title)))
                    .collect(),
                "— default: h100-sxm —",
            ),
            "weight_dtype" | "activation_dtype" | "kv_dtype" | "from" | "to" => options(
                dtypes(),
                &format!("— default: {} —", spec.default.unwrap_or("bf16")),
            ),
            "config" => FieldKind::TextArea,
            _ => FieldKind::Text,
        };
        FieldView {
            spec,
            value: inputs.get(spec.name).cloned().unwrap_or_default(),
            kind,
            error: errors
                .iter()
                .find(|e| e.field == spec.name)
                .map(|e| e.message.clone()),
        }
    }

    /// Catalog overrides go in a collapsed group: most estimates never touch them.
    pub fn is_override(&self) -> bool {
        OVERRIDES.contains(&self.spec.name)
    }

    pub fn placeholder(&self) -> String {
        match self.spec.default {
            Some(d) => format!("default {d}"),
            None if self.spec.required => "required".into(),
            None => "optional".into(),
        }
    }
}

/// A chain as the page shows it.
pub struct ChainView {
    pub lines: Vec<(String, String, String)>,
    pub inputs: Vec<Shown>,
    pub results: Vec<Shown>,
    pub sanity: String,
}

impl From<&Chain> for ChainView {
    fn from(c: &Chain) -> Self {
        ChainView {
            lines: c
                .lines
                .iter()
                .map(|l| (l.label.clone(), l.formula.clone(), l.display_value()))
                .collect(),
            inputs: c.shown_inputs(),
            results: c.shown_results(),
            sanity: c.sanity.clone(),
        }
    }
}

#[derive(Template)]
#[template(path = "estimators/show.html")]
struct EstimatorPage {
    ctx: PageCtx,
    info: &'static EstimatorInfo,
    fields: Vec<FieldView>,
    chain: Option<ChainView>,
    errors: FormErrors,
    query: String,
    example: Option<&'static str>,
    overrides_open: bool,
    has_overrides: bool,
    /// This estimator against published measurements (docs/accuracy.md), held out by
    /// source, in all and per category (architecture × precision × TP).
    published: Vec<RecordRow>,
    categories: Vec<RecordRow>,
    /// The bands' thresholds, for the estimators that band a measured step.
    thresholds: Option<String>,
    /// This estimator's figures against what the team's proposals later observed.
    observed: Vec<RecordRow>,
}

#[derive(Template)]
#[template(path = "estimators/chain.html")]
struct ChainPartial {
    info: &'static EstimatorInfo,
    chain: Option<ChainView>,
    errors: FormErrors,
    query: String,
}

/// Query-string inputs, in order; blank fields are dropped (they mean "use the default").
fn parse_query(raw: Option<&str>) -> Result<Inputs> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
    let mut inputs = Inputs::new();
    for (k, v) in pairs {
        if !v.trim().is_empty() {
            inputs.insert(k, v);
        }
    }
    Ok(inputs)
}

fn canonical_query(inputs: &Inputs) -> String {
    serde_urlencoded::to_string(inputs).unwrap_or_default()
}

async fn show_estimator(
    ctx: PageCtx,
    State(state): State<AppState>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
    HxRequest(htmx): HxRequest,
    HxTarget(target): HxTarget,
    HxHistoryRestoreRequest(restore): HxHistoryRestoreRequest,
) -> Result<Response> {
    let info = estimate::find(&name).ok_or_else(|| {
        AppError::not_found(format!(
            "no estimator named {name}; see the list at /estimators"
        ))
    })?;
    let inputs = parse_query(raw.as_deref())?;
    let (chain, errors) = if inputs.is_empty() {
        (None, Vec::new())
    } else {
        match estimate::run(info.name, &inputs) {
            Ok(chain) => (Some(ChainView::from(&chain)), Vec::new()),
            Err(EstimateError::Invalid(errors)) => (None, errors),
            Err(e @ EstimateError::UnknownEstimator(_)) => {
                return Err(AppError::NotFound(e.to_string()))
            }
        }
    };
    let status = super::form_page::status(&errors);
    let query = canonical_query(&inputs);
    // htmx re-renders only the chain as inputs change; everything else gets the page.
    // That live preview answers 200 even while inputs are missing or wrong: the fragment
    // lists what to fix, and a form being typed is not a failed request (so /metrics
    // does not count each keystroke as a 422). Submitting the form still answers 422.
    if htmx && !restore && target.as_deref() == Some("chain") {
        let partial = ChainPartial {
            info,
            chain,
            errors: errors.into(),
            query,
        };
        return Ok(render(&partial)?.into_response());
    }
    let fields: Vec<FieldView> = info
        .fields
        .iter()
        .map(|f| FieldView::new(f, &inputs, &errors))
        .collect();
    let overrides_open = fields
        .iter()
        .any(|f| f.is_override() && (!f.value.is_empty() || f.error.is_some()));
    let has_overrides = fields.iter().any(FieldView::is_override);
    // A proposal figure may come from two estimators ("decode-floor + mixed-step").
    let observed = record_rows(
        crate::proposals::error_record(&state.pool)
            .await?
            .into_iter()
            .filter(|r| r.estimator.split(" + ").any(|e| e == info.name))
            .collect(),
    );
    let (published, categories) = accuracy::record_for(info.name);
    let page = EstimatorPage {
        published: record_rows(published),
        categories: record_rows(categories),
        thresholds: matches!(info.name, "decode-floor" | "mixed-step")
            .then(crate::core::estimate::expected_cost::thresholds),
        observed,
        ctx,
        info,
        fields,
        overrides_open,
        has_overrides,
        chain,
        errors: errors.into(),
        query,
        example: Some(info.example),
    };
    Ok((status, render(&page)?).into_response())
}

// ---------- accuracy ----------

#[derive(Template)]
#[template(path = "estimators/accuracy.html")]
struct AccuracyPage {
    ctx: PageCtx,
    summary: Vec<RecordRow>,
    categories: Vec<RecordRow>,
    thresholds: String,
    rows: Vec<accuracy::Row>,
    sources: Vec<&'static accuracy::Source>,
}

/// Every published comparison (the same table as docs/accuracy.md).
async fn accuracy_page(ctx: PageCtx) -> Result<impl IntoResponse> {
    let rows = accuracy::table().to_vec();
    render(&AccuracyPage {
        ctx,
        summary: record_rows(accuracy::summary(&rows)),
        categories: record_rows(
            ["decode-floor", "mixed-step"]
                .into_iter()
                .flat_map(|e| accuracy::categories(&rows, e))
                .collect(),
        ),
        thresholds: crate::core::estimate::expected_cost::thresholds(),
        rows,
        sources: accuracy::sources(),
    })
}

// ---------- catalogs ----------

pub struct ModelRow {
    pub name: String,
    pub hf_repo: String,
    pub total: String,
    pub active: String,
    pub layers: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub kind: String,
    pub weights: Vec<(String, String)>,
    pub kv: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "estimators/models.html")]
struct ModelsPage {
    ctx: PageCtx,
    rows: Vec<ModelRow>,
}

fn gb(v: &serde_json::Value) -> String {
    v.as_f64()
        .map(|b| format!("{:.2} GB", b / 1e9))
        .unwrap_or_default()
}

async fn list_models(ctx: PageCtx) -> Result<impl IntoResponse> {
    let rows = models::summaries()
        .into_iter()
        .map(|s| {
            let kind = match (&s.spec.moe, &s.spec.mla) {
                (Some(m), Some(_)) => format!("MoE {}×, top-{}; MLA", m.experts, m.experts_per_tok),
                (Some(m), None) => format!("MoE {}×, top-{}; GQA", m.experts, m.experts_per_tok),
                (None, Some(_)) => "dense; MLA".to_string(),
                (None, None) => "dense; GQA".to_string(),
            };
            let layers = s.spec.layer_kinds.describe();
            let kind = match (&s.spec.quant, layers.is_empty()) {
                (Some(q), true) => format!("{kind}; checkpoint {}", q.describe()),
                (Some(q), false) => format!("{kind}; {layers}; checkpoint {}", q.describe()),
                (None, true) => kind,
                (None, false) => format!("{kind}; {layers}"),
            };
            ModelRow {
                total: estimate::show_in_unit(&serde_json::Value::from(s.params.total), ""),
                active: estimate::show_in_unit(&serde_json::Value::from(s.params.active), ""),
                layers: s.spec.layers,
                kv_heads: s.spec.kv_heads,
                head_dim: s.spec.head_dim,
                kind,
                weights: s
                    .weight_bytes
                    .iter()
                    .map(|(d, v)| (d.to_string(), gb(v)))
                    .collect(),
                kv: s
                    .kv_bytes_per_token
                    .iter()
                    .map(|(d, v)| (d.to_string(), estimate::show_in_unit(v, "B")))
                    .collect(),
                name: s.name,
                hf_repo: s.hf_repo,
            }
        })
        .collect();
    render(&ModelsPage { ctx, rows })
}

pub struct GpuFigure {
    pub what: &'static str,
    pub value: String,
    pub provenance: &'static str,
    pub note: &'static str,
}

pub struct GpuRow {
    pub name: &'static str,
    pub title: &'static str,
    pub link: &'static str,
    pub figures: Vec<GpuFigure>,
}

#[derive(Template)]
#[template(path = "estimators/gpus.html")]
struct GpusPage {
    ctx: PageCtx,
    rows: Vec<GpuRow>,
}

async fn list_gpus(ctx: PageCtx) -> Result<impl IntoResponse> {
    let fig = |what, s: &gpus::Sourced, scale: f64, unit: &str| GpuFigure {
        what,
        value: estimate::show_in_unit(&serde_json::Value::from(s.value / scale), unit),
        provenance: s.provenance.describe(),
        note: s.note,
    };
    let rows = gpus::GPUS
        .iter()
        .map(|g| {
            let mut figures = vec![
                fig("Memory", &g.memory_bytes, 1e9, "GB"),
                fig("HBM bandwidth", &g.hbm_bandwidth, 1e12, "TB/s"),
                fig("Dense BF16", &g.bf16_flops, 1e12, "TFLOP/s"),
            ];
            if let Some(fp8) = &g.fp8_flops {
                figures.push(fig("Dense FP8", fp8, 1e12, "TFLOP/s"));
            }
            if let Some(int8) = &g.int8_ops {
                figures.push(fig("Dense INT8", int8, 1e12, "TOP/s"));
            }
            if let Some(fp4) = &g.fp4_flops {
                figures.push(fig("Dense FP4", fp4, 1e12, "TFLOP/s"));
            }
            figures.push(fig("Link (per direction)", &g.link_bandwidth, 1e9, "GB/s"));
            GpuRow {
                name: g.name,
                title: g.title,
                link: g.link,
                figures,
            }
        })
        .collect();
    render(&GpusPage { ctx, rows })
}
