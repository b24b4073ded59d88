"""Graph nodes for symbolic sizes used as operator arguments.

A size like ``s0 + s1`` that reaches an op (``x.view(s0 + s1, -1)``) becomes nodes that
compute it at run time: ``aten.sym_size.int`` on the input the symbol came from, then
``operator`` arithmetic.  Hints are never baked into the graph.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.symbolic import SymFloat, make_bool, make_int
from safetrace.symbolic.expr import Expr, from_terms, terms
from safetrace.symbolic.semantics import MATH_FNS
from safetrace.trace.source import stack_trace

_BINARY = {"floordiv": operator.floordiv, "mod": operator.mod, "eq": operator.eq,
           "ne": operator.ne, "lt": operator.lt, "le": operator.le, "ge": operator.ge,
           # float arithmetic on sizes, with Python's semantics (symbolic/floats.py)
           "fadd": operator.add, "fsub": operator.sub, "fmul": operator.mul,
           "fdiv": operator.truediv, "ffloordiv": operator.floordiv, "fpow": operator.pow,
           "flt": operator.lt, "fle": operator.le, "fgt": operator.gt, "fge": operator.ge,
           "feq": operator.eq, "fne": operator.ne}
_UNARY = {"not": operator.not_, "fneg": operator.neg, "float": float, "trunc": int,
          "round": round, **MATH_FNS}
_FOLD = {"add": operator.add, "mul": operator.mul, "min": min, "max": max,
         "and": operator.and_, "or": operator.or_}


def sym_to_node(tr: Any, v: Any) -> Any:
    """The node computing symbolic value `v` (static values are returned as they are)."""
    if isinstance(v, (int, float, bool)):
        return v
    env = v.env
    if getattr(v, "opaque", False):  # a float the engine cannot express: its recipe
        node = tr.sym_nodes.get(id(v))
        if node is None:
            node = _emit(tr, v.fn, tuple(sym_to_node(tr, a) for a in v.args), None, env)
            node.meta["val"] = v
            tr.sym_nodes[id(v)] = node
            tr.keepalive.append(v)  # the id stays v's
        return node
    e = env.simplify(v.expr)
    if e.op == "const" or e.op == "fconst":
        return e.value
    return expr_node(tr, e, env)


def expr_node(tr: Any, e: Any, env: Any) -> Any:
    if e.op == "const" or e.op == "fconst":
        return e.value
    node = tr.sym_nodes.get(e)
    if node is not None:
        return node
    if e.op == "sym" or e.op == "fsym":  # fsym: a float read from data (.item())
        node = tr.symbol_node(e.name)
    elif e.op in _UNARY:
        node = _emit(tr, _UNARY[e.op], (expr_node(tr, e.args[0], env),), e, env)
    elif e.op in _BINARY:
        a, b = (expr_node(tr, x, env) for x in e.args)
        node = _emit(tr, _BINARY[e.op], (a, b), e, env)
    elif e.op in _FOLD:
        fn = _FOLD[e.op]
        args = [expr_node(tr, x, env) for x in e.args]
        acc = args[0]
        for x in args[1:]:
            acc = _emit(tr, fn, (acc, x), None, env)
        node = acc
        node.meta["val"] = _value(e, env)
    else:  # pragma: no cover - the engine's op set is closed
        raise NotImplementedError(f"no graph form for expression op {e.op!r}")
    tr.sym_nodes[e] = node
    return node


def _value(e: Any, env: Any) -> Any:
    if e.op in SymFloat.FLOAT_OPS:
        return SymFloat._make(e, env)
    return make_bool(e, env) if e.is_bool else make_int(e, env)


def _emit(tr: Any, fn: Any, args: tuple, e: Any, env: Any) -> torch.fx.Node:
    node = tr.graph.call_function(fn, args)
    node.meta["stack_trace"] = stack_trace(2)
    if e is not None:
        node.meta["val"] = _value(e, env)
    return node


def split_linear(e: Expr, name: str) -> tuple[int, Expr] | None:
    """``(c, rest)`` with ``e == c * name + rest`` and `name` not in `rest`, or None when `e`
    is not linear in symbol `name` (``2*u0 + s0`` -> ``(2, s0)``)."""
    coef = 0
    rest: dict = {}
    for mono, c in terms(e):
        if len(mono) == 1 and mono[0].op == "sym" and mono[0].name == name:
            coef += c
        elif any(name in f.free_symbols for f in mono):
            return None
        else:
            rest[mono] = rest.get(mono, 0) + c
    return (coef, from_terms(rest)) if coef else None


def bool_read(e: Expr) -> str | None:
    """The symbol `u` of ``u == 1``, how a bool ``.item()`` reads its unbacked 0/1 value
    (the graph's bool is `u` as an int), else None."""
    if e.op != "eq":
        return None
    args = {a.op: a for a in e.args}
    if set(args) == {"sym", "const"} and args["const"].value == 1:
        return str(args["sym"].name)
    return None
