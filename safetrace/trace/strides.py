"""Exact strides of views while tracing, as torch's kernels compute them.

``layout.py`` knows whether a traced tensor is contiguous (``st_contig``).  A view of a
tensor whose strides are known (a contiguous one, or another such view) has strides that
follow from its input's by torch's own rules: here they are computed on our symbolic
sizes and kept on the proxy as ``st_layout`` = ``(strides, offset_zero)`` while its
``st_contig`` is None.  The strides are exact on every dim of size >= 2 of a non-empty
tensor (dims of size 0 or 1 may carry any stride in eager: kernels and meta functions
differ there, and ``is_contiguous()`` and ``view`` ignore them); a dim of a literal size
1 is left out of every decision.  Every decision holds for every size of the declared
space (``cond_true``), else the result's layout stays unknown, as before.

What it gives: a view whose strides come back row-major (``x.view(b, s, h, e)
.transpose(1, 2)`` after ``scaled_dot_product_attention``, whose output is allocated
like its query: ``empty_like`` keeps the query's dim order) is contiguous again, so
``.contiguous()`` returns it (no copy, as in eager and torch.export) and a ``view`` of
a split part is decided without replaying the example (``layout._check_view``).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.rules.common import cond_true, normalize_dim
from safetrace.symbolic import sym_or
from safetrace.trace.proxy import Proxy

aten = torch.ops.aten
LOOSE = "loose"  # (layout.LOOSE: is_contiguous() holds, exact strides and offset not known)


def _one(s: Any) -> bool:
    return type(s) is int and s == 1


def _same(a: Any, b: Any) -> bool:
    if a.__class__ is int and b.__class__ is int:
        return a == b
    return a is b or cond_true(a == b)


def _order(shape: tuple, a: int, b: int, sa: Any, sb: Any) -> int | None:
    """-1 / 1 / 0 for strides ``sa`` <, > or == ``sb`` of dims a and b, decided where both
    dims have size >= 2 (the order of a dim of size 1 changes no other stride); None where
    not proven."""
    if sa.__class__ is int and sb.__class__ is int:
        return -1 if sa < sb else 1 if sa > sb else 0
    small = (shape[a] < 2, shape[b] < 2)
    if cond_true(sym_or(*small, sa < sb)):
        return -1
    if cond_true(sym_or(*small, sa > sb)):
        return 1
    return 0 if cond_true(sym_or(*small, sa == sb)) else None


def product(sizes: Any) -> Any:
    """The product of `sizes`, a factor 1 left out (no ``1*s`` expression)."""
    p: Any = 1
    for s in sizes:
        p = s if type(p) is int and p == 1 else p * s
    return p


def row_major(shape: tuple) -> list:
    """Row-major strides (plain products of the sizes after each dim)."""
    out: list = [1] * len(shape)
    acc: Any = 1
    for d in range(len(shape) - 1, -1, -1):
        out[d] = acc
        s = shape[d]
        acc = s if acc.__class__ is int and acc == 1 else acc * s
    return out


def known_strides(p: Any) -> tuple | None:
    """``(strides, offset_zero)`` of a traced tensor, exact on its dims of size >= 2, or
    None when its layout is not known (a contiguous one: row-major)."""
    if type(p) is not Proxy:
        return None
    if p.st_contig is None:
        return p.st_layout
    return tuple(row_major(p.st_meta.shape)), p.st_contig is True


# Ops whose result is a new row-major tensor whatever their operands' layout (matmul's
# folds copy a strided operand; embedding gathers rows); factories read no tensor.
_FRESH = frozenset({"linear", "mm", "addmm", "bmm", "baddbmm", "matmul", "embedding",
                    "_addmm_activation"})
_STATE_KINDS = ("parameter", "buffer", "constant")
_WALK = 400  # nodes looked at for one tensor, at most


def fixed_layout(node: Any) -> bool:
    """Whether the layout of `node`'s value is the same at every run: it depends on no
    input's layout (an input may come with any strides unless the program checks them),
    only on the program's state and on results that are new row-major tensors."""
    seen: set = set()
    add = seen.add
    todo = [node]
    pop, extend = todo.pop, todo.extend
    tensor = torch.Tensor
    while todo:
        n = pop()
        if n in seen:
            continue
        add(n)
        if len(seen) > _WALK:
            return False
        if not isinstance(n.meta.get("val"), tensor):
            continue  # (a size read, a number: no layout to carry)
        op = n.op
        if op == "placeholder":
            if n.meta.get("kind") not in _STATE_KINDS:
                return False
            continue
        if op != "call_function":
            return False
        if getattr(n.target, "_opname", None) in _FRESH:
            continue
        # (fx's all_input_nodes, read from the node's own table: a Python property's
        # call and a list less per node)
        extend(n._input_nodes if _INPUT_TABLE else n.all_input_nodes)
    return True


