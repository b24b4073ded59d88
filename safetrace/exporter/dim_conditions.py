"""Which sizes of one declared dim satisfy the program's residual conditions on it: the
single value they pin, the interval around the example where they hold, a residue class
(``s % k == r``).  What the violation messages of ``exporter/dynamic.py`` offer as fixes."""

from __future__ import annotations

import math
from typing import Callable

from safetrace.exporter.contract import linear_in
from safetrace.symbolic import Expr


def pinned_by_conditions(root: str, lo: int, hi: float, conditions: tuple) -> tuple | None:
    """The single value a bounded dim can take under the residual conditions on it alone
    (``s*s == 16``, ``(s*s)//4 == 4``), with their origin; None when more (or no
    enumerable range)."""
    conds = [c for c in conditions if c.cond.free_symbols == {root}]
    if not conds or hi == math.inf or hi - lo > 4096:
        return None
    found = []
    for v in range(lo, int(hi) + 1):
        try:
            ok = all(c.cond.evaluate({root: v}) for c in conds)
        except ZeroDivisionError:
            ok = False
        if ok:
            found.append(v)
            if len(found) > 1:
                return None
    return (found[0], conds[0].origin) if len(found) == 1 else None


def holding_range(conds: list, root: str, hint: int, lo: int, hi: float,
                   fixed: dict) -> tuple[int, float, bool] | None:
    """``(a, b, alone)``: the widest interval [a, b] around `hint` inside [lo, hi] where
    every condition in `conds` holds (other symbols at their `fixed` values), searched up
    to a bound and sampled beyond it; `alone` when a == b and no other value up to the
    bound meets them.  None when they fail at the hint itself."""
    top = int(min(hi, max(hint, lo) * 4 + 256))

    def ok(v: int) -> bool:
        point = dict(fixed, **{root: v})
        try:
            return all(holds(c, point) for c in conds)
        except (ArithmeticError, KeyError, ValueError, TypeError):
            return False

    if not ok(hint):
        return None
    a = hint
    while a > lo and ok(a - 1):
        a -= 1
    b: float = hint
    while b < top and ok(int(b) + 1):
        b += 1
    if b == top and top < hi:
        far = [top * k for k in (2, 3, 10, 100, 1000)] + [1 << 20, 1 << 31]
        if all(ok(v) for v in far if v <= hi):
            b = hi
    alone = a == b and not any(ok(v) for v in range(lo, top + 1) if v != a)
    return a, b, alone


def holds_outside(conds: list, root: str, a: int, b: float, lo: int, hi: float,
                   fixed: dict) -> bool:
    """Whether the conditions hold somewhere in [lo, hi] outside [a, b] (searched up to a
    bound): then a size split at [a, b] would not end (``s % 3 != 0``)."""
    top = int(min(hi, max(b if b != math.inf else a, lo) * 4 + 256))
    return any((v < a or v > b) and holding_range(conds, root, v, v, v, fixed) is not None
               for v in range(lo, top + 1))


def residue_class(cond: Expr, root: str) -> tuple[int, int] | None:
    """``(k, r)`` when `cond` is ``(root + c) % k == r'`` (a constant k > 1: root is
    ``r`` modulo k), else None."""
    if cond.op != "eq":
        return None
    lhs, rhs = cond.args
    if lhs.op != "mod" or rhs.op != "const" or lhs.args[1].op != "const":
        return None
    lin = linear_in(lhs.args[0], root)
    if lin is None or lin[0] != 1:
        return None
    k, r = int(lhs.args[1].value), int(rhs.value)  # type: ignore[arg-type]
    return (k, (r - lin[1]) % k) if k > 1 and 0 <= r < k else None


def holds(cond: Expr, point: dict) -> bool:
    """`cond` at `point`; True where it reads symbols the point does not bind."""
    if not cond.free_symbols <= point.keys():
        return True
    return bool(cond.evaluate(point))


def residue_span(conds: list, first: Expr, root: str, hint: int, lo: int, hi: float,
                 fixed: dict, example: Callable[[Expr], Expr] = lambda e: e,
                 ) -> tuple[int, int, int, float, bool] | None:
    """``(k, r, a, b, alone)``: one condition (`first`, else one of `conds`) is ``root %
    k' == r'``, and every condition holds for the sizes ``k*q + r`` in [a, b] around `hint` (searched
    up to a bound, sampled beyond it), k the combined modulus of all of them: ``s % 2 ==
    0`` with ``(s//2) % 2 == 0`` is ``s % 4 == 0`` (TF 'same' padding at two strides);
    ``6 <= y <= 37 and y % 3 == 0`` the derived dim ``y = 3*q`` with q in [2, 12].  None
    when a single size of the class is left (the fix is then no derived dim).  An
    equality with other dims (a relation, reported on its own) is left out: at their
    example sizes it would pin `root` to one value.  `example`: a condition on the
    example's side of its clamps (``(y + min(y, 2)) % 2 == 0``: ``(y + 2) % 2 == 0``),
    where the residue class is read.  `alone`: `first` is that very class."""
    conds = [c for c in (first, *(c for c in conds if c is not first))
             if c.op != "eq" or c.free_symbols == {root}]
    steps = [residue_class(c, root) or residue_class(example(c), root) for c in conds]
    k, r = next(filter(None, steps), (0, 0))
    top = int(min(hi, max(hint, lo) * 4 + 256))

    def ok(v: int) -> bool:
        try:
            return all(holds(c, dict(fixed, **{root: v})) for c in conds)
        except (ArithmeticError, KeyError, ValueError, TypeError):
            return False

    if k == 0 or hint % k != r or not ok(hint):
        return None
    step, k = k, 0  # k: the gcd of the distances between the class's sizes where all hold
    for v in range(max(lo, 0) + (r - max(lo, 0)) % step, top + 1, step):
        k = math.gcd(k, v - hint) if v != hint and ok(v) else k
    if k == 0:
        return None
    a, b = hint, hint
    while a - k >= lo and ok(a - k):
        a -= k
    while b + k <= top and ok(b + k):
        b += k
    if a == b:
        return None
    if b + k > top and top < hi:  # sampled beyond the bound, on the class
        far = [v - (v - hint) % k for v in (top * 2, top * 3, top * 10, 1 << 20, 1 << 31)]
        b = hi if all(ok(v) for v in far if b < v <= hi) else b
    alone = (residue_class(first, root) or residue_class(example(first), root)) == (k, hint % k)
    return k, hint % k, (lo if a - k < lo else a), (hi if b + k > hi else b), alone
