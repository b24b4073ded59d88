"""Graph nodes for symbolic sizes used as operator arguments.

A size like ``s0 + s1`` that reaches an op (``x.view(s0 + s1, -1)``) becomes nodes that
compute it at run time: ``aten.sym_size.int`` on the input the symbol came from, then
``operator`` arithmetic.  Hints are never baked into the graph.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta.symtypes import SYM_CLASSES
from safetrace.symbolic import SymFloat, make_bool, make_int
from safetrace.symbolic.expr import Expr, from_terms, terms
from safetrace.symbolic.semantics import Algebra, lower
from safetrace.trace.proxy import Proxy
from safetrace.trace.source import stack_trace
from safetrace.trace.recorder import Recorder


def sym_to_node(tr: Recorder, v: Any) -> Any:
    """The node computing symbolic value `v` (static values are returned as they are)."""
    if type(v) not in SYM_CLASSES and isinstance(v, (int, float, bool)):
        return v
    env = v.env
    if getattr(v, "opaque", False):  # a float the engine cannot express: its recipe
        node = tr.scope.sym_nodes.get(id(v))
        if node is None:
            node = _emit(tr, v.fn, tuple(sym_to_node(tr, a) for a in v.args), None, env)
            node.meta["val"] = v
            tr.scope.sym_nodes[id(v)] = node
            tr.keepalive.append(v)  # the id stays v's
        return node
    e = env.simplify(v.expr)
    if e.op == "const" or e.op == "fconst":
        return e.value
    return expr_node(tr, e, env)


def expr_node(tr: Recorder, e: Any, env: Any) -> Any:
    """The graph node computing `e` (a constant stays a constant); the nodes of sizes
    already computed are shared through ``tr.scope.sym_nodes``."""
    def leaf(x: Any) -> Any:
        if x.op == "const" or x.op == "fconst":
            return x.value
        node = tr.scope.sym_nodes.get(x)  # fsym: a float read from data (.item())
        if node is None:
            node = tr.scope.sym_nodes[x] = tr.symbol_node(x.name)
        return node

    def call(fn: Any, args: tuple, x: Any) -> Any:
        return _emit(tr, fn, args, x, env)

    return lower(e, Algebra(leaf, call), tr.scope.sym_nodes)


def _value(e: Any, env: Any) -> Any:
    if e.op in SymFloat.FLOAT_OPS:
        return SymFloat._make(e, env)
    return make_bool(e, env) if e.is_bool else make_int(e, env)


def _emit(tr: Recorder, fn: Any, args: tuple, e: Any, env: Any) -> torch.fx.Node:
    node = tr.scope.graph.call_function(fn, args)
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


def size_source(name: str, v: Any, node: Any) -> tuple | None:
    """Where the graph can read symbol `name` from an op's result `v` (a size linear in
    it, or an integer value linear in it), as a ``sym_sources`` entry, or None."""
    if hasattr(v, "expr") and not isinstance(v, torch.Tensor):
        if (v.expr.op in ("sym", "fsym") and v.expr.name == name) or bool_read(v.expr) == name:
            return node  # the symbol itself (an unbacked int/float) or a bool read `u == 1`
        if name in v.expr.free_symbols:
            found = split_linear(v.expr, name)
            if found is not None:
                offset = _as_int(found[1])
                plain = isinstance(offset, int) and offset == 0 and found[0] == 1
                return node if plain else (node, None, found[0], offset)
        return None
    if isinstance(v, Proxy):
        for d, size in enumerate(v.st_meta.shape):
            if not isinstance(size, int) and name in size.expr.free_symbols:
                found = split_linear(size.expr, name)
                if found is not None:
                    return (v.st_node, d, found[0], _as_int(found[1]))
    return None


def _as_int(e: Any) -> Any:
    """A constant expression as its int."""
    return int(e.value) if e.op == "const" else e


def bool_read(e: Expr) -> str | None:
    """The symbol `u` of ``u == 1``, how a bool ``.item()`` reads its unbacked 0/1 value
    (the graph's bool is `u` as an int), else None."""
    if e.op != "eq":
        return None
    args = {a.op: a for a in e.args}
    if set(args) == {"sym", "const"} and args["const"].value == 1:
        return str(args["sym"].name)
    return None