# (whether fx's nodes keep their inputs in the table all_input_nodes lists, in order)
_INPUT_TABLE = hasattr(getattr(torch._C, "_NodeBase", None), "_input_nodes")


def strided(p: Proxy) -> bool:
    """Whether `p` (of exact strides) is proven not contiguous: non-empty, and a dim of
    size >= 2 whose stride is not the product of the sizes after it."""
    if p.st_layout is None:
        return False
    shape = p.st_meta.shape
    if not all(type(s) is int and s >= 1 or type(s) is not int and cond_true(s >= 1)
               for s in shape):
        return False
    return any(cond_true(s >= 2) and cond_true(st != product(shape[d + 1:]))
               for d, (s, st) in enumerate(zip(shape, p.st_layout[0])))


def exact_strides(p: Proxy) -> tuple | None:
    """The strides eager gives view `p` at every size of the declared space (what
    ``x.stride()`` returns, as torch.export traces it), or None: known only where the
    view's strides are traced and every dim is known >= 2 (a dim of size 0 or 1 may carry
    any stride in eager)."""
    if p.st_contig is not None or p.st_layout is None:
        return None
    if not all(cond_true(s >= 2) for s in p.st_meta.shape):
        return None
    return tuple(p.st_layout[0])


def classify(shape: tuple, strides: tuple, zero: bool) -> tuple:
    """(st_contig, st_layout) of a tensor of these sizes and strides: True for row-major
    strides at offset 0 on dims all >= 2, LOOSE for row-major ones otherwise (what
    ``is_contiguous()`` accepts), else None with the strides kept."""
    for s, st, want in zip(shape, strides, row_major(shape)):
        if not (s.__class__ is int and s == 1) and not _same(st, want):
            return None, (tuple(strides), zero)
    if zero and all(type(s) is int and s >= 2 or type(s) is not int and cond_true(s >= 2)
                    for s in shape):
        return True, None
    return LOOSE, None


def _arg(args: tuple, kwargs: dict, i: int, name: str, default: Any) -> Any:
    return args[i] if i < len(args) else kwargs.get(name, default)


