"""Upper bounds, from our sizes, for the sizes torch's cond makes anew.

torch's ``cond`` gives an output dim whose branches size it differently in torch's view a
fresh data-dependent symbol with no upper bound: a size split's point side ``x * 3`` at
``seq == 1`` has ``[b, 1]`` rows where the other side has ``[b, seq]``, the same size
under the branch's condition.  ExecuTorch plans memory for the largest size of every value
and stopped there (``Cannot evaluate a finite upper bound for symbolic expression u0``).
Our program knows that dim (``b * seq``, proven for the declared space), so its bounds over
the declared space are written after the cond as ``sym_constrain_range_for_size`` of the
output's size: torch's retrace (ExecuTorch's ``to_edge``) runs it on the symbol it makes
anew, as on a ``torch._check`` of the user's.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from safetrace.interop.lazy import symbolic_shapes

_aten = torch.ops.aten


def bound_cond_outputs(tep: Any, ep: Any) -> int:
    """Add the bounds of each root-graph cond output's fresh unbounded size of `tep` (a
    conversion of our `ep`), read from the same node of `ep`; returns how many."""
    constrain = symbolic_shapes()._constrain_range_for_size  # (torch's own, as its kernels)
    ours = {n.name: n for n in ep.graph.nodes}
    graph, count = tep.graph, 0
    for node in list(graph.nodes):
        if node.target is not operator.getitem or not isinstance(node.args[0], torch.fx.Node) \
                or node.args[0].target is not torch.ops.higher_order.cond:
            continue
        val, mine = node.meta.get("val"), ours.get(node.name)
        their = getattr(mine, "meta", {}).get("val")
        if not isinstance(val, torch.Tensor) or not hasattr(their, "shape") or \
                len(their.shape) != val.dim():
            continue
        anchor = node
        for d, size in enumerate(val.shape):
            rng = _unbounded(size)
            lo_hi = _our_bounds(their.shape[d]) if rng else None
            if lo_hi is None:
                continue
            lo, hi = lo_hi
            with graph.inserting_after(anchor):
                read = graph.call_function(_aten.sym_size.int, (node, d))
            read.meta["val"] = size
            with graph.inserting_after(read):
                done = graph.call_function(_aten.sym_constrain_range_for_size.default,
                                           (read,), {"min": lo, "max": hi})
            done.meta["val"] = None
            constrain(size, min=lo, max=hi)  # (this program's symbol)
            anchor, count = done, count + 1
    if count:
        tep.graph_module.recompile()
    return count


def _unbounded(size: Any) -> bool:
    """A bare data-dependent torch symbol with no finite upper bound."""
    if not isinstance(size, torch.SymInt) or not size.node.expr.is_symbol:
        return False
    env = size.node.shape_env
    if size.node.expr not in getattr(env, "unbacked_var_to_val", {}) and \
            not str(size.node.expr).startswith("u"):
        return False
    from torch.utils._sympy.numbers import int_oo

    vr = env.var_to_range.get(size.node.expr)
    return vr is not None and (vr.upper is int_oo or vr.upper == int_oo)


def _our_bounds(size: Any) -> tuple[int, int] | None:
    """Our size's bounds over the declared space (its env's), where both are finite."""
    if isinstance(size, int):
        return (size, size)
    env, expr = getattr(size, "env", None), getattr(size, "expr", None)
    if env is None or expr is None:
        return None
    r = env.bounds(env.simplify(expr))
    lo, hi = r.lo, r.hi
    if hi is None or hi == math.inf or not isinstance(hi, int):
        return None
    lo = 0 if lo is None or lo == -math.inf else max(0, int(lo))
    return (lo, int(hi))
