"""Export time with control-flow subgraphs: safetrace vs torch.export on the same programs.

The programs are the control-flow table of the tests (tests/control_flow/programs.py):
torch.cond with data predicates (parameters, closures, nesting, a loop over layers,
unbacked sizes), while_loop (a counter, a decode loop with a data-dependent stop, a
growing carry), map and scan.  For each: does torch.export export it, does safetrace,
do both programs agree with eager on fresh inputs, and the export times (median).

Goals (issue 16): no program that torch.export exports and safetrace does not;
safetrace >= 20x faster.  Run: .venv/bin/python benchmarks/bench_control_flow.py
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.utils import _pytree as pytree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import safetrace as st  # noqa: E402
from benchmarks.common import median_time, torch_spec  # noqa: E402
from tests.control_flow.programs import CASES  # noqa: E402


def agrees(run, reference, case) -> bool:
    for n in case.sizes:
        if n < case.min_size:
            continue
        for sign in (1, -1):
            args = case.fresh(n, sign)
            want, want_spec = pytree.tree_flatten(reference(*args))
            got, got_spec = pytree.tree_flatten(run(*args))
            if want_spec != got_spec or not all(
                    a.shape == b.shape and torch.allclose(a, b, atol=1e-5, rtol=1e-4)
                    if isinstance(a, torch.Tensor) else a == b for a, b in zip(want, got)):
                return False
    return True


def main() -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"{'program':<20}{'torch.export':>13}{'safetrace':>11}{'te ms':>10}{'st ms':>9}"
          f"{'speedup':>9}{'st+ready ms':>13}{'speedup':>9}")
    ratios, ready_ratios, missing = [], [], []
    for case in CASES:
        torch.manual_seed(0)
        model = case.make()
        args = case.fresh(5, 1)
        reference = case.reference or model
        spec = case.dynamic()
        try:
            st.export(model, args, dynamic_shapes=spec)  # warm caches
            st_ms = median_time(lambda: st.export(model, args, dynamic_shapes=spec), 15) * 1e3

            def ready():  # export, then everything a first call needs (fx code, subgraphs)
                e = st.export(model, args, dynamic_shapes=spec)
                e.module()
                e.graph_module.ensure_compiled()
            ready_ms = median_time(ready, 7) * 1e3
            ep = st.export(model, args, dynamic_shapes=spec)
            st_ok = "ok" if agrees(ep.module(), reference, case) else "WRONG"
        except Exception as exc:  # noqa: BLE001 - a row per program
            st_ms = ready_ms = float("nan")
            st_ok = f"fails: {type(exc).__name__}"
        try:
            t0 = time.perf_counter()
            tep = torch.export.export(model, args, dynamic_shapes=torch_spec(spec))
            te_ms = (time.perf_counter() - t0) * 1e3
            t0 = time.perf_counter()
            torch.export.export(model, args, dynamic_shapes=torch_spec(spec))
            te_ms = min(te_ms, (time.perf_counter() - t0) * 1e3)
            te_ok = "ok" if agrees(tep.module(), reference, case) else "wrong"
        except Exception as exc:  # noqa: BLE001
            te_ms, te_ok = float("nan"), f"fails: {type(exc).__name__}"
        if te_ok == "ok" and st_ok != "ok":
            missing.append(case.name)
        both = te_ok == "ok" and st_ok == "ok"
        speed = te_ms / st_ms if both else float("nan")
        speed_ready = te_ms / ready_ms if both else float("nan")
        if both:
            ratios.append(speed)
            ready_ratios.append(speed_ready)
        print(f"{case.name:<20}{te_ok[:12]:>13}{st_ok[:10]:>11}{te_ms:>10.1f}{st_ms:>9.2f}"
              f"{speed:>8.0f}x{ready_ms:>13.2f}{speed_ready:>8.0f}x")
    print(f"torch.export exports, safetrace does not: {missing or 'none'}")
    if ratios:
        print(f"speedup_median: {statistics.median(ratios):.0f}x  "
              f"min: {min(ratios):.0f}x  over {len(ratios)} programs both export")
        print(f"speedup_ready_median (export + ep.module() + fx code): "
              f"{statistics.median(ready_ratios):.0f}x  min: {min(ready_ratios):.0f}x")


if __name__ == "__main__":
    main()
