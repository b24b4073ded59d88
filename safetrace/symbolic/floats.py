"""Float expressions with the exact semantics of Python's float arithmetic (IEEE double).

A float computed from sizes (``n * 0.7``, ``h / 3``, ``w ** 0.5``) is kept as the tree of
operations the user wrote, in their order: IEEE rounding makes ``(a*b)*c`` differ from
``a*(b*c)``, and the exact rational value of ``5 * 0.7`` (just under 3.5) differs from
Python's ``5 * 0.7 == 3.5``.  Evaluating such a tree applies Python's own operators to the
same values, so the hints, the graph and the run-time checks compute exactly what eager
code computes.  The prover reasons about them with float intervals: IEEE operations are
monotone, so an operation applied to the ends of intervals bounds every rounded result.

``"trunc"`` (``int(x)``) and ``"round"`` turn floats into ints; ``math.floor(x)`` is
``int(x // 1)`` and ``math.ceil(x)`` is ``-int(-x // 1)``, both exact for floats.
"""

from __future__ import annotations

import math
from typing import Callable

from safetrace.symbolic.expr import FALSE, TRUE, Expr, const, fconst, make_node, neg
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.semantics import (
    FBIN_OPS, FCMP_FNS, FCMP_OPS, FLOAT_OPS, FUN_OPS, INT_FROM_FLOAT, MATH_FNS, Value,
)

FCMP_NEGATION = {"flt": "fge", "fle": "fgt", "fgt": "fle", "fge": "flt", "feq": "fne",
                 "fne": "feq"}
_SWAP = {"lt": "flt", "le": "fle", "gt": "fgt", "ge": "fge", "eq": "feq", "ne": "fne"}


def is_float(e: Expr) -> bool:
    """True for float-valued expressions."""
    return e.op in FLOAT_OPS


def _folded(v: object) -> Expr:
    if isinstance(v, bool):
        return TRUE if v else FALSE
    if isinstance(v, int):
        return const(v)
    if isinstance(v, float):
        return fconst(v)
    raise TypeError(f"a float operation gave {type(v).__name__}")  # complex: never a size


def _value(e: Expr) -> Value | None:
    return e.value if e.op in ("const", "fconst") else None


def fun_value(op: str, x: Value) -> Value:
    """Python's value of ``float(x)``, ``-x``, ``int(x)`` or ``round(x)``."""
    return FUN_OPS[op](x)  # type: ignore[no-any-return]


def fbin(op: str, a: Expr, b: Expr) -> Expr:
    """``a <op> b`` in Python float semantics (one operand at least a float, or ``/``)."""
    x, y = _value(a), _value(b)
    if x is not None and y is not None:
        return _folded(FBIN_OPS[op](x, y))
    return make_node(op, (a, b))


def fun(op: str, a: Expr) -> Expr:
    """``float(a)``, ``-a``, ``int(a)`` or ``round(a)`` of a float."""
    x = _value(a)
    if x is not None:
        return _folded(fun_value(op, x))
    if op == "fneg" and a.op == "fneg":
        return a.args[0]
    if op == "float" and is_float(a):
        return a
    return make_node(op, (a,))


def floor(a: Expr) -> Expr:
    """``math.floor(a)`` of a float: ``int(a // 1)``, exact."""
    return fun("trunc", fbin("ffloordiv", a, const(1)))


def ceil(a: Expr) -> Expr:
    """``math.ceil(a)`` of a float: ``-int(-a // 1)``, exact."""
    return neg(floor(fun("fneg", a)))


def fcmp(kind: str, a: Expr, b: Expr) -> Expr:
    """The comparison ``a <kind> b`` (lt, le, gt, ge, eq, ne) with Python's semantics.

    An int against a float constant is an exact int condition (Python compares ints and
    floats by their exact values): ``n > 2.5`` is ``n >= 3``."""
    op = _SWAP.get(kind, kind)
    x, y = _value(a), _value(b)
    if x is not None and y is not None:
        return TRUE if FCMP_FNS[op](x, y) else FALSE
    if not is_float(a) and b.op == "fconst":
        r = _int_vs_const(op, a, float(b.value))  # type: ignore[arg-type]
        if r is not None:
            return r
    if not is_float(b) and a.op == "fconst":
        flip = {"flt": "fgt", "fle": "fge", "fgt": "flt", "fge": "fle"}.get(op, op)
        r = _int_vs_const(flip, b, float(a.value))  # type: ignore[arg-type]
        if r is not None:
            return r
    return make_node(op, (a, b))


