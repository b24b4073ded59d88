"""A contract condition's divisions made safe to evaluate whole.

Our conditions are canonical: ``(s0 % s1 == 0) or (s1 == 0)`` lists the division first,
and a graph evaluates ``x or y`` as ``x | y`` (both sides computed).  Where an ``or``
holds ``d == 0`` beside a division by ``d`` (or an ``and`` holds ``d != 0``), the division
is by ``max(d, 1)`` instead: the same value wherever ``d != 0``, and where ``d == 0`` the
``or`` is true (the ``and`` false) whatever the division gives.  So the converted
program's assert refuses or accepts such an input cleanly instead of raising
``ZeroDivisionError`` inside torch's graph.

Where no such test sits beside it and the divisor's range (from the contract's symbols'
ranges) holds 0 (``(s0 + 1)//2`` at ``s0 == 0``, under ``s0 <= 2 or ...`` whose first
side our checks read first), the comparison holding the division is made false at a zero
divisor (``d != 0 and <comparison over max(d, 1)>``; under a ``not``, true): the ``or``
then rests on its other sides, and an ``and`` refuses, where the division has no value.
"""


from __future__ import annotations

import math

from safetrace import symbolic as S
from safetrace.symbolic import Expr
from safetrace.symbolic.canon import and_, eq, max_, ne, or_
from safetrace.symbolic.expr import make_node
from safetrace.symbolic.ranges import (
    FULL, Range, r_add, r_floordiv, r_max, r_min, r_mod, r_mul,
)

_DIVISIONS = ("mod", "floordiv")


def guarded_divisions(e: Expr, ranges: dict | None = None) -> Expr:
    """`e` with each division that an enclosing ``d == 0`` / ``d != 0`` test makes moot at
    zero written as a division by ``max(d, 1)`` (`e` itself where there is none); with
    ``ranges`` (symbol name -> Range), each other division whose divisor may be 0 made
    safe in its comparison (`_zero_safe`)."""
    out = _rewrite(e, frozenset(), {})
    return out if ranges is None else _zero_safe(out, True, ranges)


_COMPARISONS = ("eq", "ne", "lt", "le", "ge", "gt")


def _zero_safe(e: Expr, positive: bool, ranges: dict) -> Expr:
    if e.op in ("and", "or"):
        args = tuple(_zero_safe(a, positive, ranges) for a in e.args)
        return e if args == e.args else make_node(e.op, args)
    if e.op == "not":
        a = _zero_safe(e.args[0], not positive, ranges)
        return e if a is e.args[0] else make_node("not", (a,))
    if e.op not in _COMPARISONS:
        return e
    divisors: list[Expr] = []
    atom = _safe_terms(e, ranges, divisors)
    if not divisors:
        return e
    if positive:   # (false at a zero divisor)
        return and_(*(ne(d, 0) for d in divisors), atom)
    return or_(*(eq(d, 0) for d in divisors), atom)   # (under a not: true there)


def _safe_terms(e: Expr, ranges: dict, divisors: list) -> Expr:
    if not e.args:
        return e
    args = tuple(_safe_terms(a, ranges, divisors) for a in e.args)
    if e.op in _DIVISIONS:
        r = _bounds(args[1], ranges)
        if r.lo <= 0 <= r.hi:
            divisors.append(args[1])
            args = (args[0], max_(args[1], 1))
    return e if args == e.args else make_node(e.op, args)


_RANGE_OPS = {"add": r_add, "mul": r_mul, "floordiv": r_floordiv, "mod": r_mod,
              "min": r_min, "max": r_max}


def _bounds(e: Expr, ranges: dict) -> Range:
    """A range holding every value of the integer expression `e` where its symbols lie in
    ``ranges`` (conservative: FULL for what it does not know)."""
    if e.op == "const" and isinstance(e.value, int):
        return Range(e.value, e.value)
    if e.op == "sym":
        return ranges.get(e.name, FULL)
    fn = _RANGE_OPS.get(e.op)
    if fn is None or not e.args:
        return FULL
    out = _bounds(e.args[0], ranges)
    for a in e.args[1:]:
        out = fn(out, _bounds(a, ranges))
    return out


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


def contract_ranges(contract: object) -> dict:
    """Each symbol the inputs bind (``where`` set) with its range as the checks before the
    conditions hold it: a size from its checked lower end (0 where none is checked), an
    int input from its declared one, up to its maximum (the ranges `guarded_divisions`
    reads; ``interop/contract.py`` asserts conditions with the same)."""
    scalars = {dim.symbol for inp in getattr(contract, "inputs", ())
               if getattr(inp, "scalar", False) for dim in getattr(inp, "dims", ())}
    out = {}
    for s in contract.symbols:  # type: ignore[attr-defined]
        if s.where is None:
            continue
        lo = (s.lo if s.lo is not None else -math.inf) if s.name in scalars \
            else s.checked_lo
        out[s.name] = Range(lo, s.hi if s.hi is not None else math.inf)
    return out


def safe_conditions(contract: object) -> list:
    """The contract's conditions (``contract.conditions``' ``cond``), each with its
    divisions safe at a zero divisor (`guarded_divisions` over `contract_ranges`): for the
    deploy tools' own lowerings of the checks (C++, ONNX, ExecuTorch), which evaluate every
    side of an ``or`` and would otherwise fail (or refuse) where the division has no
    value although another side holds (``n <= 2 or ...//((n + 1)//2)`` at n == 0)."""
    ranges = contract_ranges(contract)
    return [guarded_divisions(c.cond, ranges)
            for c in contract.conditions]  # type: ignore[attr-defined]
