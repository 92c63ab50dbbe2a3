//! The worked result of an estimate, and a small builder the estimators share.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fmt;
use crate::fmt::ByteStyle;
use crate::quantity::Unit;

/// One derived step: `label  formula = value unit`, where `formula` has the numbers
/// substituted (e.g. `(16.06 GB + 34.36 GB) / 3.35 TB/s`) and `value` is in `unit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub key: String,
    pub label: String,
    pub formula: String,
    pub value: Value,
    pub unit: String,
}

/// A worked estimate. JSON shape: `{estimator, inputs, results, lines, sanity, units}`.
///
/// `inputs` are the values actually used (given, defaulted or taken from a catalog). It
/// is a record for people, not a re-submittable input set: it also holds derived values
/// (`active_params`, `kv_lora_rank`, …) and notes such as `h100-sxm (default)`.
///
/// `results` is flat and each value is in the unit its key names (`*_bytes*` integers
/// where exact, `*_ms` floats, ratios plain, booleans and band strings as such).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chain {
    pub estimator: String,
    pub inputs: BTreeMap<String, Value>,
    pub results: BTreeMap<String, Value>,
    pub lines: Vec<Line>,
    pub sanity: String,
    /// The unit (and so the dimension) of every numeric result, by key.
    pub units: BTreeMap<String, Unit>,
}

/// Formulas longer than this are not padded, so one long line does not push
/// every `=` far to the right.
const MAX_PAD: usize = 56;

fn show(v: &Value) -> String {
    match v {
        Value::Number(n) => n.as_f64().map(fmt::num).unwrap_or_else(|| n.to_string()),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn show_input(v: &Value) -> String {
    match v {
        Value::Number(n) => n.as_f64().map(fmt::input).unwrap_or_else(|| n.to_string()),
        other => show(other),
    }
}

impl Line {
    /// The value as people read it: about four significant digits, with its unit.
    pub fn display_value(&self) -> String {
        let value = show(&self.value);
        if self.unit.is_empty() {
            value
        } else {
            format!("{value} {}", self.unit)
        }
    }
}

/// A JSON result or input value as people read it (thousands separators, about four
/// significant digits; strings and booleans as they are).
pub fn display(v: &Value) -> String {
    show_input(v)
}

impl Chain {
    /// Aligned plain text, like a worked example on paper: the inputs, each line as
    /// `label  formula = value unit`, then the sanity sentence. Inputs are written as
    /// the CLI reads them back (`3.35e12`).
    pub fn to_text(&self) -> String {
        self.text_with(|_, v| show_input(v))
    }

    /// [`Chain::to_text`] for a page: inputs in the one format of their unit
    /// (`3.35 TB/s`, `85.02 GB`), as [`Chain::shown_inputs`] writes them.
    pub fn to_page_text(&self) -> String {
        self.text_with(|k, v| show_in_unit(v, input_unit(&self.estimator, k)))
    }

    fn text_with(&self, input: impl Fn(&str, &Value) -> String) -> String {
        let mut out = String::new();
        match super::find(&self.estimator) {
            Some(info) => out.push_str(&format!("{}: {}\n", info.name, info.title)),
            None => out.push_str(&format!("{}\n", self.estimator)),
        }

        out.push_str("\nInputs\n");
        let key_w = self
            .inputs
            .keys()
            .map(|k| k.chars().count())
            .max()
            .unwrap_or(0);
        for (k, v) in &self.inputs {
            out.push_str(&format!("  {k:<key_w$}  {}\n", input(k, v)));
        }

        out.push_str("\nWorking\n");
        let label_w = self
            .lines
            .iter()
            .map(|l| l.label.chars().count())
            .max()
            .unwrap_or(0);
        let formula_w = self
            .lines
            .iter()
            .map(|l| l.formula.chars().count())
            .filter(|&w| w <= MAX_PAD)
            .max()
            .unwrap_or(0);
        for l in &self.lines {
            let value = show(&l.value);
            let unit = if l.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", l.unit)
            };
            let line = format!(
                "  {:<label_w$}  {:<formula_w$} = {value}{unit}",
                l.label, l.formula
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }

        out.push_str("\nSanity\n  ");
        out.push_str(&self.sanity);
        out.push('\n');
        out
    }
}

/// The unit a result key names (see [`Chain`]: every result is in the unit its key
/// names): `*_ms` times, `*bytes*` bytes, `*tokens_per_s*` token rates,
/// `usd_per_million_*` dollars, `*_percent` percent, `*flops*` operations, `*tokens*`
/// tokens, page/request/step counts, and shares, ratios and speedups plain.
/// `None` for a key no rule covers (a test keeps every estimator's keys covered).
/// A result or input as the pages show it: a human label, the key small beside it for
/// API users, the value in the one format its unit has, and the exact JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub key: String,
    pub label: String,
    pub value: String,
    pub exact: String,
}

/// One format per unit, the same the worked lines use: bytes with SI prefixes
/// (`76.52 GB`, `131,072 B`), rates and FLOP scaled, times in ms, counts with thousands
/// separators and their noun; yes/no for flags. Never `76.518e9`.
pub fn show_in_unit(v: &Value, unit: &str) -> String {
    let x = match v {
        Value::Bool(b) => return if *b { "yes" } else { "no" }.into(),
        Value::Number(n) => match n.as_f64() {
            Some(x) => x,
            None => return n.to_string(),
        },
        other => return show(other),
    };
    match unit {
        "B" => crate::fmt::bytes(x, ByteStyle::Figure),
        "B/s" => fmt::rate(x),
        "FLOP" => fmt::flop(x),
        "FLOP/s" => fmt::flops(x),
        "ms" => fmt::ms(x),
        "" | "ratio" => fmt::num(x),
        "USD" => format!("${}", fmt::num(x)),
        "%" => format!("{}%", fmt::num(x)),
        u => format!("{} {u}", fmt::num(x)),
    }
}

/// `kv_bytes_per_token_per_gpu` → "KV bytes per token per GPU", for keys no worked line
/// names.
pub fn humanize_key(key: &str) -> String {
    let words: Vec<String> = key
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| match w {
            "kv" | "gpu" | "tp" | "mfu" | "hbm" | "usd" | "ttft" | "itl" | "tpot" | "nccl" => {
                w.to_uppercase()
            }
            "ms" => "(ms)".into(),
            "s" => "(s)".into(),
            "p50" | "p90" | "p95" | "p99" => w.into(),
            _ => w.into(),
        })
        .collect();
    let text = words.join(" ");
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => text,
    }
}

