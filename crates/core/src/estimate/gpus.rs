//! GPU catalog. Every figure carries where it came from, because a datasheet peak and
//! what a box actually delivers differ; each one can be overridden per estimate
//! (`hbm_bytes`, `bandwidth`, `peak_flops`, `link_bandwidth`).

use serde::Serialize;

/// Where a catalog figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Provenance {
    #[serde(rename = "datasheet")]
    Datasheet,
    #[serde(rename = "as reported by the driver")]
    Driver,
    #[serde(rename = "measured")]
    Measured,
}

impl Provenance {
    pub fn describe(self) -> &'static str {
        match self {
            Provenance::Datasheet => "datasheet",
            Provenance::Driver => "as reported by the driver",
            Provenance::Measured => "measured",
        }
    }
}

/// A figure with its provenance and a note on its source.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sourced {
    pub value: f64,
    pub provenance: Provenance,
    pub note: &'static str,
}

const fn sheet(value: f64, note: &'static str) -> Sourced {
    Sourced {
        value,
        provenance: Provenance::Datasheet,
        note,
    }
}

/// One GPU model: memory (B), HBM bandwidth (B/s), dense peaks (FLOP/s, no sparsity)
/// and the GPU-to-GPU link used by tensor parallelism (B/s per direction).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GpuSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub memory_bytes: Sourced,
    pub hbm_bandwidth: Sourced,
    pub bf16_flops: Sourced,
    pub fp8_flops: Option<Sourced>,
    /// Dense INT8 tensor-core peak (OP/s), for W8A8 INT8 GEMMs.
    pub int8_ops: Option<Sourced>,
    /// Dense FP4 tensor-core peak, on the GPUs that have FP4 tensor cores.
    pub fp4_flops: Option<Sourced>,
    pub link: &'static str,
    pub link_bandwidth: Sourced,
}

