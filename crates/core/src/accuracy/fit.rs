//! Fitting the expected-cost constants on the published cases, and the error of the fit
//! on cases it was not fitted on.
//!
//! - The decode constants (bandwidth factors for weights and KV, costs per layer, per MoE
//!   layer, per collective and per step) minimise the mean absolute relative error of the
//!   expected decode step over every scored decode figure ([`crate::stats::fit`]); the
//!   prefill riding in decode steps is costed at the house MFU, 0.5.
//! - The prefill efficiency (1 / the fraction of the GPU's measured matmul ceiling a
//!   prefill step's kernels reach) and the request path are fitted together on the scored TTFTs (lone requests
//!   and paced load) by the same least mean absolute relative error; a TTFT at paced load
//!   also waits half the decode step in flight ([`ARRIVAL_WAIT`]).
//! - Leave-one-source-out: each figure is predicted by constants fitted without any case
//!   of its source, so a source's shared quirks cannot flatter its own error.
//!
//! The fit is deterministic; `estimate/fitted.rs` holds its result, and a test keeps
//! that file equal to [`fitted_rs`] of [`fit`] on all cases.

use std::collections::BTreeSet;

use serde_json::Value;

use super::cases::{Case, Load, Measured, CASES};
use super::parse;
use crate::estimate::expected_cost::{Basis, Constants, PrefillParts, TERMS};
use crate::estimate::fitted::FITTED;
use crate::estimate::{self, Chain, Inputs};
use crate::stats::fit::{least_relative_error, Observation};

/// Which published figure a point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    DecodeStep,
    LoneTtft,
    PacedTtft,
}

impl Figure {
    pub fn label(self) -> &'static str {
        match self {
            Figure::DecodeStep => "decode step",
            Figure::LoneTtft => "lone request's TTFT",
            Figure::PacedTtft => "TTFT at paced load",
        }
    }

    pub fn estimator(self) -> &'static str {
        match self {
            Figure::DecodeStep => "decode-floor",
            _ => "mixed-step",
        }
    }
}

/// What a point's prediction is made of, before the constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Terms {
    Decode(Basis),
    /// A prefill step, and for a request arriving into a running server the decode step
    /// it waits behind (see [`ARRIVAL_WAIT`]).
    Prefill(PrefillParts, Option<Basis>),
}

/// A request arriving at a random moment into a server that is decoding waits, on
/// average, half of the step in flight before its prefill can be scheduled.
pub const ARRIVAL_WAIT: f64 = 0.5;

/// One published figure with everything needed to predict it under any constants.
#[derive(Debug, Clone)]
pub struct Point {
    pub case: &'static Case,
    pub figure: Figure,
    pub measured: &'static Measured,
    pub terms: Terms,
    /// The estimator's chain with the fitted constants, as a user would see it.
    pub chain: Chain,
    pub inputs: Inputs,
    /// "MoE fp8 TP 8": architecture × weight precision × TP.
    pub category: String,
}

impl Point {
    pub fn predict(&self, c: &Constants) -> f64 {
        match self.terms {
            Terms::Decode(b) => b.expected(c),
            Terms::Prefill(p, wait) => {
                p.expected(c) + c.request_ms + wait.map_or(0.0, |b| ARRIVAL_WAIT * b.expected(c))
            }
        }
    }

    pub fn scored(&self) -> bool {
        self.measured.unscored.is_none()
    }

    pub fn source(&self) -> &'static str {
        self.case.source.key
    }
}

/// Dense or MoE, the weight precision and TP, from the chain's recorded inputs.
fn category(chain: &Chain) -> String {
    let text = |k: &str| chain.inputs.get(k).and_then(Value::as_str).unwrap_or("");
    let moe = chain.inputs.contains_key("active_params");
    let precision = text("weight_dtype")
        .split_whitespace()
        .next()
        .unwrap_or("bf16")
        .to_string();
    let tp = chain.inputs.get("tp").and_then(Value::as_u64).unwrap_or(1);
    format!("{} {precision} TP {tp}", if moe { "MoE" } else { "dense" })
}

