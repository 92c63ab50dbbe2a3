//! How the estimators fare against measurements other people published, each with its
//! setup named (engine and version, model and precision, GPU, parallelism, request
//! lengths and load). The same table drives `docs/accuracy.md` (a test keeps the file
//! equal to [`markdown`]), the accuracy page and the error shown beside each estimator.
//!
//! Every case runs the estimators exactly as a user would, through the estimators' own
//! code, with the catalog defaults; nothing is tuned per case. The expected-cost
//! constants are fitted on these cases ([`fit`]), and every error reported is the
//! leave-one-source-out error: each figure predicted by constants fitted without its
//! own source. Where a setup needs a figure the source does not print (running
//! sequences, mean lengths), it is derived from what the source does print, and the
//! derivation is stated in [`Case::derivation`].

pub mod cases;
pub mod fit;

use serde::Serialize;

pub use cases::{Case, Load, Measured, MemoryCase, Source, CASES, MEMORY_CASES};
use fit::{Figure, Point};

use crate::estimate::expected_cost;
use crate::estimate::fitted::FITTED;
use crate::estimate::{self, Chain, Inputs};
use crate::proposal::outcome::{record as error_record, ErrorRecord, Score};

/// One prediction beside what was measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub case: &'static str,
    pub source: &'static str,
    pub setup: &'static str,
    pub estimator: &'static str,
    /// The quantity, as the summary groups it (e.g. "decode step").
    pub figure: &'static str,
    /// Architecture × weight precision × TP, e.g. "MoE fp8 TP 8".
    pub category: String,
    /// What exactly was measured, e.g. "median ITL".
    pub measure: String,
    pub unit: &'static str,
    /// What the estimator says with the fitted constants (the expected step or TTFT).
    pub predicted: f64,
    /// The prediction of constants fitted without this case's source.
    pub held_out: Option<f64>,
    pub measured: f64,
    /// (held-out prediction − measured) / measured × 100; `None` where the row is shown
    /// but not scored (the reason is in `note`).
    pub error_pct: Option<f64>,
    /// The floor and measured / expected with the fitted constants (decode steps).
    pub floor: Option<f64>,
    pub band: Option<&'static str>,
    /// The inputs given to the estimator (a link to it reproduces the row).
    pub query: String,
    pub note: String,
}

impl Row {
    pub fn shown_predicted(&self) -> String {
        format!("{} {}", cell(self.predicted), self.unit)
    }
    pub fn shown_held_out(&self) -> String {
        self.held_out
            .map_or("—".to_string(), |v| format!("{} {}", cell(v), self.unit))
    }
    pub fn shown_measured(&self) -> String {
        format!("{} {}", cell(self.measured), self.unit)
    }
    pub fn shown_error(&self) -> String {
        self.error_pct
            .map_or("not scored".to_string(), |e| format!("{e:+.1} %"))
    }
    pub fn shown_floor(&self) -> String {
        self.floor
            .map_or(String::new(), |v| format!("{} {}", cell(v), self.unit))
    }
}

