"""A view's strides on its dims of size 0 or 1, as eager computes them.

``strides.py`` keeps a view's strides exact on its dims of size >= 2 only (what layout
decisions read).  ``x.stride()`` returns every dim's stride, and eager's rule for a dim of
size 1 is its own (``unsqueeze`` gives ``size * stride`` of the dim it lands before, a
``view`` gives a dim of size 1 the stride of the chunk it falls in, ``expand`` gives 0 or
the stride below, as torch's ``inferUnsqueezeGeometry``, ``computeStride`` and
``inferExpandGeometry`` do).  Here those rules are replayed on symbolic sizes along the
chain of views (and dense copies) that made the tensor, from a row-major tensor
(``st_contig`` True: a new result, a contiguous input or state) or one whose strides are
known on its dims of size >= 2 (each stride marked full or not: a dim that may be 1 is
read only where the rule reads it at sizes >= 2).  A branch of a rule the facts decide is
taken; one they do not is the example's answer as a guard, as eager's own C++ branch on
sizes is (a named range is split or refused there, ``Dim.AUTO`` checks it).  None where
the answer would rest on a stride not known, on an empty tensor (whose views eager
strides by other rules), on data-dependent sizes, or on an op this table does not know:
the caller refuses.
"""
from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.rules.common import cond_true, normalize_dim, open_question
from safetrace.symbolic import sym_and, sym_not, sym_or
from safetrace.trace.proxy import Proxy
from safetrace.trace.strides import COPIES, known_strides, product, row_major, view_layout

aten = torch.ops.aten
_CHAIN = 64  # views walked back from one tensor, at most


def _decide(cond: Any) -> bool | None:
    """True / False where `cond` holds / fails at every size of the space; else the
    example's answer as a guard (as eager's C++ branches on sizes: a named range where it
    does not hold everywhere is split there or refused, ``Dim.AUTO`` checks it), None
    where the sizes are data-dependent."""
    if cond_true(cond):
        return True
    if cond_true(sym_not(cond)):
        return False
    return open_question(cond)


def _is_one(s: Any) -> bool | None:
    return s == 1 if s.__class__ is int else _decide(s <= 1)  # (a size >= 1 here)


def _mul(a: Any, b: Any) -> Any:
    if a.__class__ is int and a == 1:
        return b
    return a if b.__class__ is int and b == 1 else a * b


def _cancel(a: list, b: list) -> tuple:
    """The products of `a` and of `b` less the factors they share (a size proven equal):
    ``8*s1`` against ``s0 * 8*s1`` compares 1 with ``s0``, which the facts decide."""
    rest = list(b)
    left = []
    for x in a:
        for i, y in enumerate(rest):
            if x is y or (x.__class__ is int and y.__class__ is int and x == y) or \
                    (x.__class__ is not int and y.__class__ is not int and cond_true(x == y)):
                del rest[i]
                break
        else:
            left.append(x)
    return product(left), product(rest)


