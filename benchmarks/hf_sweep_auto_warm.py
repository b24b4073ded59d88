"""Warm Dim.AUTO exports of sweep models (bench_hf_sweep.py's MODELS: tiny configs, random
weights, no downloads): per model, one cold Dim.AUTO export, then `n` rounds of a warm
Dim.AUTO export and a warm static export of the same call (the reference, measured in the
same process, interleaved); prints the traces one warm AUTO export makes (``Exporter.run``
calls) and the median ratio AUTO / static.

    nice python -m benchmarks.hf_sweep_auto_warm [-n 15] gpt2 ctrl bamba ...
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
warnings.filterwarnings("ignore")

import safetrace as st  # noqa: E402
import safetrace.exporter.api as api  # noqa: E402
from benchmarks.bench_hf_sweep import MODELS  # noqa: E402


def _counting() -> list:
    """Counts ``Exporter.run`` calls (each a trace) into the returned list's first item."""
    count = [0]
    run = api.Exporter.run

    def counted(self, *args, **kwargs):
        count[0] += 1
        return run(self, *args, **kwargs)

    api.Exporter.run = counted
    return count


def one(name: str, n: int, count: list) -> dict:
    sw = MODELS[name]()
    kw = sw.make(*sw.example)
    auto = sw.spec(st.Dim.AUTO, st.Dim.AUTO)
    st.export(sw.model, (), kw, dynamic_shapes=auto)  # (cold: fills the memories)
    st.export(sw.model, (), kw)
    ratios, autos, statics = [], [], []
    for _ in range(n):
        count[0] = 0
        t0 = time.perf_counter()
        st.export(sw.model, (), kw, dynamic_shapes=auto)
        t1 = time.perf_counter()
        traces = count[0]
        st.export(sw.model, (), kw)
        t2 = time.perf_counter()
        autos.append(t1 - t0)
        statics.append(t2 - t1)
        ratios.append((t1 - t0) / (t2 - t1))
    return {"model": name, "traces": traces, "auto_s": round(statistics.median(autos), 4),
            "static_s": round(statistics.median(statics), 4),
            "ratio": round(statistics.median(ratios), 2)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=15)
    p.add_argument("models", nargs="*", default=["gpt2", "ctrl", "bamba", "lfm2", "mra"])
    a = p.parse_args()
    count = _counting()
    print("| model | traces (warm AUTO) | AUTO s | static s | AUTO / static (median) |")
    print("|---|---|---|---|---|")
    for name in a.models:
        r = one(name, a.n, count)
        print(f"| {r['model']} | {r['traces']} | {r['auto_s']} | {r['static_s']} | "
              f"{r['ratio']} |", flush=True)


if __name__ == "__main__":
    main()
