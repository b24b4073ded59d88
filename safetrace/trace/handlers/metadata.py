"""Metadata queries, answered from the proxy without a graph node.

A quarter of all calls in real models are ``.shape``, ``.dtype``, ``.device``, ``.dim()``
and the like.  Real tensors met in the code (parameters, buffers, constants) answer for
themselves.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.rules.common import normalize_dim
from safetrace.trace import layout
from safetrace.trace.proxy import DTYPE_ABBR, Proxy, annotation, shape_value
from safetrace.trace.registry import Handler, handles
from safetrace.trace.subclasses import traced_inner
from safetrace.trace.recorder import Recorder

T: Any = torch.Tensor  # (its properties as descriptors: typed Any)

T = torch.Tensor


def real(func: Any, args: tuple, kwargs: dict) -> Any:
    """The call run by torch itself, without the tracer (on real tensors)."""
    with torch._C.DisableTorchFunction():
        return func(*args, **kwargs)


def metadata(fn: Callable) -> Handler:
    """A handler from ``fn(tr, proxy, *rest)``: proxies answer from their metadata."""

    def handler(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
        x = args[0]
        if isinstance(x, Proxy):
            return fn(tr, x, *args[1:], **kwargs)
        return real(func, args, kwargs)

    return handler


def constant(value: Any) -> Handler:
    """A query whose answer is the same for every traced tensor (``x.is_sparse``)."""
    return metadata(lambda tr, x, *a, **k: value)


@handles(T.shape.__get__, T.size)
@metadata
def size(tr: Recorder, x: Proxy, dim: int | None = None) -> Any:
    shape = x.st_meta.shape
    if dim is None:
        return shape_value(shape)
    if isinstance(dim, torch.Tensor):  # eager reads a 0-d integer tensor through __index__
        given = annotation(dim.st_meta) if isinstance(dim, Proxy) else \
            f"{DTYPE_ABBR.get(dim.dtype, dim.dtype)}{list(dim.shape)}"
        dim = tr.redispatch(T.__index__, (dim,), {})
        if not isinstance(dim, int):  # data (a buffer's value): which size is data too
            raise tr.data_read(f"`.size(dim)` with a dim given as a tensor {given}",
                               "pass the dim as a Python int (`x.size(1)`); a dim that "
                               "changes between calls has no single graph")
    return shape[normalize_dim(dim, len(shape), "Tensor.size")]


@handles(T.dim, T.ndimension, T.ndim.__get__)
@metadata
def ndim(tr: Recorder, x: Proxy) -> int:
    return x.st_meta.ndim


@handles(T.numel, T.nelement, torch.numel)
@metadata
def numel(tr: Recorder, x: Proxy) -> Any:
    return x.st_meta.numel()


@handles(T.__len__)
@metadata
def length(tr: Recorder, x: Proxy) -> Any:
    if not x.st_meta.shape:
        raise TypeError("len() of a 0-d tensor")
    return x.st_meta.shape[0]


@handles(T.dtype.__get__)
@metadata
def dtype(tr: Recorder, x: Proxy) -> torch.dtype:
    return x.st_meta.dtype


@handles(T.element_size)
@metadata
def element_size(tr: Recorder, x: Proxy) -> int:
    return x.st_meta.dtype.itemsize


@handles(T.is_floating_point, torch.is_floating_point)
@metadata
def is_floating_point(tr: Recorder, x: Proxy) -> bool:
    return x.st_meta.dtype.is_floating_point


@handles(T.is_complex, torch.is_complex)
@metadata
def is_complex(tr: Recorder, x: Proxy) -> bool:
    return x.st_meta.dtype.is_complex


@handles(T.is_signed, torch.is_signed)
@metadata
def is_signed(tr: Recorder, x: Proxy) -> bool:
    return x.st_meta.dtype.is_signed


def on_device(fn: Callable) -> Handler:
    """A device query: proxies answer from their metadata, and so does a tensor subclass
    traced around proxies (its wrapper was made on their "meta" stand-in)."""

    def handler(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
        x = args[0]
        if isinstance(x, Proxy):
            return fn(tr, x, *args[1:], **kwargs)
        inner = traced_inner(x)
        if inner is not None:
            return fn(tr, inner, *args[1:], **kwargs)
        return real(func, args, kwargs)

    return handler


@handles(T.device.__get__)
@on_device
def device(tr: Recorder, x: Proxy) -> torch.device:
    # the inputs' real device, never "meta" (TRACING-NOTES, pitfall 2)
    return x.st_meta.device


@handles(T.get_device)
@on_device
def get_device(tr: Recorder, x: Proxy) -> Any:
    return -1 if x.st_meta.device.type == "cpu" else x.st_meta.device.index


@handles(T.is_cuda.__get__)
@on_device
def is_cuda(tr: Recorder, x: Proxy) -> bool:
    return x.st_meta.device.type == "cuda"


@handles(T.is_cpu.__get__)
@on_device
def is_cpu(tr: Recorder, x: Proxy) -> bool:
    return x.st_meta.device.type == "cpu"


handles(T.stride)(metadata(layout.stride))
handles(T.storage_offset)(metadata(layout.storage_offset))
# the same queries as ATen ops, as a converted or torch.export program spells them (its
# module re-exported: torch.export.export(ep.module(), ...))
_aten = torch.ops.aten
handles(_aten.sym_size.int)(size)
handles(_aten.sym_numel.default)(numel)
handles(_aten.sym_stride.int)(metadata(layout.stride))
handles(_aten.sym_storage_offset.default)(metadata(layout.storage_offset))
handles(T.is_contiguous)(metadata(layout.is_contiguous))

# What a traced tensor is never: sparse, quantized, a leaf with a gradient, ...
for _query, _value in [
    (T.layout.__get__, torch.strided), (T.is_meta.__get__, False),
    (T.is_sparse.__get__, False), (T.is_quantized.__get__, False),
    (T.is_nested.__get__, False), (T.is_mkldnn.__get__, False),
    (T.requires_grad.__get__, False), (T.is_leaf.__get__, True), (T.grad.__get__, None),
    (T.grad_fn.__get__, None), (T.data_ptr, 0), (T.is_inference, False),
]:
    handles(_query)(constant(_value))


@handles(T.requires_grad_)
def requires_grad_(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return args[0] if isinstance(args[0], Proxy) else real(func, args, kwargs)


@handles(T.__repr__, T.__str__, T.__format__)
def text(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """Printing a proxy shows its metadata (printing data would read it)."""
    x = args[0]
    if isinstance(x, Proxy):
        return f"Proxy({annotation(x.st_meta)})"
    return real(func, args, kwargs)


@handles(T.__hash__)
def hash_(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> int:
    return id(args[0])