/// The unit an input is shown in: its field's unit, else what its name says.
fn input_unit(estimator: &str, key: &str) -> &'static str {
    let field = super::find(estimator)
        .and_then(|info| info.fields.iter().find(|f| f.name == key))
        .map(|f| f.unit)
        .filter(|u| !u.is_empty());
    if let Some(u) = field {
        return u;
    }
    if key.contains("bandwidth") {
        "B/s"
    } else if key.contains("flops") {
        "FLOP/s"
    } else if key.contains("bytes") {
        "B"
    } else if key.ends_with("_ms") {
        "ms"
    } else if key.ends_with("_s") {
        "s"
    } else {
        ""
    }
}

/// The JSON value as text, strings without their quotes.
fn exact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Chain {
    /// The results as the page lists them, labelled by the worked line of the same key.
    pub fn shown_results(&self) -> Vec<Shown> {
        self.results
            .iter()
            .map(|(k, v)| {
                let line = self.lines.iter().find(|l| &l.key == k);
                let unit = match self.units.get(k) {
                    Some(Unit::Bytes) => "B",
                    Some(Unit::Ms) => "ms",
                    Some(Unit::Flop) => "FLOP",
                    Some(Unit::Percent) => "%",
                    Some(Unit::Usd) => "USD",
                    Some(Unit::Tokens) => "tokens",
                    Some(Unit::TokPerS) => "tok/s",
                    // Counts and ratios keep the noun or sign their line uses.
                    _ => line.map(|l| l.unit.as_str()).unwrap_or(""),
                };
                Shown {
                    key: k.clone(),
                    label: line
                        .map(|l| l.label.clone())
                        .unwrap_or_else(|| humanize_key(k)),
                    value: show_in_unit(v, unit),
                    exact: exact(v),
                }
            })
            .collect()
    }

    /// The inputs used, labelled by their form field where the estimator has one.
    pub fn shown_inputs(&self) -> Vec<Shown> {
        let info = super::find(&self.estimator);
        self.inputs
            .iter()
            .map(|(k, v)| {
                let label = info
                    .and_then(|i| i.fields.iter().find(|f| f.name == k))
                    .map(|f| f.label.to_string())
                    .unwrap_or_else(|| humanize_key(k));
                Shown {
                    key: k.clone(),
                    label,
                    value: show_in_unit(v, input_unit(&self.estimator, k)),
                    exact: exact(v),
                }
            })
            .collect()
    }
}

