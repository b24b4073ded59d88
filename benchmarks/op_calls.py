"""Python calls per traced op: one op call profiled inside an export (cProfile counts).

For each case the forward runs the op twice, the second time under cProfile (after a
warm-up export, so caches are filled as they are in steady state) and prints the calls: all calls, Python
calls (functions with a source file), and the files those are in.  Then the same counts
for one whole (warm) export of tests.models.MLP and of the zoo's bert.  The "(dyn)" rows
are the same calls on symbolic sizes.
Run: .venv/bin/python benchmarks/op_calls.py [-v]
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import safetrace as st  # noqa: E402

PROFILE = cProfile.Profile()


def _cases():
    return {
        "torch.add(x, y)": lambda m, x, y: torch.add(x, y),
        "x.view(-1, 8)": lambda m, x, y: x.view(-1, 8),
        "F.linear(x, w)": lambda m, x, y: F.linear(x, m.w),  # w: a parameter
        "x.shape[0]": lambda m, x, y: x.shape[0],
    }


class _One(torch.nn.Module):
    def __init__(self, op) -> None:
        super().__init__()
        self.op = op
        self.profile = False
        self.w = torch.nn.Parameter(torch.randn(8, 16))

    def forward(self, x, y):
        if self.profile:
            self.op(self, x, y)  # the op's second call is measured (per-graph tables set)
            PROFILE.enable()
            out = self.op(self, x, y)
            PROFILE.disable()
        else:
            out = self.op(self, x, y)
        return x, out


def count(op, verbose: bool = False, dynamic: bool = False) -> tuple[int, int, set]:
    """Calls of the op's second call in a warm export; `dynamic`: on symbolic sizes (x
    and y share a Dim: the call is replayed within the export, memo.py)."""
    global PROFILE
    m = _One(op)
    args = (torch.randn(4, 16), torch.randn(4, 16))
    spec = ({0: st.Dim("b")}, {0: st.Dim("b")}) if dynamic else None
    st.export(m, args, dynamic_shapes=spec)  # warm
    PROFILE = cProfile.Profile()
    m.profile = True
    st.export(m, args, dynamic_shapes=spec)
    stats = pstats.Stats(PROFILE).stats
    total = python = 0
    files = set()
    rows = []
    for (file, line, name), (cc, nc, *_rest) in stats.items():
        if name == "<method 'disable' of '_lsprof.Profiler' objects>" or file == __file__:
            continue  # the profiler, and the case's own lambda
        total += nc
        if file != "~":
            python += nc
            files.add(file)
        rows.append((nc, file, line, name))
    if verbose:
        for nc, file, line, name in sorted(rows, key=lambda r: (r[1], r[2])):
            print(f"  {nc:4d} {'/'.join(file.split('/')[-3:])}:{line} {name}")
    return total, python, files


def export_calls(model, args, kwargs=None, dynamic_shapes=None) -> tuple[int, int]:
    """(all calls, Python calls) of one warm st.export."""
    st.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
    prof = cProfile.Profile()
    prof.enable()
    st.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[1] for v in stats.values())
    python = sum(v[1] for k, v in stats.items() if k[0] != "~")
    return total, python


def main() -> None:
    verbose = "-v" in sys.argv
    print(f"{'op':<24}{'calls':>7}{'python':>8}{'files':>7}")
    for dynamic in (False, True):
        for name, op in _cases().items():
            total, python, files = count(op, verbose, dynamic)
            name = f"{name} (dyn)" if dynamic else name
            print(f"{name:<24}{total:>7}{python:>8}{len(files):>7}")
            if verbose:
                print("   files:", sorted("/".join(f.split("/")[-3:]) for f in files))
    from benchmarks.zoo import by_name
    from tests.models import MLP

    case = by_name("bert").factory()
    for name, args in (("mlp export", (MLP(), (torch.randn(4, 16),))),
                       ("bert export", (case.model, case.args, case.kwargs,
                                        case.dynamic_shapes))):
        total, python = export_calls(*args)
        print(f"{name:<24}{total:>7}{python:>8}")


if __name__ == "__main__":
    main()