def _int_vs_const(op: str, x: Expr, c: float) -> Expr | None:
    """``x <op> c`` for an int ``x`` as a comparison of ints (exact, as Python compares);
    the caller (``canon.compare``) puts it in canonical form."""
    if math.isnan(c):
        return TRUE if op == "fne" else FALSE
    if math.isinf(c):
        below = c > 0  # every int lies below +inf and above -inf
        return TRUE if {"flt": below, "fle": below, "fgt": not below, "fge": not below,
                        "feq": False, "fne": True}[op] else FALSE
    lo, hi = math.floor(c), math.ceil(c)
    if lo != hi and op in ("feq", "fne"):
        return FALSE if op == "feq" else TRUE
    k = {"flt": hi, "fle": lo, "fgt": lo, "fge": hi}.get(op, lo)
    return make_node(op, (x, const(k)))


def negate(c: Expr) -> Expr:
    """``not c`` of a float comparison (sizes are never NaN)."""
    return make_node(FCMP_NEGATION[c.op], c.args)


def rebuild(op: str, args: tuple[Expr, ...]) -> Expr:
    """A float node of kind ``op`` from new arguments (constants folded)."""
    if op in FBIN_OPS:
        return fbin(op, args[0], args[1])
    if op in FUN_OPS:
        return fun(op, args[0])
    return fcmp(op, args[0], args[1])


# --- float intervals ---------------------------------------------------------------------
IntBounds = Callable[[Expr], Range]
Interval = tuple[float, float]
_FULL: Interval = (-math.inf, math.inf)


def _fix(lo: float, hi: float) -> Interval:
    return (-math.inf if lo != lo else lo, math.inf if hi != hi else hi)


def _corners(f: Callable[[float, float], float], a: Interval, b: Interval) -> Interval:
    vals = []
    for x in a:
        for y in b:
            try:
                v = f(x, y)
            except (ZeroDivisionError, OverflowError):
                return _FULL
            if v != v:  # inf * 0, inf - inf: the finite values behind inf give anything
                return _FULL
            vals.append(v)
    return min(vals), max(vals)


