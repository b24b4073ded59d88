"""Tensors made from Python data: ``torch.tensor``, ``as_tensor``, ``x.new_tensor``, and
``torch.full`` with a traced fill value.

Data of Python numbers is a constant (lifted into the graph); data holding symbolic sizes
is computed in the graph; a tensor given as data is copied.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.trace.arguments import has_tensor, tensor_of_values
from safetrace.trace.handlers.metadata import real
from safetrace.trace.proxy import Proxy
from safetrace.trace.registry import handles
from safetrace.trace.recorder import Recorder

aten = torch.ops.aten


@handles(torch.tensor)
def tensor(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.tensor(data)``: data is Python values, so the result is a constant."""
    if has_tensor(args) or any(_is_sym(a) for a in _flat(args)):
        if isinstance(args[0], torch.Tensor):
            return tr.emit(aten.clone.default, (args[0],), {})
        return tensor_of_values(tr, args[0], kwargs)
    t = real(func, args, kwargs)
    tr.lift(t)
    tr.note_literal(t)
    tr.folded.add(id(t))  # (made anew by every call: a write to it is not state)
    return t


def _is_sym(v: Any) -> bool:
    return hasattr(v, "env") and not isinstance(v, torch.Tensor)


def _flat(v: Any) -> list:
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            out.extend(_flat(x))
        return out
    return [v]


@handles(torch.as_tensor, torch.asarray)
def as_tensor(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """A tensor stays itself (cast if a dtype is asked); Python data as ``torch.tensor``."""
    x = args[0]
    if isinstance(x, torch.Tensor):
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        dtype_now = x.st_meta.dtype if isinstance(x, Proxy) else x.dtype
        if dtype is not None and dtype != dtype_now:
            return tr.redispatch(torch.Tensor.to, (x, dtype), {})
        return x
    return tensor(tr, func, args, kwargs)


@handles(torch.Tensor.new_tensor)
def new_tensor(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.new_tensor(data)`` is ``torch.tensor(data)`` with x's dtype and device (unless
    given): a constant for Python numbers, graph nodes for sizes, a copy of a tensor."""
    x, data = args[0], args[1] if len(args) > 1 else kwargs["data"]
    meta = x.st_meta if isinstance(x, Proxy) else x
    dtype = kwargs.get("dtype") or meta.dtype
    device = kwargs.get("device") or meta.device
    out = tensor(tr, torch.tensor, (data,), {"dtype": dtype, "device": device})
    if isinstance(data, torch.Tensor):  # copied as it is: cast to the result's dtype
        out = tr.redispatch(torch.Tensor.to, (out, dtype), {})
    return out


@handles(torch.full)
def full(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """torch.full(size, fill) with a 0-d tensor as the fill value (ultralytics' anchors:
    ``torch.full((h * w, 1), stride)`` over a stride buffer): eager reads the value; the
    graph broadcasts the tensor instead, so a traced fill stays a graph value."""
    fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
    if not (isinstance(fill, Proxy) and fill.st_meta.ndim == 0):
        return tr.redispatch(func, args, kwargs, handlers=False)
    size = args[0] if args else kwargs["size"]
    dtype = kwargs.get("dtype")
    if dtype is None:  # the Python scalar the value would become, as eager types it
        d = fill.st_meta.dtype
        dtype = d if d is torch.bool else torch.int64 if not (
            d.is_floating_point or d.is_complex) else (
            torch.get_default_dtype() if d.is_floating_point else torch.complex64)
    device = kwargs.get("device") or tr.device
    x = tr.emit(aten._to_copy.default, (fill,), {"dtype": dtype, "device": device})
    x = tr.emit(aten.expand.default, (x, list(size)), {})
    return tr.emit(aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
