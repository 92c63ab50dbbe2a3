//! The team's own runs as calibration: every decode step an investigation measured is a
//! point for its setup (engine, GPU, model, TP, weight precision), held against what
//! decode-floor expected of it. Where a setup has [`ENOUGH`] such points, the pages say
//! "on your fleet this setup has run at 1.1× of expected", and step 4's band reads a
//! new measurement against the expected step times that ratio: a team whose engine
//! build always runs 30 % over the published calibration sees a 1.6× regression, not
//! a healthy step, and is not told "overhead" for its normal.
//!
//! Pure: the shell loads the past investigations' records and hands them in.

use serde::Serialize;

use super::reproduce::{decode_floor_inputs, FrozenConfig};
use crate::estimate::{self, gpus, models};

/// Points a setup needs before its history replaces the published calibration.
pub const ENOUGH: usize = 3;

/// What makes two runs the same setup, as the team typed it, normalised: the catalog's
/// names for model and GPU, the engine's name without its version, TP (1 when not
/// given) and the weight dtype (bf16 when not given).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SetupKey {
    pub engine: String,
    pub model: String,
    pub gpu: String,
    pub tp: i64,
    pub precision: String,
}

impl SetupKey {
    /// `vllm · llama-3.1-8b · h100-sxm · TP 1 · bf16`.
    pub fn label(&self) -> String {
        let engine = if self.engine.is_empty() {
            "engine not given"
        } else {
            &self.engine
        };
        format!(
            "{engine} · {} · {} · TP {} · {}",
            self.model, self.gpu, self.tp, self.precision
        )
    }
}

fn word(text: &Option<String>) -> Option<String> {
    text.as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

/// The key of a step-0 record; `None` without a model and a GPU.
pub fn setup_key(c: &FrozenConfig) -> Option<SetupKey> {
    let model = word(&c.model)?;
    let gpu = word(&c.gpu_type)?;
    let engine = word(&c.engine)
        .map(|e| {
            e.split(|ch: char| ch.is_whitespace() || ch == '/' || ch == '@' || ch == ':')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    Some(SetupKey {
        engine,
        model: models::find(&model).map_or(model, |m| m.name.to_string()),
        gpu: gpus::find(&gpu).map_or(gpu, |g| g.name.to_string()),
        tp: c.tp.unwrap_or(1),
        precision: word(&c.weight_dtype).unwrap_or_else(|| "bf16".into()),
    })
}

/// One measured decode step against what decode-floor expected of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetPoint {
    pub investigation_id: i64,
    pub title: String,
    /// The step that recorded it (1, 2 or 4).
    pub step: u8,
    pub measured_ms: f64,
    pub expected_ms: f64,
}

impl FleetPoint {
    pub fn ratio(&self) -> f64 {
        self.measured_ms / self.expected_ms
    }
}

/// The expected decode step of a setup at a batch and context (decode-floor's
/// `expected_ms`), `None` when the setup cannot be estimated.
pub fn expected_ms(
    config: Option<&FrozenConfig>,
    batch: Option<i64>,
    context: Option<i64>,
) -> Option<f64> {
    let inputs = decode_floor_inputs(config, batch, context);
    let chain = estimate::run("decode-floor", &inputs).ok()?;
    chain.results.get("expected_ms").and_then(|v| v.as_f64())
}

/// What one investigation measured for its setup (from its records): step 4's decode
/// step at its batch and context, and the ITL step 1 or 2 measured (step, ms per token).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub decode_ms: f64,
    pub batch: Option<i64>,
    pub context: Option<i64>,
    pub itl: Option<(u8, f64)>,
}

/// The points one investigation gives: step 4's measured decode step, and the ITL its
/// step 1 or 2 measured when it differs, both against the expected step at step 4's
/// batch and context (without them nothing can be expected, so nothing counts).
pub fn points(
    investigation_id: i64,
    title: &str,
    config: Option<&FrozenConfig>,
    measured: Option<Measured>,
) -> Vec<FleetPoint> {
    let Some(m) = measured else {
        return Vec::new();
    };
    let Some(expected) = expected_ms(config, m.batch, m.context) else {
        return Vec::new();
    };
    let mut out = vec![FleetPoint {
        investigation_id,
        title: title.to_string(),
        step: 4,
        measured_ms: m.decode_ms,
        expected_ms: expected,
    }];
    if let Some((step, itl)) = m.itl.filter(|(_, v)| (v - m.decode_ms).abs() > 1e-9) {
        out.push(FleetPoint {
            investigation_id,
            title: title.to_string(),
            step,
            measured_ms: itl,
            expected_ms: expected,
        });
    }
    out
}

/// A setup's record on the team's fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetHistory {
    pub key: SetupKey,
    pub points: Vec<FleetPoint>,
    /// The median of measured / expected.
    pub ratio: f64,
    pub investigations: usize,
}