/// `key=value key=value` as estimator inputs.
fn parse(inputs: &str) -> Inputs {
    inputs
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn query(inputs: &Inputs) -> String {
    inputs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

fn result(chain: &Chain, key: &str) -> f64 {
    chain
        .results
        .get(key)
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN)
}

fn run(name: &str, inputs: &Inputs) -> Chain {
    estimate::run(name, inputs).unwrap_or_else(|e| panic!("{name} on {inputs:?}: {e:?}"))
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn point_row(p: &Point, held_out: Option<f64>) -> Row {
    let predicted = p.predict(&FITTED);
    let measured = p.measured.ms;
    let (floor, band) = match p.figure {
        Figure::DecodeStep => {
            let f = result(&p.chain, "floor_ms");
            (Some(f), Some(expected_cost::band(measured / predicted)))
        }
        _ => (None, None),
    };
    let why = match p.measured.unscored {
        Some(reason) => format!("not scored: {reason}"),
        None => String::new(),
    };
    let what = match (p.figure, floor) {
        (Figure::DecodeStep, Some(f)) => format!(
            "measured / expected = {:.2}: {}; floor / measured = {:.2}; {}",
            measured / predicted,
            band.unwrap_or(""),
            f / measured,
            p.case.derivation()
        ),
        (Figure::LoneTtft, _) => format!(
            "one {:.0}-token prefill alone plus the request path",
            p.case.prompt_tokens
        ),
        _ => format!(
            "the prompt's prefill ({:.0} tokens) riding with the others' decodes, plus the \
             request path; {}",
            p.case.prompt_tokens,
            p.case.derivation()
        ),
    };
    Row {
        case: p.case.id,
        source: p.source(),
        setup: p.case.setup,
        estimator: p.figure.estimator(),
        figure: p.figure.label(),
        category: p.category.clone(),
        measure: p.measured.what.to_string(),
        unit: "ms",
        predicted,
        held_out,
        measured,
        error_pct: held_out.map(|h| (h - measured) / measured * 100.0),
        floor,
        band,
        query: query(&p.inputs),
        note: if why.is_empty() {
            what
        } else {
            format!("{why}; {what}")
        },
    }
}

/// [`rows`], computed once: the table is pure and fixed at build time, and the pages
/// show it on every estimator view.
pub fn table() -> &'static [Row] {
    static TABLE: std::sync::OnceLock<Vec<Row>> = std::sync::OnceLock::new();
    TABLE.get_or_init(rows)
}

/// Every comparison, in table order.
pub fn rows() -> Vec<Row> {
    let points = fit::points();
    let held_out = fit::leave_one_source_out(&points);
    let mut out: Vec<Row> = points
        .iter()
        .zip(held_out)
        .map(|(p, h)| point_row(p, h))
        .collect();
    for m in MEMORY_CASES {
        let i = parse(m.inputs);
        let chain = run("memory-fit", &i);
        let figures = [
            (
                "weight_bytes_per_gpu",
                "model weights per GPU",
                m.weights_gib,
            ),
            (
                "kv_pool_bytes_per_gpu",
                "KV cache per GPU",
                Some(m.kv_cache_gib),
            ),
        ];
        for (key, measure, measured) in figures {
            let Some(measured) = measured else { continue };
            let predicted = result(&chain, key) / GIB;
            let unscored = m.unscored.filter(|_| key == "kv_pool_bytes_per_gpu");
            out.push(Row {
                case: m.id,
                source: m.source.key,
                setup: m.setup,
                estimator: "memory-fit",
                figure: measure,
                category: String::new(),
                measure: measure.to_string(),
                unit: "GiB",
                predicted,
                held_out: None,
                measured,
                error_pct: unscored
                    .is_none()
                    .then_some((predicted - measured) / measured * 100.0),
                floor: None,
                band: None,
                query: query(&i),
                note: match unscored {
                    Some(why) => format!("not scored: {why}"),
                    None => "vLLM's start-up memory profile (\"Model loading took …\", \
                             \"Available KV cache memory: …\"); memory-fit is not fitted on \
                             these, except its sampler bytes per vocabulary entry"
                        .to_string(),
                },
            });
        }
    }
    out
}

/// Per estimator and measure: cases, mean |error|, mean signed error, worst.
pub fn summary(rows: &[Row]) -> Vec<ErrorRecord> {
    let scores: Vec<Score> = rows
        .iter()
        .filter_map(|r| {
            Some(Score {
                figure: r.figure.to_string(),
                label: r.figure.to_string(),
                unit: r.unit.to_string(),
                estimator: r.estimator.to_string(),
                expected: r.predicted,
                observed: r.measured,
                error_pct: r.error_pct?,
            })
        })
        .collect();
    error_record(&scores)
}

/// The summary rows of one estimator.
pub fn summary_for(estimator: &str) -> Vec<ErrorRecord> {
    summary(table())
        .into_iter()
        .filter(|r| r.estimator == estimator)
        .collect()
}

/// Held-out error per figure and category (architecture × precision × TP) of one
/// estimator's rows: the figure is `"decode step, MoE fp8 TP 8"`.
pub fn categories(rows: &[Row], estimator: &str) -> Vec<ErrorRecord> {
    let scores: Vec<Score> = rows
        .iter()
        .filter(|r| r.estimator == estimator && !r.category.is_empty())
        .filter_map(|r| {
            let figure = format!("{}, {}", r.figure, r.category);
            Some(Score {
                label: figure.clone(),
                figure,
                unit: r.unit.to_string(),
                estimator: r.estimator.to_string(),
                expected: r.held_out?,
                observed: r.measured,
                error_pct: r.error_pct?,
            })
        })
        .collect();
    error_record(&scores)
}

/// The summary rows of one estimator followed by its categories.
pub fn record_for(estimator: &str) -> (Vec<ErrorRecord>, Vec<ErrorRecord>) {
    (summary_for(estimator), categories(table(), estimator))
}

/// Published healthy figures the fitted constants band structural (there should be none).
pub fn healthy_banded_structural(rows: &[Row]) -> Vec<&Row> {
    rows.iter()
        .filter(|r| r.error_pct.is_some() && r.band == Some("structural"))
        .collect()
}

/// The sources, each once, in table order.
pub fn sources() -> Vec<&'static Source> {
    let mut seen: Vec<&'static Source> = Vec::new();
    for s in CASES
        .iter()
        .map(|c| c.source)
        .chain(MEMORY_CASES.iter().map(|m| m.source))
    {
        if !seen.iter().any(|x| x.key == s.key) {
            seen.push(s);
        }
    }
    seen
}

