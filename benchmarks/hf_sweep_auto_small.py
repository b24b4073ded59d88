"""Dim.AUTO at batch 1 and length 1 over the transformers coverage sweep (bench_hf_sweep.py's
MODELS: tiny configs, random weights, no downloads): each model exported once with Dim.AUTO
batch and size, then run against eager at the sweep's sizes (the example, batch 1, batch 0,
a larger one) and, for text kinds (a size Dim from 2), at (1, 1) and (2, 1); `check`'s
verdicts ("yes", "rejects (b, t)" for an input eager computes that the program refuses,
"WRONG (b, t)" for a result that differs).  A model over 240 s is a timeout.

    nice python -m benchmarks.hf_sweep_auto_small rows.jsonl [models...]
    python -m benchmarks.hf_sweep_auto_small --compare before.jsonl after.jsonl
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
warnings.filterwarnings("ignore")

import safetrace as st  # noqa: E402
from benchmarks.bench_hf_sweep import MODELS, check  # noqa: E402


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout()


def one(name: str) -> dict:
    row: dict = {"model": name}
    signal.signal(signal.SIGALRM, _alarm)
    try:
        signal.alarm(240)
        sw = MODELS[name]()
        auto = st.Dim.AUTO
        t0 = time.perf_counter()
        ep = st.export(sw.model, (), sw.make(*sw.example), dynamic_shapes=sw.spec(auto, auto))
        row["st_s"] = round(time.perf_counter() - t0, 2)
        sizes = [sw.example] + sw.others
        if sw.size_dim and sw.size_dim[0] == 2:
            sizes += [(1, 1), (2, 1)]
        row["gen"] = check(sw, ep.module(), sizes, lambda b, t: True)
        row["conds"] = [str(c.cond) for c in ep.contract.conditions][:6]
    except _Timeout:
        row["err"] = "timeout"
    except Exception as exc:  # noqa: BLE001 - the row names it
        row["err"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.alarm(0)
    return row


def compare(before: str, after: str) -> None:
    def load(path):
        return {r["model"]: r for r in map(json.loads, open(path))}
    b, a = load(before), load(after)
    common = [m for m in b if m in a]
    yes = [sum(r[m].get("gen") == "yes" for m in common) for r in (b, a)]
    print(f"{len(common)} models: 'yes' {yes[0]} before, {yes[1]} after")
    print("| model | before | after |\n|---|---|---|")
    for m in common:
        x, y = (r[m].get("gen") or r[m].get("err", "")[:60] for r in (b, a))
        if x != y:
            print(f"| {m} | {x} | {y} |")


def main() -> None:
    if sys.argv[1:2] == ["--compare"]:
        compare(*sys.argv[2:4])
        return
    out = open(sys.argv[1], "a")
    for name in sys.argv[2:] or list(MODELS):
        row = one(name)
        out.write(json.dumps(row) + "\n")
        out.flush()
        print(json.dumps(row)[:300], flush=True)


if __name__ == "__main__":
    main()