fn decode_point(c: &'static Case, m: &'static Measured) -> Point {
    let mut i = parse(c.inputs);
    i.insert("batch".into(), format!("{}", c.running().round().max(1.0)));
    i.insert("context".into(), format!("{}", c.context().round()));
    if m.includes_prefills {
        i.insert(
            "prompt_tokens".into(),
            format!("{}", c.prompt_tokens.round()),
        );
        i.insert(
            "output_tokens".into(),
            format!("{}", c.output_tokens.round()),
        );
    }
    i.insert("measured_itl_ms".into(), format!("{:.3}", m.ms));
    let (chain, basis) = estimate::decode_terms(&i, &FITTED)
        .unwrap_or_else(|e| panic!("{}: decode-floor on {i:?}: {e}", c.id));
    Point {
        case: c,
        figure: Figure::DecodeStep,
        measured: m,
        terms: Terms::Decode(basis),
        category: category(&chain),
        chain,
        inputs: i,
    }
}

fn ttft_point(c: &'static Case, m: &'static Measured) -> Option<Point> {
    let figure = match c.load {
        Load::Closed { concurrency: 1 } => Figure::LoneTtft,
        Load::Paced { .. } => Figure::PacedTtft,
        _ => return None,
    };
    let mut i = parse(c.inputs);
    // The new prompt's prefill shares its step with the others' decodes.
    let decodes = match figure {
        Figure::LoneTtft => 0.0,
        _ => (c.running().round() - 1.0).max(0.0),
    };
    i.insert("batch".into(), format!("{decodes}"));
    i.insert("context".into(), format!("{}", c.context().round()));
    i.insert(
        "chunk_tokens".into(),
        format!("{}", c.prompt_tokens.round()),
    );
    i.insert("measured_ms".into(), format!("{:.3}", m.ms));
    let (chain, parts) = estimate::prefill_terms(&i, &FITTED)
        .unwrap_or_else(|e| panic!("{}: mixed-step on {i:?}: {e}", c.id));
    // Arriving into a decoding server, the request first waits for the step in flight.
    let wait = (decodes > 0.0).then(|| {
        let mut d = parse(c.inputs);
        d.insert("batch".into(), format!("{decodes}"));
        d.insert("context".into(), format!("{}", c.context().round()));
        estimate::decode_terms(&d, &FITTED)
            .unwrap_or_else(|e| panic!("{}: decode-floor on {d:?}: {e}", c.id))
            .1
    });
    Some(Point {
        case: c,
        figure,
        measured: m,
        terms: Terms::Prefill(parts, wait),
        category: category(&chain),
        chain,
        inputs: i,
    })
}

/// Every published decode step and TTFT, in table order (scored or not).
pub fn points() -> Vec<Point> {
    let mut out = Vec::new();
    for c in CASES {
        if let Some(m) = &c.decode {
            out.push(decode_point(c, m));
        }
        if let Some(p) = c.ttft.as_ref().and_then(|m| ttft_point(c, m)) {
            out.push(p);
        }
    }
    out
}

fn sources<'a>(points: impl Iterator<Item = &'a Point>) -> usize {
    points.map(Point::source).collect::<BTreeSet<_>>().len()
}

/// Physical bounds: no kernel beats the datasheet bandwidth or peak (factors ≥ 1), no
/// time is negative.
const LOWER: [f64; 7] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0];

/// The prefill factor is not fitted: prefill work riding in decode steps is costed at
/// the house MFU ([`crate::estimate::defaults::MFU`], 0.5), like mixed-step's prefill.
/// (Fitted freely it trades off against the KV bandwidth factor: the published loads
/// that carry much prefill also read much KV.)
const PREFILL: usize = 5;
const PREFILL_FACTOR: f64 = 1.0 / crate::estimate::defaults::MFU.value;

