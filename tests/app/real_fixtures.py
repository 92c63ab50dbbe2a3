"""The figures tests/app/real_fixtures.rs expects of the real fixtures, computed here
without perfjournal: sqlite3 (Python's) on the Nsight Systems exports, json on the
benchmark files.

    python tests/app/real_fixtures.py FIXTURES_DIR

Prints one JSON object: fixture path -> what a user should read in its analysis.
- nsys_sqlite/*: kernels, memory copies and sets, host calls, the union of the GPU
  intervals (busy) and the span from the first to the last GPU row or synchronisation
  of one stream, in µs, the kernel time per name; or, for an export without
  CUDA tables, that it holds Nsight's own tables and no kernel table.
- genai_perf/*, vllm_bench_summaries/*, guidellm/*: the tool that wrote the file, the
  requests completed and failed, and latency figures converted to milliseconds from
  the units the file states.
"""

import json
import os
import sqlite3
import sys

GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
CALLS = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")


def union_length(intervals):
    total, cur = 0, None
    for s, e in sorted(intervals):
        if cur is not None and s <= cur[1]:
            cur[1] = max(cur[1], e)
        else:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [s, e]
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def nsys(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if GPU_TABLES[0] not in tables:
        return {
            "nsight_tables": any(t.startswith("ENUM_NSYS_") for t in tables),
            "kernel_table": False,
        }
    rows = {t: db.execute(f"SELECT start, end FROM {t}").fetchall() if t in tables else [] for t in GPU_TABLES}
    gpu = [iv for t in GPU_TABLES for iv in rows[t]]
    # A synchronisation of no single stream (a context or device sync) has the stream id
    # 2^32 - 1 and is on no GPU stream.
    syncs = (
        db.execute(f"SELECT start, end FROM {SYNC} WHERE streamId >= 0 AND streamId < 4294967295").fetchall()
        if SYNC in tables
        else []
    )
    ends = gpu + syncs
    per_name = {}
    for name, ns in db.execute(
        "SELECT s.value, SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.shortName GROUP BY s.value"
    ):
        per_name[name] = ns / 1000
    return {
        "kernel_table": True,
        "kernels": len(rows[GPU_TABLES[0]]),
        "memcpy": len(rows[GPU_TABLES[1]]),
        "memset": len(rows[GPU_TABLES[2]]),
        "calls": sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in CALLS if t in tables),
        "busy_us": union_length(gpu) / 1000,
        "span_us": (max(e for _, e in ends) - min(s for s, _ in ends)) / 1000,
        "kernel_us": per_name,
    }


MS = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1000.0, "sec": 1000.0}


def genai_perf(path):
    d = json.load(open(path))

    def ms(metric, stat):
        m = d[metric]
        return m[stat] * MS[m.get("unit", "ms")]

    aiperf = "was_cancelled" in d or "loadgen" in d.get("input_config", {})
    return {
        "source": "aiperf" if aiperf else "genai_perf",
        "completed": round(d["request_count"]["avg"]),
        "ttft_ms": {"mean": ms("time_to_first_token", "avg"), "p50": ms("time_to_first_token", "p50"),
                    "p99": ms("time_to_first_token", "p99")},
        "e2el_ms": {"p50": ms("request_latency", "p50"), "p95": ms("request_latency", "p95")},
        "itl_ms": {"mean": ms("inter_token_latency", "avg")},
        "request_throughput": d["request_throughput"]["avg"],
    }


def vllm_summary(path):
    d = json.load(open(path))
    return {
        "source": "vllm",
        "completed": d["completed"],
        "failed": d["failed"],
        "ttft_ms": {"mean": d["mean_ttft_ms"], "p50": d["median_ttft_ms"], "p99": d["p99_ttft_ms"]},
        "itl_ms": {"mean": d["mean_itl_ms"], "p50": d["median_itl_ms"], "p99": d["p99_itl_ms"]},
        "tpot_ms": {"mean": d["mean_tpot_ms"], "p99": d["p99_tpot_ms"]},
        "request_throughput": d["request_throughput"],
    }


def guidellm(path):
    b = json.load(open(path))["benchmarks"][-1]
    m = b["metrics"]

    def stat(metric, factor=1.0):
        s = m[metric]["successful"]
        return {"mean": s["mean"] * factor, "p50": s["median"] * factor,
                "p99": s["percentiles"]["p99"] * factor}

    # The mean again, from the per-request records the file also keeps.
    ttfts = [r["time_to_first_token_ms"] for r in b["requests"]["successful"]]
    return {
        "source": "guidellm",
        "completed": b["request_totals"]["successful"],
        "failed": b["request_totals"]["errored"],
        "ttft_ms": stat("time_to_first_token_ms"),
        "e2el_ms": stat("request_latency", 1000.0),
        "tpot_ms": stat("time_per_output_token_ms"),
        "ttft_mean_from_requests": sum(ttfts) / len(ttfts),
        "request_throughput": m["requests_per_second"]["successful"]["mean"],
    }


def main(root):
    out = {}
    for rel in sorted(os.listdir(os.path.join(root, "nsys_sqlite"))):
        out[f"nsys_sqlite/{rel}"] = nsys(os.path.join(root, "nsys_sqlite", rel))
    for rel in sorted(os.listdir(os.path.join(root, "genai_perf"))):
        out[f"genai_perf/{rel}"] = genai_perf(os.path.join(root, "genai_perf", rel))
    for rel in sorted(os.listdir(os.path.join(root, "vllm_bench_summaries"))):
        out[f"vllm_bench_summaries/{rel}"] = vllm_summary(os.path.join(root, "vllm_bench_summaries", rel))
    for rel in sorted(os.listdir(os.path.join(root, "guidellm"))):
        out[f"guidellm/{rel}"] = guidellm(os.path.join(root, "guidellm", rel))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
