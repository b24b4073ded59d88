"""The code every side of a size split runs before the sides differ, found once.

Each side of a split (exporter/splits.py) is a whole program, traced from the start.  The
ops before the first decision the sides answer differently are the same in every side
(``start = pos[0].item()``, its checks, the embedding...); left in each ``torch.cond``
branch, a data read there makes its symbol inside a branch, which torch's re-trace of the
branches refuses (``PendingUnbackedSymbolNotFound`` in ExecuTorch's passes), and every
branch lowers the shared ops again.  Here they are found as the sides' common prefix, to
be computed once before the ``torch.cond``, their values passed to the branches as
operands.

Two ops match when they have the same target, their arguments are matched ops, the same
inputs, or sizes equal at the side's point (the reference side's ``s0 + u0`` is the
point side's ``u0 + 1``), and their outputs' metadata agree the same way.  The prefix is
walked in step over the ops of every side (size arithmetic aside: it is compared by
value, and recomputed where it is needed) and stops at the first op that differs, that
writes in place, that is not a plain operator (control flow), or that a side returns.
Each side then runs its prefix first, as before: moving it out of the cond changes no
order.  An op of the prefix keeps the reference side's metadata (its sizes are the
point side's at the point); a point side's branch narrows an operand to its own sizes as
it narrows the inputs.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Any

import torch

from safetrace.exporter.compare import argument_key, expr_key, is_size_fn, meta_key
from safetrace.symbolic.expr import Expr
from safetrace.trace.asserts import assert_sym
from safetrace.trace.mutation import mutates, written_args
from safetrace.trace.proxy import Proxy


@dataclasses.dataclass
class Prefix:
    """The reference side's ops computed before the cond (size arithmetic they need
    included, in graph order), each side's ops they stand for, and the values the
    branches read (the cond's extra operands)."""

    nodes: list[torch.fx.Node]
    matched: list[dict]          # per side: its node -> the reference's node
    extras: list[torch.fx.Node]  # reference nodes whose values some branch reads

    def __bool__(self) -> bool:
        return bool(self.nodes)


NONE = Prefix([], [], [])


def common_prefix(graphs: list[torch.fx.Graph], ref: int, substs: list[dict],
                  inputs: list[dict], backed: set[str]) -> Prefix:
    """The common prefix of `graphs` (one per side; `ref` the reference side's index;
    `substs[i]` side i's point sizes in the reference's symbols; `inputs[i]` side i's
    placeholders by their unified input name; `backed`: the input sizes' symbols)."""
    limit = math.inf
    while True:
        prefix = _walk(graphs, ref, substs, inputs, limit)
        if not prefix:
            return NONE
        bad = _bad_extra(graphs, prefix, backed)
        if bad is None:
            return prefix
        limit = bad


def _walk(graphs: list, ref: int, substs: list[dict], inputs: list[dict],
          limit: float) -> Prefix:
    bodies = [[n for n in g.nodes if n.op not in ("placeholder", "output")
               and not is_size_node(n)] for g in graphs]
    returned = [set(_output(g).all_input_nodes) for g in graphs]
    keys: list[dict] = [{} for _ in graphs]      # side i's nodes -> match keys
    ref_keys: list[dict] = [{} for _ in graphs]  # the reference's, at side i's point
    for i, names in enumerate(inputs):
        for name, node in names.items():
            keys[i][node] = ("in", name)
    for i in range(len(graphs)):
        ref_keys[i].update((node, ("in", name)) for name, node in inputs[ref].items())
    matched: list[dict] = [{} for _ in graphs]
    hoisted: list[torch.fx.Node] = []
    sizes: set = set()
    written = [_written_later(g) for g in graphs]
    for k, r in enumerate(bodies[ref]):
        if k >= limit or not _movable(r) or any(r in out for out in returned) or \
                r in written[ref]:
            break
        pairs = []
        for i, body in enumerate(bodies):
            n = body[k] if k < len(body) else None
            if n is None or n in returned[i] or n in written[i] or \
                    not _same(r, n, ref_keys[i], keys[i], substs[i]):
                break
            pairs.append((i, n))
        else:
            need = _size_inputs(r, set(hoisted) | set(inputs[ref].values()))
            if need is None:
                break
            sizes |= need
            hoisted.append(r)
            for i, n in pairs:
                matched[i][n] = r
                keys[i][n] = ref_keys[i][r] = ("n", k)
            continue
        break
    if not hoisted:
        return NONE
    order = {n: j for j, n in enumerate(graphs[ref].nodes)}
    nodes = sorted(set(hoisted) | sizes, key=order.__getitem__)
    extras: set = set()
    for i, g in enumerate(graphs):
        extras |= {matched[i][a] for a in remainder_inputs(g, matched[i])}
    return Prefix(nodes, matched, sorted(extras, key=order.__getitem__))


def _written_later(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The values some op of `graph` writes in place, directly or through views of them
    (``v0.unsqueeze_(0)``: its shape changes; a cond operand a branch writes is no
    operand torch's cond takes): they stay in each branch."""
    out: set = set()
    for n in graph.nodes:
        if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload) or \
                not mutates(n.target):
            continue
        todo = [a for a in written_args(n.target, n.args, n.kwargs)
                if isinstance(a, torch.fx.Node)]
        while todo:
            a = todo.pop()
            if a in out:
                continue
            out.add(a)
            t = a.target
            if a.op == "call_function" and isinstance(t, torch._ops.OpOverload) and a.args \
                    and isinstance(a.args[0], torch.fx.Node) and \
                    any(r.alias_info is not None for r in t._schema.returns):
                todo.append(a.args[0])  # (a view, or an in-place op's result: its base)
    return out


def remainder_inputs(graph: torch.fx.Graph, matched: dict) -> list[torch.fx.Node]:
    """The matched nodes that the rest of the side's graph reads (its ops, the size
    arithmetic they need, its outputs)."""
    needed = [n for n in graph.nodes if n not in matched and n.op != "placeholder"
              and not is_size_node(n)]
    seen: set = set()
    out: list = []
    todo = [a for n in needed for a in n.all_input_nodes]
    while todo:
        a = todo.pop()
        if a in seen:
            continue
        seen.add(a)
        if a in matched:
            out.append(a)
        elif is_size_node(a):
            todo.extend(a.all_input_nodes)
    return out


def kept_sizes(graph: torch.fx.Graph, matched: dict) -> set:
    """The size-arithmetic nodes the rest of the side's graph needs."""
    keep: set = set()
    todo = [a for n in graph.nodes if n not in matched and n.op != "placeholder"
            and not is_size_node(n) for a in n.all_input_nodes]
    while todo:
        a = todo.pop()
        if a in keep or a in matched or not is_size_node(a):
            continue
        keep.add(a)
        todo.extend(a.all_input_nodes)
    return keep


def _output(graph: torch.fx.Graph) -> torch.fx.Node:
    return next(n for n in reversed(graph.nodes) if n.op == "output")


def is_size_node(node: torch.fx.Node) -> bool:
    """Size arithmetic: compared by the value it computes, recomputed where needed."""
    return node.op == "call_function" and is_size_fn(node) and \
        not isinstance(node.meta.get("val"), Proxy) and \
        isinstance(expr_key(node.meta.get("val"), {}), Expr)


def _movable(node: torch.fx.Node) -> bool:
    """A plain operator that writes nothing (checks included); control flow, Python
    callables and in-place writes end the prefix."""
    if node.op != "call_function":
        return False
    t = node.target
    if t is assert_sym or t is operator.getitem:
        return True
    return isinstance(t, torch._ops.OpOverload) and not mutates(t)


def _key(a: Any, keys: dict, subst: dict) -> Any:
    def node_key(n: torch.fx.Node) -> Any:
        if n in keys:
            return keys[n]
        if is_size_node(n):
            return expr_key(n.meta.get("val"), subst)
        return ("other", id(n))

    return argument_key(a, node_key)


def _same(r: torch.fx.Node, n: torch.fx.Node, ref_keys: dict, keys: dict,
          subst: dict) -> bool:
    """Whether the reference's `r` computes, at the side's point, what the side's `n` does."""
    if r is n:
        return True
    if n.op != r.op or n.target is not r.target:
        return False
    if r.target is assert_sym:  # the condition (the message prints each side's sizes)
        return _key(r.args[:1], ref_keys, subst) == _key(n.args[:1], keys, {})
    return _key(r.args, ref_keys, subst) == _key(n.args, keys, {}) and \
        _key(dict(r.kwargs), ref_keys, subst) == _key(dict(n.kwargs), keys, {}) and \
        meta_key(r.meta.get("val"), subst) == meta_key(n.meta.get("val"), {})


def _size_inputs(node: torch.fx.Node, available: set) -> set | None:
    """The size-arithmetic nodes `node` reads (transitively), when each of them is
    computed from `available` nodes only; else None."""
    out: set = set()
    todo = list(node.all_input_nodes)
    while todo:
        a = todo.pop()
        if a in available or a in out:
            continue
        if not is_size_node(a):
            return None
        out.add(a)
        todo.extend(a.all_input_nodes)
    return out


def _bad_extra(graphs: list, prefix: Prefix, backed: set[str]) -> int | None:
    """Where the prefix must end instead, at the first value the branches read that
    cannot be an operand:
    - one whose sizes (or value) hold a data-dependent symbol (``u0`` of an ``.item()``):
      torch's cond takes no such operand (torch.export refuses it; ExecuTorch's passes
      replay the read before the cond with a new symbol and reject the branch); the read
      stays in each branch then, as it was;
    - a view (``pos[0]``): an operand aliasing another (the input it views) is refused by
      torch's functionalization of the cond, and a branch's write through it would not
      reach the tensor it views;
    - a tuple of values (``y.max(0)``: values and indices): torch's cond takes tensors
      and sizes as operands, no tuple (``ep.to_torch()`` failed, fuzz seed 3401)."""
    order = [n for n in prefix.nodes if not is_size_node(n)]
    for e in prefix.extras:
        t = e.target
        if not _symbols(e.meta.get("val")) <= backed or t is operator.getitem or \
                isinstance(e.meta.get("val"), (tuple, list)) or (
                isinstance(t, torch._ops.OpOverload) and any(
                    r.alias_info is not None for r in t._schema.returns)):
            return order.index(e)
    return None


def _symbols(val: Any) -> set[str]:
    """The symbols in a value's sizes (a tensor's), or in the value (a size)."""
    if isinstance(val, Proxy):
        out: set[str] = set()
        for d in val.st_meta.shape:
            out |= _symbols(d)
        return out
    if isinstance(val, (tuple, list)):
        return set().union(*(_symbols(v) for v in val)) if val else set()
    e = expr_key(val, {})
    if isinstance(e, Expr):
        return set(e.free_symbols)
    return set() if val is None or isinstance(val, (bool, int, float)) else {"?"}