pub fn result_unit(key: &str) -> Option<Unit> {
    let has = |p: &str| key.contains(p);
    Some(if key.ends_with("_ms") || has("_ms_") {
        Unit::Ms
    } else if has("bytes") {
        Unit::Bytes
    } else if has("tokens_per_s") {
        Unit::TokPerS
    } else if key.starts_with("usd_per_million") {
        Unit::Usd
    } else if key.ends_with("_percent") {
        Unit::Percent
    } else if has("flops") {
        Unit::Flop
    } else if has("tokens") || key.starts_with("computed_") {
        Unit::Tokens
    } else if has("pages") || has("requests") || has("steps_per") || has("chunks_per") {
        Unit::Count
    } else if has("share")
        || has("ratio")
        || has("_over_")
        || has("speedup")
        || has("ceiling")
        || key == "r"
    {
        Unit::Ratio
    } else {
        return None;
    })
}

/// Collects lines and results while an estimator works.
#[derive(Debug, Default)]
pub(crate) struct Work {
    lines: Vec<Line>,
    results: BTreeMap<String, Value>,
}

impl Work {
    pub fn new() -> Self {
        Self::default()
    }

    /// A display line; `value` is already in `unit`.
    pub fn line(&mut self, key: &str, label: &str, formula: String, value: Value, unit: &str) {
        self.lines.push(Line {
            key: key.to_string(),
            label: label.to_string(),
            formula,
            value,
            unit: unit.to_string(),
        });
    }

    /// A line showing a byte count in GB/MB/B, whichever reads best.
    pub fn bytes_line(&mut self, key: &str, label: &str, formula: String, bytes: f64) {
        let (v, unit) = crate::fmt::bytes_scaled(bytes);
        let value = if unit == "B" {
            fmt::whole(v)
        } else {
            fmt::float(v)
        };
        self.line(key, label, formula, value, unit);
    }

    pub fn ms_line(&mut self, key: &str, label: &str, formula: String, ms: f64) {
        self.line(key, label, formula, fmt::float(ms), "ms");
    }

    pub fn result(&mut self, key: &str, value: Value) {
        self.results.insert(key.to_string(), value);
    }

