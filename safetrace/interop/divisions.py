"""A contract condition's divisions made safe to evaluate whole.

Our conditions are canonical: ``(s0 % s1 == 0) or (s1 == 0)`` lists the division first,
and a graph evaluates ``x or y`` as ``x | y`` (both sides computed).  Where an ``or``
holds ``d == 0`` beside a division by ``d`` (or an ``and`` holds ``d != 0``), the division
is by ``max(d, 1)`` instead: the same value wherever ``d != 0``, and where ``d == 0`` the
``or`` is true (the ``and`` false) whatever the division gives.  So the converted
program's assert refuses or accepts such an input cleanly instead of raising
``ZeroDivisionError`` inside torch's graph.
"""

from __future__ import annotations

from safetrace import symbolic as S
from safetrace.symbolic import Expr
from safetrace.symbolic.expr import make_node

_DIVISIONS = ("mod", "floordiv")


def guarded_divisions(e: Expr) -> Expr:
    """`e` with each division that an enclosing ``d == 0`` / ``d != 0`` test makes moot at
    zero written as a division by ``max(d, 1)`` (`e` itself where there is none)."""
    return _rewrite(e, frozenset(), {})


def _rewrite(e: Expr, moot: frozenset, memo: dict) -> Expr:
    if not e.args:
        return e
    key = (e, moot)
    hit = memo.get(key)
    if hit is not None:
        return hit
    if e.op in ("or", "and"):
        tested = frozenset(_zero_tested(a, e.op) for a in e.args) - {None}
        inner = moot | tested
        args = tuple(_rewrite(a, inner, memo) for a in e.args)
    else:
        args = tuple(_rewrite(a, moot, memo) for a in e.args)
    if e.op in _DIVISIONS and args[1] in moot:
        args = (args[0], S.max_(args[1], 1))
    out = e if args == e.args else make_node(e.op, args)
    memo[key] = out
    return out


def _zero_tested(e: Expr, op: str) -> Expr | None:
    """``d`` where `e` is ``d == 0`` (in an ``or``) or ``d != 0`` (in an ``and``)."""
    want = "eq" if op == "or" else "ne"
    if e.op == want and len(e.args) == 2 and e.args[1].op == "const" and \
            e.args[1].value == 0:
        return e.args[0]
    return None
