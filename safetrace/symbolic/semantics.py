"""What every expression node kind means: the kind sets and each op's Python value.

The bottom of the engine: it reads nodes only through their ``op``, ``args``, ``value`` and
``name`` (the ``Node`` protocol) and imports nothing of the engine, so that expressions
(``expr``), printing and the prover can all build on it.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
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
    "fdiv": operator.truediv, "ffloordiv": operator.floordiv, "fpow": operator.pow,
    # min/max of two floats (Python's: the first where they compare equal)
    "fmin": min, "fmax": max}
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


# every compound op's Python function: binary for the variadic ones, which fold left
PY_FNS: dict[str, Callable[..., Any]] = {
    "add": operator.add, "mul": operator.mul, "min": min, "max": max,
    "and": operator.and_, "or": operator.or_,
    "not": operator.not_, **_INT_BIN, **FBIN_OPS, **FCMP_FNS, **FUN_OPS}
VARIADIC = frozenset(("add", "mul", "min", "max", "and", "or"))
LEAF_OPS = frozenset(("const", "fconst", "sym", "fsym"))


Leaf = Callable[[Node], Any]
Call = Callable[[Callable[..., Any], tuple[Any, ...], "Node | None"], Any]


def _apply(fn: Callable[..., Any], args: tuple[Any, ...], e: Node | None) -> Any:
    return fn(*args)


@dataclass(frozen=True)
class Algebra:
    """How to lower an expression into some other world, op by op.

    ``leaf(e)`` gives a constant's or a symbol's image; ``call(fn, args, e)`` applies the
    op's function ``fns[op]`` to the images of its arguments (``e`` is the node it
    computes, or None for the inner steps of a variadic op, which fold left); ``lazy``
    makes ``and``/``or`` stop at their first deciding argument, as Python does;
    ``lookup(e)``, when given, may supply the image of a compound node before its arguments
    are lowered (a size some graph value already carries), or None.  The engine's own
    evaluation, the graph nodes of a traced size, torch's SymInts and graph nodes in a
    conversion, and the tensor checks of an AOTInductor package are all algebras over
    this one walk (``lower``).
    """

    leaf: Leaf
    call: Call = _apply
    fns: Mapping[str, Callable[..., Any]] = field(default_factory=lambda: PY_FNS)
    lazy: bool = False
    lookup: Leaf | None = None


def lower(e: Node, algebra: Algebra, memo: dict[Any, Any] | None = None) -> Any:
    """The image of ``e`` under ``algebra``, each shared node lowered once.

    Nodes are interned and shared: a window-padding chain repeats its inner divisions
    dozens of times, so a tree walk would be exponential in the chain's depth; ``memo``
    (keyed by node, identity-hashed) makes it a walk of the DAG, and may be kept across
    calls (a graph's nodes for sizes already computed).
    """
    call = None if algebra.call is _apply else algebra.call
    return _lower(e, algebra.leaf, call, algebra.fns, algebra.lazy,
                  {} if memo is None else memo, algebra.lookup)


def _lower(e: Node, leaf: Leaf | dict[str, Value], call: Call | None,
           fns: Mapping[str, Callable[..., Any]], lazy: bool, memo: dict[Any, Any],
           lookup: Leaf | None = None) -> Any:
    op = e.op
    if op in LEAF_OPS:
        if isinstance(leaf, dict):  # plain evaluation: symbols bound by name
            return e.value if e.name is None else leaf[e.name]
        return leaf(e)
    hit = memo.get(e, memo)
    if hit is not memo:
        return hit
    if lookup is not None:
        hit = lookup(e)
        if hit is not None:
            memo[e] = hit
            return hit
    fn = fns[op]
    args = e.args
    if op in VARIADIC:
        if lazy and (op == "and" or op == "or"):
            stop = op == "or"
            r: Any = not stop
            for a in args:
                if bool(_lower(a, leaf, call, fns, lazy, memo, lookup)) is stop:
                    r = stop
                    break
        else:
            r = _lower(args[0], leaf, call, fns, lazy, memo, lookup)
            last = len(args) - 1
            for i in range(1, last + 1):
                x = _lower(args[i], leaf, call, fns, lazy, memo, lookup)
                r = fn(r, x) if call is None else call(fn, (r, x), e if i == last else None)
    elif call is None:
        r = fn(*[_lower(a, leaf, call, fns, lazy, memo, lookup) for a in args])
    else:
        r = call(fn, tuple(_lower(a, leaf, call, fns, lazy, memo, lookup) for a in args), e)
    memo[e] = r
    return r


def evaluate(e: Node, b: Mapping[str, int]) -> Value:
    """Value of ``e`` with symbols bound by name, with Python semantics for every op."""
    v: Value = _lower(e, b if type(b) is dict else dict(b), None, PY_FNS, True, {})
    return v


UNDEFINED = (ArithmeticError, ValueError, TypeError)


def holds(cond: Node, b: Mapping[str, int]) -> bool:
    """Whether ``cond`` holds at binding ``b``: a part that is undefined there (a division by
    zero, an overflow, a math domain error) does not hold, and a disjunction holds when
    any defined disjunct does, whichever order they print in (``(n//(m - 2) == 1) or
    (m <= 5)`` holds at m = 2); a conjunction needs every conjunct defined and true."""
    if cond.op == "or":
        return any(holds(a, b) for a in cond.args)
    if cond.op == "and":
        return all(holds(a, b) for a in cond.args)
    try:
        return bool(evaluate(cond, b))
    except UNDEFINED:
        return False


def holds_at(cond: Node, name: str, v: int) -> bool:
    """``holds`` with the one symbol ``name`` at ``v``."""
    return holds(cond, {name: v})
