"""Hypothesis strategies: raw expression trees, their Python value, and symbol bindings."""

from __future__ import annotations

from typing import Any, Mapping

from hypothesis import strategies as st

import safetrace.symbolic as S
from safetrace.symbolic import Expr, to_expr
from safetrace.symbolic.expr import sym

# Each symbol: (name, lo, hi) -- the ranges the env declares and bindings respect.
SYMBOLS = [("s0", 0, 12), ("s1", 2, 9), ("s2", -5, 5), ("s3", 1, 40)]
NAMES = [n for n, _, _ in SYMBOLS]

ARITH = ["add", "sub", "mul", "floordiv", "mod", "min", "max", "neg"]
CMPS = ["lt", "le", "gt", "ge", "eq", "ne"]

Raw = Any  # ("sym", name) | ("const", int) | (op, raw, raw) | ("neg", raw)


def leaves() -> st.SearchStrategy[Raw]:
    """Symbols and small int constants, negatives included."""
    return st.one_of(st.sampled_from(NAMES).map(lambda n: ("sym", n)),
                     st.integers(-7, 7).map(lambda v: ("const", v)))


def _extend(children: st.SearchStrategy[Raw]) -> st.SearchStrategy[Raw]:
    binary = st.tuples(st.sampled_from([o for o in ARITH if o != "neg"]), children, children)
    return st.one_of(binary, children.map(lambda c: ("neg", c)))


def _no_const_zero_divisor(r: Raw) -> bool:
    if r[0] in ("floordiv", "mod") and r[2] == ("const", 0):
        return False
    return all(_no_const_zero_divisor(c) for c in r[1:] if isinstance(c, tuple))


def raw_exprs(max_leaves: int = 12) -> st.SearchStrategy[Raw]:
    """Random arithmetic trees of depth <= 4 (no literal division by zero)."""
    return st.recursive(leaves(), _extend, max_leaves=max_leaves).filter(
        lambda r: depth(r) <= 4 and _no_const_zero_divisor(r))


def raw_conds() -> st.SearchStrategy[Raw]:
    """Random comparisons between two random trees."""
    return st.tuples(st.sampled_from(CMPS), raw_exprs(6), raw_exprs(6))


def depth(r: Raw) -> int:
    """Depth of a raw tree (a leaf has depth 0)."""
    if r[0] in ("sym", "const"):
        return 0
    return 1 + max(depth(c) for c in r[1:])


def bindings() -> st.SearchStrategy[dict[str, int]]:
    """A value for every symbol inside its declared range."""
    return st.fixed_dictionaries({n: st.integers(lo, hi) for n, lo, hi in SYMBOLS})


def build(r: Raw) -> Expr:
    """The Expr built through the public operators."""
    op = r[0]
    if op == "sym":
        return sym(r[1])
    if op == "const":
        return to_expr(r[1])
    if op == "neg":
        return -build(r[1])
    a, b = build(r[1]), build(r[2])
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "floordiv":
        return a // b
    if op == "mod":
        return a % b
    return getattr(S, op + "_" if op in ("min", "max") else op)(a, b)


_PY = {"lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
       "ge": lambda x, y: x >= y, "eq": lambda x, y: x == y, "ne": lambda x, y: x != y,
       "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
       "floordiv": lambda x, y: x // y, "mod": lambda x, y: x % y, "min": min, "max": max}


def value(r: Raw, b: Mapping[str, int]) -> Any:
    """Plain-Python value of a raw tree (may raise ZeroDivisionError)."""
    op = r[0]
    if op == "sym":
        return b[r[1]]
    if op == "const":
        return r[1]
    if op == "neg":
        return -value(r[1], b)
    return _PY[op](value(r[1], b), value(r[2], b))
