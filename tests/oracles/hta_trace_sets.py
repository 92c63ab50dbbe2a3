"""Computes HTA 0.5.0's figures for the rank sets the trace-set tests build.

The sets are made from HTA's own test traces (PERFJOURNAL_REAL_FIXTURES/pytorch_trace)
exactly as `tests/app/trace_sets.rs` makes them:
- "pair": nccl_parser_config/nccl_data as ranks 0 and 1, its times (fractional µs) cut to
  whole µs (floor of ts and of dur), since HTA rounds fractional times its own way;
- "straggler": trace_diff/test as ranks 0-3; in rank 2 every NCCL kernel starts later by
  half its duration (rounded down, and is shorter by as much: it arrives late and waits
  less) and every other kernel lasts 5/4 as long (rounded down): a rank that computes
  longer while the others wait.
Run: python tests/oracles/hta_trace_sets.py FIXTURES_DIR  (pip install HolisticTraceAnalysis==0.5.0)
The printed numbers are the oracles kept in the tests.
"""
import gzip
import math
import json
import os
import sys
import tempfile

from hta.trace_analysis import TraceAnalysis


def load(path):
    with gzip.open(path) as f:
        return json.load(f)


def write_rank(folder, doc, rank):
    doc = json.loads(json.dumps(doc))
    doc.setdefault("distributedInfo", {})["rank"] = rank
    with open(os.path.join(folder, f"rank{rank}.json"), "w") as f:
        json.dump(doc, f)
    return doc


def whole_us(doc):
    for e in doc["traceEvents"]:
        for k in ("ts", "dur"):
            if isinstance(e.get(k), float):
                e[k] = math.floor(e[k])
    return doc


def straggle(doc):
    for e in doc["traceEvents"]:
        if e.get("cat") != "kernel" or "dur" not in e:
            continue
        if e["name"].startswith("nccl"):
            d = e["dur"] // 2
            e["ts"] += d
            e["dur"] -= d
        else:
            e["dur"] = e["dur"] * 5 // 4
    return doc


def report(label, folder):
    ta = TraceAnalysis(trace_dir=folder)
    print(f"== {label}")
    print(ta.get_temporal_breakdown(visualize=False).to_string())
    print(ta.get_comm_comp_overlap(visualize=False).to_string())
    kt, _ = ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    print(kt.to_string())
    try:
        print("stragglers", ta.get_potential_stragglers(num_candidates=1))
    except Exception as e:  # noqa: BLE001
        print("stragglers: none computed:", e)


def main():
    root = os.path.join(sys.argv[1], "pytorch_trace")
    with tempfile.TemporaryDirectory() as pair:
        nccl = whole_us(load(os.path.join(root, "hta__nccl_parser_config__nccl_data.json.gz")))
        for r in (0, 1):
            write_rank(pair, nccl, r)
        report("pair", pair)
    if os.environ.get("ONLY") == "pair":
        return
    with tempfile.TemporaryDirectory() as st:
        test = load(os.path.join(root, "hta__trace_diff__test__test.json.gz"))
        for r in range(4):
            doc = json.loads(json.dumps(test))
            if r == 2:
                straggle(doc)
            write_rank(st, doc, r)
        report("straggler", st)


main()
