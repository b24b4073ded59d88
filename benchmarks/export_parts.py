"""Where one warm export's (or, ``--of to_torch``, one ``ep.to_torch()``'s) instructions
go: the inclusive count of each named step, under callgrind, as ``instructions.py`` counts
whole calls.

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
                                                  [--of export|to_torch] [step ...]
     (no step named: DEFAULT_STEPS or TO_TORCH_STEPS; ~5 min for them on a loaded 2-core
     machine)
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
CONV = "safetrace.interop.torch_export:"
# the steps of a conversion: the whole, its ShapeEnv and mode, inputs, nodes, torch's
# constructor and what is made for it
TO_TORCH_STEPS = tuple(CONV + s for s in (
    "convert", "_Converter.__init__", "conversion_env", "conversion_mode", "_Converter.run",
    "FakeBuilder.statics", "ContractEmitter", "_Converter._placeholder",
    "ContractEmitter.emit", "_Converter._call", "_Converter._output", "shared_custom_meta",
    "provenance", "program_state", "_Converter._range_constraints",
    "_Converter._module_call_graph", "_Converter._examples", "exported_program",
    "input_guards", "Boundaries", "_Converter._as_torch_settings", "plan_of",
    "faithful_at_zero", "with_guards", "root_of", "check_narrowing", "split_sections",
    "quiet_symbol_logs", "arg_names", "outside_modes", "gc_paused", "entered")) + (
    "torch._subclasses.fake_tensor:FakeTensorMode.__enter__",
    "torch._subclasses.fake_tensor:FakeTensorMode.__exit__",
    "torch.fx.graph_module:GraphModule.__init__",
    "torch.export.exported_program:_common_getitem_elimination_pass")


def _resolve(step: str) -> tuple[object, str]:
    module, _, path = step.partition(":")
    owner: object = importlib.import_module(module)
    *outer, attr = path.split(".")
    for name in outer:
        owner = getattr(owner, name)
    return owner, attr


def child(case: str, of: str, calls: int, warmup: int, steps: list[str]) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    import safetrace as st

    torch.set_num_threads(1)
    model, args, kwargs, dynamic_shapes = bench_case(case)
    with torch.no_grad():
        ep = st.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
        run = ep.to_torch if of == "to_torch" else \
            lambda: st.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
        for _ in range(warmup):
            run()
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
                        run()
                    control("-d", label)
                gc.enable()
            finally:
                setattr(owner, attr, original)
        control("-i", "off")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", nargs="*")
    ap.add_argument("--case", default="trace_mlp", help="as instructions.py names them")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--of", choices=("export", "to_torch"), default="export")
    o = ap.parse_args()
    steps = o.steps or list(TO_TORCH_STEPS if o.of == "to_torch" else DEFAULT_STEPS)
    got, _ = callgrind_dumps(__file__, [o.case, o.of, str(o.calls), str(o.warmup), *steps],
                             o.case)
    print(f"instructions per warm {o.case} {o.of}, inclusive, each step's wrapper included")
    for step in steps:
        n = got.get(step.replace(":", "@"))
        print(f"{'-' if n is None else f'{n / o.calls:,.0f}':>12}  {step}")


if __name__ == "__main__":
    main()
