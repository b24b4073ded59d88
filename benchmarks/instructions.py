"""Exports, conversions and eager forwards counted in CPU instructions, not seconds: a count
that the other jobs of a shared machine do not disturb, exact enough to judge 1% changes.

Each model runs in a child process under valgrind's callgrind with instrumentation off
while it imports.  Then, per side (an empty step, the eager forward, ``st.export``,
``ep.to_torch()``), the child makes `--warmup` calls, then runs the side `--calls` times
inside ONE ``functools.reduce`` call, twice; callgrind runs with ``--collect-atstart=no
--toggle-collect=functools_reduce``, so it counts the instructions inside a reduce and
nothing else, and the child dumps each count with ``callgrind_control -d`` while
collection is off: the dump request and the busy wait for its answer are not counted
(when the child switched collection on and off with ``callgrind_control`` itself, as this
script did before, the wait was counted, and two runs of one tree differed by ~20k
instructions, ~1%, on an mlp export).  The first reduce's count is dropped (on mlp the
first reduce of to_torch calls paid ~12M instructions once, after 5, 30 or 100 plain
warm-up calls alike; cause not found).  Also fixed: ``PYTHONHASHSEED=0`` (set and dict
orders), ``gc.collect(); gc.freeze()`` then the collector off from the warm-up to the
counts (no collection lands in one count and not another).  The empty step's count (the
reduce loop calling a function) is subtracted from each side.  The child first checks
with a profile hook that no side calls ``functools.reduce`` itself (a nested call would
toggle collection off inside it) and refuses if one does.  Two runs of one tree give the
same counts on ``trace_mlp``, and within 0.25% on the zoo's mlp (dynamic batch), 2026-12-06.

What a count leaves out: cache misses.  On a 2-3 ms program the wall-clock ratio
measured after a full collection (``bench_to_torch.py``) is ~10% above the instruction
ratio: both sides start with cold caches, and the conversion touches more of torch's C++
than the export does; wall ratios to eager run ~1.6x the instruction ratios.

Names: any zoo entry (``benchmarks/zoo``: its model, inputs and dynamic shapes), or
``trace_mlp`` / ``trace_convnet`` / ``trace_attention`` (``bench_trace.py``'s static
exports of ``tests/models.py``).

Run: .venv/bin/python benchmarks/instructions.py [--calls N] [--warmup N] [--keep DIR]
                                                  [--no-to-torch] [names]
     (needs valgrind; ~1 min per model on a loaded 2-core machine)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("mlp", "lstm_tagger", "gru_tagger", "data_dependent")
SIDES = ("empty", "eager", "export", "to_torch")
TRACE_CASES = {"trace_mlp": ("MLP", (4, 16)), "trace_convnet": ("ConvNet", (2, 3, 16, 16)),
               "trace_attention": ("Attention", (2, 5, 32))}


def case(name: str):
    """(model, args, kwargs, dynamic_shapes) of a named case."""
    import torch

    if name in TRACE_CASES:
        import tests.models

        cls, shape = TRACE_CASES[name]
        torch.manual_seed(0)
        return getattr(tests.models, cls)().eval(), (torch.randn(*shape),), {}, None
    from benchmarks.zoo import by_name

    case = by_name(name).factory()
    return case.model, case.args, case.kwargs, case.dynamic_shapes


def control(*args: str) -> None:
    # (callgrind reads its command file while this process runs Python: busy, not
    # blocked in a wait, until callgrind_control has its answer; collection is off here)
    proc = subprocess.Popen(["callgrind_control", *args, str(os.getpid())],
                            stdout=subprocess.DEVNULL)
    while proc.poll() is None:
        sum(range(200))


def _calls_reduce(fn) -> bool:
    """Whether one call of fn calls functools.reduce (which would toggle collection)."""
    import functools

    seen = []

    def hook(frame, event, arg):
        if event == "c_call" and arg is functools.reduce:
            seen.append(frame.f_code.co_name)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return bool(seen)


def child(name: str, calls: int, warmup: int, sides: tuple = SIDES) -> None:
    """Inside callgrind: `calls` calls of each of `sides`, each side in one
    functools.reduce."""
    import functools
    import gc
    import warnings

    sys.path.insert(0, str(ROOT))
    warnings.filterwarnings("ignore")
    import torch

    import safetrace as st

    torch.set_num_threads(1)
    model, args, kwargs, dynamic_shapes = case(name)

    def export():
        return st.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)

    with torch.no_grad():
        ep = export()
        fns = {"empty": lambda: None, "eager": lambda: model(*args, **kwargs),
               "export": export, "to_torch": ep.to_torch}
        fns = {side: fns[side] for side in sides}
        for side, fn in fns.items():
            fn(), fn()  # (a process's first two conversions run once-per-process checks
            # on scratch ShapeEnvs that reach sympy's or torch's reduce; never counted)
            if _calls_reduce(fn):
                sys.exit(f"{name}: {side} calls functools.reduce itself; its count would "
                         "miss that call's insides")
        control("-i", "on")
        for side in sides:
            # (warmed up right before its count, for long enough that the interpreter has
            # specialized its bytecode: a function is quickened after 8 calls and each
            # instruction specializes later still, so 5 warm-ups left ~0.5M instructions
            # of that in a 20-call mlp count; and another side's calls in between can
            # undo what a warm-up filled, e.g. caches on a class that changed; after the
            # collection, so that what it empties is refilled before the count)
            fn = fns[side]
            gc.collect()
            gc.freeze()
            gc.disable()
            for _ in range(warmup):
                fn()
            # (the same reduce once before the count, its dump dropped: on mlp the first
            # reduce of to_torch calls pays ~12M instructions once, after any number of
            # plain warm-up calls; cause not found)
            for label in (f"{side}.warm", side):
                functools.reduce(lambda acc, _: (fn(), acc)[1], range(calls), None)
                control("-d", label)
            gc.enable()
        control("-i", "off")


def callgrind_dumps(script: str, args: list[str], prefix: str,
                    keep: Path | None = None) -> tuple[dict[str, int], str]:
    """Run ``script --child *args`` under callgrind, counting only inside
    ``functools.reduce`` (the child's counted loops): its dumps' totals by label (``@`` for
    ``:``), and callgrind's stderr; each dump copied into `keep` as ``<prefix>.<label>.cg``."""
    with tempfile.TemporaryDirectory(prefix="safetrace-cg-") as tmp:
        out = Path(tmp) / "cg.out"
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(ROOT))
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
             "--toggle-collect=functools_reduce", f"--callgrind-out-file={out}",
             sys.executable, script, "--child", *args],
            env=env, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"{prefix}: the child failed:\n{proc.stderr[-3000:]}")
        got = {}
        for dump in Path(tmp).glob("cg.out*"):
            text = dump.read_text(errors="replace")
            label = re.search(r"^desc: Trigger: dump (\S+)", text, re.M)
            total = re.search(r"^summary: (\d+)", text, re.M)
            if label and total:
                got[label.group(1)] = int(total.group(1))
            if keep is not None and label:
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(dump, keep / f"{prefix}.{label.group(1)}.cg")
        return got, proc.stderr