impl FleetHistory {
    /// Whether the band may use it ([`ENOUGH`] points).
    pub fn enough(&self) -> bool {
        self.points.len() >= ENOUGH
    }

    /// "On your fleet this setup has run at 1.1× of expected (4 measured steps in 3
    /// investigations)".
    pub fn sentence(&self) -> String {
        let use_it = if self.enough() {
            "; step 4's band reads new steps against it"
        } else {
            "; too few points for the band to use (it takes 3)"
        };
        format!(
            "On your fleet this setup has run at {:.2}× of expected ({} measured step{} in {} \
             investigation{}){use_it}.",
            self.ratio,
            self.points.len(),
            if self.points.len() == 1 { "" } else { "s" },
            self.investigations,
            if self.investigations == 1 { "" } else { "s" },
        )
    }
}

/// The history of `key` from the points of past investigations (`None` without any).
pub fn history(key: SetupKey, points: Vec<FleetPoint>) -> Option<FleetHistory> {
    if points.is_empty() {
        return None;
    }
    let ratios: Vec<f64> = points.iter().map(FleetPoint::ratio).collect();
    let ratio = crate::stats::quantile(&ratios, 0.5).ok()?;
    let mut ids: Vec<i64> = points.iter().map(|p| p.investigation_id).collect();
    ids.sort_unstable();
    ids.dedup();
    Some(FleetHistory {
        key,
        ratio,
        investigations: ids.len(),
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(engine: &str, gpu: &str) -> FrozenConfig {
        FrozenConfig {
            engine: Some(engine.into()),
            model: Some("meta-llama/Llama-3.1-8B-Instruct".into()),
            gpu_type: Some(gpu.into()),
            ..FrozenConfig::default()
        }
    }

    #[test]
    fn keys_normalise_what_people_type() {
        let a = setup_key(&config("vLLM 0.11.0", "H100 SXM 80GB")).unwrap();
        let b = setup_key(&config("vllm", "h100-sxm")).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.label(), "vllm · llama-3.1-8b · h100-sxm · TP 1 · bf16");
        assert_ne!(a, setup_key(&config("sglang", "h100-sxm")).unwrap());
        assert!(setup_key(&FrozenConfig::default()).is_none());
    }

    #[test]
    fn step_four_gives_a_point_and_history_takes_the_median() {
        let setup = config("vllm", "h100-sxm");
        let measured = Measured {
            decode_ms: 24.0,
            batch: Some(64),
            context: Some(4096),
            itl: None,
        };
        let p = points(7, "slow decode", Some(&setup), Some(measured));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].step, 4);
        assert!(p[0].expected_ms > 15.05 && p[0].expected_ms < 24.0, "{p:?}");
        let key = setup_key(&setup).unwrap();
        let mut all = p.clone();
        for (id, m) in [(8, 20.0), (9, 22.0)] {
            all.push(FleetPoint {
                investigation_id: id,
                measured_ms: m,
                ..p[0].clone()
            });
        }
        let h = history(key, all).unwrap();
        assert!(h.enough());
        assert_eq!(h.investigations, 3);
        assert!((h.ratio - 22.0 / p[0].expected_ms).abs() < 1e-9);
        assert!(h
            .sentence()
            .starts_with("On your fleet this setup has run at"));
        assert!(history(h.key.clone(), vec![]).is_none());
    }
}