def fbounds(e: Expr, ib: IntBounds) -> Interval:
    """Bounds of every value the float expression ``e`` takes (Python semantics), given the
    int bounds ``ib`` of its int parts.  IEEE operations are monotone in each operand, so
    an operation applied to interval ends bounds every rounded result in between."""
    op = e.op
    if op == "fconst":
        v = float(e.value)  # type: ignore[arg-type]
        return (v, v) if v == v else _FULL
    if has_data_float(e):  # inf and nan possible: interval ends prove nothing
        return _FULL
    if op not in FLOAT_OPS:
        r = ib(e)
        return float(r.lo), float(r.hi)
    if op == "float":
        return fbounds(e.args[0], ib)
    if op == "fneg":
        lo, hi = fbounds(e.args[0], ib)
        return -hi, -lo
    if op in MATH_FNS:
        return _math_bounds(MATH_FNS[op], op, fbounds(e.args[0], ib))
    a, b = fbounds(e.args[0], ib), fbounds(e.args[1], ib)
    if op == "fadd":
        return _fix(a[0] + b[0], a[1] + b[1])
    if op == "fsub":
        return _fix(a[0] - b[1], a[1] - b[0])
    if op == "fmul":
        return _corners(lambda x, y: 0.0 if x == 0 or y == 0 else x * y, a, b)
    if op == "fdiv":
        if b[0] <= 0 <= b[1]:
            return _FULL
        return _corners(lambda x, y: x / y if math.isfinite(y) else (0.0 if math.isfinite(x)
                                                                      else math.nan), a, b)
    if op == "ffloordiv" and b[0] > 0 and b[0] == b[1] and math.isfinite(b[0]):
        return (a[0] // b[0] if math.isfinite(a[0]) else a[0],
                a[1] // b[0] if math.isfinite(a[1]) else a[1])
    if op == "fpow" and b[0] == b[1] and a[0] >= 0:  # x ** k for x >= 0: monotone in x
        k = b[0]
        try:
            ends = (a[0] ** k, a[1] ** k)
        except (ZeroDivisionError, OverflowError):
            return _FULL
        return _fix(min(ends), max(ends))
    if op == "fmin":
        return min(a[0], b[0]), min(a[1], b[1])
    if op == "fmax":
        return max(a[0], b[0]), max(a[1], b[1])
    return _FULL


_DOMAIN_LOW = {"fsqrt": 0.0, "flog": 0.0, "flog2": 0.0, "flog10": 0.0}


def _math_bounds(fn: Callable[[float], float], op: str, a: Interval) -> Interval:
    """An increasing math function over an interval: its values at the ends.  Below the
    domain Python raises (nothing to bound there); at log's 0 also, so -inf is a bound."""
    low = _DOMAIN_LOW.get(op, -math.inf)
    if a[1] < low:
        return _FULL
    ends = []
    for x in (max(a[0], low), a[1]):
        try:
            ends.append(fn(x))
        except OverflowError:
            ends.append(math.inf)
        except ValueError:  # log(0.0): values just above 0 go down to any negative number
            ends.append(-math.inf)
    return _fix(ends[0], ends[1])


def has_data_float(e: Expr) -> bool:
    """True when ``e`` depends on a float read from data (an ``fsym``)."""
    if e.op == "fsym":
        return True
    return any(has_data_float(a) for a in e.args)


def int_bounds(e: Expr, ib: IntBounds) -> Range:
    """Int range of ``int(x)`` / ``round(x)`` (both monotone)."""
    lo, hi = fbounds(e.args[0], ib)
    f = FUN_OPS[e.op]  # int or round: monotone
    return Range(f(lo) if math.isfinite(lo) else lo, f(hi) if math.isfinite(hi) else hi)


def decide_cmp(c: Expr, ib: IntBounds) -> bool | None:
    """A float comparison settled by the operands' intervals, else None."""
    if has_data_float(c):
        return None
    a, b = fbounds(c.args[0], ib), fbounds(c.args[1], ib)
    op = c.op
    if op in ("fgt", "fge"):
        a, b = b, a
        op = "flt" if op == "fgt" else "fle"
    if op == "flt":
        return True if a[1] < b[0] else False if a[0] >= b[1] else None
    if op == "fle":
        return True if a[1] <= b[0] else False if a[0] > b[1] else None
    apart = a[1] < b[0] or b[1] < a[0]
    same = a[0] == a[1] == b[0] == b[1]
    r = False if apart else True if same else None
    return r if r is None or op == "feq" else not r


# --- monotonicity in one symbol ------------------------------------------------------------
def direction(e: Expr, s: str, ib: IntBounds) -> int | None:
    """+1 / -1 when ``e`` is non-decreasing / non-increasing in the int symbol ``s`` over
    the env's ranges, 0 when it does not depend on it, None when unknown."""
    if s not in e.free_symbols:
        return 0
    op = e.op
    if op == "sym":
        return 1
    if op == "fsym":
        return None
    if op in ("float", "trunc", "round") or op in MATH_FNS:  # all non-decreasing
        return direction(e.args[0], s, ib)
    if op in ("fneg",):
        d = direction(e.args[0], s, ib)
        return None if d is None else -d
    if op in ("add", "fadd"):
        return _combine([direction(a, s, ib) for a in e.args])
    if op == "fsub":
        d1, d2 = direction(e.args[0], s, ib), direction(e.args[1], s, ib)
        return _combine([d1, None if d2 is None else -d2])
    if op in ("mul", "fmul"):
        return _product_direction(e.args, s, ib)
    if op in ("floordiv", "ffloordiv", "fdiv"):
        num, den = e.args
        if s in den.free_symbols:
            if op != "fdiv" or s in num.free_symbols:
                return None
            sign = _sign(num, ib)
            rb = fbounds(den, ib)
            d = direction(den, s, ib)
            if sign is None or d is None or rb[0] <= 0 <= rb[1]:
                return None
            return -d * sign
        sign = _sign(den, ib)
        d = direction(num, s, ib)
        return None if sign is None or d is None or sign == 0 else d * sign
    if op in ("min", "max", "fmin", "fmax"):
        return _combine([direction(a, s, ib) for a in e.args], same_only=True)
    return None


def _sign(e: Expr, ib: IntBounds) -> int | None:
    lo, hi = fbounds(e, ib)
    return 1 if lo >= 0 else -1 if hi <= 0 else None


def _combine(ds: list[int | None], same_only: bool = False) -> int | None:
    out = 0
    for d in ds:
        if d is None:
            return None
        if d and out and d != out:
            return None
        out = out or d
    return out


def _product_direction(args: tuple[Expr, ...], s: str, ib: IntBounds) -> int | None:
    varying = [a for a in args if s in a.free_symbols]
    if len(varying) != 1:
        # a product of several varying non-negative non-decreasing factors is monotone too
        if all(_sign(a, ib) == 1 and direction(a, s, ib) == 1 for a in varying):
            sign = 1
            for a in args:
                if a not in varying:
                    g = _sign(a, ib)
                    if g is None:
                        return None
                    sign *= g
            return sign
        return None
    d = direction(varying[0], s, ib)
    sign = 1
    for a in args:
        if a is not varying[0]:
            g = _sign(a, ib)
            if g is None:
                return None
            sign *= g
    return None if d is None else d * sign


def has_float(e: Expr) -> bool:
    """True when a float operation occurs anywhere in ``e``."""
    if e.op in FLOAT_OPS or e.op in FCMP_OPS or e.op in INT_FROM_FLOAT:
        return True
    return any(has_float(a) for a in e.args)


# --- exact int conditions for float decisions -------------------------------------------------
INT64 = (-(1 << 63), (1 << 63) - 1)  # every size and every value read from data fits


def threshold(pred: Callable[[int], bool], increasing: bool, value: bool, h: int,
              lo: float, hi: float) -> tuple[str, int] | None:
    """The int condition ``s >= t`` / ``s <= t`` equivalent, over ``[lo, hi]``, to a
    predicate monotone in ``s`` that is ``value`` at ``h``: ``("true", 0)`` when it holds
    on the whole range, None when the range has no finite end to search from."""
    a = int(max(lo, INT64[0]))
    b = int(min(hi, INT64[1]))
    # the answer's side: the set where pred == value is an interval ending at a or b
    up = increasing == value  # the set extends upward from its boundary
    end = a if up else b
    if pred(end) == value:
        return ("true", 0)
    return ("ge" if up else "le", _edge(pred, value, h, end))


def _edge(pred: Callable[[int], bool], value: bool, inside: int, outside: int) -> int:
    """The point nearest ``outside`` of the run of ``pred == value`` that holds ``inside``
    (``pred(inside) == value``, ``pred(outside) != value``), by bisection."""
    while abs(outside - inside) > 1:
        m = (inside + outside) // 2
        if pred(m) == value:
            inside = m
        else:
            outside = m
    return inside


def cmp_direction(c: Expr, d: Expr | None, s: str, ib: IntBounds) -> int | None:
    """+1 when the condition ``c`` is monotone non-decreasing in ``s`` (False...True), -1
    when non-increasing, None when unknown.  ``d`` is the int ``d`` of ``d <= 0`` for an
    int comparison (None for float comparisons)."""
    op = c.op
    if op in ("flt", "fle", "fgt", "fge"):
        da, db = direction(c.args[0], s, ib), direction(c.args[1], s, ib)
        diff = _combine([da, None if db is None else -db])
        if diff is None or diff == 0:
            return None
        return -diff if op in ("flt", "fle") else diff
    if op in ("le", "lt", "ge") and d is not None:
        dd = direction(d, s, ib)
        return None if dd is None or dd == 0 else -dd
    return None