    pub fn finish(self, estimator: &str, inputs: BTreeMap<String, Value>, sanity: String) -> Chain {
        let units = self
            .results
            .iter()
            .filter(|(_, v)| v.is_number())
            .filter_map(|(k, _)| result_unit(k).map(|u| (k.clone(), u)))
            .collect();
        Chain {
            units,
            estimator: estimator.to_string(),
            inputs,
            results: self.results,
            lines: self.lines,
            sanity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::ok;
    use super::*;
    use serde_json::json;

    #[test]
    fn text_reads_like_a_worked_example() {
        let chain = ok(
            "decode-floor",
            "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096 measured_itl_ms=24",
        );
        let text = chain.to_text();
        assert!(text.starts_with("decode-floor: "), "{text}");
        assert!(text.contains("(16.06 GB + 34.36 GB) / 3.35 TB/s"), "{text}");
        assert!(text.contains("= 15.05 ms"), "{text}");
        assert!(text.contains("bandwidth"), "{text}");
        assert!(text.contains("3.35e12"), "{text}");
        assert!(text.trim_end().ends_with(chain.sanity.as_str()));
        // the '=' of short formulas line up
        let cols: Vec<_> = text
            .lines()
            .filter(|l| l.contains(" = ") && l.chars().count() < 100)
            .map(|l| l.split(" = ").next().unwrap().chars().count())
            .collect();
        assert!(cols.windows(2).all(|w| w[0] == w[1]), "{text}");
    }

    #[test]
    fn work_collects_lines_and_results() {
        let mut w = Work::new();
        w.bytes_line("kv", "KV", "2 × 3".into(), 131072.0);
        w.bytes_line("w", "W", "x".into(), 16.06e9);
        w.result("r", json!(1));
        let chain = w.finish("x", BTreeMap::new(), "s".into());
        assert_eq!(chain.lines[0].value, json!(131072));
        assert_eq!(chain.lines[0].unit, "B");
        assert_eq!(chain.lines[1].unit, "GB");
        assert_eq!(chain.results["r"], json!(1));
        assert_eq!(chain.units["r"], Unit::Ratio);
        assert!(chain.to_text().starts_with("x\n"));
    }

    /// Every numeric result of every estimator carries a unit.
    #[test]
    fn every_numeric_result_has_a_unit() {
        let e = "model=llama-3.1-8b gpu=h100-sxm";
        let runs = [
            ("prefix-reuse", "prompt_tokens=3000 cached_tokens_before=2432".to_string()),
            ("decode-floor", format!("{e} batch=64 context=4096 measured_itl_ms=24")),
            ("mixed-step", format!("{e} batch=64 context=4096 chunk_tokens=2048 mfu=0.5")),
            ("memory-fit", format!("{e} max_model_len=131072")),
            ("kv-pages", "model=llama-3.1-8b device_bytes=80e9 requests=200 prompt_tokens=2048 output_tokens=1024".to_string()),
            ("precision-change", format!("{e} batch=64 context=4096 to=fp8")),
            ("tp-allreduce", "model=llama-3.3-70b tp=4 batch=64 context=4096".to_string()),
            ("amdahl", "phases=prefill:0.4:1,decode:0.6:1.2".to_string()),
            ("periodic-tail", format!("{e} batch=64 context=4096 chunk_tokens=2048 long_prompt_tokens=32768 period_s=10")),
            ("cost", "gpu_hour_usd=2.5 gpus=8 output_tokens_per_s=3000".to_string()),
        ];
        for (name, args) in runs {
            let chain = ok(name, &args);
            for (key, v) in &chain.results {
                if v.is_number() {
                    assert!(chain.units.contains_key(key), "{name}: {key} has no unit");
                }
            }
        }
        let floor = ok(
            "decode-floor",
            &format!("{e} batch=64 context=4096 measured_itl_ms=24"),
        );
        assert_eq!(floor.units["floor_ms"], Unit::Ms);
        assert_eq!(floor.units["floor_over_measured"], Unit::Ratio);
    }

    #[test]
    fn pages_show_one_format_per_unit_and_human_labels() {
        let c = ok(
            "memory-fit",
            "model=llama-3.1-8b gpu=h100-sxm max_model_len=131072",
        );
        let r = c.shown_results();
        let get = |k: &str| r.iter().find(|s| s.key == k).unwrap().clone();
        assert_eq!(get("budget_bytes_per_gpu").value, "78.22 GB");
        assert_eq!(get("budget_bytes_per_gpu").label, "Budget per GPU");
        assert_eq!(get("budget_bytes_per_gpu").exact, "78218400000");
        assert_eq!(get("kv_bytes_per_token_per_gpu").value, "131,072 B");
        assert_eq!(get("max_kv_tokens").value.split(' ').nth(1), Some("tokens"));
        assert_eq!(get("fits").value, "yes");
        let i = c.shown_inputs();
        let hbm = i.iter().find(|s| s.key == "hbm_bytes").unwrap();
        assert_eq!(hbm.value, "85.02 GB");
        assert_eq!(hbm.label, "GPU memory");
        let d = ok(
            "decode-floor",
            "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096",
        );
        let bw = d
            .shown_inputs()
            .into_iter()
            .find(|s| s.key == "bandwidth")
            .unwrap();
        assert_eq!(bw.value, "3.35 TB/s");
        for s in d.shown_inputs().iter().chain(d.shown_results().iter()) {
            assert!(!s.value.contains("e9") && !s.value.contains("e12"), "{s:?}");
        }
        assert!(d.to_text().contains("3.35e12"));
        let page = d.to_page_text();
        assert!(
            page.contains("3.35 TB/s") && !page.contains("e12"),
            "{page}"
        );
        assert_eq!(humanize_key("base_step_ms"), "Base step (ms)");
        assert_eq!(humanize_key("allreduce_share"), "Allreduce share");
    }
}