def count(name: str, calls: int, warmup: int, keep: Path | None = None,
          sides: tuple = SIDES) -> dict[str, int]:
    """Instructions of `calls` calls of each of `sides`, from the child's dumps."""
    got, stderr = callgrind_dumps(__file__, [name, str(calls), str(warmup), ",".join(sides)],
                                  name, keep)
    missing = [side for side in sides if side not in got]
    if missing:
        sys.exit(f"{name}: no count for {missing}; callgrind's stderr:\n{stderr[-3000:]}")
    return got


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), tuple(sys.argv[5].split(",")))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=30, help="calls of a side before its count")
    ap.add_argument("--keep", type=Path, help="copy each side's callgrind dump here")
    ap.add_argument("--no-to-torch", action="store_true",
                    help="count the empty step, eager and the export only (half the time)")
    o = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("needs valgrind (with callgrind_control) on PATH")
    print("instructions per call (the reduce loop's own count subtracted)")
    print("| model | eager | st.export | to_torch | export / eager | to_torch / export |")
    print("|---|---|---|---|---|---|")
    sides = SIDES[:3] if o.no_to_torch else SIDES
    for name in o.names or DEFAULT:
        got = count(name, o.calls, o.warmup, o.keep, sides)
        per = {side: (got[side] - got["empty"]) / o.calls for side in sides[1:]}
        conv = per.get("to_torch")
        cols = ("-", "-") if conv is None else (f"{conv:,.0f}", f"{conv / per['export']:.3f}")
        print(f"| {name} | {per['eager']:,.0f} | {per['export']:,.0f} | {cols[0]} | "
              f"{per['export'] / per['eager']:.2f} | {cols[1]} |", flush=True)


if __name__ == "__main__":
    main()
