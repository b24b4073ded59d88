"""Inclusive integer intervals with infinite ends, and interval arithmetic for every op.

Every function is conservative: the true set of values (where the op is defined, e.g. a
divisor is non-zero) always lies inside the result.  Conditions have the bool range
``[0, 1]``; ``Range(1, 1)`` means proven true and ``Range(0, 0)`` proven false.
"""

from __future__ import annotations

import math
from typing import Union

Bound = Union[int, float]  # an int, or -math.inf / math.inf
INF = math.inf


class Range:
    """The inclusive interval ``[lo, hi]`` of ints; ends may be ``-math.inf``/``math.inf``."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: Bound = -INF, hi: Bound = INF) -> None:
        self.lo = lo
        self.hi = hi

    def __repr__(self) -> str:
        return f"Range({self.lo}, {self.hi})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Range) and self.lo == other.lo and self.hi == other.hi

    def __hash__(self) -> int:
        return hash((self.lo, self.hi))

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter((self.lo, self.hi))

    def __contains__(self, v: object) -> bool:
        return self.lo <= v <= self.hi  # type: ignore[operator]

    @property
    def lower(self) -> Bound:
        """Alias of ``lo`` (torch.export's ValueRanges spelling)."""
        return self.lo

    @property
    def upper(self) -> Bound:
        """Alias of ``hi`` (torch.export's ValueRanges spelling)."""
        return self.hi

    @property
    def is_empty(self) -> bool:
        """True when no int lies in the interval."""
        return self.lo > self.hi

    @property
    def is_point(self) -> bool:
        """True when the interval holds exactly one value."""
        return self.lo == self.hi

    def intersect(self, other: Range) -> Range:
        """The intersection (possibly empty)."""
        return Range(max(self.lo, other.lo), min(self.hi, other.hi))

    def union(self, other: Range) -> Range:
        """The smallest interval containing both."""
        if self.is_empty:
            return other
        if other.is_empty:
            return self
        return Range(min(self.lo, other.lo), max(self.hi, other.hi))


FULL = Range(-INF, INF)
BOOL = Range(0, 1)
TRUE_R = Range(1, 1)
FALSE_R = Range(0, 0)
EMPTY = Range(1, 0)


def r_add(a: Range, b: Range) -> Range:
    """Range of ``x + y``."""
    return Range(a.lo + b.lo, a.hi + b.hi)


def _m(x: Bound, y: Bound) -> Bound:
    # inf * 0 is 0 here: the finite value behind an infinite bound times 0 is 0.
    if x == 0 or y == 0:
        return 0
    return x * y


def r_mul(a: Range, b: Range) -> Range:
    """Range of ``x * y``."""
    c = (_m(a.lo, b.lo), _m(a.lo, b.hi), _m(a.hi, b.lo), _m(a.hi, b.hi))
    return Range(min(c), max(c))


def r_scale(a: Range, k: int) -> Range:
    """Range of ``k * x`` for an int ``k``."""
    if k >= 0:
        return Range(_m(a.lo, k), _m(a.hi, k))
    return Range(_m(a.hi, k), _m(a.lo, k))


def r_neg(a: Range) -> Range:
    """Range of ``-x``."""
    return Range(-a.hi, -a.lo)


def _fdiv(x: Bound, y: Bound) -> Bound:
    # floor(x / y) for y >= 1, with infinite ends
    if y == INF:
        if x == INF:
            return INF
        return 0 if x >= 0 else -1
    if x in (INF, -INF):
        return x
    return x // y


def _div_pos(a: Range, p: Bound, q: Bound) -> Range:
    # a // b for b in [p, q], 1 <= p <= q
    lo = _fdiv(a.lo, q) if a.lo >= 0 else _fdiv(a.lo, p)
    hi = _fdiv(a.hi, p) if a.hi >= 0 else _fdiv(a.hi, q)
    if a.lo == INF or lo == INF:
        lo = 0
    return Range(lo, hi)


def r_floordiv(a: Range, b: Range) -> Range:
    """Range of ``x // y`` over the values where ``y != 0``."""
    out = EMPTY
    if b.hi >= 1:
        out = out.union(_div_pos(a, max(b.lo, 1), b.hi))
    if b.lo <= -1:
        # x // y == (-x) // (-y)
        out = out.union(_div_pos(r_neg(a), max(-b.hi, 1), -b.lo))
    return out if not out.is_empty else FULL


def r_mod(a: Range, b: Range) -> Range:
    """Range of ``x % y`` over the values where ``y != 0`` (sign follows the divisor)."""
    out = EMPTY
    if b.hi >= 1:
        p = max(b.lo, 1)
        if a.lo >= 0 and a.hi < p:
            part = a
        else:
            part = Range(0, b.hi - 1)
            if a.lo >= 0:
                part = Range(0, min(b.hi - 1, a.hi))
        out = out.union(part)
    if b.lo <= -1:
        q = min(b.hi, -1)
        if a.hi <= 0 and a.lo > q:
            part = a
        else:
            part = Range(b.lo + 1, 0)
            if a.hi <= 0:
                part = Range(max(b.lo + 1, a.lo), 0)
        out = out.union(part)
    return out if not out.is_empty else FULL


def r_min(a: Range, b: Range) -> Range:
    """Range of ``min(x, y)``."""
    return Range(min(a.lo, b.lo), min(a.hi, b.hi))


def r_max(a: Range, b: Range) -> Range:
    """Range of ``max(x, y)``."""
    return Range(max(a.lo, b.lo), max(a.hi, b.hi))


def r_le0(d: Range) -> Range:
    """Bool range of ``x <= 0``."""
    if d.hi <= 0:
        return TRUE_R
    if d.lo > 0:
        return FALSE_R
    return BOOL


def r_eq0(d: Range) -> Range:
    """Bool range of ``x == 0``."""
    if d.lo == 0 and d.hi == 0:
        return TRUE_R
    if d.lo > 0 or d.hi < 0:
        return FALSE_R
    return BOOL


def r_not(a: Range) -> Range:
    """Bool range of ``not x``."""
    return Range(1 - a.hi, 1 - a.lo)


def r_and(rs: list[Range]) -> Range:
    """Bool range of a conjunction."""
    return Range(min(r.lo for r in rs), min(r.hi for r in rs))


def r_or(rs: list[Range]) -> Range:
    """Bool range of a disjunction."""
    return Range(max(r.lo for r in rs), max(r.hi for r in rs))
