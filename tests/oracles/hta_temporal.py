"""Prints HTA 0.5.0's temporal, idle and kernel-type breakdowns and its
communication/computation overlap for single-rank real fixtures.

The numbers are the oracles kept in crates/core/src/analyze/pytorch_trace/tests.rs
(HTA_TEMPORAL, HTA_KERNEL_TYPES). Each trace is copied alone into a folder and read with
`TraceAnalysis(trace_dir=..., include_last_profiler_step=...)`.
Run: python tests/oracles/hta_temporal.py FIXTURES_DIR
(pip install HolisticTraceAnalysis==0.5.0 "pandas<2.3"; HTA 0.5.0 fails on pandas 3)
"""
import logging
import os
import shutil
import sys
import tempfile

from hta.trace_analysis import TraceAnalysis

FILES = [
    "pytorch_trace/hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "pytorch_trace/hta__trace_file_list__inference_rank_1.json.gz",
    "pytorch_trace/hta__nccl_parser_config__nccl_data.json.gz",
    "pytorch_trace/kineto__resnet50_num_workers_0__worker0.pt.trace.json.gz",
    "pytorch_trace/tracemap__1_mi300x_1000isl_10osl_32con.pt.trace.json.gz",
]


def main(root):
    logging.disable(logging.WARNING)
    for rel in FILES:
        for include in (False, True):
            folder = tempfile.mkdtemp()
            name = os.path.basename(rel).replace(".pt.trace.json.gz", ".json.gz")
            shutil.copy(os.path.join(root, rel), os.path.join(folder, name))
            t = TraceAnalysis(trace_dir=folder, include_last_profiler_step=include)
            tb = t.get_temporal_breakdown(visualize=False).iloc[0]
            print(
                f"{rel} include_last_profiler_step={include} rank {int(tb['rank'])}: "
                f"idle {tb['idle_time(us)']} compute {tb['compute_time(us)']} "
                f"non-compute {tb['non_compute_time(us)']} span {tb['kernel_time(us)']}"
            )
            idle = t.get_idle_time_breakdown(ranks=[int(tb["rank"])], visualize=False)[0]
            for stream, rows in idle.groupby("stream"):
                cells = {r["idle_category"]: r["idle_time"] for _, r in rows.iterrows()}
                print(
                    f"  stream {stream}: host wait {cells.get('host_wait', 0.0)} "
                    f"kernel wait {cells.get('kernel_wait', 0.0)} other {cells.get('other', 0.0)}"
                )
            if not include:
                print(t.get_comm_comp_overlap(visualize=False).to_string(index=False))
                kt, _ = t.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
                print(kt.to_string(index=False))
            shutil.rmtree(folder)


if __name__ == "__main__":
    main(sys.argv[1])
