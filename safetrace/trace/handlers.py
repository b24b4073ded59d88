"""Calls the tracer answers itself: metadata queries, data reads, indexing, casts.

Metadata queries (a quarter of all calls in real models) are answered from the proxy,
without a graph node.  Reads of tensor data are errors.  Indexing is lowered to the
ATen ops eager PyTorch uses (select, slice, unsqueeze, index, index_put_, copy_).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import UnsupportedOpError
from safetrace.trace import layout
from safetrace.trace.names import PY_DTYPES
from safetrace.trace.proxy import Proxy, annotation, shape_value
from safetrace.trace.source import short, stack_trace

aten = torch.ops.aten
T = torch.Tensor


def _real(func: Any, args: tuple, kwargs: dict) -> Any:
    with torch._C.DisableTorchFunction():
        return func(*args, **kwargs)


def _meta_handler(fn: Any):
    """A metadata answer for proxies; real tensors (state) answer for themselves."""

    def handler(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        x = args[0]
        if isinstance(x, Proxy):
            return fn(tr, x, *args[1:], **kwargs)
        return _real(func, args, kwargs)

    return handler


def _size(tr: Any, x: Proxy, dim: int | None = None) -> Any:
    shape = x.st_meta.shape
    if dim is None:
        return shape_value(shape)
    from safetrace.rules.common import normalize_dim

    return shape[normalize_dim(dim, len(shape), "Tensor.size")]


def _len(tr: Any, x: Proxy) -> Any:
    if not x.st_meta.shape:
        raise TypeError("len() of a 0-d tensor")
    return x.st_meta.shape[0]


def _device(tr: Any, x: Proxy) -> torch.device:
    return x.st_meta.device


_INDEX = "using a tensor as an index (__index__)"


def _data_read(what: str):
    def handler(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        if not isinstance(args[0], Proxy):
            return _real(func, args, kwargs)
        value = args[0].st_value
        if value is not None and what in ("int()", _INDEX):
            # torch.tensor(n) of a size: its value is known; Python needs a real int here,
            # so a symbolic one is specialized (a guard), as int(size) is
            return value if isinstance(value, int) else int(value)
        error = tr.data_read(f"{what} of a tensor {annotation(args[0].st_meta)}")
        if what == "bool()" and tr.on_data_read is not None:
            return tr.on_data_read(error)  # st.explain: recorded, a branch assumed
        raise error

    return handler


def _text(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    if isinstance(x, Proxy):
        return f"Proxy({annotation(x.st_meta)})"
    return _real(func, args, kwargs)


def _requires_grad_(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    return args[0] if isinstance(args[0], Proxy) else _real(func, args, kwargs)


def _constant(value: Any):
    return _meta_handler(lambda tr, x, *a, **k: value)


HANDLERS: dict[Any, Any] = {
    T.shape.__get__: _meta_handler(lambda tr, x: _size(tr, x)),
    T.size: _meta_handler(_size),
    T.dim: _meta_handler(lambda tr, x: x.st_meta.ndim),
    T.ndimension: _meta_handler(lambda tr, x: x.st_meta.ndim),
    T.ndim.__get__: _meta_handler(lambda tr, x: x.st_meta.ndim),
    T.dtype.__get__: _meta_handler(lambda tr, x: x.st_meta.dtype),
    T.device.__get__: _meta_handler(_device),
    T.get_device: _meta_handler(lambda tr, x: -1 if x.st_meta.device.type == "cpu"
                                else x.st_meta.device.index),
    T.numel: _meta_handler(lambda tr, x: x.st_meta.numel()),
    T.nelement: _meta_handler(lambda tr, x: x.st_meta.numel()),
    T.__len__: _meta_handler(_len),
    T.stride: _meta_handler(layout.stride),
    T.storage_offset: _meta_handler(layout.storage_offset),
    T.is_contiguous: _meta_handler(layout.is_contiguous),
    T.is_floating_point: _meta_handler(lambda tr, x: x.st_meta.dtype.is_floating_point),
    T.is_complex: _meta_handler(lambda tr, x: x.st_meta.dtype.is_complex),
    T.is_signed: _meta_handler(lambda tr, x: x.st_meta.dtype.is_signed),
    torch.is_floating_point: _meta_handler(lambda tr, x: x.st_meta.dtype.is_floating_point),
    torch.is_complex: _meta_handler(lambda tr, x: x.st_meta.dtype.is_complex),
    torch.is_signed: _meta_handler(lambda tr, x: x.st_meta.dtype.is_signed),
    torch.numel: _meta_handler(lambda tr, x: x.st_meta.numel()),
    T.element_size: _meta_handler(lambda tr, x: x.st_meta.dtype.itemsize),
    T.layout.__get__: _constant(torch.strided),
    T.is_cuda.__get__: _meta_handler(lambda tr, x: x.st_meta.device.type == "cuda"),
    T.is_cpu.__get__: _meta_handler(lambda tr, x: x.st_meta.device.type == "cpu"),
    T.is_meta.__get__: _constant(False),
    T.is_sparse.__get__: _constant(False),
    T.is_quantized.__get__: _constant(False),
    T.is_nested.__get__: _constant(False),
    T.is_mkldnn.__get__: _constant(False),
    T.requires_grad.__get__: _constant(False),
    T.is_leaf.__get__: _constant(True),
    T.grad.__get__: _constant(None),
    T.grad_fn.__get__: _constant(None),
    T.data_ptr: _constant(0),
    T.is_inference: _constant(False),
    T.requires_grad_: _requires_grad_,
    T.__repr__: _text,
    T.__str__: _text,
    T.__format__: _text,
    T.__hash__: lambda tr, f, a, k: id(a[0]),
    T.__bool__: _data_read("bool()"),
    T.__int__: _data_read("int()"),
    T.__float__: _data_read("float()"),
    T.__index__: _data_read(_INDEX),
    T.__complex__: _data_read("complex()"),

    T.numpy: _data_read(".numpy()"),
    T.__array__: _data_read("numpy conversion"),
    T.__contains__: _data_read("`in`"),
}


def _getitem(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    from safetrace.trace.indexing import getitem

    return getitem(tr, args[0], args[1])


def _setitem(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    from safetrace.trace.indexing import setitem

    return setitem(tr, args[0], args[1], args[2])


def _float_read(call: str, x: Proxy) -> Exception:
    """A float read from data (an unbacked size is an int or bool, never a float)."""
    from safetrace.errors import DataDependentError

    keep = ("keep it a tensor (e.g. `x.sum()` instead of `x.sum().item()`; a 0-dim tensor "
            "broadcasts in tensor ops)" if call == ".item()" else
            "keep it a tensor and index it (`x[i]`, `x.unbind(0)`) instead of making a list")
    return DataDependentError(
        f"{call} of a tensor {annotation(x.st_meta)}: a float computed from data "
        f"cannot be traced as a Python number (export never reads tensor data).\n"
        f"  at {short(stack_trace(3))}\nFix: {keep}, so the graph computes with it")


def _item(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    if not isinstance(args[0], Proxy):
        return _real(func, args, kwargs)
    if args[0].st_value is not None:
        return args[0].st_value
    if args[0].st_meta.dtype.is_floating_point or args[0].st_meta.dtype.is_complex:
        raise _float_read(".item()", args[0])
    return tr.emit(aten.item.default, (args[0],), {})


def _tolist(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    if not isinstance(x, Proxy):
        return _real(func, args, kwargs)
    if x.st_meta.dtype.is_floating_point or x.st_meta.dtype.is_complex:
        raise _float_read(".tolist()", x)
    shape = x.st_meta.shape
    if not shape:
        return tr.emit(aten.item.default, (x,), {})
    if not isinstance(shape[0], int):
        raise tr.data_read(f".tolist() of a tensor with a dynamic first dim {shape[0]}")
    return [_tolist(tr, func, (tr.emit(aten.select.int, (x, 0, i), {}),), {})
            for i in range(shape[0])]


HANDLERS[T.item] = _item
HANDLERS[T.tolist] = _tolist
HANDLERS[T.__getitem__] = _getitem
HANDLERS[T.__setitem__] = _setitem


# -- packets handled specially -------------------------------------------------------------

def _to(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.to(...)`` in all its spellings -> aten.to.dtype / aten.to.device."""
    x, rest = args[0], list(args[1:])
    dtype = kwargs.get("dtype")
    if dtype.__class__ is type:
        dtype = PY_DTYPES.get(dtype, dtype)
    device = kwargs.get("device")
    copy = kwargs.get("copy", False)
    non_blocking = kwargs.get("non_blocking", False)
    for a in rest:
        if a.__class__ is type and a in PY_DTYPES:  # x.to(float): torch.float64
            a = PY_DTYPES[a]
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, (torch.device, str, int)) and not isinstance(a, bool):
            device = torch.device(a)
        elif isinstance(a, torch.Tensor):
            ref = a.st_meta if isinstance(a, Proxy) else a
            dtype, device = ref.dtype, ref.device
        elif isinstance(a, bool):
            non_blocking = a
        elif a is not None:
            raise UnsupportedOpError(
                f"x.to(...) got an argument safetrace does not understand: {a!r} at "
                f"{short(stack_trace(3))}.\nFix: pass a torch.dtype, a device or a tensor")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise UnsupportedOpError(
            f"x.to(dtype={dtype!r}) at {short(stack_trace(3))}: not a dtype.\n"
            f"Fix: pass a torch.dtype such as torch.float32")
    extra = {}
    if kwargs.get("memory_format") is not None:
        extra["memory_format"] = kwargs["memory_format"]
    if device is None:
        args2: tuple = (x, dtype if dtype is not None else _dtype(x), non_blocking, copy)
        return tr.emit(aten.to.dtype, args2[:2] if not (non_blocking or copy) else args2, extra)
    device = torch.device(device)
    return tr.emit(aten.to.device, (x, device, dtype if dtype is not None else _dtype(x),
                                    non_blocking, copy), extra)