def _transpose(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, zero = x
    n = len(st)
    a = normalize_dim(_arg(args, kwargs, 1, "dim0", 0), n, "transpose")
    b = normalize_dim(_arg(args, kwargs, 2, "dim1", 0), n, "transpose")
    st = list(st)
    st[a], st[b] = st[b], st[a]
    return st, zero


def _permute(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, zero = x
    dims = _arg(args, kwargs, 1, "dims", None)
    return [st[normalize_dim(d, len(st), "permute")] for d in dims], zero


def _t(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    return list(reversed(x[0])), x[1]


def _alias(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    return list(x[0]), x[1]


def _select(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, _ = x
    d = normalize_dim(_arg(args, kwargs, 1, "dim", 0), len(st), "select")
    return st[:d] + st[d + 1:], False


def _slice(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, zero = x
    d = normalize_dim(_arg(args, kwargs, 1, "dim", 0), len(st), "slice")
    start, step = _arg(args, kwargs, 2, "start", None), _arg(args, kwargs, 4, "step", 1)
    if type(step) is not int:
        return None
    st = list(st)
    st[d] = st[d] * step if step != 1 else st[d]
    return st, zero and (start is None or (type(start) is int and start == 0))


def _unsqueeze(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, zero = x
    d = normalize_dim(_arg(args, kwargs, 1, "dim", 0), len(st) + 1, "unsqueeze")
    return st[:d] + [1] + st[d:], zero  # (a dim of size 1: its stride is never read)


def _squeeze(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, zero = x
    dims = _arg(args, kwargs, 1, "dim", None)
    n = len(st)
    dims = range(n) if dims is None else [dims] if type(dims) is int else dims
    drop = {normalize_dim(d, n, "squeeze") for d in dims}
    drop = {d for d in drop if _one(shape[d])}
    kept = [s for i, s in enumerate(st) if i not in drop]
    return (kept, zero) if len(kept) == len(out.shape) else None


def _expand(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, zero = x
    new = out.shape
    lead = len(new) - len(shape)
    res: list = [0] * lead
    for s, stride, want in zip(shape, st, new[lead:]):
        if _one(s):
            res.append(0 if not _one(want) else stride)
        elif _same(s, want):
            res.append(stride)
        else:
            return None  # (a size that may be 1, expanded: which it is is not known)
    return res, zero


COPIES = "copies"  # (view_layout: no view has these sizes: reshape copies)


def view_layout(shape: tuple, strides: tuple, new: tuple) -> Any:
    """torch's ``computeStride`` on symbolic sizes: the strides of ``x.view(new)`` for a
    tensor of these sizes and strides, where the view keeps a whole dim of the input
    within one dim of the result or splits one dim into several (merging dims whose
    strides chain); ``COPIES`` where a merge of dims of sizes >= 2 is proven impossible
    for every size (eager's view refuses, reshape copies); None where neither is proven."""
    olds = [(s, st) for s, st in zip(shape, strides) if not _one(s)]
    news = [i for i, s in enumerate(new) if not _one(s)]
    out: list = [1] * len(new)
    i = j = 0
    while i < len(olds) or j < len(news):
        if i == len(olds) or j == len(news):
            return None
        size, stride = olds[i]
        if _same(size, new[news[j]]):  # one dim to one dim
            out[news[j]] = stride
            i, j = i + 1, j + 1
            continue
        # one dim of the input split into new[news[j:k]]
        k, p = j, 1
        while k < len(news) and not (k > j and _same(p, size)):
            p = new[news[k]] if k == j else p * new[news[k]]
            k += 1
        if _same(p, size) and k - j >= 2:
            for m in range(k - 1, j - 1, -1):
                out[news[m]] = stride
                stride = stride * new[news[m]]
            i, j = i + 1, k
            continue
        # several dims of the input merged into new[news[j]]: their strides must chain
        k, p, broken = i, size, False
        while k + 1 < len(olds) and not _same(p, new[news[j]]):
            nsize, nstride = olds[k + 1]
            if not _same(olds[k][1], nsize * nstride):
                if not (cond_true(olds[k][1] != nsize * nstride) and
                        cond_true(olds[k][0] >= 2) and cond_true(nsize >= 2)):
                    return None
                broken = True
            p, k = p * nsize, k + 1
        if k == i or not _same(p, new[news[j]]):
            return None
        if broken:
            return COPIES
        out[news[j]] = olds[k][1]
        i, j = k + 1, j + 1
    return out


def _view(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st = view_layout(shape, x[0], out.shape)
    return None if st is None or st is COPIES else (st, x[1])


def _reshape(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    """A view where one exists, else a row-major copy (``clone(contiguous_format)``)."""
    st = view_layout(shape, x[0], out.shape)
    if st is COPIES:
        return [product(out.shape[d + 1:]) for d in range(len(out.shape))], True
    return None if st is None else (st, x[1])


def _split(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    return [(list(x[0]), x[1] and i == 0) for i in range(len(out))]


def _unbind(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    st, zero = x
    d = normalize_dim(_arg(args, kwargs, 1, "dim", 0), len(st), "unbind")
    return [(st[:d] + st[d + 1:], zero and i == 0) for i in range(len(out))]


def _dense_like(x: tuple, shape: tuple) -> list | None:
    """``empty_like(x)``'s strides (preserve_format): dense, in the order of x's strides
    (torch's ``infer_dense_strides``: an insertion sort by stride, equal strides by size,
    dims of size 1 left where they are); None where an order is not proven."""
    st = x[0]

    def should_swap(a: int, b: int) -> int | None:
        if _one(shape[a]) or _one(shape[b]):
            return 0
        c = _order(shape, a, b, st[a], st[b])
        if c != 0:
            return c
        if cond_true(shape[a] > shape[b]):
            return 1
        return 0 if cond_true(shape[a] <= shape[b]) else None

    return _dense_in_order(shape, should_swap)


def _attention(x: tuple, shape: tuple, args: tuple, kwargs: dict, out: Any) -> Any:
    """scaled_dot_product_attention on CPU: its flash kernel (the one chosen without
    dropout, on 4-d inputs of one head size whose last dims have stride 1) allocates the
    output like the query; anything else (the math path's new contiguous result, a
    choice not proven here) leaves it unknown."""
    q, k, v = args[:3]
    dropout = _arg(args, kwargs, 4, "dropout_p", 0.0)
    mask = _arg(args, kwargs, 3, "attn_mask", None)
    if dropout or _arg(args, kwargs, 7, "enable_gqa", False) or len(shape) != 4 or \
            not torch._C._get_flash_sdp_enabled():
        return None
    if mask is not None and (mask.dim() not in (2, 4) or (  # (else: the math kernel's)
            type(mask) is not Proxy and mask.requires_grad and torch.is_grad_enabled())):
        return None
    for t in (q, k, v):
        lay = known_strides(t)
        if lay is None or t.st_meta.ndim != 4 or not _same(lay[0][-1], 1) or \
                not cond_true(t.st_meta.shape[-1] >= 2) or \
                not _same(t.st_meta.shape[-1], shape[-1]):
            return None
    if len(out.shape) != 4 or not all(_same(a, b) for a, b in zip(out.shape, shape)):
        return None
    st = _dense_like(x, shape)
    return None if st is None else (st, True)


def _operand(t: Any, shape: tuple) -> list | None:
    """An operand's strides broadcast to the result's sizes (0 on broadcast dims), or
    None where not known (or where a size may or may not broadcast)."""
    if type(t) is Proxy:
        lay = known_strides(t)
        if lay is None:
            return None
        sizes, st = t.st_meta.shape, lay[0]
    else:
        sizes, st = tuple(t.shape), tuple(t.stride())
    lead = len(shape) - len(sizes)
    res: list = [0] * lead
    for s, stride, want in zip(sizes, st, shape[lead:]):
        if _one(s) and not _one(want):
            res.append(0)
        elif _same(s, want):
            res.append(stride)
        else:
            return None
    return res


def _iterator_strides(operands: list, shape: tuple) -> list | None:
    """TensorIterator's output strides: dense, its dims ordered by the operands' strides
    (``reorder_dimensions``: the first operand whose strides of two dims differ decides,
    broadcast dims skipped, equal strides put the smaller size inside); dims of size 1
    left where they are; None where an order is not proven."""

    def should_swap(a: int, b: int) -> int | None:
        if _one(shape[a]) or _one(shape[b]):
            return 0
        for st in operands:
            sa, sb = st[a], st[b]
            if (type(sa) is int and sa == 0) or (type(sb) is int and sb == 0):
                continue
            c = _order(shape, a, b, sa, sb)
            if c != 0:
                return c
            if cond_true(shape[a] > shape[b]):
                return 1
            if not cond_true(shape[a] <= shape[b]):
                return None
        return 0

    return _dense_in_order(shape, should_swap)


def _dense_in_order(shape: tuple, should_swap: Callable[[int, int], int | None]) -> list | None:
    """Dense strides for `shape`, its dims (innermost first) ordered by torch's insertion
    sort (``should_swap``: > 0 swaps, < 0 stops, None: not proven, so None); dims of size 1
    take the stride where they stand, adding nothing."""
    n = len(shape)
    perm = list(range(n - 1, -1, -1))
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c is None:
                return None
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    res: list = [1] * n
    acc: Any = 1
    for d in perm:
        res[d] = acc
        if not _one(shape[d]):
            acc = shape[d] if type(acc) is int and acc == 1 else acc * shape[d]
    return res


def pointwise(args: tuple, kwargs: dict, result: Any) -> bool:
    """The layout of a pointwise op's result (a TensorIterator kernel's) from its tensor
    operands' known strides; False where one is not known."""
    if type(result) is not Proxy:
        return False
    shape = result.st_meta.shape
    operands = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            st = _operand(a, shape)
            if st is None:
                return False
            operands.append(st)
    if not operands:
        return False
    found = _iterator_strides(operands, shape)
    if found is None:
        return False
    result.st_contig, result.st_layout = classify(shape, tuple(found), True)
    return True


def concatenated(args: tuple, result: Any) -> bool:
    """``cat``'s result is row-major (eager's ``compute_output_memory_format``) where no
    input of 4 or 5 dims may look channels-last (its last dim: stride 1, size >= 2, and
    dim 1 of size >= 2)."""
    tensors = args[0] if args and isinstance(args[0], (list, tuple)) else ()
    if type(result) is not Proxy or not tensors:
        return False
    for t in tensors:
        if type(t) is not Proxy:
            return False
        lay = known_strides(t)
        if lay is None:
            return False
        sizes = t.st_meta.shape
        if len(sizes) in (4, 5) and not (_same(lay[0][-1], 1) and cond_true(sizes[-1] >= 2)
                                         and cond_true(sizes[1] >= 2)):
            return False
    result.st_contig, result.st_layout = classify(
        result.st_meta.shape, tuple(product(result.st_meta.shape[d + 1:])
                                    for d in range(result.st_meta.ndim)), True)
    return True


_RULES: dict = {
    aten.transpose.int: _transpose, aten.permute.default: _permute, aten.t.default: _t,
    aten.alias.default: _alias, aten.detach.default: _alias,
    aten.select.int: _select, aten.slice.Tensor: _slice,
    aten.unsqueeze.default: _unsqueeze, aten.squeeze.default: _squeeze,
    aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze, aten.expand.default: _expand,
    aten.view.default: _view, aten._unsafe_view.default: _view,
    aten.reshape.default: _reshape,
    aten.split.Tensor: _split, aten.split_with_sizes.default: _split,
    aten.unbind.int: _unbind,
    aten.scaled_dot_product_attention.default: _attention,
}


def derive(op: Any, args: tuple, kwargs: dict, result: Any) -> bool:
    """Give the result(s) of view `op` (or attention) their exact layout where it follows
    from its input's; False where nothing is known (the caller's answer stands)."""
    rule = _RULES.get(op)
    if rule is None or not args:
        return False
    x = known_strides(args[0])
    if x is None:
        return False
    x = (list(x[0]), x[1])
    shape = args[0].st_meta.shape
    outs = result if type(result) is tuple or type(result) is list else None
    if outs is None and type(result) is not Proxy:  # (pieces of a count not known: pieces.py)
        return False
    if outs is not None and not all(type(p) is Proxy for p in outs):
        return False
    meta = [p.st_meta for p in outs] if outs is not None else result.st_meta
    try:
        found = rule(x, shape, args, kwargs, meta)
    except Exception:  # (an argument this table does not read: the layout stays unknown)
        return False
    if found is None:
        return False
    pairs = list(zip(outs, found)) if outs is not None else [(result, found)]
    if any(len(st) != p.st_meta.ndim for p, (st, _) in pairs):
        return False
    for p, (st, zero) in pairs:
        p.st_contig, p.st_layout = classify(p.st_meta.shape, tuple(st), zero)
    return True
