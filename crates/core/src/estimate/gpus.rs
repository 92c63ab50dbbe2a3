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
    #[serde(rename = "secondary source")]
    Secondary,
    #[serde(rename = "datasheet, recalled")]
    Recalled,
}

impl Provenance {
    pub fn describe(self) -> &'static str {
        match self {
            Provenance::Datasheet => "datasheet",
            Provenance::Driver => "as reported by the driver",
            Provenance::Measured => "measured",
            Provenance::Secondary => "secondary source",
            Provenance::Recalled => "datasheet, recalled (not re-read)",
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

/// A figure read from a secondary source (press, a partner's page, a code catalog), where
/// the vendor publishes no datasheet or the one found was not re-read.
const fn secondary(value: f64, note: &'static str) -> Sourced {
    Sourced {
        value,
        provenance: Provenance::Secondary,
        note,
    }
}

/// A datasheet figure recalled, not re-read from the sheet: check it before relying on it.
const fn recalled(value: f64, note: &'static str) -> Sourced {
    Sourced {
        value,
        provenance: Provenance::Recalled,
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
    /// The fraction of the dense BF16 peak a large matmul reaches at its best shape, where
    /// it was measured ([`GpuSpec::matmul_ceiling`] gives the default elsewhere).
    pub matmul_ceiling: Option<Sourced>,
}

/// Where the measured matmul ceilings come from: the maximum achievable matmul FLOPS
/// (mamf-finder, BF16 inputs, no sparsity, the best of a search over shapes) that Stas
/// Bekman's ml-engineering book publishes.
pub const MATMUL_CEILING_SOURCE: &str =
    "mamf-finder BF16 results, github.com/stas00/ml-engineering compute/accelerator/README.md";

/// The matmul ceiling of a GPU nobody has measured: the H100 SXM's, 794.5 of 989 TFLOP/s.
pub const DEFAULT_MATMUL_CEILING: f64 = 0.803;

/// A measured maximum-achievable matmul figure, as a fraction of the catalog's dense BF16
/// peak (the note gives the TFLOP/s measured, so the fraction can be checked).
const fn mamf(value: f64, note: &'static str) -> Option<Sourced> {
    Some(Sourced {
        value,
        provenance: Provenance::Measured,
        note,
    })
}

impl GpuSpec {
    /// The fraction of the dense peak large matmuls reach on this GPU: measured where
    /// [`MATMUL_CEILING_SOURCE`] has it, else [`DEFAULT_MATMUL_CEILING`].
    pub fn matmul_ceiling(&self) -> Sourced {
        self.matmul_ceiling.unwrap_or(Sourced {
            value: DEFAULT_MATMUL_CEILING,
            provenance: Provenance::Measured,
            note: "not measured on this GPU: the H100 SXM's 80.3 % (794.5 of 989 TFLOP/s), \
                   the default",
        })
    }
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
        matmul_ceiling: mamf(
            0.803,
            "794.5 of 989 TFLOP/s at 2048×2048×13312 (torch 2.7.0+cu126)",
        ),
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
        matmul_ceiling: None,
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
        matmul_ceiling: mamf(
            0.803,
            "794.5 of 989 TFLOP/s: the H100 SXM's, which the table gives for the H200 too",
        ),
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
        matmul_ceiling: mamf(
            0.869,
            "271.2 of 312 TFLOP/s on an A100 SXM at 1024×10240×5120 (torch 2.6.0+cu126)",
        ),
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
        matmul_ceiling: mamf(
            0.869,
            "271.2 of 312 TFLOP/s on an A100 SXM at 1024×10240×5120 (torch 2.6.0+cu126)",
        ),
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
        matmul_ceiling: None,
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
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "b200",
        title: "NVIDIA B200 (HGX)",
        memory_bytes: sheet(180e9, "180 GB HBM3e per GPU in HGX B200"),
        hbm_bandwidth: sheet(
            7.7e12,
            "HBM3e, 7.7 TB/s per GPU in the current Blackwell datasheet (62 TB/s for 8); early \
             HGX/DGX B200 sheets said 8 TB/s",
        ),
        bf16_flops: sheet(2.25e15, "dense BF16 tensor core, without sparsity"),
        fp8_flops: Some(sheet(4.5e15, "dense FP8 tensor core, without sparsity")),
        int8_ops: Some(sheet(4.5e15, "dense INT8 tensor core, without sparsity")),
        fp4_flops: Some(sheet(9e15, "dense FP4 tensor core, without sparsity")),
        link: "NVLink 5",
        link_bandwidth: sheet(900e9, "1.8 TB/s total NVLink = 900 GB/s each direction"),
        matmul_ceiling: mamf(
            0.776,
            "1,745 of 2,250 TFLOP/s at 1792×16128×3072 (torch 2.7.1+cu128)",
        ),
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
        matmul_ceiling: mamf(
            0.511,
            "668.4 of 1,307 TFLOP/s at 10240×15360×8192 (torch 2.5.1, ROCm 6.3, TunableOp on); \
             the table's 51.4 % is of 1,300",
        ),
    },
    GpuSpec {
        name: "h100-nvl",
        title: "NVIDIA H100 NVL 94GB",
        memory_bytes: recalled(94e9, "94 GB HBM3"),
        hbm_bandwidth: recalled(3.9e12, "HBM3, 3.9 TB/s"),
        bf16_flops: recalled(835.5e12, "dense BF16 tensor core (1,671 with sparsity)"),
        fp8_flops: Some(recalled(
            1670.5e12,
            "dense FP8 tensor core (3,341 with sparsity)",
        )),
        int8_ops: Some(recalled(
            1670.5e12,
            "dense INT8 tensor core (3,341 with sparsity)",
        )),
        fp4_flops: None,
        link: "NVLink bridge (pairs)",
        link_bandwidth: recalled(
            300e9,
            "600 GB/s total between a bridged pair = 300 GB/s each direction; PCIe Gen5 x16 \
             (64 GB/s each direction) beyond the pair",
        ),
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "h800",
        title: "NVIDIA H800 SXM 80GB",
        memory_bytes: sheet(80e9, "80 GB HBM3, the H100 SXM's memory"),
        hbm_bandwidth: sheet(3.35e12, "HBM3, 3.35 TB/s"),
        bf16_flops: sheet(989e12, "dense BF16 tensor core (1,979 with sparsity)"),
        fp8_flops: Some(sheet(
            1979e12,
            "dense FP8 tensor core (3,958 with sparsity)",
        )),
        int8_ops: Some(sheet(1979e12, "dense INT8 tensor core, without sparsity")),
        fp4_flops: None,
        link: "NVLink (export-limited)",
        link_bandwidth: sheet(
            200e9,
            "400 GB/s total NVLink = 200 GB/s each direction (the export variant's cut; the \
             H100 SXM has 900)",
        ),
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "h20",
        title: "NVIDIA H20 96GB",
        memory_bytes: secondary(
            96e9,
            "96 GB HBM3 (no public English datasheet; press and two code catalogs agree)",
        ),
        hbm_bandwidth: secondary(4.0e12, "HBM3, 4.0 TB/s"),
        bf16_flops: secondary(
            148e12,
            "dense BF16 tensor core, as the sources that say dense give it",
        ),
        fp8_flops: Some(secondary(296e12, "dense FP8 tensor core")),
        int8_ops: Some(secondary(296e12, "dense INT8 tensor core")),
        fp4_flops: None,
        link: "NVLink 4",
        link_bandwidth: secondary(450e9, "900 GB/s total NVLink = 450 GB/s each direction"),
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "h20-141gb",
        title: "NVIDIA H20 141GB (H20-3e)",
        memory_bytes: Sourced {
            value: 150.76e9,
            provenance: Provenance::Driver,
            note: "143,771 MiB as CUDA reports it (a 141 GB HBM3e part)",
        },
        hbm_bandwidth: secondary(4.8e12, "HBM3e, 4.8 TB/s"),
        bf16_flops: secondary(148e12, "dense BF16 tensor core, as the 96 GB H20"),
        fp8_flops: Some(secondary(296e12, "dense FP8 tensor core")),
        int8_ops: Some(secondary(296e12, "dense INT8 tensor core")),
        fp4_flops: None,
        link: "NVLink 4",
        link_bandwidth: secondary(450e9, "900 GB/s total NVLink = 450 GB/s each direction"),
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "l20",
        title: "NVIDIA L20 48GB",
        memory_bytes: secondary(48e9, "48 GB GDDR6"),
        hbm_bandwidth: secondary(0.864e12, "GDDR6, 864 GB/s"),
        bf16_flops: secondary(
            119.5e12,
            "BF16 tensor core as secondary sources give it; dense vs sparse not confirmed",
        ),
        fp8_flops: Some(secondary(
            239e12,
            "FP8 tensor core; dense vs sparse not confirmed",
        )),
        int8_ops: Some(secondary(
            239e12,
            "INT8 tensor core; dense vs sparse not confirmed",
        )),
        fp4_flops: None,
        link: "PCIe Gen4 x16",
        link_bandwidth: secondary(32e9, "64 GB/s total = 32 GB/s each direction; no NVLink"),
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "b300",
        title: "NVIDIA B300 (HGX, Blackwell Ultra)",
        memory_bytes: Sourced {
            value: 288.4e9,
            provenance: Provenance::Driver,
            note: "275,040 MiB as nvidia-smi reports it (288 GB HBM3e)",
        },
        hbm_bandwidth: sheet(
            7.75e12,
            "HBM3e, 62 TB/s for 8 GPUs = 7.75 TB/s (also quoted as 8)",
        ),
        bf16_flops: sheet(
            2.25e15,
            "dense BF16 tensor core (4.5 PFLOP/s with sparsity)",
        ),
        fp8_flops: Some(sheet(
            4.5e15,
            "dense FP8 tensor core (9 PFLOP/s with sparsity)",
        )),
        int8_ops: Some(sheet(
            153.5e12,
            "dense INT8 (307 TOPS with sparsity): Blackwell Ultra cut INT8, unlike the B200",
        )),
        fp4_flops: Some(sheet(
            14e15,
            "dense NVFP4 (18 PFLOP/s with sparsity; not half of it on Blackwell Ultra)",
        )),
        link: "NVLink 5",
        link_bandwidth: sheet(900e9, "1.8 TB/s total NVLink = 900 GB/s each direction"),
        matmul_ceiling: mamf(
            0.786,
            "1,769 of 2,250 TFLOP/s at 12288×18432×1024 (torch 2.9.1+cu130)",
        ),
    },
    GpuSpec {
        name: "gb200",
        title: "NVIDIA GB200 (one B200 GPU of a Grace Blackwell superchip, NVL72)",
        memory_bytes: Sourced {
            value: 198.67e9,
            provenance: Provenance::Driver,
            note: "189,471 MiB as nvidia-smi reports it (the datasheet's 186 GB HBM3e)",
        },
        hbm_bandwidth: sheet(8e12, "HBM3e, 8 TB/s per GPU"),
        bf16_flops: sheet(2.5e15, "dense BF16 tensor core (5 PFLOP/s with sparsity)"),
        fp8_flops: Some(sheet(
            5e15,
            "dense FP8 tensor core (10 PFLOP/s with sparsity)",
        )),
        int8_ops: Some(sheet(
            5e15,
            "dense INT8 tensor core (10 POPS with sparsity)",
        )),
        fp4_flops: Some(sheet(
            10e15,
            "dense FP4 tensor core (20 PFLOP/s with sparsity)",
        )),
        link: "NVLink 5 (72-GPU domain)",
        link_bandwidth: sheet(
            900e9,
            "1.8 TB/s total NVLink = 900 GB/s each direction, to the NVL72 switch domain",
        ),
        matmul_ceiling: mamf(
            0.729,
            "1,822 of 2,500 TFLOP/s at 4096×9728×2048 (torch 2.10.0 nightly, CUDA 13.0)",
        ),
    },
    GpuSpec {
        name: "gb300",
        title: "NVIDIA GB300 (one Blackwell Ultra GPU of a Grace superchip, NVL72)",
        memory_bytes: Sourced {
            value: 298.0e9,
            provenance: Provenance::Driver,
            note: "284,208 MiB as nvidia-smi reports it",
        },
        hbm_bandwidth: sheet(8e12, "HBM3e, 8 TB/s per GPU"),
        bf16_flops: secondary(
            2.5e15,
            "dense BF16 taken as the GB200's per-GPU figure (Blackwell Ultra keeps these \
             tensor cores); not read from a GB300 sheet",
        ),
        fp8_flops: Some(secondary(
            5e15,
            "dense FP8 taken as the GB200's per-GPU figure",
        )),
        int8_ops: Some(sheet(165e12, "dense INT8: Blackwell Ultra cut INT8")),
        fp4_flops: Some(sheet(15e15, "dense NVFP4, 15 PFLOP/s")),
        link: "NVLink 5 (72-GPU domain)",
        link_bandwidth: sheet(900e9, "1.8 TB/s total NVLink = 900 GB/s each direction"),
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "gh200",
        title: "NVIDIA GH200 144GB (the H100-class GPU of a Grace Hopper superchip, HBM3e)",
        memory_bytes: sheet(144e9, "144 GB HBM3e"),
        hbm_bandwidth: sheet(4.9e12, "HBM3e, 4.9 TB/s"),
        bf16_flops: sheet(990e12, "dense BF16 tensor core (1,979 with sparsity)"),
        fp8_flops: Some(sheet(
            1979e12,
            "dense FP8 tensor core (3,958 with sparsity)",
        )),
        int8_ops: Some(sheet(
            1979e12,
            "dense INT8 tensor core (3,958 with sparsity)",
        )),
        fp4_flops: None,
        link: "NVLink 4 (NVL2/NVL32)",
        link_bandwidth: recalled(
            450e9,
            "900 GB/s total GPU-to-GPU NVLink in NVL2/NVL32 systems = 450 GB/s each direction",
        ),
        matmul_ceiling: mamf(
            0.837,
            "828.6 of 990 TFLOP/s on the 900 W HBM3e GH200 at 1024×15360×4096 (torch \
             2.6.0+cu126); the table's 83.8 % is of 989",
        ),
    },
    GpuSpec {
        name: "gh200-96gb",
        title: "NVIDIA GH200 96GB (the H100-class GPU of a Grace Hopper superchip, HBM3)",
        memory_bytes: sheet(96e9, "96 GB HBM3"),
        hbm_bandwidth: sheet(4.0e12, "HBM3, 4.0 TB/s"),
        bf16_flops: sheet(990e12, "dense BF16 tensor core (1,979 with sparsity)"),
        fp8_flops: Some(sheet(
            1979e12,
            "dense FP8 tensor core (3,958 with sparsity)",
        )),
        int8_ops: Some(sheet(
            1979e12,
            "dense INT8 tensor core (3,958 with sparsity)",
        )),
        fp4_flops: None,
        link: "NVLink 4 (NVL2/NVL32)",
        link_bandwidth: recalled(
            450e9,
            "900 GB/s total GPU-to-GPU NVLink in NVL2/NVL32 systems = 450 GB/s each direction",
        ),
        matmul_ceiling: None,
    },
    GpuSpec {
        name: "mi325x",
        title: "AMD Instinct MI325X",
        memory_bytes: secondary(
            256e9,
            "256 GB HBM3E (AMD's product page as a cloud's docs quote it)",
        ),
        hbm_bandwidth: secondary(6.0e12, "HBM3E, 6.0 TB/s"),
        bf16_flops: secondary(1307.4e12, "dense BF16/FP16 matrix, without sparsity"),
        fp8_flops: Some(recalled(2614.9e12, "dense FP8 matrix, without sparsity")),
        int8_ops: Some(recalled(2614.9e12, "dense INT8 matrix, without sparsity")),
        fp4_flops: None,
        link: "Infinity Fabric (xGMI)",
        link_bandwidth: recalled(
            448e9,
            "7 links × 64 GB/s each direction, summed over all peers (as the MI300X); a ring \
             uses fewer links",
        ),
        matmul_ceiling: mamf(
            0.600,
            "784.9 of 1,307.4 TFLOP/s at 13312×10240×8192 (torch 2.6.0, ROCm 6.2.4, \
             TunableOp on, 1,000 W); the table's 60.4 % is of 1,300",
        ),
    },
    GpuSpec {
        name: "mi355x",
        title: "AMD Instinct MI355X",
        memory_bytes: secondary(288e9, "288 GB HBM3E"),
        hbm_bandwidth: secondary(8.0e12, "HBM3E, 8 TB/s"),
        bf16_flops: recalled(2516.6e12, "dense BF16 matrix (about 2.5 PFLOP/s)"),
        fp8_flops: Some(recalled(5033e12, "dense FP8 matrix (about 5 PFLOP/s)")),
        int8_ops: Some(recalled(5033e12, "dense INT8 matrix")),
        fp4_flops: Some(recalled(
            10066e12,
            "dense MXFP4 matrix (about 10 PFLOP/s; 20.1 with sparsity)",
        )),
        link: "Infinity Fabric (xGMI)",
        link_bandwidth: recalled(
            538e9,
            "7 links × about 76.8 GB/s each direction (153.6 GB/s per link both ways), summed \
             over all peers",
        ),
        matmul_ceiling: mamf(
            0.622,
            "1,565 of 2,516.6 TFLOP/s at 12288×8192×8192 (torch 2.8.0, ROCm 7.0.2, \
             TunableOp off); the table's 68.0 % is of 2,300",
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

/// "unknown gpu `x`; nearest: a, b, c …" for a name [`find`] cannot place, with how to
/// describe a GPU the catalog lacks by its own figures.
pub fn unknown(name: &str) -> String {
    let near = super::spelling::nearest(name, GPUS.iter().map(|g| g.name));
    let all: Vec<&str> = GPUS.iter().map(|g| g.name).collect();
    format!(
        "unknown gpu `{}`; nearest in the catalog: {} (known: {}). For a GPU the catalog \
         lacks, keep its name and give its own datasheet figures: bandwidth (HBM bytes/s, \
         e.g. 3.35e12), peak_flops (the dense peak of the compute precision, e.g. 989e12) \
         and hbm_bytes (e.g. 80e9), whichever of them the estimator takes",
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

    /// The GPUs published serving runs use, each its own entry with the figures of its
    /// datasheet (dense peaks, per-direction links), found by the names drivers print.
    #[test]
    fn every_listed_gpu_is_its_own_entry() {
        // name, a printed name, memory GB, TB/s, dense BF16, FP8, INT8 (TFLOP/s), link GB/s
        type Row = (
            &'static str,
            &'static str,
            f64,
            f64,
            f64,
            Option<f64>,
            f64,
            f64,
        );
        #[rustfmt::skip]
        let want: &[Row] = &[
            ("h20", "NVIDIA H20", 96.0, 4.0, 148.0, Some(296.0), 296.0, 450.0),
            ("h800", "NVIDIA H800 80GB HBM3", 80.0, 3.35, 989.0, Some(1979.0), 1979.0, 200.0),
            ("h100-nvl", "NVIDIA H100 NVL", 94.0, 3.9, 835.5, Some(1670.5), 1670.5, 300.0),
            ("h100-pcie", "NVIDIA H100 PCIe", 80.0, 2.0, 756.0, Some(1513.0), 1513.0, 64.0),
            ("l20", "NVIDIA L20", 48.0, 0.864, 119.5, Some(239.0), 239.0, 32.0),
            ("l40s", "NVIDIA L40S", 48.0, 0.864, 362.0, Some(733.0), 733.0, 32.0),
            ("mi325x", "AMD Instinct MI325X", 256.0, 6.0, 1307.4, Some(2614.9), 2614.9, 448.0),
            ("mi355x", "AMD Instinct MI355X", 288.0, 8.0, 2516.6, Some(5033.0), 5033.0, 538.0),
            ("b300", "NVIDIA B300", 288.4, 7.75, 2250.0, Some(4500.0), 153.5, 900.0),
            ("gb200", "NVIDIA GB200", 198.67, 8.0, 2500.0, Some(5000.0), 5000.0, 900.0),
            ("gh200", "NVIDIA GH200 144G HBM3e", 144.0, 4.9, 990.0, Some(1979.0), 1979.0, 450.0),
        ];
        for &(name, printed, mem, tbs, bf16, fp8, int8, link) in want {
            let g = find(name).unwrap_or_else(|| panic!("{name} is not in the catalog"));
            assert_eq!(find(printed).map(|g| g.name), Some(name), "{printed}");
            assert!(
                (g.memory_bytes.value / 1e9 - mem).abs() < 0.01,
                "{name} memory"
            );
            assert!(
                (g.hbm_bandwidth.value / 1e12 - tbs).abs() < 1e-9,
                "{name} bandwidth"
            );
            assert!(
                (g.bf16_flops.value / 1e12 - bf16).abs() < 1e-6,
                "{name} bf16"
            );
            assert_eq!(g.fp8_flops.map(|f| f.value / 1e12), fp8, "{name} fp8");
            assert!(
                (g.int8_ops.unwrap().value / 1e12 - int8).abs() < 1e-6,
                "{name} int8"
            );
            assert!(
                (g.link_bandwidth.value / 1e9 - link).abs() < 1e-9,
                "{name} link"
            );
        }
        // Blackwell FP4 where it exists; Blackwell Ultra's dense FP4 is not half its sparse
        assert_eq!(find("b300").unwrap().fp4_flops.unwrap().value, 14e15);
        assert_eq!(find("gb200").unwrap().fp4_flops.unwrap().value, 10e15);
        // gb200 and gh200 are no longer read as b200 and h200
        assert_ne!(
            find("gb200").unwrap().hbm_bandwidth,
            find("b200").unwrap().hbm_bandwidth
        );
        assert_eq!(find("GH200").unwrap().name, "gh200");
        assert_eq!(find("NVIDIA GH200 480GB").unwrap().name, "gh200-96gb");
        assert_eq!(find("H20 141GB").unwrap().name, "h20-141gb");
    }

    /// The matmul ceilings are the published maximum achievable BF16 matmul TFLOP/s over
    /// the catalog's own dense BF16 peak, so the prefill compute divides by the peak it
    /// was measured against.
    #[test]
    fn matmul_ceilings_are_the_measured_tflops_over_the_catalog_peak() {
        #[rustfmt::skip]
        let measured: &[(&str, f64)] = &[
            ("a100-80gb", 271.2), ("a100-40gb", 271.2), ("gh200", 828.6),
            ("h100-sxm", 794.5), ("h200", 794.5), ("b300", 1769.0), ("b200", 1745.0),
            ("gb200", 1822.0), ("mi355x", 1565.0), ("mi325x", 784.9), ("mi300x", 668.4),
        ];
        for &(name, tflops) in measured {
            let g = find(name).unwrap();
            let c = g
                .matmul_ceiling
                .unwrap_or_else(|| panic!("{name} has no ceiling"));
            let want = tflops * 1e12 / g.bf16_flops.value;
            assert!(
                (c.value - want).abs() < 5e-4,
                "{name}: {} vs {want}",
                c.value
            );
            assert_eq!(c.provenance, Provenance::Measured);
        }
        let h100 = find("h100-sxm").unwrap().matmul_ceiling();
        assert_eq!(h100.value, DEFAULT_MATMUL_CEILING);
        for g in GPUS {
            let c = g.matmul_ceiling();
            assert!(
                c.value > 0.0 && c.value <= 1.0 && !c.note.is_empty(),
                "{}",
                g.name
            );
            if !measured.iter().any(|(n, _)| *n == g.name) {
                assert!(g.matmul_ceiling.is_none(), "{}", g.name);
                assert_eq!(c.value, DEFAULT_MATMUL_CEILING, "{}", g.name);
            }
        }
    }

    #[test]
    fn an_unknown_gpu_names_the_nearest_and_how_to_describe_it() {
        let msg = unknown("h300");
        assert!(msg.contains("nearest in the catalog: h200"), "{msg}");
        for field in ["bandwidth", "peak_flops", "hbm_bytes"] {
            assert!(msg.contains(field), "{msg}");
        }
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
