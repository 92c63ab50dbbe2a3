//! tp-allreduce: what tensor parallelism's all-reduces add to a decode step.
//!
//! bytes per token per GPU = 2 all-reduces per layer × layers × 2 × (tp − 1) / tp × hidden
//! × activation bytes (a ring all-reduce sends and receives 2 (tp − 1)/tp of the tensor);
//! per step × batch; time = bytes / link bandwidth (per direction, since sending and
//! receiving overlap); step = decode floor at this TP + all-reduce time.

use super::chain::Work;
use super::decode_floor::{BATCH, CONTEXT};
use super::fitted::FITTED;
use super::fmt;
use super::input::{Parser, Rule};
use super::setup::{self, opt, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};
use crate::fmt::ByteStyle;

const NAME: &str = "tp-allreduce";

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::WEIGHT_DTYPE,
    setup::KV_DTYPE,
    BATCH,
    CONTEXT,
    opt(
        "activation_bytes",
        "Activation bytes",
        "B",
        Some("2"),
        "Bytes per all-reduced activation element (2 for bf16).",
    ),
    opt(
        "link_bandwidth",
        "Link bandwidth",
        "B/s",
        None,
        "Achieved all-reduce bandwidth per GPU per direction; defaults to the GPU's link \
         (NVLink or PCIe) datasheet figure. A measured busbw is better.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::HIDDEN,
    setup::BANDWIDTH,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Tensor-parallel all-reduce",
    summary:
        "Bytes and time tensor parallelism all-reduces per decode step, on top of the decode floor.",
    fields: FIELDS,
    example: "model=llama-3.3-70b&gpu=h100-sxm&tp=4&batch=64&context=4096&link_bandwidth=450e9",
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let batch = p.req("batch", Rule::Count);
    let context = p.req("context", Rule::Count);
    let act = p.or(
        "activation_bytes",
        super::defaults::ALLREDUCE_ELEMENT_BYTES.value,
        Rule::Positive,
    );
    let link = p.opt("link_bandwidth", Rule::Positive);
    let link_given = p.given("link_bandwidth");
    if let Some(s) = &setup {
        if s.model.hidden.is_none() {
            p.fail(
                "hidden",
                "is required when no model or config gives hidden_size",
            );
        }
    }
    let (Some(s), Some(batch), Some(context), Some(act)) = (setup, batch, context, act) else {
        return Err(p.into_errors());
    };
    if link_given && link.is_none() {
        return Err(p.into_errors());
    }
    let Some(hidden) = s.model.hidden else {
        return Err(p.into_errors());
    };
    let link = match link {
        Some(l) => l,
        None => {
            p.record_number("link_bandwidth", s.gpu.link_bandwidth);
            p.record("link", s.gpu.link);
            s.gpu.link_bandwidth
        }
    };
    let used = p.finish()?;

    let mut w = Work::new();
    let tp = s.tp as f64;
    let layers = match s.model.kv {
        super::KvLayout::Gqa { layers, .. } | super::KvLayout::Mla { layers, .. } => layers as f64,
    };
    let per_token = 2.0 * layers * 2.0 * (tp - 1.0) / tp * hidden as f64 * act;
    w.bytes_line(
        "bytes_per_token_per_gpu",
        "All-reduce bytes per token per GPU",
        format!(
            "2 per layer × {} layers × 2 × ({} − 1)/{} × {} hidden × {} B",
            fmt::num(layers),
            s.tp,
            s.tp,
            hidden,
            fmt::num(act)
        ),
        per_token,
    );
    let per_step = per_token * batch;
    w.bytes_line(
        "bytes_per_step_per_gpu",
        "All-reduce bytes per step per GPU",
        format!(
            "{} × {} seqs",
            crate::fmt::bytes(per_token, ByteStyle::Figure),
            fmt::num(batch)
        ),
        per_step,
    );
    let ar_ms = per_step / link * 1e3;
    w.ms_line(
        "allreduce_ms",
        "All-reduce time",
        format!(
            "{} / {} ({})",
            crate::fmt::bytes(per_step, ByteStyle::Figure),
            fmt::rate(link),
            if link_given {
                "link_bandwidth as given".to_string()
            } else {
                format!("default: the {} datasheet figure per direction", s.gpu.link)
            }
        ),
        ar_ms,
    );
    let calls = 2.0 * layers;
    let per_call = FITTED.collective_ms * (tp - 1.0) / tp;
    let latency_ms = calls * per_call;
    w.ms_line(
        "allreduce_latency_ms",
        "All-reduce latency",
        format!(
            "{} all-reduces × {} × ({} − 1)/{} (each call's fixed latency, growing with the \
             peers a ring visits; fitted on {} published decode steps, docs/accuracy.md)",
            fmt::num(calls),
            format_args!("{} µs", fmt::num(FITTED.collective_ms * 1e3)),
            s.tp,
            s.tp,
            FITTED.decode_cases
        ),
        latency_ms,
    );
    let floor = s.decode_floor(&mut w, batch, context);
    let step_ms = floor.ms + ar_ms + latency_ms;
    w.ms_line(
        "step_ms",
        "Step with all-reduce",
        format!(
            "{} + {} + {}",
            fmt::ms(floor.ms),
            fmt::ms(ar_ms),
            fmt::ms(latency_ms)
        ),
        step_ms,
    );

    w.result("bytes_per_token_per_gpu", fmt::whole(per_token));
    w.result("bytes_per_step_per_gpu", fmt::whole(per_step));
    w.result("allreduce_ms", fmt::float(ar_ms));
    w.result("allreduce_latency_ms", fmt::float(latency_ms));
    w.result("base_step_ms", fmt::float(floor.ms));
    w.result("step_ms", fmt::float(step_ms));
    w.result(
        "allreduce_share",
        fmt::float((ar_ms + latency_ms) / step_ms),
    );

    let sanity = if s.tp == 1 {
        format!(
            "With TP 1 there is nothing to all-reduce: the step is the decode floor, {}. Set \
             tp to see what splitting the model would add.",
            fmt::ms(floor.ms)
        )
    } else {
        format!(
            "At TP {} each GPU moves {} per step over {} ({}), adding {} of transfer and {} of \
             latency ({} calls) to the {} floor ({}% of the step); the slowest GPU in the group \
             sets the pace.",
            s.tp,
            crate::fmt::bytes(per_step, ByteStyle::Figure),
            s.gpu.link,
            fmt::rate(link),
            fmt::ms(ar_ms),
            fmt::ms(latency_ms),
            fmt::num(calls),
            fmt::ms(floor.ms),
            fmt::pct((ar_ms + latency_ms) / step_ms)
        )
    };
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn formula_70b_tp4_nvlink() {
        let c = ok(
            "tp-allreduce",
            "model=llama-3.3-70b tp=4 batch=64 context=4096",
        );
        let per_token = 2.0 * 80.0 * 2.0 * 3.0 / 4.0 * 8192.0 * 2.0;
        assert_eq!(num(&c, "bytes_per_token_per_gpu"), per_token);
        assert_eq!(num(&c, "bytes_per_step_per_gpu"), per_token * 64.0);
        close(&c, "allreduce_ms", per_token * 64.0 / 450e9 * 1e3);
        let base = (70_553_706_496.0 * 2.0 / 4.0 + 64.0 * 4096.0 * 81_920.0) / 3.35e12 * 1e3;
        close(&c, "base_step_ms", base);
        let latency = 160.0 * super::super::fitted::FITTED.collective_ms * 3.0 / 4.0;
        close(&c, "allreduce_latency_ms", latency);
        close(
            &c,
            "step_ms",
            base + per_token * 64.0 / 450e9 * 1e3 + latency,
        );
        assert_eq!(
            c.inputs["link_bandwidth"],
            serde_json::json!(450_000_000_000u64)
        );
    }

    #[test]
    fn pcie_is_slower_than_nvlink() {
        let nv = ok(
            "tp-allreduce",
            "model=llama-3.1-8b gpu=h100-sxm tp=2 batch=64 context=1024",
        );
        let pcie = ok(
            "tp-allreduce",
            "model=llama-3.1-8b gpu=h100-pcie tp=2 batch=64 context=1024",
        );
        close(
            &pcie,
            "allreduce_ms",
            num(&nv, "allreduce_ms") * 450.0 / 64.0,
        );
        let given = ok(
            "tp-allreduce",
            "model=llama-3.1-8b tp=2 batch=64 context=1024 link_bandwidth=100e9",
        );
        close(&given, "allreduce_ms", num(&nv, "allreduce_ms") * 4.5);
    }

    #[test]
    fn tp1_moves_nothing() {
        let c = ok("tp-allreduce", "model=llama-3.1-8b batch=64 context=4096");
        assert_eq!(c.results["bytes_per_token_per_gpu"], serde_json::json!(0));
        assert_eq!(c.results["allreduce_latency_ms"], serde_json::json!(0.0));
        close(&c, "step_ms", 15.05);
        assert!(c.sanity.contains("nothing to all-reduce"));
    }

    #[test]
    fn errors_name_fields() {
        let e = errs(
            "tp-allreduce",
            "batch=1 context=1 params=8e9 layers=32 kv_heads=8 head_dim=128 link_bandwidth=0",
        );
        has_err(&e, "hidden", "required");
        has_err(&e, "link_bandwidth", "greater than 0");
        let c = ok(
            "tp-allreduce",
            "batch=1 context=1 params=8e9 layers=32 kv_heads=8 head_dim=128 hidden=4096 tp=2",
        );
        assert!(num(&c, "bytes_per_token_per_gpu") > 0.0);
    }
}
