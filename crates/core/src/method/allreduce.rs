//! What a trace set offers the `tp-allreduce` estimate: the all-reduce time its ranks
//! measured per step, with the estimator's inputs taken from step 0's setup.

use super::record::{decode_floor_inputs, estimator_href};
use super::reproduce::FrozenConfig;
use crate::analyze::trace_set::SetSummary;

/// What a set offers the `tp-allreduce` estimate: the measured all-reduce time per step
/// (mean over the ranks), the estimator's inputs from step 0, and a warning when the
/// set's world size is not step 0's TP.
#[derive(Clone, Debug, PartialEq)]
pub struct AllReduceOffer {
    pub observed_ms: f64,
    pub calls_per_step: f64,
    pub bytes_per_step: Option<f64>,
    /// `key=value` pairs (or the estimator's link when a value holds spaces) for the
    /// attach form.
    pub inputs: String,
    pub note: Option<String>,
}

pub fn allreduce_offer(s: &SetSummary, step0: Option<&FrozenConfig>) -> Option<AllReduceOffer> {
    let ar = s
        .collectives
        .iter()
        .find(|c| c.name == "allreduce" && c.us > 0.0)?;
    let mut inputs = decode_floor_inputs(step0, None, None);
    // The all-reduced elements are activations: their size comes from step 0's activation
    // dtype (FP8 weights alone leave them bf16, the estimator's default of 2 B).
    let activation = step0
        .and_then(|c| c.activation_dtype.as_deref())
        .and_then(|d| crate::estimate::dtype::Dtype::parse(d).ok());
    if let Some(d) = activation {
        inputs.insert("activation_bytes".to_string(), d.bytes().to_string());
    }
    let text = if inputs.values().any(|v| v.contains(char::is_whitespace)) {
        estimator_href("tp-allreduce", &inputs)
    } else {
        inputs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let tp = step0.and_then(|c| c.tp);
    let ranks = s.world_size.unwrap_or(s.ranks.len() as i64);
    let note = match tp {
        Some(tp) if tp != ranks => Some(format!(
            "step 0 says TP {tp}, but the set's traces come from a run of {ranks} ranks: check which run they are"
        )),
        None => Some("step 0 gives no TP: add tp= to the inputs".to_string()),
        _ => None,
    };
    Some(AllReduceOffer {
        observed_ms: ar.us / 1000.0,
        calls_per_step: ar.count,
        bytes_per_step: ar.bytes,
        inputs: text,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::pytorch_trace::distributed::{CollectiveStat, StepTime};
    use crate::analyze::trace_set::tests::trace;
    use crate::analyze::trace_set::{summarize, Member};

    #[test]
    fn the_allreduce_per_step_is_offered_with_step_0s_setup() {
        let mut a = trace(0, true, &[]);
        let d = a.distributed.as_mut().unwrap();
        d.collectives = vec![CollectiveStat {
            name: "allreduce".into(),
            count: 64,
            us: 16_000.0,
            bytes: Some(64.0 * 2_097_152.0),
            with_bytes: 64,
        }];
        d.steps = (0..64)
            .map(|k| StepTime {
                step: k,
                gpu_us: 1000.0,
                compute_us: 700.0,
                comm_us: 250.0,
            })
            .collect();
        let s = summarize(&[Member {
            artifact_id: 1,
            name: "r0",
            outcome: Ok(&a),
        }])
        .unwrap();
        let step0 = FrozenConfig {
            model: Some("llama-3.3-70b".into()),
            gpu_type: Some("h100-sxm".into()),
            tp: Some(4),
            max_num_seqs: Some(64),
            ..Default::default()
        };
        let o = allreduce_offer(&s, Some(&step0)).unwrap();
        assert!((o.observed_ms - 0.25).abs() < 1e-12);
        assert_eq!(o.calls_per_step, 1.0);
        assert_eq!(o.bytes_per_step, Some(2_097_152.0));
        assert_eq!(o.inputs, "batch=64 gpu=h100-sxm model=llama-3.3-70b tp=4");
        assert_eq!(o.note, None, "world size 4 = TP 4");
        let tp8 = FrozenConfig {
            tp: Some(8),
            ..step0.clone()
        };
        assert!(allreduce_offer(&s, Some(&tp8))
            .unwrap()
            .note
            .unwrap()
            .contains("TP 8"));
        // Off the reference path: FP8 weights at TP 8. The offer's inputs carry the
        // weight dtype (for the decode floor) but leave the all-reduced activations at
        // bf16, and the estimate they give counts 2 B per element; an FP8 activation
        // dtype in step 0 makes it 1 B, halving the bytes.
        let fp8 = FrozenConfig {
            tp: Some(8),
            weight_dtype: Some("fp8".into()),
            ..step0.clone()
        };
        let estimate = |config: &FrozenConfig| {
            let o = allreduce_offer(&s, Some(config)).unwrap();
            let mut inputs: crate::estimate::Inputs = o
                .inputs
                .split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            inputs.insert("context".into(), "4096".into());
            let chain = crate::estimate::run("tp-allreduce", &inputs).unwrap();
            (
                o,
                chain.results["bytes_per_token_per_gpu"].as_f64().unwrap(),
            )
        };
        let (o, bf16_bytes) = estimate(&fp8);
        assert_eq!(
            o.inputs,
            "batch=64 gpu=h100-sxm model=llama-3.3-70b tp=8 weight_dtype=fp8"
        );
        assert!(o.note.unwrap().contains("TP 8"), "the set has 4 ranks");
        // Llama 3.3 70B: 80 layers, hidden 8192; 2 × 80 × 2 × 7/8 × 8192 × 2 B.
        assert!((bf16_bytes - 2.0 * 80.0 * 2.0 * 7.0 / 8.0 * 8192.0 * 2.0).abs() < 1e-6);
        let fp8_act = FrozenConfig {
            activation_dtype: Some("fp8_e4m3".into()),
            ..fp8.clone()
        };
        let (o, fp8_bytes) = estimate(&fp8_act);
        assert!(o.inputs.contains("activation_bytes=1"), "{}", o.inputs);
        assert!((fp8_bytes - bf16_bytes / 2.0).abs() < 1e-6);
        // No all-reduce: nothing to offer.
        let b = trace(0, true, &[]);
        let s = summarize(&[Member {
            artifact_id: 1,
            name: "r0",
            outcome: Ok(&b),
        }])
        .unwrap();
        assert!(allreduce_offer(&s, None).is_none());
    }
}
