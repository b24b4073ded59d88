"""A slice's constant bounds written as ``min(size, bound)`` where the size may be 0.

``z[:1]`` of a ``z`` whose rows admit 0 has ``min(n, 1)`` rows; the converted program keeps
that (``zero_folds.py``), but a tool that retraces it runs torch's slice kernel, which
clamps the constant end to the size by a guard at the example (``n >= 1``) and drops the
guard: ExecuTorch's ``.pte`` then planned 1 row and refused n == 0 (its kernel could not
resize the output), and AOTInductor's package read a row of an empty input (a crash).
With the end given as ``sym_min(sym_size(z, 0), 1)``, the clamp is the program's own size
arithmetic, which the tools compute at run time (measured, ExecuTorch 1.5.1: eager's
values at 0, 1 and 5).  The same value as before: ``slice`` clamps its bounds to the size.
"""

from __future__ import annotations

from typing import Any

import torch

_aten = torch.ops.aten


def explicit_slice_ends(tep: Any) -> set[tuple[str, int]]:
    """Rewrite the constant positive start and end of each ``aten.slice.Tensor`` of `tep`'s
    graphs over a dim of symbolic size that may be 0; returns the (torch symbol, bound)
    pairs clamped where the size is a bare symbol (``min(n, 1)``: (``s72``, 1))."""
    done: set[tuple[str, int]] = set()
    for gm in [m for m in tep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)]:
        changed = False
        for node in list(gm.graph.nodes):
            if node.op == "call_function" and node.target is _aten.slice.Tensor:
                changed = _rewrite(gm.graph, node, done) or changed
        if changed:
            gm.recompile()
    return done


def _rewrite(graph: torch.fx.Graph, node: torch.fx.Node, done: set) -> bool:
    args = list(node.args) + [None] * (5 - len(node.args))
    x, d, start, end, step = args[:5]
    d = node.kwargs.get("dim", d if d is not None else 0)
    start, end = node.kwargs.get("start", start), node.kwargs.get("end", end)
    step = node.kwargs.get("step", step if step is not None else 1)
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or not isinstance(d, int):
        return False
    d %= max(val.dim(), 1)
    size = val.shape[d]
    if not isinstance(size, torch.SymInt) or not _may_be_zero(size):
        return False
    bounds = [b if isinstance(b, int) and 0 < b < 2 ** 62 else None for b in (start, end)]
    if bounds == [None, None]:
        return False
    with graph.inserting_before(node):
        read = graph.call_function(_aten.sym_size.int, (x, d))
        read.meta["val"] = size
        made = []
        for b in bounds:
            if b is None:
                made.append(None)
                continue
            clamp = graph.call_function(torch.sym_min, (read, b))
            clamp.meta["val"] = torch.sym_min(size, b)
            made.append(clamp)
            if size.node.expr.is_symbol:
                done.add((str(size.node.expr), b))
    new_start = made[0] if made[0] is not None else start
    new_end = made[1] if made[1] is not None else end
    node.args, node.kwargs = (x, d, new_start, new_end, step), {}
    return True


def _may_be_zero(size: Any) -> bool:
    try:
        return bool(size.node.shape_env.bound_sympy(size.node.expr).lower <= 0)
    except Exception:  # noqa: BLE001 - a range torch cannot bound: may be 0
        return True
