"""Launch delays of a Kineto trace in plain Python, for the launch-delay tests.

Joins each GPU event (kernel, memcpy, memset) to the CPU event with its
args.correlation (the last such event, as the analyzer keeps it), and prints: the
matched events, the negative delays by kind and launch call, how many delays exceed
HTA's fixed 100 µs cutoff, and how many are outliers by the modified z-score
(0.6745 (x - median) / MAD > 3.5). Exact times (no rounding).
Run: python tests/oracles/launch_delays.py TRACE.json.gz
"""
import gzip
import json
import statistics
import sys

GPU = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
NOT_LAUNCHES = {"cuda_sync", "gpu_user_annotation", "cuda_profiler_range"}


def main(path):
    doc = json.load(gzip.open(path))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    launches, gpu = {}, []
    for e in events:
        if e.get("ph") != "X" or "ts" not in e or "dur" not in e:
            continue
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") in GPU:
            gpu.append((e["ts"], e.get("cat"), corr))
        elif corr is not None and e.get("cat") not in NOT_LAUNCHES:
            launches[corr] = (e["ts"], e["dur"], e.get("name"))
    delays, negative = [], {}
    for ts, cat, corr in gpu:
        if corr not in launches:
            continue
        lts, ldur, name = launches[corr]
        d = ts - (lts + ldur)
        delays.append(d)
        if d < 0:
            negative[(cat, name)] = negative.get((cat, name), 0) + 1
    med = statistics.median(delays)
    mad = statistics.median(abs(d - med) for d in delays)
    limit = med + 3.5 * mad / 0.6745
    print(f"matched {len(delays)}")
    print(f"negative delays by (kind, launch call): {negative}")
    print(f"above 100 us: {sum(d > 100 for d in delays)}")
    print(f"median {med} MAD {mad}: outliers above {limit}: {sum(d > limit for d in delays)}")


if __name__ == "__main__":
    main(sys.argv[1])