def _at_most(a: list, b: list) -> bool:
    """Whether the product of sizes `a` is proven <= that of `b` (sizes >= 1): after
    their shared factors, or as a whole quotient of them (``8*s0*s1 // (8*s1)``)."""
    v, t = _cancel(a, b)
    if cond_true(v <= t):
        return True
    return v.__class__ is not int and cond_true(t % v == 0) and cond_true(t // v >= 1)


def view_strides(shape: tuple, strides: list, new: tuple) -> list | None:
    """torch's ``computeStride`` for ``x.view(new)`` of a non-empty tensor, every branch
    decided for every size; None where one is not, or where eager's view would fail."""
    if not shape:
        return [1] * len(new)
    out: list = [1] * len(new)
    view_d = len(new) - 1
    base = strides[-1]
    chunk: list = []  # (the sizes of this chunk of the input, of the view: their products
    taken: list = []  # are tensor_numel and view_numel)
    for d in range(len(shape) - 1, -1, -1):
        chunk.append(shape[d])
        # (sizes are >= 1 here: "not 1" is written ">= 2", which the facts decide better)
        end = True if d == 0 else _decide(sym_and(
            shape[d - 1] >= 2, strides[d - 1] != _mul(product(chunk), base)))
        if end is None:
            return None
        if not end:
            continue
        while view_d >= 0:
            # (eager takes the dim while view_numel < tensor_numel or it is 1: so where
            # view_numel * size <= tensor_numel, whatever the size)
            more = True if _at_most([*taken, new[view_d]], chunk) else None
            if more is None:
                v, t = _cancel(taken, chunk)
                more = _decide(sym_or(v < t, new[view_d] <= 1))
            if more is None:
                return None
            if not more:
                break
            out[view_d] = _mul(product(taken), base)
            taken.append(new[view_d])
            view_d -= 1
        v, t = _cancel(taken, chunk)
        if not _decide(v == t):  # (eager's view fails otherwise)
            return None
        if d > 0:
            base = strides[d - 1]
            chunk, taken = [], []
    return out if view_d == -1 else None


def _arg(node: Any, i: int, name: str, default: Any) -> Any:
    return node.args[i] if i < len(node.args) else node.kwargs.get(name, default)


def _transpose(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    a = normalize_dim(_arg(node, 1, "dim0", 0), len(st), "transpose")
    b = normalize_dim(_arg(node, 2, "dim1", 0), len(st), "transpose")
    st[a], st[b] = st[b], st[a]
    return st


def _permute(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    return [st[normalize_dim(d, len(st), "permute")] for d in _arg(node, 1, "dims", ())]


def _same(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    return st


def _reversed(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    return st[::-1]


def _select(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    d = normalize_dim(_arg(node, 1, "dim", 0), len(st), "select")
    return st[:d] + st[d + 1:]


def _slice(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    d = normalize_dim(_arg(node, 1, "dim", 0), len(st), "slice")
    step = _arg(node, 4, "step", 1)
    if type(step) is not int:
        return None
    # (torch's slice: the dim's stride times the step, any size; a result of size >= 2
    # comes from a dim of size >= 2)
    st[d] = (_mul(st[d][0], step), st[d][1])
    return st


def _unsqueeze(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    d = normalize_dim(_arg(node, 1, "dim", 0), len(st) + 1, "unsqueeze")
    # (inferUnsqueezeGeometry: the size times the stride of the dim it lands before)
    return st[:d] + [(1, True) if d == len(st) else
                     (_mul(shape[d], st[d][0]), st[d][1])] + st[d:]


def _squeeze(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    dims = _arg(node, 1, "dim", None)
    n = len(st)
    dims = range(n) if dims is None else [dims] if type(dims) is int else dims
    dropped = set()
    for d in dims:
        d = normalize_dim(d, n, "squeeze") if n else 0
        one = _is_one(shape[d]) if n else False
        if one is None:
            return None
        if one:
            dropped.add(d)
    kept = [s for i, s in enumerate(st) if i not in dropped]
    return kept if len(kept) == len(new) else None


def _expand(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    """inferExpandGeometry: stride 0 where the size changes (from 1), a new leading dim
    of size 1 the size times the stride of the dim after it."""
    lead = len(new) - len(shape)
    out: list = [(0, True)] * len(new)
    for i in range(len(new) - 1, -1, -1):
        d = i - lead
        if d >= 0:
            size, stride = shape[d], st[d]
        else:
            size = 1
            stride = (1, True) if i == len(new) - 1 else \
                (_mul(new[i + 1], out[i + 1][0]), out[i + 1][1])
        if size.__class__ is int and new[i].__class__ is int:
            changes = size != new[i]
        else:
            changes = _decide(size != new[i])
            if changes is None:
                return None
        out[i] = (0, True) if changes else stride
    return out


def _view(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    """``computeStride`` reads the strides of dims of size 1 only to chain them (where a
    stride known on dims >= 2 answers), save the last dim's, the first chunk's base."""
    if not st:
        return [(1, True)] * len(new)
    if not (st[-1][1] or cond_true(shape[-1] >= 2)):
        return None
    found = view_strides(shape, [v for v, _ in st], new)
    return None if found is None else [(v, True) for v in found]


def _reshape(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    """A view where eager's ``computeStride`` finds one at every size, a row-major copy
    where it finds none at any size."""
    found = _view(shape, st, new, new)
    if found is not None:
        return found
    if view_layout(shape, tuple(v for v, _ in st), new) is COPIES:
        return [(v, True) for v in row_major(new)]
    return None


def _dense_copy(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    """``to``, ``type_as``, ``clone`` (preserve_format) of a tensor contiguous to
    ``is_contiguous()`` at every size (non-overlapping and dense): ``empty_like`` keeps
    its strides, every one (or it is the tensor itself)."""
    fmts = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, torch.memory_format)]
    if any(f is not torch.preserve_format for f in fmts):  # (to.dtype takes it by position)
        return None
    want = row_major(shape)
    if not all(cond_true(sym_or(s <= 1, v == w)) for s, (v, _), w in zip(shape, st, want)):
        return None
    return st


def _new_row_major(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    """``masked_fill`` (out of place): a ``clone(contiguous_format)`` filled in place."""
    return [(v, True) for v in row_major(new)]


def _unbind_piece(shape: tuple, st: list, node: Any, new: tuple) -> list | None:
    d = normalize_dim(_arg(node, 1, "dim", 0), len(st), "unbind")
    return st[:d] + st[d + 1:]


_RULES: dict = {
    aten.transpose.int: _transpose, aten.permute.default: _permute, aten.t.default: _reversed,
    aten.alias.default: _same, aten.detach.default: _same, aten.lift_fresh.default: _same,
    aten.select.int: _select, aten.slice.Tensor: _slice, aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.default: _squeeze, aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze,
    aten.expand.default: _expand, aten.view.default: _view, aten._unsafe_view.default: _view,
    aten.reshape.default: _reshape,
    aten._to_copy.default: _dense_copy, aten.type_as.default: _dense_copy,
    aten.to.dtype: _dense_copy, aten.to.dtype_layout: _dense_copy, aten.to.device: _dense_copy,
    aten.to.other: _dense_copy, aten.clone.default: _dense_copy,
    aten.masked_fill.Scalar: _new_row_major, aten.masked_fill.Tensor: _new_row_major,
}
# pieces (getitem of these): the input's strides, less the dim unbind removes
_PIECES: dict = {aten.split.Tensor: _same, aten.split_with_sizes.default: _same,
                 aten.unbind.int: _unbind_piece}
_IN_PLACE_KEEP = frozenset({"copy_", "fill_", "zero_", "masked_fill_"})


def _in_place_same(op: Any) -> bool:
    """An in-place op that writes values and keeps its tensor's sizes and strides."""
    name = getattr(op, "_opname", "")
    if not name.endswith("_") or not getattr(op, "_schema", None) or \
            not op._schema.is_mutable:
        return False
    return name in _IN_PLACE_KEEP or torch.Tag.pointwise in op.tags


def _nonempty(shape: tuple) -> bool:
    """Every size >= 1 (an empty tensor's views take other strides): proven, or a guard
    where the example's size is (``Dim.AUTO``: a check of the inputs; a named range that
    admits 0 is split there or refused, naming this line)."""
    for s in shape:
        if s.__class__ is int:
            if s < 1:
                return False
        elif not cond_true(s >= 1) and open_question(s >= 1) is not True:
            return False
    return True


def _start(val: Proxy) -> list | None:
    """The strides of a tensor that starts a chain: known on its dims of size >= 2 (a
    dim that may be 1 is marked so, its stride read only where it is >= 2)."""
    lay = known_strides(val)
    shape = val.st_meta.shape
    if lay is None or not _nonempty(shape):
        return None
    return [(v, cond_true(s >= 2)) for s, v in zip(shape, lay[0])]


def full_strides(x: Proxy) -> tuple | None:
    """Every stride of `x` as eager gives it at each size of the declared space (see the
    module's text), or None."""
    steps: list = []
    node = x.st_node
    while True:
        val = node.meta.get("val") if node is not None else None
        if type(val) is not Proxy:
            return None
        if val.st_contig is True:  # (row-major strides on every dim: the chain's start)
            shape = val.st_meta.shape
            if not _nonempty(shape):
                return None
            st = [(v, True) for v in row_major(shape)]
            break
        if len(steps) == _CHAIN or node.op != "call_function" or not node.args:
            st = _start(val)
            if st is None:
                return None
            shape = val.st_meta.shape
            break
        target = node.target
        if target is operator.getitem:
            maker = node.args[0]
            rule = _PIECES.get(getattr(maker, "target", None))
            src = maker.args[0] if rule is not None and maker.args else None
            step = maker
        else:
            rule = _RULES.get(target) or (_same if _in_place_same(target) else None)
            src, step = node.args[0], node
        if rule is None or not isinstance(src, torch.fx.Node):
            st = _start(val)  # (the chain starts here, its strides known on dims >= 2)
            if st is None:
                return None
            shape = val.st_meta.shape
            break
        steps.append((rule, step, val))
        node = src
    for rule, node, val in reversed(steps):
        new = tuple(val.st_meta.shape)
        if not _nonempty(new):
            return None
        try:
            st = rule(tuple(shape), list(st), node, new)
        except Exception:  # (an argument the table does not read: not known)
            return None
        if st is None or len(st) != len(new):
            return None
        shape = new
    if not all(f for _, f in st):
        return None
    st = [v for v, _ in st]
    if x.st_layout is not None and not all(  # (the chain agrees with the traced strides)
            cond_true(a == b) for s, a, b in zip(shape, st, x.st_layout[0])
            if cond_true(s >= 2)):
        return None
    return tuple(st)
