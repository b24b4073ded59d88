"""What a ``torch.cond`` branch of a loaded program may assume: it runs only where its
predicate holds (the true branch) or fails (the false branch).  A size split's predicate
is a comparison of sizes (``s1 == 1``); inside the branch the loader's evaluation takes it
as a fact, so the branch's ops are judged at the sizes it runs at (``x[:, :1].squeeze(1)``
in the ``s1 == 1`` branch removes a dim of size 1).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.symbolic import Expr, eq, ge, gt, le, lt, ne, not_

_COMPARISONS = {operator.eq: eq, operator.ne: ne, operator.lt: lt, operator.le: le,
                operator.gt: gt, operator.ge: ge}


def branch_conditions(pred: Any, meta: dict, int_cls: type) -> tuple:
    """(what the true branch may assume, what the false branch may) for the cond predicate
    node ``pred``; (None, None) unless it is a comparison of sizes ``meta`` knows."""
    build = _COMPARISONS.get(getattr(pred, "target", None)) \
        if isinstance(pred, torch.fx.Node) and pred.op == "call_function" else None
    if build is None or len(pred.args) != 2 or pred.kwargs:
        return None, None
    operands = []
    for a in pred.args:
        v = meta.get(a) if isinstance(a, torch.fx.Node) else a
        if isinstance(v, int_cls):
            operands.append(v.expr)
        elif type(v) is int:
            operands.append(v)
        else:
            return None, None
    c: Expr = build(*operands)
    return c, not_(c)
