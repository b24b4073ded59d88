"""The proxy tensor: a metadata-only ``torch.Tensor`` that stands for a traced value.

``isinstance(p, torch.Tensor)`` holds and every Tensor method exists; while tracing,
the tracer's mode answers every call.  Outside tracing (``node.meta["val"]``) the proxy
still answers metadata queries (``.shape`` with symbolic sizes, ``.dtype``, ``.device``)
and refuses to compute.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from safetrace.errors import below_tracer
from safetrace.meta import TensorMeta, contiguous_strides
from safetrace.meta.symtypes import SYM_CLASSES, shape_text
from safetrace.trace.source import short, stack_trace
from safetrace.trace.versions import stamp

DTYPE_ABBR = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "b8", torch.complex64: "c64", torch.complex128: "c128",
}


_META = torch.device("meta")
_STRIDED = torch.strided
# ``WRAPPER(cls, sizes, None, None, None, dtype, _STRIDED, _META)`` is
# ``torch.Tensor._make_wrapper_subclass(cls, sizes, dtype=dtype, device=meta)`` with its
# arguments given by position (size, strides, storage_offset, memory_format, dtype, layout,
# device): torch's parser matches keywords by name, ~0.5 µs per tensor more
WRAPPER = torch.Tensor._make_wrapper_subclass


class _Beneath(threading.local):
    # set by trace/subclasses.py while a tensor subclass's __torch_dispatch__ runs: what
    # answers the calls its Python code (`function`) and torch's C++ beneath it
    # (`dispatch`) make on proxies
    function: Any = None
    dispatch: Any = None


BENEATH = _Beneath()


def _hint(size: Any) -> int:
    """A size for the wrapper tensor (never read: ``st_meta`` is the truth).  The hint of
    a size expression can be negative where the expression holds only on another range
    (a size split's other side, evaluated at this program's example): 0 then."""
    if type(size) not in SYM_CLASSES and isinstance(size, int):
        return size
    try:
        return max(0, size.hint)
    except Exception:  # unbacked: any placeholder size will do for the wrapper
        return 0


def wrapper_sizes(shape: tuple) -> list[int]:
    """The sizes of a proxy's wrapper tensor: the example's (see _hint)."""
    out = []
    for s in shape:
        out.append(s if type(s) is int else _hint(s))
    return out


def current(size: Any) -> Any:
    """A size as the engine now knows it (after unification/specialization)."""
    if isinstance(size, int):
        return size
    env = getattr(size, "env", None)
    if env is None:
        return size
    e = env.simplify(size.expr)
    if e.op == "const":
        return e.value
    return type(size)(e, env)


def annotation(meta: TensorMeta) -> str:
    """``f32[s0, 4]``: dtype abbreviation and shape, as printed in graphs."""
    dims = ", ".join(str(current(s)) for s in meta.shape)
    return f"{DTYPE_ABBR.get(meta.dtype, str(meta.dtype))}[{dims}]"


class Proxy(torch.Tensor):
    """A traced tensor: shape/dtype/device in ``st_meta``, its graph node in ``st_node``."""

    # (slots: every proxy sets these five where it is made (``__new__``, and memo.py's and
    # exporter/lifting.py's inline makings), and the tracer reads them on every op: a
    # slot's read is specialized by the interpreter (~70 instructions, a class default's
    # ~220), and its store makes no instance dict (a view's layout set in one cost ~700);
    # the rarer attributes below still go in the instance dict)
    __slots__ = ("st_meta", "st_node", "st_contig", "st_layout", "_st_value")
    st_meta: TensorMeta
    st_node: Any
    st_contig: bool | str | None  # row-major (offset 0), LOOSE, None: layout.py
    st_layout: tuple | None  # a view's exact (strides, offset 0), st_contig None: strides.py
    _st_value: Any
    _st_value_stamp: Any = None
    st_strides: tuple | None = None  # a real tensor's strides (state, an input's example)

    def __round__(self, ndigits: Any = None) -> Any:
        # eager's own error for round(tensor) (torch.Tensor has no __round__), not one
        # naming the tracer's class
        raise TypeError("type Tensor doesn't define __round__ method")

    @staticmethod
    def __new__(cls, meta: TensorMeta, node: Any, sizes: Any = None) -> Proxy:
        # `sizes`: the wrapper's sizes when the caller has them (memo.py's replays)
        if sizes is None:
            sizes = meta.shape
            for s in sizes:
                if type(s) is not int:
                    sizes = wrapper_sizes(sizes)
                    break
        self = WRAPPER(cls, sizes, None, None, None, meta.dtype, _STRIDED, meta.device)
        self.st_meta = meta
        self.st_node = node
        self.st_contig = True
        self.st_layout = self._st_value = None
        return self  # (no Python __init__: torch's accepts the arguments, one call less)

    @property
    def st_value(self) -> Any:
        """A 0-d integer tensor's known (symbolic) value (see values.py); forgotten after
        an in-place write that may reach it through an alias (versions.py)."""
        value = self._st_value
        if value is None or self._st_value_stamp != stamp(self):
            return None
        return value

    @st_value.setter
    def st_value(self, value: Any) -> None:
        # (no value: no stamp to take, versions.py walks the node's aliases for one)
        self._st_value, self._st_value_stamp = value, \
            None if value is None else stamp(self)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        # Only reached outside tracing (the tracer's mode comes first while tracing).
        handler = _OUTSIDE.get(func)
        if handler is not None:
            return handler(args[0], *args[1:])
        hook = BENEATH.function
        if hook is not None:
            return hook(func, types, args, kwargs or {})
        name = getattr(func, "__name__", func)
        raise RuntimeError(
            f"{name} was called on a safetrace proxy outside of tracing: proxies carry "
            f"metadata only (shape, dtype, device). Run the exported program instead: "
            f"ep.module()(...)")

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        # only code beneath the tracer's mode gets here: a tensor subclass's dispatch
        # (subclasses.py answers), a functorch transform (vmap) or another dispatch-level
        # wrapper around a proxy
        hook = BENEATH.dispatch
        if hook is not None:
            return hook(func, types, args, kwargs or {})
        raise below_tracer(str(func), short(stack_trace(2)))

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # noqa: D105
        return f"Proxy({annotation(self.st_meta)})"


def _size(p: Proxy, dim: int | None = None) -> Any:
    shape = tuple(current(s) for s in p.st_meta.shape)
    if dim is None:
        return shape_value(shape)
    return shape[dim]


def shape_value(shape: tuple) -> Any:
    """A torch.Size for static shapes, a SymShape (a tuple subclass) for symbolic ones."""
    for s in shape:
        if type(s) is not int and (type(s) in SYM_CLASSES or not isinstance(s, int)):
            return SymShape(shape)
    return torch.Size(shape)


class SymShape(tuple):
    """The shape of a tensor with symbolic sizes: a tuple with torch.Size's methods."""

    def numel(self) -> Any:
        n: Any = 1
        for s in self:
            n = n * s
        return n

    def __getitem__(self, item: Any) -> Any:
        r = tuple.__getitem__(self, item)
        return SymShape(r) if isinstance(item, slice) else r

    def __repr__(self) -> str:
        return shape_text(self)

    # tuples of other lengths differ whatever their sizes: Python's tuple compares the
    # first items before the lengths, and that asked a size question eager's answer never
    # depends on (``x.shape == y.shape`` of ranks 1 and 4 required x0 != y0)
    def __eq__(self, other: Any) -> Any:
        if isinstance(other, tuple) and len(other) != len(self):
            return False
        return tuple.__eq__(self, other)

    def __ne__(self, other: Any) -> Any:
        if isinstance(other, tuple) and len(other) != len(self):
            return True
        return tuple.__ne__(self, other)

    __hash__ = tuple.__hash__