def _dtype(x: Any) -> torch.dtype:
    return x.st_meta.dtype if isinstance(x, Proxy) else x.dtype


def _device_move(device: str):
    def handler(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        return _to(tr, func, (args[0], torch.device(device)), {})

    return handler


def _type(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
    if dtype is None:
        return _real(func, args[:1], {}) if not isinstance(args[0], Proxy) else \
            f"torch.{str(args[0].st_meta.dtype).split('.')[-1].capitalize()}Tensor"
    return _to(tr, func, (args[0], dtype), {})


def _constant_tensor(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.tensor(data)``: data is Python values, so the result is a constant."""
    from safetrace.trace.dispatch import _has_tensor

    if _has_tensor(args) or any(_is_sym(a) for a in _flat(args)):
        if isinstance(args[0], torch.Tensor):
            return tr.emit(aten.clone.default, (args[0],), {})
        return _tensor_of_syms(tr, args[0], kwargs)
    t = _real(func, args, kwargs)
    tr.lift(t)
    return t


def _is_sym(v: Any) -> bool:
    return hasattr(v, "env") and not isinstance(v, torch.Tensor)


def _tensor_of_syms(tr: Any, data: Any, kwargs: dict) -> Any:
    """``torch.tensor(n)`` / ``torch.tensor([n, 4])`` of symbolic sizes: computed in the graph."""
    dtype = kwargs.get("dtype")
    device = kwargs.get("device")
    items = data if isinstance(data, (list, tuple)) else [data]
    if any(isinstance(v, (list, tuple, torch.Tensor)) for v in items):
        raise tr.data_read("torch.tensor() of nested traced values")
    if dtype is None:
        floaty = any(isinstance(v, float) or hasattr(v, "num") for v in items)
        dtype = torch.get_default_dtype() if floaty else (
            torch.bool if all(isinstance(v, bool) or hasattr(v, "expr") and v.expr.is_bool
                              for v in items) else torch.int64)
    kw = {"dtype": dtype, "device": torch.device(device) if device is not None else tr.device}
    scalars = [tr.emit(aten.scalar_tensor.default, (v,), kw) for v in items]
    if not isinstance(data, (list, tuple)):
        return scalars[0]
    return tr.emit(aten.stack.default, (scalars,), {})


def _flat(v: Any) -> list:
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            out.extend(_flat(x))
        return out
    return [v]


def _as_tensor(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    if isinstance(x, torch.Tensor):
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        if dtype is not None and dtype != _dtype(x):
            return _to(tr, func, (x, dtype), {})
        return x
    return _constant_tensor(tr, func, args, kwargs)


def _split(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    from safetrace.trace.schema import resolve

    size = args[1] if len(args) > 1 else kwargs.get(
        "split_size", kwargs.get("split_size_or_sections"))
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    if isinstance(size, (list, tuple)):
        return tr.emit(aten.split_with_sizes.default, (args[0], list(size), dim), {})
    found = resolve("split", (args[0], size, dim), {})
    return tr.emit(found[0], found[1], found[2])


def _contiguous(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    return tr.emit(aten.contiguous.default, (args[0],), kwargs)


def _full(tr: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    """torch.full(size, fill) with a 0-d tensor as the fill value (ultralytics' anchors:
    ``torch.full((h * w, 1), stride)`` over a stride buffer): eager reads the value; the
    graph broadcasts the tensor instead, so a traced fill stays a graph value."""
    fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
    if not (isinstance(fill, Proxy) and fill.st_meta.ndim == 0):
        from safetrace.trace.dispatch import _op_or_through

        return _op_or_through(tr, func, "full", args, kwargs, special_ok=False)
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


SPECIAL_OPS: dict[str, Any] = {
    "full": _full,
    "to": _to,
    "cpu": _device_move("cpu"),
    "cuda": _device_move("cuda"),
    "type": _type,
    "tensor": _constant_tensor,
    "as_tensor": _as_tensor,
    "asarray": _as_tensor,
    "split": _split,
    "contiguous": _contiguous,
}
