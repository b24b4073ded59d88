"""The strides of a view's result from its input's, as torch's kernels compute them, for
the fake values of a conversion (``interop/fakes.py``): permute, transpose, expand, slice,
select, unsqueeze, squeeze, split, unbind, aliases, as_strided and view.  A result this
table does not know (or an argument it does not read) is a new contiguous tensor."""

from __future__ import annotations

from typing import Any

import torch


def _val(a: Any) -> Any:
    if isinstance(a, torch.fx.Node):
        return a.meta.get("val")
    if isinstance(a, (list, tuple)):
        return [_val(x) for x in a]
    return a


def _arg(args: tuple, kwargs: dict, i: int, name: str, default: Any) -> Any:
    if i < len(args):
        return _val(args[i])
    return _val(kwargs.get(name, default))


def _dim(d: Any, n: int) -> int:
    return d + n if d < 0 else d


def view_strides(target: Any, args: tuple, kwargs: dict, count: int | None) -> list | None:
    """The strides of a view's result(s) from its input's, as torch computes them; None
    for a result that is a new contiguous tensor (or a view this table does not know)."""
    name = target._opname
    rule = _VIEWS.get(name)
    if rule is None or not args:
        return None
    x = _val(args[0])
    if not isinstance(x, torch.Tensor):
        return None
    try:
        out = rule(list(x.shape), list(x.stride()), args, kwargs)
    except (TypeError, IndexError, ValueError, AttributeError):
        return None  # an argument this table does not read: a contiguous result
    if out is None:
        return None
    if count is None:
        return [out]
    return [out] * count if not isinstance(out, list) or not out or \
        not isinstance(out[0], list) else out


def _same(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    return stride


def _permute(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    dims = _arg(args, kwargs, 1, "dims", None)
    return [stride[_dim(d, len(size))] for d in dims]


def _transpose(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    n = len(size)
    a = _dim(_arg(args, kwargs, 1, "dim0", 0), n)
    b = _dim(_arg(args, kwargs, 2, "dim1", 0), n)
    out = list(stride)
    out[a], out[b] = out[b], out[a]
    return out


def _t(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    return list(reversed(stride))


def _expand(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    target = list(_arg(args, kwargs, 1, "size", None))
    lead = len(target) - len(size)
    out = [0] * lead
    for s, st, want in zip(size, stride, target[lead:]):
        if isinstance(s, int) and s == 1 and not (isinstance(want, int) and want in (1, -1)):
            out.append(0)
        else:
            out.append(st)
    return out


def _slice(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    d = _dim(_arg(args, kwargs, 1, "dim", 0), len(size))
    step = _arg(args, kwargs, 4, "step", 1)
    out = list(stride)
    out[d] = out[d] * step
    return out


def _select(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    d = _dim(_arg(args, kwargs, 1, "dim", 0), len(size))
    return stride[:d] + stride[d + 1:]


def _unsqueeze(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    d = _dim(_arg(args, kwargs, 1, "dim", 0), len(size) + 1)
    new = size[d] * stride[d] if d < len(size) else 1
    return stride[:d] + [new] + stride[d:]


def _squeeze(size: list, stride: list, args: tuple, kwargs: dict) -> list | None:
    dims = _arg(args, kwargs, 1, "dim", None)
    if dims is None:
        dims = range(len(size))
    elif isinstance(dims, int):
        dims = [dims]
    drop = {_dim(d, len(size)) for d in dims if isinstance(size[_dim(d, len(size))], int)
            and size[_dim(d, len(size))] == 1}
    return [s for i, s in enumerate(stride) if i not in drop]


def squeezed_strides(args: tuple, kwargs: dict, rank: int) -> list | None:
    """squeeze's strides where our result (of `rank` dims) drops a dim whose size torch's
    fake holds symbolic (our engine proved it 1: ``arange(n / 2).squeeze(0)`` on the side
    ``n <= 2``): the input's strides without every dim squeeze may drop, where their count
    is the ranks' difference; None where that leaves it ambiguous."""
    x = _val(args[0])
    size, stride = list(x.shape), list(x.stride())
    dims = _arg(args, kwargs, 1, "dim", None)
    dims = range(len(size)) if dims is None else [dims] if isinstance(dims, int) else dims
    may = {_dim(d, len(size)) for d in dims}
    may = {d for d in may if not (isinstance(size[d], int) and size[d] != 1)}
    if len(size) - len(may) != rank:
        return None
    return [s for i, s in enumerate(stride) if i not in may]


def _split(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    return stride  # every part keeps its input's strides


def _unbind(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    d = _dim(_arg(args, kwargs, 1, "dim", 0), len(size))
    return stride[:d] + stride[d + 1:]


def _hint(v: Any) -> int:
    if isinstance(v, int):
        return v
    hint = v.node.hint
    if hint is None:  # a data-dependent size: no layout to derive
        raise ValueError(v)
    return int(hint)


def _view(size: list, stride: list, args: tuple, kwargs: dict) -> list | None:
    """torch's ``computeStride``: the strides of a view of a strided tensor (sizes compared
    at their example values), None (contiguous) for a contiguous input."""
    shape = list(_arg(args, kwargs, 1, "size", None))
    if any(v.__class__ is int and v == -1 for v in shape):  # (a SymInt never is: a guard)
        return None
    old, new = [_hint(v) for v in size], [_hint(v) for v in shape]
    expected = 1
    for n, st in zip(reversed(old), reversed(stride)):
        if n != 1 and _hint(st) != expected:
            break
        expected *= n
    else:
        return None  # contiguous in, contiguous out
    out: list = [0] * len(new)
    view_d = len(new) - 1
    chunk_base = stride[-1] if stride else 1
    tensor_numel = view_numel = 1   # example values, to compare
    view_size: Any = None           # the product of the view's own sizes (None: empty)
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and _hint(stride[d - 1]) != tensor_numel *
                      _hint(chunk_base)):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = chunk_base * view_size if view_size is not None else chunk_base
                view_numel *= new[view_d]
                view_size = shape[view_d] if view_size is None else view_size * shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = stride[d - 1]
                tensor_numel = view_numel = 1
                view_size = None
    return out if view_d == -1 else None


def _as_strided(size: list, stride: list, args: tuple, kwargs: dict) -> list:
    return list(_arg(args, kwargs, 2, "stride", None))


_VIEWS = {
    "permute": _permute, "transpose": _transpose, "t": _t, "expand": _expand,
    "slice": _slice, "select": _select, "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    "alias": _same, "detach": _same, "split": _split, "split_with_sizes": _split,
    "unbind": _unbind, "as_strided": _as_strided, "view": _view, "_unsafe_view": _view,
}