_OUTSIDE = {
    torch.Tensor.shape.__get__: lambda p: _size(p),
    torch.Tensor.size: _size,
    torch.Tensor.dim: lambda p: p.st_meta.ndim,
    torch.Tensor.ndim.__get__: lambda p: p.st_meta.ndim,
    torch.Tensor.dtype.__get__: lambda p: p.st_meta.dtype,
    torch.Tensor.device.__get__: lambda p: p.st_meta.device,
    torch.Tensor.numel: lambda p: p.st_meta.numel(),
    torch.Tensor.stride: lambda p, d=None: (contiguous_strides(p.st_meta.shape) if d is None
                                            else contiguous_strides(p.st_meta.shape)[d]),
    torch.Tensor.__repr__: lambda p, **kw: f"Proxy({annotation(p.st_meta)})",
    torch.Tensor.__format__: lambda p, spec="": f"Proxy({annotation(p.st_meta)})",
    torch.Tensor.__hash__: lambda p: id(p),
    torch.Tensor.layout.__get__: lambda p: torch.strided,
    torch.Tensor.requires_grad.__get__: lambda p: False,
}


def reshaped_in_place(x: Proxy, meta: TensorMeta, node: torch.fx.Node,
                      keeps_layout: bool) -> None:
    """``x.t_()``, ``x.unsqueeze_(0)``: `x` is the same tensor with a new shape (and
    layout); the node that made it keeps the value it computed as its recorded ``val``."""
    made = x.st_node
    if made is not None and made.meta.get("val") is x:
        made.meta["val"] = before = Proxy(x.st_meta, made)
        before.st_contig = x.st_contig  # (its layout too: an unknown one stays unknown)
        before.st_layout = x.st_layout
    x.st_meta, x.st_node = meta, node
    x.st_layout = None  # (exact strides of the old shape)
    if not keeps_layout:
        x.st_contig = None
