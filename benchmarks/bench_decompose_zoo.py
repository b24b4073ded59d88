"""``ep.run_decompositions()`` on the zoo: core ATen only, no in-place op, the same contract.

For each zoo entry (benchmarks/zoo): export with its spec, then ``run_decompositions()``
(torch's core ATen table, safetrace's own retrace). Columns: operators left that are not
core ATen (``torch.Tag.core``; size reads and run-time checks aside), mutable (in-place)
operators left, ``range_constraints`` against the program's and its conditions among the
program's, the decomposed module against
eager at the example and the zoo's other sizes, and the zoo's out-of-space input refused.
Each model runs in a process of its own (a timeout or a crash costs one row).

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_decompose_zoo.py [--family hand]
     [--family transformers] [--timeout 600] [name ...]
(timm and torchvision need their packages importable; torchvision beside a CPU torch
through /work/shared/tools/tv_shim.py, imported first when it is on the path.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZE_OPS = ("sym_size", "_assert", "assert_sym", "sym_constrain", "sym_numel", "sym_stride",
            "sym_storage_offset")


def _ops(ep) -> list:
    import torch
    return [n.target for g in ep.graph_module.modules() if isinstance(g, torch.fx.GraphModule)
            for n in g.graph.nodes
            if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)]


def one(name: str) -> list[str]:
    """The row of one zoo entry."""
    import warnings

    import torch

    import safetrace as st
    from benchmarks.zoo import by_name
    from tests.interop.harness import outcome

    warnings.simplefilter("ignore")
    case = by_name(name).factory()
    with torch.no_grad():  # (eager first, as its user ran it: timm fills caches on a call)
        outcome(case.model, case.args, case.kwargs)
        try:
            ep = st.export(case.model, case.args, case.kwargs,
                           dynamic_shapes=case.dynamic_shapes)
        except Exception as exc:  # noqa: BLE001 - the row names it
            return [name, f"export fails ({type(exc).__name__})", "-", "-", "-", "-", "-", "-"]
        t1 = time.perf_counter()
        try:
            dep = ep.run_decompositions()
        except Exception as exc:  # noqa: BLE001
            msg = (str(exc).splitlines() or [""])[0][:90]
            return [name, f"fails ({type(exc).__name__}: {msg})", "-", "-", "-", "-", "-",
                    f"{time.perf_counter() - t1:.1f}"]
        secs = time.perf_counter() - t1
    ops = _ops(dep)
    non_core = sorted({str(t) for t in ops if torch.Tag.core not in t.tags
                       and not t._schema.is_mutable
                       and not any(k in str(t) for k in SIZE_OPS)})
    mutable = sorted({str(t) for t in ops if t._schema.is_mutable})
    same = _same_ranges(ep, dep) if _no_new_condition(ep, dep) else ""
    good = 0
    checked = [(case.args, case.kwargs)] + list(case.others)
    with torch.no_grad():
        for args, kwargs in checked:
            a, out_a = outcome(case.model, args, kwargs)
            b, out_b = outcome(dep.module(), args, kwargs)
            good += a == b == "ok" and _close(out_a, out_b)
        refused = "-"
        if case.outside is not None:
            b, _ = outcome(dep.module(), *case.outside)
            refused = "yes" if b == "rejected" else "NO"
    return [name, "ok", ", ".join(non_core) or "none", ", ".join(mutable) or "none",
            same or "DIFFER", f"{good}/{len(checked)}", refused, f"{secs:.1f}"]


def _same_ranges(ep, dep) -> str:
    """"same": the same range per input size; "equivalent": a range narrower by a bound
    the program requires as a condition (``x.shape[2] <= 2**53`` of a float computation,
    which the retrace was given as the Dim's max); "" otherwise."""
    from safetrace.symbolic.canon import ge, le
    from safetrace.symbolic.expr import sym

    if str(dep.range_constraints) == str(ep.range_constraints):
        return "same"
    conds = {c.cond for c in ep.contract.conditions}
    mine = {s.where: s for s in ep.contract.symbols if s.where is not None}
    for s in dep.contract.symbols:
        o = mine.get(s.where)
        if o is None:
            return ""
        for bound, theirs, make in ((s.lo, o.lo, ge), (s.hi, o.hi, le)):
            if bound != theirs and (bound is None or make(sym(o.name), bound) not in conds):
                return ""
    return "equivalent"


def _no_new_condition(ep, dep) -> bool:
    """Every condition of the decomposed contract is one of the program's (compared as
    expressions; a condition the ranges imply may be dropped: `x.shape[2] <= 2**54` under
    `s1 <= 2**53`)."""
    from safetrace.interop.decompose import _same_conditions
    try:
        _same_conditions(ep, dep)
    except Exception:  # noqa: BLE001 - ConversionError: it would require more
        return False
    return True


def _close(a, b) -> bool:
    import torch
    from torch.utils import _pytree

    xs, ys = (_pytree.tree_leaves(v) for v in (a, b))
    return len(xs) == len(ys) and all(
        x.shape == y.shape and torch.allclose(x.float(), y.float(), rtol=1e-3, atol=1e-3)
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) else x == y
        for x, y in zip(xs, ys))


def main(argv: list[str]) -> None:
    from benchmarks.zoo import registry

    if argv[:1] == ["--one"]:
        try:
            import tv_shim  # noqa: F401 - torchvision beside a CPU torch, where present
        except ImportError:
            pass
        print("ROW\t" + "\t".join(one(argv[1])), flush=True)
        return
    families = [argv[i + 1] for i, a in enumerate(argv) if a == "--family"]
    timeout = next((int(argv[i + 1]) for i, a in enumerate(argv) if a == "--timeout"), 600)
    names = [a for i, a in enumerate(argv) if not a.startswith("--")
             and (i == 0 or argv[i - 1] not in ("--family", "--timeout"))]
    entries = [e.name for e in registry()
               if (not families or e.family in families) and (not names or e.name in names)]
    print("| model | run_decompositions | not core ATen left | in-place left | contract "
          "| eager (example + others) | outside refused | decompose s |")
    print("|---|---|---|---|---|---|---|---|")
    counts = {"core": 0, "all": 0}
    for name in entries:
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", name], timeout=timeout,
                                  capture_output=True, text=True)
            rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW\t")]
            cells = rows[-1].split("\t")[1:] if rows else \
                [name, f"crashed (rc {proc.returncode}: "
                       f"{(proc.stderr.strip().splitlines() or [''])[-1][:80]})"] + ["-"] * 6
        except subprocess.TimeoutExpired:
            cells = [name, f"timeout ({timeout} s)"] + ["-"] * 6
        counts["all"] += 1
        n, m = (cells[5].split("/") + ["", ""])[:2] if "/" in cells[5] else ("", "x")
        if cells[1] == "ok" and cells[2] == cells[3] == "none" and \
                cells[4] in ("same", "equivalent") \
                and n == m and cells[6] != "NO":
            counts["core"] += 1
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\ncore ATen, no in-place op, same contract, eager's values: "
          f"{counts['core']}/{counts['all']}")


if __name__ == "__main__":
    main(sys.argv[1:])
