"""Where one warm export's instructions go: the inclusive count of each named step, under
callgrind, as ``instructions.py`` counts whole calls.

A step is a function or method named ``module:attribute.path`` as the export looks it up
(``safetrace.exporter.api:Exporter._lift_state``; a name ``api.py`` imported is patched
in ``safetrace.exporter.api``).  For each step in turn the child replaces it by a wrapper
that runs it inside one ``functools.reduce`` call (callgrind runs with
``--toggle-collect=functools_reduce``: only what runs inside a reduce is counted), makes
`--warmup` plain exports, then `--calls` exports, and dumps the count; the wrapper is
then removed.  A count is the step's own work and everything it calls, plus the wrapper
(~3k instructions a call: subtract it from steps called several times); steps nest
(``_run`` holds ``_lift_state``), so counts are not additive.  Same fixed settings as
``instructions.py`` (``PYTHONHASHSEED=0``, ``gc.freeze()``, the collector off).

Run: .venv/bin/python benchmarks/export_parts.py [--case trace_mlp] [--calls N]
                                                  [step ...]
     (no step named: DEFAULT_STEPS; ~5 min for them on a loaded 2-core machine)
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.instructions import callgrind_dumps, control  # noqa: E402
from benchmarks.instructions import case as bench_case  # noqa: E402

API = "safetrace.exporter.api:"
# the steps of a static export: the whole, the session and snapshots around the trace,
# the state and inputs lifted, the model's forward (its module calls and ops), and after
DEFAULT_STEPS = tuple(API + s for s in (
    "_export", "Exporter.__init__", "Exporter._run", "GlobalCaches.__enter__",
    "ModuleGuard.__enter__", "ModuleGuard.__exit__", "Exporter._lift_state",
    "Exporter._user_inputs", "Tracer.__init__", "ExportSession.__enter__",
    "ExportSession.__exit__", "module_stack", "Tracer.__torch_function__",
    "Exporter._contract", "Exporter._outputs", "ExportedProgram.__init__",
    "pytree.flatten_inputs", "pytree.walk_of", "built_under")) + (
    "safetrace.exporter.python_state:check", "safetrace.trace.memo:call",
    "safetrace.trace.scope:Scope.record", "torch.nn.modules.module:Module._call_impl")


def _resolve(step: str) -> tuple[object, str]:
    module, _, path = step.partition(":")
    owner: object = importlib.import_module(module)
    *outer, attr = path.split(".")
    for name in outer:
        owner = getattr(owner, name)
    return owner, attr


def child(case: str, calls: int, warmup: int, steps: list[str]) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    import safetrace as st

    torch.set_num_threads(1)
    model, args, kwargs, dynamic_shapes = bench_case(case)
    with torch.no_grad():
        for _ in range(warmup):
            st.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
        control("-i", "on")
        for step in steps:
            owner, attr = _resolve(step)
            original = vars(owner)[attr] if isinstance(owner, type) else getattr(owner, attr)

            def counted(*a, __step=original, **k):
                return functools.reduce(lambda _, __: __step(*a, **k), (0,), None)

            setattr(owner, attr, counted)
            try:
                gc.collect()
                gc.freeze()
                gc.disable()
                for label in ("warm", step.replace(":", "@")):
                    for _ in range(calls if label != "warm" else warmup):
                        st.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
                    control("-d", label)
                gc.enable()
            finally:
                setattr(owner, attr, original)
        control("-i", "off")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", nargs="*")
    ap.add_argument("--case", default="trace_mlp", help="as instructions.py names them")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=20)
    o = ap.parse_args()
    steps = o.steps or list(DEFAULT_STEPS)
    got, _ = callgrind_dumps(__file__, [o.case, str(o.calls), str(o.warmup), *steps],
                             o.case)
    print(f"instructions per warm {o.case} export, inclusive, each step's wrapper included")
    for step in steps:
        n = got.get(step.replace(":", "@"))
        print(f"{'-' if n is None else f'{n / o.calls:,.0f}':>12}  {step}")


if __name__ == "__main__":
    main()
