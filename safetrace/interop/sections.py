"""``tensor_split(x, k, dim)`` into sections of a dynamic size, as the slices eager cuts.

torch's decomposition of ``aten.tensor_split.sections`` (run by every tool that retraces a
converted program: ``run_decompositions``, ONNX, ExecuTorch, AOTInductor) picks the
pieces' sizes with Python arithmetic on the example's size (``n % k`` at an even example:
every piece ``n // k`` long) and keeps no guard of it, so the retraced program cut other
sizes differently from eager (``x.tensor_split(2)`` of 5 rows gave 2 + 2, eager 3 + 2).

Each piece read by index is written here as the ``slice`` it is, its bounds computed in
the graph from the dim's size: piece ``j`` starts at ``j * (n // k) + min(j, n % k)`` (the
first ``n % k`` pieces are one longer), which holds for every ``n`` (0 included) and which
torch retraces symbolically.  A node whose pieces are also read as a whole (handed to an
op as a list) keeps its ``tensor_split``; the deploy tools refuse it
(``retrace_refusals.py``)."""

from __future__ import annotations

import operator
from typing import Any

import torch

_aten = torch.ops.aten
_SECTIONS = _aten.tensor_split.sections


def sections_as_slices(graph: torch.fx.Graph) -> bool:
    """Rewrite every ``tensor_split.sections`` of a dynamic size in `graph` whose users all
    take one piece (``getitem``) into slices; whether `graph` changed."""
    changed = False
    for node in list(graph.find_nodes(op="call_function", target=_SECTIONS)):
        if dynamic_sections(node) and all(
                u.target is operator.getitem and isinstance(u.args[1], int) and
                u.args[1] >= 0 for u in node.users):  # (a negative index: kept whole)
            _as_slices(graph, node)
            changed = True
    return changed


def dynamic_sections(node: torch.fx.Node) -> bool:
    """Whether `node` (``tensor_split.sections``) splits a symbolic size in more than one
    section (`x`, `k` and `dim` as the graph holds them)."""
    x, k, dim = _args(node)
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or not isinstance(dim, int) or val.dim() == 0:
        return False
    return not (isinstance(k, int) and k == 1) and \
        not isinstance(val.shape[dim % val.dim()], int)


def _args(node: torch.fx.Node) -> tuple:
    x = node.args[0]
    k = node.args[1] if len(node.args) > 1 else node.kwargs.get("sections")
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    return x, k, dim


def _as_slices(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    x, k, dim = _args(node)
    d = dim % x.meta["val"].dim()
    trace = node.meta.get("stack_trace")
    made: list[torch.fx.Node] = []

    def call(target: Any, args: tuple, val: Any) -> torch.fx.Node:
        new = graph.call_function(target, args)
        new.meta["val"] = val
        if trace:
            new.meta["stack_trace"] = trace
        made.append(new)
        return new

    with graph.inserting_before(node):
        n_val = x.meta["val"].shape[d]
        n = call(_aten.sym_size.int, (x, d), n_val)
        q = call(operator.floordiv, (n, k), n_val // _val(k))
        r = call(operator.mod, (n, k), n_val % _val(k))
        starts: dict[int, Any] = {}

        def start(j: int) -> Any:  # j * q + min(j, r): a node, or 0 (k: n)
            if j == 0:
                return 0
            if isinstance(k, int) and j == k:
                return n
            if j not in starts:
                jq = call(operator.mul, (q, j), q.meta["val"] * j) if j != 1 else q
                lo = call(torch.sym_min, (r, j), torch.sym_min(r.meta["val"], j))
                starts[j] = call(operator.add, (jq, lo), jq.meta["val"] + lo.meta["val"])
            return starts[j]

        for piece in sorted(node.users, key=lambda u: u.args[1]):
            j = piece.args[1]
            view = call(_SLICE, (x, d, start(j), start(j + 1)), piece.meta.get("val"))
            view.meta = {**piece.meta, **{"val": piece.meta.get("val")}}
            if trace and "stack_trace" not in view.meta:
                view.meta["stack_trace"] = trace
            piece.replace_all_uses_with(view)
    for piece in list(node.users):
        graph.erase_node(piece)
    graph.erase_node(node)
    for new in reversed(made):  # (a bound no piece reads: none kept)
        if not new.users and new.op == "call_function" and new.target is not _SLICE:
            graph.erase_node(new)


_SLICE = _aten.slice.Tensor


def _val(k: Any) -> Any:
    return k.meta["val"] if isinstance(k, torch.fx.Node) else k


def split_sections(graph: torch.fx.Graph, subgraphs: dict) -> None:
    """`sections_as_slices` on the converted program's `graph` and on each of its
    `subgraphs` (name -> GraphModule, a branch's or loop body's; recompiled where
    changed)."""
    sections_as_slices(graph)
    for gm in subgraphs.values():
        for m in gm.modules() if isinstance(gm, torch.nn.Module) else ():
            if isinstance(m, torch.fx.GraphModule) and sections_as_slices(m.graph):
                m.recompile()