/// The constants fitted on the scored points given (see the module notes).
pub fn fit(points: &[&Point]) -> Constants {
    let decode: Vec<&&Point> = points
        .iter()
        .filter(|p| p.scored() && p.figure == Figure::DecodeStep)
        .collect();
    let obs: Vec<Observation> = decode
        .iter()
        .filter_map(|p| match p.terms {
            Terms::Decode(b) => {
                // prefill riding in decode steps is computed at the house MFU, as
                // mixed-step computes a prefill: not a fitted constant
                let mut x = b.values.to_vec();
                let riding = x[PREFILL] * PREFILL_FACTOR;
                x[PREFILL] = 0.0;
                Some(Observation {
                    x,
                    offset: b.link_ms + riding,
                    y: p.measured.ms,
                })
            }
            Terms::Prefill(..) => None,
        })
        .collect();
    let mut coefficients = least_relative_error(&obs, &LOWER);
    coefficients[PREFILL] = PREFILL_FACTOR;
    let base = FITTED.with_coefficients(&coefficients);
    let lone: Vec<&&Point> = points
        .iter()
        .filter(|p| p.scored() && p.figure != Figure::DecodeStep)
        .collect();
    let (prefill_compute_factor, request_ms) = fit_ttft(&lone, &base);
    Constants {
        prefill_compute_factor,
        request_ms,
        decode_cases: decode.len(),
        decode_sources: sources(decode.iter().map(|p| **p)),
        ttft_cases: lone.len(),
        ttft_sources: sources(lone.iter().map(|p| **p)),
        ..base
    }
}

/// Rounds of the TTFT fit: each settles which cases the compute bounds (rather than the
/// weight read) under the last round's efficiency, then refits.
const TTFT_ROUNDS: usize = 8;
/// Where the TTFT fit starts: the house MFU, 0.5.
const TTFT_START: f64 = 1.0 / crate::estimate::defaults::MFU.value;

/// The prefill efficiency (as 1 / the fraction of the matmul ceiling) and the request path,
/// fitted together on the scored TTFTs by least mean absolute relative error (factor ≥ 1,
/// request path ≥ 0). A lone prefill is max(compute, weight read) + KV + fixed: linear in
/// the two constants once each case's bound is known, so the bounds are settled in rounds.
fn fit_ttft(points: &[&&Point], base: &Constants) -> (f64, f64) {
    let mut c = Constants {
        prefill_compute_factor: TTFT_START,
        request_ms: 0.0,
        ..*base
    };
    if points.is_empty() {
        return (TTFT_START, 0.0);
    }
    for _ in 0..TTFT_ROUNDS {
        let obs: Vec<Observation> = points
            .iter()
            .filter_map(|p| match p.terms {
                Terms::Prefill(parts, wait) => {
                    let rest = parts.kv_ms * c.kv_bandwidth_factor
                        + parts.fixed.expected(&c)
                        + wait.map_or(0.0, |b| ARRIVAL_WAIT * b.expected(&c));
                    Some(if parts.compute_bound(&c) {
                        Observation {
                            x: vec![parts.compute_at_ceiling_ms(), 1.0],
                            offset: rest,
                            y: p.measured.ms,
                        }
                    } else {
                        Observation {
                            x: vec![0.0, 1.0],
                            offset: rest + parts.weights(&c),
                            y: p.measured.ms,
                        }
                    })
                }
                Terms::Decode(_) => None,
            })
            .collect();
        let theta = least_relative_error(&obs, &[1.0, 0.0]);
        c.prefill_compute_factor = theta[0];
        c.request_ms = theta[1];
    }
    (c.prefill_compute_factor, c.request_ms)
}

/// Each point's prediction by constants fitted without its source (`None` for the
/// unscored ones), in the order given.
pub fn leave_one_source_out(points: &[Point]) -> Vec<Option<f64>> {
    let keys: BTreeSet<&str> = points.iter().map(Point::source).collect();
    let mut out = vec![None; points.len()];
    for key in keys {
        let rest: Vec<&Point> = points.iter().filter(|p| p.source() != key).collect();
        let c = fit(&rest);
        for (i, p) in points.iter().enumerate() {
            if p.source() == key && p.scored() {
                out[i] = Some(p.predict(&c));
            }
        }
    }
    out
}

