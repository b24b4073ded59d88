"""The sizes a ``torch.cond`` predicate compares, where the loader's evaluation left them
unknown because the graph computes them with Python's ``min``/``max``.

A slice's length as the exporter writes it (``builtins.max(s0 - 1, 0)``) reaches a graph
through Python's ``min``/``max`` of sizes; run on the scratch environment's symbols they
ask which is larger, which no example answers at load, so the evaluation leaves them (and
what is computed from them) unknown.  For a cond predicate only, they are worked out here
as the symbolic ``min``/``max`` they compute: the predicate then becomes each branch's
fact (``branch_facts.py``).  The values never enter the evaluation's own table: making
them known for every later node made sizes comparable in forms the engine cannot prove
(a reshape's ``-1`` of them against the file's form), and refused honest files.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import torch

from safetrace.serialize.evaluation import python as _python
from safetrace.serialize.scratch import simple as _simple
from safetrace.symbolic import make_int, max_, min_

_MIN_MAX = {builtins.min: min_, builtins.max: max_}
_CONNECTIVES = frozenset({operator.and_, operator.or_})
_MAX_NODES = 64  # nodes of one predicate's size arithmetic worked out here (beyond: unknown)


def predicate_values(pred: Any, meta: dict, env: Any, arithmetic: frozenset) -> dict:
    """``meta`` with the predicate node ``pred``'s operands added where the evaluation
    left them unknown and they are Python size arithmetic (``arithmetic``: the operator
    functions the evaluation runs) and ``min``/``max`` of the values ``meta`` knows."""
    if not isinstance(pred, torch.fx.Node):
        return meta
    extra: dict = {}
    budget = [_MAX_NODES]

    def value(n: Any) -> Any:
        if not isinstance(n, torch.fx.Node):
            return n
        if n in meta:
            return meta[n]
        if n in extra:
            return extra[n]
        budget[0] -= 1
        if budget[0] < 0 or n.op != "call_function" or n.kwargs or not (
                n.target in _MIN_MAX or n.target in arithmetic):
            raise KeyError(n)
        args = [value(a) for a in n.args]
        if n.target in _MIN_MAX:
            out = _min_max(n.target, args, env)
        else:
            out = _python(n.target, args, env)
        if not _known_int(out, env):
            raise KeyError(n)
        extra[n] = out
        return out

    for a in _compared(pred):
        try:
            value(a)
        except (KeyError, RecursionError):
            continue
    return {**meta, **extra} if extra else meta


def _compared(pred: torch.fx.Node) -> list:
    """The nodes a predicate compares (through ``and``/``or`` of comparisons)."""
    out, todo = [], [pred]
    while todo and len(out) < 16:
        n = todo.pop()
        for a in n.args:
            if isinstance(a, torch.fx.Node):
                out.append(a)
                if a.op == "call_function" and len(a.args) == 2 and \
                        a.target in _CONNECTIVES:
                    todo.append(a)
    return out


def _min_max(fn: Any, args: list, env: Any) -> Any:
    """Python's ``min``/``max`` of two or more ints: the value ``min``/``max`` (a
    float, a bool or one iterable argument: not worked out)."""
    if len(args) < 2 or not all(_int_like(a, env) for a in args):
        return None
    exprs = [a.expr if isinstance(a, env.int_cls) else a for a in args]
    return make_int(_MIN_MAX[fn](*exprs), env)


def _int_like(v: Any, env: Any) -> bool:
    return isinstance(v, env.int_cls) or (type(v) is int and abs(v) < 1 << 64)


def _known_int(v: Any, env: Any) -> bool:
    return type(v) is int or (isinstance(v, env.int_cls) and _simple(v.expr))

__all__ = ["predicate_values"]
