"""What a ``.pte``'s memory plan holds, read against the sizes the program accepts.

ExecuTorch plans each value for its largest size: the upper bound of its size expression
over the ranges the lowering left in the program's ShapeEnv.  The lowering runs torch's
meta kernels at one stand-in size per dim, and its decisions there narrow those ranges
and simplify the size expressions: a contiguity check at the example (``n//2 - 1 < 2``)
made ``n <= 5`` of a ``Dim(max=16)``, so a slice of ``n//2 - 1`` rows was planned for
one row; a slice's ``start <= end`` decided at the example left its length ``n//2 - 1``
where torch's own is ``max(n//2 - 1, 0)``.  The ``.pte`` then failed inside a kernel at
sizes the program accepts (a planned tensor resized past its capacity, an ``arange`` of a
negative length), with the runtime's bare error codes (0x12, 0x10).

``plan_facts`` gives, for each planned value whose size is symbolic, a fact of
``retrace_guards.taken_guards``: at each size the program accepts, its element count is at
most its capacity (a negative dim counted as 0: a kernel that sizes its output itself, a
slice, makes it empty), and where an operator takes the value's size from its arguments
(``arange``'s end, ``full``'s sizes, a view's shape), every dim is at least 0.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import sympy
import torch

# (operators whose output size is the size arguments they are given: a negative one is
# the runtime's error, or for a view an inferred dim)
_SIZED_BY_ARGUMENTS = ("arange", "full", "empty", "zeros", "ones", "view_copy",
                       "expand_copy", "linspace", "rand", "scalar_tensor")


def plan_facts(gm: Any) -> list[tuple[str, Callable[[dict], bool | None], bool, set]]:
    """(text, holds, False, symbols) of each planned value of `gm` and its subgraphs
    (one per distinct size and capacity)."""
    out, seen = [], set()
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            fact = _fact(node)
            if fact is not None and fact[0] not in seen:
                seen.add(fact[0])
                out.append(fact)
    return out


def _fact(node: Any) -> tuple | None:
    spec, val = node.meta.get("spec"), node.meta.get("val")
    if not isinstance(val, torch.Tensor) or not hasattr(spec, "shape"):
        return None
    if not any(isinstance(s, torch.SymInt) for s in val.shape):
        return None
    try:
        capacity = math.prod(int(d) for d in spec.shape)
        dims = [sympy.sympify(s.node.expr) if isinstance(s, torch.SymInt) else
                sympy.Integer(int(s)) for s in val.shape]
    except (TypeError, ValueError, AttributeError):
        return None
    symbols = set().union(*(d.free_symbols for d in dims))
    numel = sympy.Mul(*dims)
    target = str(node.target) if node.op == "call_function" else ""
    sized = any(name in target for name in _SIZED_BY_ARGUMENTS)
    text = f"{numel} <= {capacity} (the memory planned for {node.name})"
    if sized:
        text = f"{', '.join(map(str, dims))} >= 0 and {text}"

    def holds(binding: dict) -> bool | None:
        try:
            values = [d.xreplace(binding) for d in dims]
            if not all(v.is_number for v in values):
                return None
            sizes = [int(v) for v in values]
        except (TypeError, ValueError, ZeroDivisionError):
            return None
        if sized and min(sizes, default=0) < 0:
            return False
        return math.prod(max(v, 0) for v in sizes) <= capacity

    return text, holds, False, symbols