/// Four significant digits: what the generated file keeps.
fn sig(v: f64) -> String {
    if v == 0.0 {
        return "0.0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).max(1) as usize;
    format!("{v:.digits$}")
}

/// The text of `estimate/fitted.rs` for these constants.
pub fn fitted_rs(c: &Constants) -> String {
    let mut s = String::from(
        "//! The expected-cost constants fitted on published measurements. Generated by the test\n\
         //! `accuracy::fit::tests::fitted_constants_are_the_fit_of_the_cases` (rerun it with\n\
         //! `PERFJOURNAL_WRITE_DOCS=1` after changing a case or a term); do not edit by hand.\n\n\
         use super::expected_cost::Constants;\n\n\
         pub const FITTED: Constants = Constants {\n",
    );
    for (name, v) in [
        "bandwidth_factor",
        "layer_ms",
        "moe_layer_ms",
        "collective_ms",
        "step_ms",
        "prefill_factor",
        "kv_bandwidth_factor",
    ]
    .iter()
    .zip(c.coefficients())
    {
        s.push_str(&format!("    {name}: {},\n", sig(v)));
    }
    s.push_str(&format!(
        "    prefill_compute_factor: {},\n",
        sig(c.prefill_compute_factor)
    ));
    s.push_str(&format!("    request_ms: {},\n", sig(c.request_ms)));
    s.push_str(&format!(
        "    decode_cases: {},\n    decode_sources: {},\n    ttft_cases: {},\n    ttft_sources: {},\n}};\n",
        c.decode_cases, c.decode_sources, c.ttft_cases, c.ttft_sources
    ));
    s
}

/// The constants as a table for the note: name, value, meaning.
pub fn constants_table(c: &Constants) -> Vec<(String, String)> {
    let ms = |v: f64| format!("{} µs", sig(v * 1e3));
    let v = c.coefficients();
    vec![
        (
            TERMS[0].into(),
            format!(
                "{} (weight reads reach {:.0} % of HBM bandwidth)",
                sig(v[0]),
                100.0 / v[0]
            ),
        ),
        (TERMS[1].into(), ms(v[1])),
        (TERMS[2].into(), ms(v[2])),
        (TERMS[3].into(), format!("{} × (p − 1)/p", ms(v[3]))),
        (TERMS[4].into(), ms(v[4])),
        (
            TERMS[5].into(),
            format!(
                "{} (prefill riding in decode steps reaches {:.0} % of peak)",
                sig(v[5]),
                100.0 / v[5]
            ),
        ),
        (
            TERMS[6].into(),
            format!(
                "{} (attention reaches {:.0} % of HBM bandwidth)",
                sig(v[6]),
                100.0 / v[6]
            ),
        ),
        (
            "prefill efficiency (TTFT)".into(),
            format!(
                "{} (a prefill step's GEMMs and attention reach {:.0} % of the GPU's matmul \
                 ceiling)",
                sig(c.prefill_compute_factor),
                100.0 / c.prefill_compute_factor
            ),
        ),
        (
            "request path (TTFT)".into(),
            format!("{} ms", sig(c.request_ms)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_constants_are_the_fit_of_the_cases() {
        let points = points();
        let all: Vec<&Point> = points.iter().collect();
        let want = fitted_rs(&fit(&all));
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/estimate/fitted.rs");
        if std::env::var_os("PERFJOURNAL_WRITE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "estimate/fitted.rs is stale: rerun this test with PERFJOURNAL_WRITE_DOCS=1\n{want}"
        );
    }

    #[test]
    fn sig_keeps_four_digits() {
        assert_eq!(sig(1.0976), "1.098");
        assert_eq!(sig(0.04691), "0.04691");
        assert_eq!(sig(21.5), "21.50");
        assert_eq!(sig(0.0), "0.0");
    }
}
