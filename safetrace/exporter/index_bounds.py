"""Size relations implied by indexing with distinct values: an index that must lie in a dim.

An indexing op checks its index's values at run time: ``index_copy_(2, idx, src)`` raises
IndexError (eager and the program alike) unless every value of ``idx`` is in ``[0, L)``,
``L`` the size of the indexed dim; ``x[idx]`` and ``index_put_`` take ``[-L, L)``.  The
values are data, but when they are known to be pairwise distinct -- ``arange(n)`` plus an
offset, transformers' StaticCache writing ``arange(seq) + cumulative_length`` into a cache
of 64 slots -- at most ``L`` (``2 * L``) of them fit, so a call with ``n > L`` fails for
every value of the offset: ``n <= L`` is a relation of sizes that every successful call
meets.  `index_relations` finds those relations in a graph; `implied_bounds` puts the
bounds they imply on input sizes into the contract, so the call is refused before anything
runs (the cache length is written before the cache in eager and in the program).

Sound: only ops of the main graph (they run on every call that succeeds), only ops that
check every index (the indexed tensor has a static, non-zero shape: on an empty tensor
``index_copy_`` checks nothing), and only indices whose values are distinct by how they
are computed: ``arange`` with a non-zero step, then adding or subtracting one value (a
number, or a tensor of one element: a bijection of the integers, wrapping included), or a
copy into the same or a wider integer dtype; none of them written afterwards (a user that
writes it, or takes a view of it, voids it).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.symbolic.expr import Expr, const
from safetrace.trace.graph import calls_any

aten = torch.ops.aten

# op -> (argument position of the index, of the dim (None: from the index list), factor):
# the index's values lie in [0, L) (factor 1) or [-L, L) (factor 2)
_INDEXING = {
    aten.index_copy.default: (2, 1, 1), aten.index_copy_.default: (2, 1, 1),
    aten.index_add.default: (2, 1, 1), aten.index_add_.default: (2, 1, 1),
    aten.index_select.default: (2, 1, 1),
    aten.index_put.default: (1, None, 2), aten.index_put_.default: (1, None, 2),
    aten.index.Tensor: (1, None, 2),
}
_INDEXING_IDS = frozenset(map(id, _INDEXING))  # (calls_any's test: no target hashed)
_OFFSET = {aten.add.Tensor, aten.sub.Tensor, aten.add.Scalar, aten.sub.Scalar,
           operator.add, operator.sub}
_COPY = {aten.to.dtype, aten.to.device, aten.to.dtype_layout, aten._to_copy.default,
         aten.clone.default, aten.alias.default, aten.contiguous.default,
         aten.lift_fresh_copy.default}
_ARANGE = {aten.arange.default, aten.arange.start, aten.arange.start_step}
_INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def index_relations(graph: Any) -> list[tuple[Expr, Expr, Any, str]]:
    """(number of indices, the most that fit, the op's node, a description) for each
    indexing op of `graph` whose distinct indices must lie in a dim."""
    if not calls_any(graph, _INDEXING, _INDEXING_IDS):  # (no indexing op, the usual case)
        return []
    out = []
    for node in graph.nodes:
        spec = _INDEXING.get(getattr(node, "target", None))  # type: ignore[arg-type]
        if node.op != "call_function" or spec is None:
            continue
        found = _index_and_dim(node, spec)
        if found is None:
            continue
        index, dim, factor = found
        shape = _shape(node.args[0])
        if shape is None or not all(type(s) is int and s > 0 for s in shape) or \
                not -len(shape) <= dim < len(shape) or not _distinct(index):
            continue
        n = _numel(index)
        if n is None:
            continue
        size = shape[dim]
        op = str(node.target).replace("aten.", "").split(".")[0]
        lo = "0" if factor == 1 else f"-{size}"
        what = (f"`{op}` takes indices in [{lo}, {size}) of dim {dim % len(shape)}, and its "
                f"indices are distinct (`arange` plus an offset)")
        out.append((n, const(factor * size), node, what))
    return out


def _index_and_dim(node: Any, spec: tuple) -> tuple[Any, int, int] | None:
    pos, dim_pos, factor = spec
    if len(node.args) <= pos:
        return None
    if dim_pos is not None:
        dim = node.args[dim_pos]
        return (node.args[pos], dim, factor) if type(dim) is int else None
    given = [(d, i) for d, i in enumerate(node.args[pos]) if i is not None] \
        if isinstance(node.args[pos], (list, tuple)) else []
    if len(given) != 1:  # (several indices broadcast together: not one dim's)
        return None
    dim, index = given[0]
    return index, dim, factor


def _val(node: Any) -> Any:
    return node.meta.get("val") if hasattr(node, "meta") else None


def _shape(node: Any) -> tuple | None:
    val = _val(node)
    shape = getattr(val, "shape", None)
    return None if shape is None else tuple(shape)


def _size_expr(s: Any) -> Expr | None:
    if type(s) is int:
        return const(s)
    e = getattr(s, "expr", None)
    return e if isinstance(e, Expr) else None


def _numel(node: Any) -> Expr | None:
    shape = _shape(node)
    if shape is None or len(shape) != 1:
        return None
    return _size_expr(shape[0])


def _one_value(arg: Any) -> bool:
    """An integer (a number or a size), or an integer tensor of exactly one element (it
    broadcasts as one value)."""
    if type(arg) is int:
        return True
    val = _val(arg)
    if val is None:
        return False
    if not hasattr(val, "shape"):
        return isinstance(getattr(val, "expr", None), Expr)
    return all(type(s) is int and s == 1 for s in val.shape) and val.dtype in _INTS


def _dtype(node: Any) -> Any:
    return getattr(_val(node), "dtype", None)


def _distinct(node: Any, depth: int = 0) -> bool:
    """Whether the integer tensor `node` computes has pairwise distinct values (and keeps
    them: nothing writes into it or into a view of it)."""
    if depth > 8 or not hasattr(node, "meta") or _dtype(node) not in _INTS or \
            not _never_written(node):
        return False
    target = node.target
    if target in _ARANGE:
        step = node.args[2] if target is aten.arange.start_step and len(node.args) > 2 \
            else node.kwargs.get("step", 1)
        return type(step) is int and step != 0
    if target in _COPY:
        src = node.args[0] if node.args else None
        return _widens(_dtype(src), _dtype(node)) and _distinct(src, depth + 1)
    if target in _OFFSET and len(node.args) == 2 and node.kwargs.get("alpha", 1) == 1:
        a, b = node.args
        if _distinct(a, depth + 1) and _one_value(b):
            return _shape(a) == _shape(node)
        # (c - x too: negation is a bijection of the integers)
        return _one_value(a) and _distinct(b, depth + 1) and _shape(b) == _shape(node)
    return False


def _never_written(node: Any) -> bool:
    """Every user of `node` only reads it: takes it as an argument that the op neither
    writes nor returns a view of (``idx.zero_()`` or ``idx[0] = 5`` after ``idx =
    arange(n) + c`` would make the values repeat)."""
    for user in node.users:
        schema = getattr(user.target, "_schema", None)
        if user.op != "call_function" or schema is None:
            return False
        given = dict(zip((a.name for a in schema.arguments), user.args))
        given.update(user.kwargs)
        for arg in schema.arguments:
            value = given.get(arg.name)
            holds = value is node or isinstance(value, (list, tuple)) and node in value
            if holds and arg.alias_info is not None:
                return False
    return True


def _widens(src: Any, dst: Any) -> bool:
    """A conversion from `src` to `dst` keeps distinct integers distinct."""
    if src not in _INTS or dst not in _INTS:
        return False
    if src == dst:
        return True
    bits = {torch.uint8: 8, torch.int8: 8, torch.int16: 16, torch.int32: 32, torch.int64: 64}
    return dst != torch.uint8 and bits[dst] > bits[src]


__all__ = ["index_relations"]