pub fn cell(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `docs/accuracy.md`, written from [`rows`].
pub fn markdown() -> String {
    let rows = table().to_vec();
    let points = fit::points();
    let mut s = String::from(
        "# Estimator accuracy against published measurements\n\n\
         Generated from `crates/core/src/accuracy/` by the test `accuracy_doc_matches_the_table` (run \
         it with `PERFJOURNAL_WRITE_DOCS=1` to rewrite this file; after a change to a case or \
         a term, first regenerate `crates/core/src/estimate/fitted.rs` the same way). Each row runs \
         an estimator exactly as the estimator page would, with the catalog defaults, on a \
         setup somebody measured and published with the engine, version, model, precision, \
         GPU, parallelism, lengths and load named.\n\n\
         decode-floor's floor is the physical limit: the bytes a step must move at the \
         datasheet bandwidth. Its expected step is what a well-run server of the setup takes: \
         the floor at the bandwidth kernels reach, plus fixed costs per layer, per MoE layer, \
         per collective and per step, plus the prefills that ride in decode steps at the \
         load (the terms are in [estimators.md](estimators.md)). mixed-step's expected step \
         adds a prefill's weight read (every expert its tokens touch) and its attention, and \
         runs its GEMMs (counted as the kernels run them: no matmul for the embedding \
         lookup, the LM head for the last prompt token only) at a fitted fraction of the \
         GPU's matmul ceiling (the fraction of its dense peak large BF16 matmuls were \
         measured to reach, from the mamf-finder results of Stas Bekman's ml-engineering \
         book; 80.3 %, the H100's, where a GPU has none); a lone request's TTFT adds the \
         request path. memory-fit's KV pool is what vLLM's \
         start-up profile leaves: u × memory − weights − the profiling pass's activation \
         peak (the larger of the forward pass and the sampler run) − non-torch memory; CUDA \
         graphs come after the KV cache through vLLM 0.11.\n\n\
         **Every error below is leave-one-source-out**: each figure is predicted by constants \
         fitted without any case of its own source, so a source cannot flatter itself. \
         Error = (held-out prediction − measured) / measured. The *expected* column is what \
         the estimator shows (constants fitted on every scored case).\n\n",
    );
    let decode = points
        .iter()
        .filter(|p| p.scored() && p.figure == Figure::DecodeStep)
        .count();
    let srcs: std::collections::BTreeSet<&str> = points.iter().map(|p| p.source()).collect();
    s.push_str(&format!(
        "{} published cases from {} sources ({} scored decode steps; {} figures shown but \
         not scored, each with its reason).\n\n",
        CASES.len(),
        srcs.len(),
        decode,
        points.iter().filter(|p| !p.scored()).count()
    ));
    s.push_str("## Summary\n\n| estimator | compared with | cases | mean abs error | mean error | worst |\n|---|---|---:|---:|---:|---:|\n");
    for r in summary(&rows) {
        s.push_str(&format!(
            "| {} | {} | {} | {:.1} % | {:+.1} % | {:+.1} % |\n",
            r.estimator, r.figure, r.n, r.mean_abs_error_pct, r.mean_error_pct, r.worst_error_pct
        ));
    }
    s.push_str("\nTargets: the expected decode step within 25 % mean absolute error on cases it was not fitted on, a lone request's TTFT within 30 %.\n");
    let structural = healthy_banded_structural(&rows);
    s.push_str(&format!(
        "\nBands (measured / expected): {}. Healthy published decode steps banded \
         structural: {}. Read as overhead: {} of {}.\n",
        expected_cost::thresholds(),
        if structural.is_empty() {
            "none".to_string()
        } else {
            structural
                .iter()
                .map(|r| r.case)
                .collect::<Vec<_>>()
                .join(", ")
        },
        rows.iter()
            .filter(|r| r.error_pct.is_some() && r.band == Some("overhead"))
            .count(),
        decode
    ));
    s.push_str("\n## By category (leave-one-source-out)\n\n| estimator | figure, category | cases | mean abs error | mean error | worst |\n|---|---|---:|---:|---:|---:|\n");
    for est in ["decode-floor", "mixed-step"] {
        for r in categories(&rows, est) {
            s.push_str(&format!(
                "| {} | {} | {} | {:.1} % | {:+.1} % | {:+.1} % |\n",
                r.estimator,
                r.figure,
                r.n,
                r.mean_abs_error_pct,
                r.mean_error_pct,
                r.worst_error_pct
            ));
        }
    }
    s.push_str("\n## The fitted constants\n\n| term | value |\n|---|---|\n");
    for (name, value) in fit::constants_table(&FITTED) {
        s.push_str(&format!("| {name} | {value} |\n"));
    }
    s.push_str(&format!(
        "\nFitted on {} decode steps from {} sources (least mean absolute relative error; \
         bandwidth factors ≥ 1 and times ≥ 0; the prefill factor held at the house MFU, 0.5, \
         since freely fitted it trades off against the KV factor) and {} TTFTs from {} \
         sources (the prefill efficiency and the request path together, by least mean \
         absolute relative error; a prefill step is the larger of its compute, counted as \
         the kernels run it, and its weight read; a TTFT at paced load also waits, on \
         average, half of the decode step in flight when the request arrives). The KV \
         factor sits at its bound: the published loads cannot tell KV reads from the \
         prefills that ride along. \
         Collectives are assumed to reach {:.0} % of the link's per-direction bandwidth.\n",
        FITTED.decode_cases,
        FITTED.decode_sources,
        FITTED.ttft_cases,
        FITTED.ttft_sources,
        expected_cost::LINK_EFFICIENCY * 100.0
    ));
    s.push_str(
        "\n## Every comparison\n\n\
         | case | estimator | compared with | category | floor | expected | held out | measured | error | note |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    for r in &rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.case,
            r.estimator,
            r.measure,
            r.category,
            r.shown_floor(),
            r.shown_predicted(),
            r.shown_held_out(),
            r.shown_measured(),
            r.shown_error(),
            r.note
        ));
    }
    s.push_str("\n## Setups and sources\n\n");
    for src in sources() {
        s.push_str(&format!(
            "- **{}** — {}: `{}`\n",
            src.key, src.title, src.location
        ));
        let mut setups: Vec<&str> = CASES
            .iter()
            .filter(|c| c.source.key == src.key)
            .map(|c| c.setup)
            .chain(
                MEMORY_CASES
                    .iter()
                    .filter(|m| m.source.key == src.key)
                    .map(|m| m.setup),
            )
            .collect();
        setups.dedup();
        for setup in setups {
            s.push_str(&format!("  - {setup}\n"));
        }
    }
    s.push_str(
        "\nThe llm-k8s TP 4 × PP 2 rows use the TP 4 floor: pipeline stages run one after \
         the other for a token, so each step reads a quarter of the weights' bytes per GPU \
         in turn, the same time as TP 4. One of these runs (TP 8, 4 req/s) is in the real \
         fixtures, and a test checks its figures against this table.\n\n\
         Left out: published runs whose model architecture the catalog does not hold and \
         whose config.json was not at hand (GLM-5.1 and GLM-4.6, Mistral Medium 3.5 and \
         Ministral 3 on MI300X): the expected step needs the layers, heads and experts, \
         and a guessed architecture would make the error meaningless.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_runs_and_floors_stay_below_the_measured_step() {
        let rows = table().to_vec();
        assert!(rows.len() >= CASES.len());
        for r in &rows {
            assert!(r.predicted.is_finite() && r.predicted > 0.0, "{r:?}");
            if let Some(floor) = r.floor {
                assert!(
                    floor < r.measured,
                    "a floor above a measured step means a wrong input: {r:?}"
                );
                assert!(
                    floor < r.predicted,
                    "the expected step is above the floor: {r:?}"
                );
            }
        }
    }

    /// The contract: at least 40 published cases with their sources, and the
    /// held-out error on the estimator pages.
    #[test]
    fn forty_published_cases_with_sources_and_held_out_errors() {
        let scored: Vec<&Case> = CASES
            .iter()
            .filter(|c| c.decode.is_some_and(|d| d.unscored.is_none()))
            .collect();
        assert!(scored.len() >= 40, "{} scored cases", scored.len());
        assert!(sources().len() >= 10);
        for c in CASES {
            assert!(
                !c.source.location.is_empty() && !c.setup.is_empty(),
                "{}",
                c.id
            );
        }
        let (summary, categories) = record_for("decode-floor");
        assert_eq!(summary.len(), 1);
        assert!(categories.len() >= 6, "{categories:?}");
        assert!(categories.iter().any(|r| r.figure.contains("MoE fp8 TP 8")));
        assert!(categories
            .iter()
            .any(|r| r.figure.contains("dense bf16 TP 1")));
    }

    #[test]
    fn no_healthy_published_case_is_banded_structural() {
        let rows = table().to_vec();
        let structural = healthy_banded_structural(&rows);
        assert!(structural.is_empty(), "{structural:?}");
        // the doubtful outlier, 1.8× its neighbour, is told apart from healthy
        let outlier = rows
            .iter()
            .find(|r| r.case == "inferencex r1 h200 1k/1k c4" && r.estimator == "decode-floor")
            .unwrap();
        assert_ne!(outlier.band, Some("healthy"), "{outlier:?}");
        assert!(outlier.error_pct.is_none());
    }

    /// A healthy setup that regresses to 1.6× its measured step leaves the healthy band.
    #[test]
    fn a_regression_to_one_point_six_times_is_told_apart() {
        let rows = table().to_vec();
        let healthy: Vec<&Row> = rows
            .iter()
            .filter(|r| r.estimator == "decode-floor" && r.band == Some("healthy"))
            .collect();
        let told_apart = healthy
            .iter()
            .filter(|r| expected_cost::band(1.6 * r.measured / r.predicted) != "healthy")
            .count();
        // with the published calibration alone, for most setups; the team's own history
        // (method::fleet) sharpens the rest
        assert!(
            told_apart * 10 >= healthy.len() * 8,
            "{told_apart} of {}",
            healthy.len()
        );
    }

    #[test]
    fn the_seventy_b_floor_on_a100s_is_what_the_bytes_say() {
        let r = table()
            .iter()
            .find(|r| r.case == "llm-k8s tp8 qps 1" && r.estimator == "decode-floor")
            .unwrap();
        // 70.6 B params × 2 B / 8 GPUs = 17.6 GB per GPU at 1,555 GB/s = 11.3 ms, plus a
        // little KV: the floor lands at 11–12 ms against 24.3 ms measured.
        let floor = r.floor.unwrap();
        assert!(floor > 11.0 && floor < 12.5, "{r:?}");
        assert!(r.note.contains("floor / measured"), "{r:?}");
    }

    #[test]
    fn burst_ttft_is_shown_but_not_scored() {
        let rows = table().to_vec();
        let burst = rows
            .iter()
            .find(|r| r.case == "llm-k8s tp8 all at once" && r.estimator == "decode-floor")
            .unwrap();
        assert!(burst.error_pct.is_none());
        assert!(burst.note.starts_with("not scored"));
        let n: usize = summary(&rows)
            .iter()
            .filter(|r| r.estimator == "mixed-step")
            .map(|r| r.n)
            .sum();
        let scored = rows
            .iter()
            .filter(|r| r.estimator == "mixed-step" && r.error_pct.is_some())
            .count();
        assert_eq!(n, scored);
    }

    /// memory-fit's reservation follows vLLM's start-up profile: the KV cache it leaves is
    /// within 15 % of what vLLM 0.11 allocated on every text model the logs profile, and
    /// the Qwen3-235B FP8 pool the old reservation overstated by half is within 25 %.
    #[test]
    fn the_kv_pool_matches_vllms_start_up_logs() {
        let rows = table();
        let kv: Vec<&Row> = rows
            .iter()
            .filter(|r| r.measure == "KV cache per GPU" && r.error_pct.is_some())
            .collect();
        assert!(kv.len() >= 8);
        for r in kv
            .iter()
            .filter(|r| r.source == "llmd-planner-empirical-mem")
        {
            assert!(r.error_pct.unwrap().abs() < 15.0, "{r:?}");
        }
        let qwen = kv.iter().find(|r| r.case.contains("21348")).unwrap();
        assert!(qwen.error_pct.unwrap().abs() < 25.0, "{qwen:?}");
    }

    #[test]
    fn weights_per_gpu_match_vllms_own_profile() {
        let r = table()
            .iter()
            .find(|r| r.measure == "model weights per GPU")
            .unwrap();
        assert!(r.error_pct.unwrap().abs() < 2.0, "{r:?}");
    }

    #[test]
    fn the_fixture_run_is_the_tables_row() {
        use crate::analyze::test_support::{open, real_fixtures};
        let Some(root) = real_fixtures() else { return };
        let f = open(
            &root,
            "vllm_bench/llmk8s__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_04.json",
        );
        let a = crate::analyze::vllm_bench::analyze(f).unwrap();
        let reported = |k: &str| a.result.reported[k].as_f64().unwrap();
        let case = CASES.iter().find(|c| c.id == "llm-k8s tp8 qps 4").unwrap();
        let close = |got: f64, want: f64| (got - want).abs() <= 1e-4 * want.abs();
        assert!(close(case.decode.unwrap().ms, reported("median_itl_ms")));
        assert!(close(case.ttft.unwrap().ms, reported("median_ttft_ms")));
        let Load::Paced {
            completed_per_s,
            mean_ttft_ms,
            mean_tpot_ms,
            ..
        } = case.load
        else {
            panic!("paced")
        };
        assert!(close(completed_per_s, reported("request_throughput")));
        assert!(close(mean_ttft_ms, reported("mean_ttft_ms")));
        assert!(close(mean_tpot_ms, reported("mean_tpot_ms")));
        let prompts = reported("total_input_tokens") / reported("completed");
        let outputs = reported("total_output_tokens") / reported("completed");
        assert!((case.prompt_tokens - prompts).abs() < 0.5, "{prompts}");
        assert!((case.output_tokens - outputs).abs() < 0.5, "{outputs}");
    }

    #[test]
    fn accuracy_doc_matches_the_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/accuracy.md");
        let want = markdown();
        if std::env::var_os("PERFJOURNAL_WRITE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/accuracy.md is stale: rerun this test with PERFJOURNAL_WRITE_DOCS=1"
        );
    }
}
