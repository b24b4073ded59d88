"""Run hostile cases in this process under limits; print one JSON line per case.

    python -m tests.serialize.hostile_runner [--slow] CATEGORY [CATEGORY ...]

(``--slow``: the full-size cases, whose scaled copies a plain run loads.)

While a case loads and runs, the address space is capped at what the process maps when
the case starts plus ``HOSTILE_MB`` (200); each case must end as its Spec expects within
``HOSTILE_S`` (4) seconds of CPU, leave a canary file and the rest of the folder untouched, write
nothing to the terminal, and leave the process state (grad mode, RNG, default dtype, threads, cwd,
environment, imported modules) as it found it.
"""

from __future__ import annotations

import gc
import json
import os
import re
import resource
import sys
import tempfile
import time
import traceback

import torch

import safetrace as st
from safetrace.symbolic.expr import table_mark
from tests.serialize import hostile

LIMIT_MB = int(os.environ.get("HOSTILE_MB", "200"))
# (the slowest refused file: under 1 s on one 2-core VM, 2.7 s on a slower one; a blow-up
# the limit exists for takes minutes)
LIMIT_S = float(os.environ.get("HOSTILE_S", "4"))
CALL_REFUSALS = (st.InputMismatchError, RuntimeError, st.LoadError)  # (a budget at call)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _state() -> dict:
    return {"grad": torch.is_grad_enabled(), "rng": torch.random.get_rng_state().tolist()[:64],
            "dtype": str(torch.get_default_dtype()), "threads": torch.get_num_threads(),
            "cwd": os.getcwd(), "env": dict(os.environ),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "modules": len(sys.modules)}


def _listing(tmp: str) -> dict:
    out = {}
    for name in sorted(os.listdir(tmp)):
        p = os.path.join(tmp, name)
        s = os.lstat(p)
        out[name] = (s.st_mode, s.st_size, s.st_mtime_ns)
    return out


def _call(ep: object, spec: hostile.Spec) -> None:
    from safetrace.cli import draw_inputs
    import random

    if spec.after is not None:  # (the case's own call, at sizes the checks must refuse)
        spec.after(ep)
        return
    mod = ep.module()  # type: ignore[attr-defined]
    args, kwargs, _ = draw_inputs(ep, random.Random(0), torch.Generator().manual_seed(0),
                                  use_hints=True, max_numel=1 << 16)
    mod(*args, **kwargs)


def _cap(limit: int) -> None:
    """Set the soft address-space limit (the hard one stays, so it can be raised again)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def run_case(case: hostile.Case, tmp: str) -> dict:
    _cap(resource.RLIM_INFINITY)
    spec = case.make(tmp)
    gc.collect()
    before_files = _listing(tmp)
    with open(os.path.join(tmp, "CANARY"), "rb") as f:
        canary = f.read()
    state = _state()
    rss0 = _rss_mb()
    high0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out_fd = os.dup(1)
    err_fd = os.dup(2)
    sink = tempfile.TemporaryFile()
    os.dup2(sink.fileno(), 1)
    os.dup2(sink.fileno(), 2)
    _cap(_vm_bytes() + LIMIT_MB * 2**20)
    t0 = time.perf_counter()
    c0 = time.process_time()
    outcome, detail = "?", ""
    try:
        try:
            ep = st.load(spec.source, **spec.load_kwargs)
        except st.LoadError as err:
            outcome, detail = "refused at load", str(err)[:300]
        else:
            if spec.expect == "load":
                outcome = "ACCEPTED"
            else:
                try:
                    _call(ep, spec)
                    outcome = "accepted, ran" if spec.expect == "bounded" else "ACCEPTED"
                except CALL_REFUSALS as err:
                    outcome, detail = "refused at call", f"{type(err).__name__}: {str(err)[:300]}"
    except BaseException as err:  # noqa: BLE001 - a crash is what this reports
        outcome = f"CRASH {type(err).__name__}"
        detail = "".join(traceback.format_exception_only(type(err), err))[-400:]
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    _cap(resource.RLIM_INFINITY)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    sink.seek(0)
    printed = sink.read()
    # the high-water mark tells this case's peak only when the case raised it
    high = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak = high - rss0 if high > high0 else 0.0
    problems = []
    if outcome.startswith(("CRASH", "ACCEPTED")):
        problems.append(outcome)
    elif spec.match and outcome.startswith("refused") and not re.search(spec.match, detail,
                                                                        re.IGNORECASE):
        problems.append(f"the refusal does not say {spec.match!r}")
    # CPU time: what the case costs this process (the wall clock also counts the other
    # processes of a loaded machine); a hang shows in both, and the parent's timeout
    if cpu > LIMIT_S:
        problems.append(f"took {cpu:.2f}s of CPU ({elapsed:.2f}s wall)")
    if printed:
        problems.append(f"printed {printed[:80]!r}")
    with open(os.path.join(tmp, "CANARY"), "rb") as f:
        if f.read() != canary:
            problems.append("canary changed")
    if _listing(tmp) != before_files:
        problems.append("files changed")
    now = _state()
    changed = [k for k in state if state[k] != now[k] and k != "modules"]
    if now["modules"] > state["modules"] + 5:
        changed.append("modules")
    if changed:
        problems.append(f"process state changed: {changed}")
    return {"category": case.category, "name": case.name, "outcome": outcome,
            "detail": detail, "seconds": round(elapsed, 3), "cpu_seconds": round(cpu, 3),
            "peak_mb_over_start": round(peak, 1),
            "problems": problems}


def main(categories: list[str]) -> int:
    torch.set_num_threads(1)
    slow = "--slow" in categories
    categories = [c for c in categories if c != "--slow"]
    all_cases = [c for c in hostile.cases(categories or None)
                 if (not categories or c.category in categories) and c.slow == slow]
    # warm up what a first load imports and compiles, then cap the address space
    st.load(hostile.base_blob())
    # what is alive now (torch, the library) survives every case: keep it out of the
    # per-case collections, which would otherwise rescan it each time (~0.1 s a case)
    gc.collect()
    gc.freeze()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "CANARY"), "wb") as f:
            f.write(b"canary: must stay exactly this")
        base_rss = _rss_mb()
        mark = table_mark()
        for case in all_cases:
            result = run_case(case, tmp)
            result["table_growth"] = table_mark() - mark
            print(json.dumps(result), flush=True)
        print(json.dumps({"summary": True, "base_rss_mb": round(base_rss, 1),
                          "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                          / 1024, "cases": len(all_cases)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