/// The GPUs the estimators know by name.
pub const GPUS: &[GpuSpec] = &[
    GpuSpec {
        name: "h100-sxm",
        title: "NVIDIA H100 SXM5 80GB",
        memory_bytes: Sourced {
            value: 85.02e9,
            provenance: Provenance::Driver,
            note:
                "total memory as CUDA reports it (about 79.2 GiB), not the 80 GB of the datasheet",
        },
        hbm_bandwidth: sheet(3.35e12, "HBM3, 3.35 TB/s"),
        bf16_flops: sheet(989e12, "dense BF16 tensor core, without sparsity"),
        fp8_flops: Some(sheet(1979e12, "dense FP8 tensor core, without sparsity")),
        int8_ops: Some(sheet(1979e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "NVLink 4",
        link_bandwidth: sheet(450e9, "900 GB/s total NVLink = 450 GB/s each direction"),
    },
    GpuSpec {
        name: "h100-pcie",
        title: "NVIDIA H100 PCIe 80GB",
        memory_bytes: sheet(80e9, "80 GB HBM2e"),
        hbm_bandwidth: sheet(2.0e12, "HBM2e, 2.0 TB/s"),
        bf16_flops: sheet(756e12, "dense BF16 tensor core, without sparsity"),
        fp8_flops: Some(sheet(1513e12, "dense FP8 tensor core, without sparsity")),
        int8_ops: Some(sheet(1513e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "PCIe Gen5 x16",
        link_bandwidth: sheet(
            64e9,
            "128 GB/s total = 64 GB/s each direction; an NVLink bridge pair gives more",
        ),
    },
    GpuSpec {
        name: "h200",
        title: "NVIDIA H200 SXM 141GB",
        memory_bytes: sheet(141e9, "141 GB HBM3e"),
        hbm_bandwidth: sheet(4.8e12, "HBM3e, 4.8 TB/s"),
        bf16_flops: sheet(989e12, "dense BF16 tensor core, without sparsity"),
        fp8_flops: Some(sheet(1979e12, "dense FP8 tensor core, without sparsity")),
        int8_ops: Some(sheet(1979e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "NVLink 4",
        link_bandwidth: sheet(450e9, "900 GB/s total NVLink = 450 GB/s each direction"),
    },
    GpuSpec {
        name: "a100-80gb",
        title: "NVIDIA A100 SXM 80GB",
        memory_bytes: sheet(80e9, "80 GB HBM2e"),
        hbm_bandwidth: sheet(2.039e12, "HBM2e, 2,039 GB/s"),
        bf16_flops: sheet(312e12, "dense BF16 tensor core, without sparsity"),
        fp8_flops: None,
        int8_ops: Some(sheet(624e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "NVLink 3",
        link_bandwidth: sheet(300e9, "600 GB/s total NVLink = 300 GB/s each direction"),
    },
    GpuSpec {
        name: "a100-40gb",
        title: "NVIDIA A100 SXM 40GB",
        memory_bytes: sheet(40e9, "40 GB HBM2"),
        hbm_bandwidth: sheet(1.555e12, "HBM2, 1,555 GB/s"),
        bf16_flops: sheet(312e12, "dense BF16 tensor core, without sparsity"),
        fp8_flops: None,
        int8_ops: Some(sheet(624e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "NVLink 3",
        link_bandwidth: sheet(300e9, "600 GB/s total NVLink = 300 GB/s each direction"),
    },
    GpuSpec {
        name: "l40s",
        title: "NVIDIA L40S 48GB",
        memory_bytes: sheet(48e9, "48 GB GDDR6"),
        hbm_bandwidth: sheet(0.864e12, "GDDR6, 864 GB/s"),
        bf16_flops: sheet(362e12, "dense BF16 tensor core, without sparsity"),
        fp8_flops: Some(sheet(733e12, "dense FP8 tensor core, without sparsity")),
        int8_ops: Some(sheet(733e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "PCIe Gen4 x16",
        link_bandwidth: sheet(32e9, "64 GB/s total = 32 GB/s each direction; no NVLink"),
    },
    GpuSpec {
        name: "l4",
        title: "NVIDIA L4 24GB",
        memory_bytes: sheet(24e9, "24 GB GDDR6"),
        hbm_bandwidth: sheet(0.3e12, "GDDR6, 300 GB/s"),
        bf16_flops: sheet(121e12, "dense BF16 tensor core, without sparsity"),
        fp8_flops: Some(sheet(242e12, "dense FP8 tensor core, without sparsity")),
        int8_ops: Some(sheet(242e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "PCIe Gen4 x16",
        link_bandwidth: sheet(32e9, "64 GB/s total = 32 GB/s each direction; no NVLink"),
    },
    GpuSpec {
        name: "b200",
        title: "NVIDIA B200 (HGX)",
        memory_bytes: sheet(180e9, "180 GB HBM3e per GPU in HGX B200"),
        hbm_bandwidth: sheet(8e12, "HBM3e, 8 TB/s"),
        bf16_flops: sheet(2.25e15, "dense BF16 tensor core, without sparsity"),
        fp8_flops: Some(sheet(4.5e15, "dense FP8 tensor core, without sparsity")),
        int8_ops: Some(sheet(4.5e15, "dense INT8 tensor core, without sparsity")),
        fp4_flops: Some(sheet(9e15, "dense FP4 tensor core, without sparsity")),
        link: "NVLink 5",
        link_bandwidth: sheet(900e9, "1.8 TB/s total NVLink = 900 GB/s each direction"),
    },
    GpuSpec {
        name: "mi300x",
        title: "AMD Instinct MI300X",
        memory_bytes: sheet(192e9, "192 GB HBM3"),
        hbm_bandwidth: sheet(5.3e12, "HBM3, 5.3 TB/s"),
        bf16_flops: sheet(1307e12, "dense BF16 matrix, without sparsity"),
        fp8_flops: Some(sheet(2615e12, "dense FP8 matrix, without sparsity")),
        int8_ops: Some(sheet(2615e12, "dense INT8 matrix, without sparsity")),
        fp4_flops: None,
        link: "Infinity Fabric",
        link_bandwidth: sheet(
            448e9,
            "7 links × 64 GB/s each direction, summed over all peers; a ring uses fewer links",
        ),
    },
];

/// The default when an estimate names no GPU.
pub const DEFAULT_GPU: &str = "h100-sxm";

/// A catalog GPU by name, ignoring case, or by a printed name ("H100 SXM 80GB",
/// "NVIDIA A100-SXM4-40GB", "A100-80G").
pub fn find(name: &str) -> Option<&'static GpuSpec> {
    let name = name.trim();
    let alias = super::spelling::gpu_alias(name);
    GPUS.iter()
        .find(|g| g.name.eq_ignore_ascii_case(name))
        .or_else(|| GPUS.iter().find(|g| Some(g.name) == alias))
}

/// "unknown gpu `x`; nearest: a, b, c" for a name [`find`] cannot place.
pub fn unknown(name: &str) -> String {
    let near = super::spelling::nearest(name, GPUS.iter().map(|g| g.name));
    let all: Vec<&str> = GPUS.iter().map(|g| g.name).collect();
    format!(
        "unknown gpu `{}`; nearest in the catalog: {} (known: {})",
        name.trim(),
        near.join(", "),
        all.join(", ")
    )
}

pub fn names() -> String {
    GPUS.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_figures() {
        let h = find("h100-sxm").unwrap();
        assert_eq!(h.memory_bytes.value, 85.02e9);
        assert_eq!(h.memory_bytes.provenance, Provenance::Driver);
        assert_eq!(h.hbm_bandwidth.value, 3.35e12);
        assert_eq!(h.bf16_flops.value, 989e12);
        assert_eq!(h.fp8_flops.unwrap().value, 1979e12);
        assert_eq!(h.link_bandwidth.value, 450e9);
        assert_eq!(find("H100-PCIE").unwrap().link_bandwidth.value, 64e9);
        assert_eq!(find("mi300x").unwrap().bf16_flops.value, 1307e12);
        assert!(find(DEFAULT_GPU).is_some());
        assert!(find("h300").is_none());
    }

    #[test]
    fn every_figure_is_positive_and_sourced() {
        for g in GPUS {
            for s in [
                g.memory_bytes,
                g.hbm_bandwidth,
                g.bf16_flops,
                g.link_bandwidth,
            ] {
                assert!(s.value > 0.0 && !s.note.is_empty(), "{}", g.name);
            }
        }
        let json = serde_json::to_value(find("h100-sxm").unwrap()).unwrap();
        assert_eq!(
            json["memory_bytes"]["provenance"],
            "as reported by the driver"
        );
        assert_eq!(json["hbm_bandwidth"]["provenance"], "datasheet");
        assert_eq!(Provenance::Measured.describe(), "measured");
    }
}
