"""``x[idx]`` and ``x[idx] = v`` lowered to ATen ops, as eager PyTorch does.

Basic indices (ints, slices, None, Ellipsis, and 0-d integer tensors, which eager reads
as ints) become select / slice / unsqueeze nodes: views of the indexed tensor, as in
eager, so that a later in-place write shows through them.  Tensor indices then become one
``aten.index.Tensor`` (a copy, as in eager; ``index_put_`` for writes).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace import errors
from safetrace.errors import OpShapeError
from safetrace.errors.base import with_eager_class
from safetrace.rules.common import check as rule_check
from safetrace.trace import memo
from safetrace.trace.asserts import check
from safetrace.trace.numbering import recall_counts, remember_counts
from safetrace.trace.proxy import Proxy, annotation
from safetrace.trace.values import read_data
from safetrace.trace.recorder import Recorder

aten = torch.ops.aten


def _ndim(x: Any) -> int:
    return x.st_meta.ndim if isinstance(x, Proxy) else x.dim()


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        hasattr(v, "expr") and not isinstance(v, torch.Tensor))


def _normalize(index: Any) -> tuple:
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and index and all(
            isinstance(i, (slice, type(None), type(Ellipsis))) or isinstance(i, torch.Tensor)
            or isinstance(i, list) for i in index):
        return tuple(index)  # numpy-style legacy: a list of index objects
    return (index,)


def _basic(tr: Recorder, x: Any, index: Any) -> tuple[Any, list, bool]:
    """Apply the basic part of an index; return (view, advanced indices by dim, has advanced)."""
    items = _normalize(index)
    consumed = sum(1 for i in items
                   if i is not None and i is not Ellipsis and not isinstance(i, bool))
    ndim = _ndim(x)
    if consumed > ndim:
        raise errors.too_many_indices(ndim, consumed)
    ellipsis_dims = ndim - consumed
    d = 0
    advanced: list = []
    has_adv = False
    for item in items:
        if item is None:
            x = _view(tr, aten.unsqueeze.default, (x, d))
            advanced.append(None)
            d += 1
        elif item is Ellipsis:
            advanced.extend([None] * ellipsis_dims)
            d += ellipsis_dims
        elif isinstance(item, bool):
            raise errors.bool_index()
        elif _is_int(item):
            x = _view(tr, aten.select.int, (x, d, item))
        elif _is_integer_scalar(item):
            x = tr.emit(aten.select.int, (x, d, _scalar_index(tr, x, d, item)), {})
        elif isinstance(item, slice):
            start, stop, step = (_bound(tr, v) for v in (item.start, item.stop, item.step))
            if step is not None and not (_is_int(step)):
                raise errors.slice_step(step)
            if step is not None and not (isinstance(step, int) and step == 1):
                _positive_step(step)
            one = step is None or (isinstance(step, int) and step == 1)   # (a symbolic step
            if not (start is None and stop is None and one):   # is sliced: no `== 1` asked)
                args = (x, d, start, stop) + (() if one else (step,))
                x = _view(tr, aten.slice.Tensor, args)
            advanced.append(None)
            d += 1
        elif isinstance(item, (torch.Tensor, list, tuple)):
            t = item
            if isinstance(t, (list, tuple)):
                t = torch.tensor(t)  # a constant index tensor (lifted by the tracer)
            advanced.append(t)
            has_adv = True
            d += 1
        else:
            raise errors.index_type(item)
    return x, advanced, has_adv


def _positive_step(step: Any) -> None:
    """Eager's Python indexing refuses a step below 1 (``x[::-1]``) with ValueError before
    any kernel runs (aten.slice's own refusal is a RuntimeError): the refusal carries
    ValueError, so that the program's ``except ValueError`` catches it where eager's does
    (a guard where the step is a size)."""
    try:
        rule_check(step > 0, "slice", "step must be greater than zero",
                   fix="flip the dim instead: x.flip(d)[::k]")
    except OpShapeError as e:
        raise with_eager_class(e, ValueError) from None


def _view(tr: Recorder, op: Any, args: tuple) -> Any:
    """One view an index makes (select, slice, unsqueeze), keyed and replayed as plain
    calls are (memo.py): an index of several views replays each."""
    return memo.emit(tr, op, args, {})


def _is_integer_scalar(t: Any) -> bool:
    """A 0-d integer tensor (not bool or uint8, which index as masks)."""
    if not isinstance(t, torch.Tensor):
        return False
    meta = t.st_meta if isinstance(t, Proxy) else t
    dtype = meta.dtype
    return meta.ndim == 0 and not (dtype.is_floating_point or dtype.is_complex) and \
        dtype not in (torch.bool, torch.uint8)


def _scalar_index(tr: Recorder, x: Any, d: int, t: Any) -> Any:
    """The int a 0-d integer tensor index stands for: a constant's value, a size tensor's
    known value, else the tensor's data read as an unbacked size (``aten.item``), which
    must lie in [-size, size) as eager's IndexError demands (a run-time assertion)."""
    if not isinstance(t, Proxy):
        traced = read_data(tr, t)  # a parameter or buffer: read at run time
        if traced is None:
            with torch._C.DisableTorchFunction():
                return int(t.item())
        t = traced
    if (value := t.st_value) is not None:
        return value
    i = tr.redispatch(torch.Tensor.item, (t,), {})
    n = x.st_meta.shape[d] if isinstance(x, Proxy) else x.shape[d]
    msg = f"index out of range for dimension {d} of size {n}"
    check(i >= -n, msg)
    check(i < n, msg)
    return i


def _trim(advanced: list) -> list:
    while advanced and advanced[-1] is None:
        advanced.pop()
    return advanced


def _is_bool_index(t: Any) -> bool:
    dtype = t.st_meta.dtype if isinstance(t, Proxy) else getattr(t, "dtype", None)
    return dtype in (torch.bool, torch.uint8)


def getitem(tr: Recorder, x: Any, index: Any) -> Any:
    """``x[index]`` as select/slice/unsqueeze (+ index.Tensor for tensor indices)."""
    view, advanced, has_adv = _basic(tr, x, index)
    if not has_adv:
        if view is x:  # x[:] and x[...] are aliases of x
            return tr.emit(aten.alias.default, (x,), {})
        return view
    adv = _trim(advanced)
    out = tr.emit(aten.index.Tensor, (view, adv), {})
    remember_counts(tr, adv)
    return out


def setitem(tr: Recorder, x: Any, index: Any, value: Any) -> None:
    """``x[index] = value`` as copy_ into the view, or index_put_."""
    view, advanced, has_adv = _basic(tr, x, index)
    if not has_adv:
        if not isinstance(value, torch.Tensor):
            # eager copies a 0-d tensor of the view's dtype, and so refuses, as copy_ does,
            # to write into a view with overlapping elements (an expand)
            dtype = view.st_meta.dtype if isinstance(view, Proxy) else view.dtype
            value = tr.emit(aten.full.default, ([], value), {"dtype": dtype,
                                                              "device": tr.device})
        tr.emit(aten.copy_.default, (view, value), {})
        return None
    adv = _trim(advanced)
    recall_counts(tr, adv)
    if not isinstance(value, torch.Tensor):
        if len(adv) == 1 and adv[0] is not None and _is_bool_index(adv[0]):
            tr.emit(aten.masked_fill_.Scalar, (view, adv[0], value), {})
            return None
        dtype = view.st_meta.dtype if isinstance(view, Proxy) else view.dtype
        value = tr.emit(aten.full.default, ([], value), {"dtype": dtype, "device": tr.device})
    tr.emit(aten.index_put_.default, (view, adv, value), {})
    return None


def _bound(tr: Recorder, v: Any) -> Any:
    """A slice bound; a 0-d tensor bound is used through ``__index__`` as eager does."""
    if isinstance(v, torch.Tensor) and not isinstance(v, Proxy):
        return tr.redispatch(torch.Tensor.__index__, (v,), {})  # a constant or state
    if isinstance(v, Proxy):
        if (value := v.st_value) is not None:
            return value  # torch.tensor(n) of a size: its value is known
        meta = v.st_meta
        if not (meta.dtype.is_floating_point or meta.dtype.is_complex) and all(
                isinstance(s, int) and s == 1 for s in meta.shape):
            # a one-element integer tensor: read at run time, an unbacked size (.item())
            return tr.redispatch(torch.Tensor.__index__, (v,), {})
        raise tr.data_read(
            f"a tensor {annotation(v.st_meta)} as a slice bound",
            "read the bound with `.item()`: a data-dependent size (an unbacked symbol) "
            "that the graph reads at run time, with the checks export cannot prove:\n"
            "    n = t.item()\n    st.check(n >= 0)\nthen `x[:n]`.")
    return v
