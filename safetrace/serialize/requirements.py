"""Checks a loaded program's graph makes before a kernel, of what only that point can tell.

A kernel's requirement on sizes (a view of the same element count, a broadcast of equal
or unit dims) that the file's contract leaves open is checked before each call where the
call's input sizes decide it (``peak.CallCheck``).  Where they do not, it is checked in
the kernel's own graph, just before it: in a ``torch.cond`` branch (it runs only where
taken), in a loop body (its carried numbers change from one iteration to the next), and
on a size read from data (``.item()``).  The condition is lowered to nodes computing it
from what that graph already holds (its placeholders' and earlier results' sizes, its
numbers) and handed to ``assert_sym``, which refuses the call (``RuntimeAssertionError``
naming the node and the condition) before the kernel runs.  A condition of the input
sizes that the graph cannot compute there is checked before each call instead (stricter:
also where the branch would not be taken); one of a size read from data that the graph
holds only inside a larger expression (``[u0 * u1]``) is left to the kernel's own check.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.errors.load import requirement_in_graph
from safetrace.meta import TensorMeta
from safetrace.serialize.allocations import call_node, is_guard
from safetrace.symbolic.expr import dag_nodes
from safetrace.symbolic.semantics import PY_FNS, Algebra, lower
from safetrace.trace.asserts import assert_sym
from safetrace.trace.symnodes import split_linear

_SYM_SIZE = torch.ops.aten.sym_size.int
_MARK = requirement_in_graph("", "", "", "")[:24]  # (how this module's checks begin)
_ARITH = frozenset(PY_FNS.values()) | {operator.abs}  # (abs: ``guard_sizes``' own)


def guard(graphs: list, inline: list, known: set, before_call: list,
          env: Any = None) -> list:
    """Insert a check before each node of ``inline`` ((condition, node, why, the values
    the loader worked out for the nodes of its graph)); a condition of the input sizes
    (symbols in ``known``) that its graph cannot compute goes to ``before_call``.  A
    condition that divides by a size (``2 % s0``, the exporter's record where its facts
    keep ``s0 >= 1``) is checked in the graph with that size >= 1 (``_insert``): a call
    where it is 0 is refused, never divided by 0.  The
    checks of this kind a file holds (a loaded program saved again) are dropped first from
    ``graphs``: the loader's own replace them.  Returns what it could check nowhere
    ((condition, node, why): a size read from data that the graph holds only inside a
    larger expression, left to the kernel's own check)."""
    for g in graphs:
        strip(g)
    done: set = set()
    dropped: list = []
    cache: dict = {}
    for cond, node, why, values in inline:
        if (node, cond) in done:
            continue
        done.add((node, cond))
        names = {str(x) for x in cond.free_symbols}
        # (a division by a value the graph computes could raise ZeroDivisionError there)
        sources = _sources(node, values, names, cache) if all(
            x.op not in ("floordiv", "mod") or _divisor_ok(x.args[1], env)
            for x in dag_nodes(cond)) else None
        if sources is None:
            if names <= known:
                before_call.append((cond, node, why))
            else:  # (a size read from data that the graph holds only inside a larger
                dropped.append((cond, node, why))  # expression: the kernel's own check)
            continue
        _insert(node, cond, why, sources)
    return dropped


def _divisor_ok(divisor: Any, env: Any) -> bool:
    """Whether a check may divide by ``divisor``: a constant, or an expression of the
    input sizes that the contract's ranges (``env``) keep >= 0 (``_insert`` checks it is
    >= 1 and divides by ``max(divisor, 1)``: no ZeroDivisionError in the graph)."""
    if divisor.op == "const":
        return True
    if env is None or not {str(x) for x in divisor.free_symbols} <= set(env.symbols):
        return False
    return env.bounds(divisor).lo >= 0


def is_own_check(node: torch.fx.Node) -> bool:
    """Whether ``node`` is a check ``guard`` put in a graph (a loaded program saved again):
    ``strip`` drops it at load, so it is no fact for the graph's later nodes."""
    return node.op == "call_function" and node.target is assert_sym and \
        len(node.args) == 2 and isinstance(node.args[1], str) and \
        node.args[1].startswith(_MARK)


def strip(graph: torch.fx.Graph) -> None:
    """Erase the checks ``guard`` and ``allocations.guard_sizes`` put in a graph (and the
    arithmetic only they use)."""
    for node in reversed(list(graph.nodes)):
        if (is_own_check(node) or is_guard(node)) and not node.users:
            pending = [node]
            while pending:
                n = pending.pop()
                if n.users or n.op != "call_function" or not (
                        n is node or n.target in (_SYM_SIZE, operator.getitem) or
                        n.target in _ARITH):
                    continue
                pending.extend(n.all_input_nodes)
                graph.erase_node(n)


def _sources(node: torch.fx.Node, values: dict, names: set, cache: dict) -> dict | None:
    """symbol name -> (a node of ``node``'s graph before it, a dim of its tensor or None
    for a number, c, k) where that value is ``c * symbol + k``, for each of ``names``;
    None if one has none.  ``cache``: per graph evaluation, each symbol's first source and
    each node's position (one walk of the graph, not one per check)."""
    key = (id(node.graph), id(values))
    if key not in cache:
        first: dict = {}
        order = {n: i for i, n in enumerate(node.graph.nodes)}
        for n in node.graph.nodes:
            v = values.get(n)
            dims = enumerate(v.shape) if isinstance(v, TensorMeta) else [
                ((i, d), x) for i, t in enumerate(v) if isinstance(t, TensorMeta)
                for d, x in enumerate(t.shape)] if isinstance(v, list) else [(None, v)]
            for d, x in dims:
                e = getattr(x, "expr", None)
                if not isinstance(x, torch.SymInt) or e is None or len(e.free_symbols) != 1:
                    continue
                name = str(next(iter(e.free_symbols)))
                linear = split_linear(e, name) if name not in first else None
                if linear is not None and linear[1].op == "const" and linear[0] != 0:
                    first[name] = (n, d, linear[0], linear[1].value)
        cache[key] = (first, order)
    first, order = cache[key]
    found = {name: first[name] for name in names if name in first}
    if len(found) != len(names) or any(order[src[0]] >= order[node] for src in found.values()):
        return None
    return found


def _insert(node: torch.fx.Node, cond: Any, why: str, sources: dict) -> None:
    graph = node.graph
    read: dict = {}

    def leaf(e: Any) -> Any:
        if e.op in ("const", "fconst"):
            return e.value
        if e.name not in read:
            src, d, c, k = sources[e.name]
            if isinstance(d, tuple):  # (dim d[1] of value d[0] of a list)
                src, d = call_node(graph, operator.getitem, (src, d[0])), d[1]
            if d is not None:
                src = graph.call_function(_SYM_SIZE, (src, d))
                src.meta["val"] = None
            if k != 0:
                src = call_node(graph, operator.sub, (src, k))
            read[e.name] = src if c == 1 else call_node(graph, operator.floordiv, (src, c))
        return read[e.name]

    positive: list = []  # (each divisor that is not a constant: checked >= 1)

    def call(fn: Any, args: tuple, e: Any) -> Any:
        if e is not None and e.op in ("floordiv", "mod") and e.args[1].op != "const":
            positive.append(call_node(graph, operator.ge, (args[1], 1)))
            args = (args[0], call_node(graph, max, (args[1], 1)))
        return call_node(graph, fn, args)

    with graph.inserting_before(node):
        ok = lower(cond, Algebra(leaf, call))
        for p in positive:
            ok = call_node(graph, operator.and_, (p, ok))
        if not isinstance(ok, torch.fx.Node):  # (a constant: False, the node always fails)
            ok = call_node(graph, operator.and_, (bool(ok), True))
        check = graph.call_function(assert_sym, (ok, requirement_in_graph(
            node.name, str(node.target), str(cond), why)))
    check.meta["val"] = None
    check.meta["stack_trace"] = node.meta.get("stack_trace", "")


__all__ = ["guard", "strip"]
