"""What every expression node kind means: the kind sets and each op's Python value.

The bottom of the engine: it reads nodes only through their ``op``, ``args``, ``value`` and
``name`` (the ``Node`` protocol) and imports nothing of the engine, so that expressions
(``expr``), printing and the prover can all build on it.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Mapping, Protocol, Sequence

Value = int | float | bool


class Node(Protocol):
    """What printing and evaluation read of an expression node."""

    @property
    def op(self) -> str: ...

    @property
    def args(self) -> Sequence[Node]: ...

    @property
    def value(self) -> Value | None: ...

    @property
    def name(self) -> str | None: ...


CMP_OPS = frozenset(("eq", "ne", "lt", "le", "ge"))
FCMP_OPS = frozenset(("flt", "fle", "fgt", "fge", "feq", "fne"))
BOOL_OPS = CMP_OPS | FCMP_OPS | frozenset(("and", "or", "not"))

# float arithmetic on sizes, with Python's semantics (module ``floats``)
FBIN_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "fadd": operator.add, "fsub": operator.sub, "fmul": operator.mul,
    "fdiv": operator.truediv, "ffloordiv": operator.floordiv, "fpow": operator.pow}
# math.sqrt/exp/log... of a float (each monotone increasing where it is defined)
MATH_FNS: dict[str, Callable[[Any], Any]] = {
    "fsqrt": math.sqrt, "fexp": math.exp, "flog": math.log, "flog2": math.log2,
    "flog10": math.log10}
FUN_OPS: dict[str, Callable[[Any], Any]] = {"float": float, "fneg": operator.neg,
                                            "trunc": int, "round": round, **MATH_FNS}
FCMP_FNS: dict[str, Callable[[Any, Any], bool]] = {
    "flt": operator.lt, "fle": operator.le, "fgt": operator.gt, "fge": operator.ge,
    "feq": operator.eq, "fne": operator.ne}
FLOAT_OPS = frozenset(("fconst", "fsym", "float", "fneg")) | frozenset(FBIN_OPS) | \
    frozenset(MATH_FNS)
INT_FROM_FLOAT = frozenset(("trunc", "round"))

_INT_BIN: dict[str, Callable[[Any, Any], Any]] = {
    "floordiv": operator.floordiv, "mod": operator.mod, "eq": operator.eq,
    "ne": operator.ne, "lt": operator.lt, "le": operator.le, "ge": operator.ge}


def evaluate(e: Node, b: Mapping[str, int]) -> Value:
    """Value of ``e`` with symbols bound by name, with Python semantics for every op."""
    op = e.op
    if op == "const" or op == "fconst":
        return e.value  # type: ignore[return-value]
    if op == "sym" or op == "fsym":
        return b[e.name]  # type: ignore[index]
    # nodes are interned and shared: a window-padding chain repeats its inner divisions
    # dozens of times, so a tree walk is exponential in the chain's depth; walk the DAG
    return _eval(e, b, {})


def _eval(e: Node, b: Mapping[str, int], memo: dict[int, Value]) -> Value:
    op = e.op
    if op == "const" or op == "fconst":
        return e.value  # type: ignore[return-value]
    if op == "sym" or op == "fsym":
        return b[e.name]  # type: ignore[index]
    key = id(e)  # the node outlives this walk, so its id is stable
    if key in memo:
        return memo[key]
    r: Value
    args = e.args
    if op == "add":
        s: Value = 0
        for a in args:
            s += _eval(a, b, memo)
        r = s
    elif op == "mul":
        p: Value = 1
        for a in args:
            p *= _eval(a, b, memo)
        r = p
    elif op == "min":
        r = min(_eval(a, b, memo) for a in args)
    elif op == "max":
        r = max(_eval(a, b, memo) for a in args)
    elif op == "and":
        r = all(_eval(a, b, memo) for a in args)
    elif op == "or":
        r = any(_eval(a, b, memo) for a in args)
    elif op == "not":
        r = not _eval(args[0], b, memo)
    elif op in FUN_OPS:
        r = FUN_OPS[op](_eval(args[0], b, memo))
    else:
        x, y = _eval(args[0], b, memo), _eval(args[1], b, memo)
        fn = _INT_BIN.get(op) or FBIN_OPS.get(op) or FCMP_FNS[op]
        r = fn(x, y)
    memo[key] = r
    return r


def holds_at(cond: Node, name: str, v: int) -> bool:
    """Whether ``cond`` holds with the one symbol ``name`` at ``v`` (Python semantics); an
    error there (a division by zero, an overflow, a math domain error) counts as False."""
    try:
        return bool(evaluate(cond, {name: v}))
    except (ZeroDivisionError, OverflowError, ValueError):
        return False
