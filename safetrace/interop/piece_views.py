"""One piece of a view returning several (``split``, ``chunk``, ``tensor_split``,
``unbind``) as the single view it is: a ``slice`` of its tensor along the split dim, from
the sum of the earlier pieces' sizes to that plus its own (``unbind``: a ``select``).

A write through such a piece inside a converted branch then has a scatter operator that
reaches the base (``slice_scatter``), so the branch stays functional, as torch's cond and
the tools retracing it need (a write left in place through an ``unbind`` piece made
torch's ``run_decompositions`` specialize the program to the example's sizes)."""

from __future__ import annotations

import operator
from typing import Any

import torch

_aten = torch.ops.aten
_SPLITS = ("split", "split_with_sizes", "chunk", "tensor_split")


def as_single_view(graph: torch.fx.Graph, piece: torch.fx.Node) -> torch.fx.Node | None:
    """Replace `piece` (``getitem(split_op(x, ...), i)``) by its ``slice``/``select`` of
    ``x`` in `graph` (every user reads the new node); None, `graph` untouched, where the
    operator or its arguments are not one this knows."""
    many, i = piece.args[0], piece.args[1]
    t = many.target
    if not isinstance(i, int) or not isinstance(t, torch._ops.OpOverload) or \
            not isinstance(many.args[0], torch.fx.Node):
        return None
    base = many.args[0]
    vals, base_val = many.meta.get("val"), base.meta.get("val")
    if not isinstance(vals, (list, tuple)) or not isinstance(base_val, torch.Tensor) or \
            not 0 <= i < len(vals):
        return None
    dim = _dim(many, base_val.dim())
    if dim is None:
        return None
    name = t._opname
    with graph.inserting_before(piece.next):
        if name == "unbind":
            view = graph.call_function(_aten.select.int, (base, dim, i))
        elif name in _SPLITS:
            start, start_val = 0, 0
            for j in range(i):
                earlier = _item(graph, many, j, vals[j])
                size = graph.call_function(_aten.sym_size.int, (earlier, dim))
                size.meta["val"] = vals[j].shape[dim]
                start_val = start_val + vals[j].shape[dim]
                start = size if j == 0 else _add(graph, start, size, start_val)
            own = graph.call_function(_aten.sym_size.int, (piece, dim))
            own.meta["val"] = vals[i].shape[dim]
            end = own if i == 0 else _add(graph, start, own, start_val + vals[i].shape[dim])
            view = graph.call_function(_aten.slice.Tensor, (base, dim, start, end))
        else:
            return None
    view.meta = dict(piece.meta)
    for user in list(piece.users):
        if user is not view and user.target is not _aten.sym_size.int:
            user.replace_input_with(piece, view)
    return view


def _item(graph: torch.fx.Graph, many: torch.fx.Node, j: int, val: Any) -> torch.fx.Node:
    for u in many.users:
        if u.target is operator.getitem and u.args[1] == j:
            return u
    node = graph.call_function(operator.getitem, (many, j))
    node.meta["val"] = val
    return node


def _add(graph: torch.fx.Graph, a: Any, b: Any, val: Any) -> torch.fx.Node:
    node = graph.call_function(operator.add, (a, b))
    node.meta["val"] = val
    return node


def _dim(node: torch.fx.Node, rank: int) -> int | None:
    """The ``dim`` argument of `node`'s operator, made non-negative."""
    args = node.target._schema.arguments
    k = next((n for n, a in enumerate(args) if a.name == "dim"), None)
    if k is None:
        return None
    if "dim" in node.kwargs:
        dim = node.kwargs["dim"]
    elif len(node.args) > k:
        dim = node.args[k]
    else:
        dim = args[k].default_value
    if not isinstance(dim, int) or not -rank <= dim < max(rank, 1):
        return None
    return dim % rank if rank else dim


def pieces_as_views(graph: torch.fx.Graph, node: Any) -> bool:
    """The pieces of splits that `node` was taken through made slices (`as_single_view`);
    whether one was."""
    made = False
    while isinstance(node, torch.fx.Node) and (is_view(node) or is_piece(node)):
        if is_piece(node):
            view = as_single_view(graph, node)
            if view is None:
                return made
            made, node = True, view
        node = node.args[0]
    return made


def is_piece(node: torch.fx.Node) -> bool:
    """Whether `node` is one output of a view returning several (``split``, ``unbind``)."""
    return node.op == "call_function" and node.target is operator.getitem and \
        isinstance(node.args[0], torch.fx.Node) and is_view(node.args[0])


def is_view(node: torch.fx.Node) -> bool:
    t = node.target
    return isinstance(t, torch._ops.OpOverload) and not t._schema.is_mutable and \
        any(r.alias_info is not None for r in t._schema.returns)
