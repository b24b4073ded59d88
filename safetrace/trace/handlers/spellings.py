"""Calls whose Python signature is not their ATen op's: ``x.where(cond, y)``,
``nonzero(as_tuple=True)``, ``split`` by a size or by a list of sizes; ``split`` /
``chunk`` along a symbolic dim, and ``tensor_split`` into a count of sections computed from
sizes, return lazily counted ``Pieces``; ``F.affine_grid``;
``torch.einsum`` without a contraction path."""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F

from safetrace import errors
from safetrace.rules.common import normalize_dim
from safetrace.symbolic import SymInt
from safetrace.trace import memo
from safetrace.trace.pieces import pieces
from safetrace.trace.proxy import Proxy
from safetrace.trace.registry import handles
from safetrace.trace.schema import resolve
from safetrace.trace.recorder import Recorder

aten = torch.ops.aten


@handles(torch.Tensor.where)
def tensor_where(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.where(cond, y)`` is ``torch.where(cond, x, y)``: the method's self is the value."""
    rest = list(args[1:]) + [kwargs[k] for k in ("condition", "other") if k in kwargs]
    return tr.redispatch(torch.where, (rest[0], args[0], rest[1]), {})


@handles(torch.nonzero, torch.Tensor.nonzero)
def nonzero(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``nonzero(m, as_tuple=True)``: the columns of ``nonzero(m)`` (a 0-dim m counts as
    1-dim, as in eager), each of the data-dependent length."""
    kwargs = dict(kwargs)
    if not kwargs.pop("as_tuple", False):
        return tr.redispatch(func, args, kwargs, handlers=False)
    x = args[0]
    if not isinstance(x, Proxy):
        # a constant or state (``torch.tensor(sizes) > 0``): the same columns by the calls'
        # own plans (nonzero without as_tuple gave its 2-d result: a wrong value)
        if x.dim() == 0:
            x = tr.redispatch(torch.reshape, (x, (1,)), {})
        rows = tr.redispatch(torch.nonzero, (x,), {})
        return tuple(tr.redispatch(torch.unbind, (rows, 1), {}))
    if x.st_meta.ndim == 0:
        x = tr.emit(aten.reshape.default, (x, [1]), {})
    rows = tr.emit(aten.nonzero.default, (x,), {})
    return tuple(tr.emit(aten.unbind.int, (rows, 1), {}))


@handles(torch.Tensor.split, torch.split, getattr(torch._C._VariableFunctions, "split"),
         torch._C.TensorBase.split, torch.Tensor.unsafe_split, torch.unsafe_split)
def split(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``split(x, 2)`` is ``aten.split``; ``split(x, [2, 3])`` is ``aten.split_with_sizes``
    (``unsafe_split``'s pieces are views of the input too: the same ops).  A call on
    static sizes is replayed when met again (``memo.py``), as a plain op's is."""
    if tr.recording and not tr.unsourced_settled:
        return memo.call(tr, func, _split, args, kwargs)
    return _split(tr, func, args, kwargs)


def _split(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    size = args[1] if len(args) > 1 else kwargs.get(
        "split_size", kwargs.get("split_size_or_sections"))
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    if isinstance(size, torch.Tensor) and size.dim() == 0:
        # eager's Tensor.split reads a 0-d split size with int(): its known value, or a
        # DataRead naming the line (a buffer's or a computed value is data)
        size = tr.redispatch(torch.Tensor.__int__, (size,), {})
    if isinstance(size, (list, tuple)):
        return tr.emit(aten.split_with_sizes.default, (args[0], list(size), dim), {})

    def materialize() -> Any:
        found = resolve("split", (args[0], size, dim), {})
        if found is None:  # pragma: no cover - split(x, int, int) always fits
            raise errors.internal_error("aten.split has no overload for split(x, int, int)")
        return tr.emit(found[0], found[1], found[2])

    return _lazy(tr, args[0], dim, "split", size, materialize)


def _lazy(tr: Recorder, x: Any, dim: Any, kind: str, k: Any, materialize: Any) -> Any:
    if not isinstance(x, Proxy) or not isinstance(dim, int) or x.st_meta.ndim == 0:
        return materialize()
    return pieces(tr, x, normalize_dim(dim, x.st_meta.ndim, kind), kind, k, materialize)


@handles(torch.Tensor.chunk, torch.chunk, torch.Tensor.unsafe_chunk, torch.unsafe_chunk)
def chunk(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``chunk(x, c, dim)`` (or ``unsafe_chunk``): lazily counted pieces along a symbolic
    dim."""
    chunks = args[1] if len(args) > 1 else kwargs.get("chunks")
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    return _lazy(tr, args[0], dim, "chunk", chunks,
                 lambda: tr.redispatch(func, args, kwargs, handlers=False))


@handles(torch.Tensor.tensor_split, torch.tensor_split)
def tensor_split(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``tensor_split(x, k, dim)`` with a count `k` computed from sizes: lazily counted
    pieces (a tuple's length would pin `k`); any other form is the op's own."""
    k = args[1] if len(args) > 1 else kwargs.get("sections", kwargs.get(
        "indices_or_sections", kwargs.get("tensor_indices_or_sections")))
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    if isinstance(k, torch.Tensor) and args and isinstance(args[0], Proxy):
        return _tensor_count(tr, args[0], k, dim)
    if not isinstance(k, SymInt):
        return tr.redispatch(func, args, kwargs, handlers=False)
    return _lazy(tr, args[0], dim, "tensor_split", k,
                 lambda: tr.redispatch(func, args, kwargs, handlers=False))


# a dtype's name in ATen's messages (torch.int32 -> "Int"), as eager's tensor_split gives it
_SCALAR_NAMES = {d: torch.empty(0, dtype=d).type()[len("torch."):-len("Tensor")] for d in (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.float16,
    torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128)}


def _tensor_count(tr: Recorder, x: Any, k: torch.Tensor, dim: Any) -> Any:
    """``x.tensor_split(t, dim)`` with a tensor `t`, as eager reads it: a 0-d int64 `t` is
    ``int(t)`` sections, a 1-d one the indices ``t.tolist()`` (its known values, or a
    DataRead naming the line where `t` is data); eager's own errors otherwise."""
    if k.device.type != "cpu":
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be on cpu, "
                           f"but it's on {k.device}")
    if k.dtype != torch.long:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                           f"of long, but got {_SCALAR_NAMES.get(k.dtype, k.dtype)}")
    if k.dim() > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                           "zero-dimensional or one-dimensional tensor, but got a tensor "
                           f"with {k.dim()} dims")
    if k.dim() == 0:
        out = tr.redispatch(torch.Tensor.tensor_split,
                            (x, tr.redispatch(torch.Tensor.__int__, (k,), {}), dim), {})
    else:
        indices = tr.redispatch(torch.Tensor.tolist, (k,), {})
        out = tr.redispatch(torch.Tensor.tensor_split, (x, list(indices), dim), {})
    return tuple(out) if isinstance(out, list) else out  # (eager's is a tuple)


@handles(F.affine_grid)
def affine_grid(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``F.affine_grid`` is its Python checks and ``aten.affine_grid_generator``.  Its body
    asks ``align_corners and min(spatial) == 1`` only to choose between a warning and the
    size check (the grid is the same): a relation between the spatial dims.  Here a unit
    grid is one whose sizes are statically 1, and each size is asked ``<= 0`` on its own."""
    bound = dict(zip(("theta", "size", "align_corners"), args))
    bound.update(kwargs)
    theta, size, align = bound["theta"], list(bound["size"]), bound.get("align_corners")
    if align is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=3)
        align = False
    meta = theta.st_meta if isinstance(theta, Proxy) else theta  # the handler runs unmoded
    shape = tuple(meta.shape)
    if not meta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {meta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    k = len(size) - 2
    if len(shape) != 3 or shape[-2] != k or shape[-1] != k + 1:
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for "
                         f"size {size}. Got {shape}.")
    unit_grid = align and any(type(s) is int and s == 1 for s in size[2:])
    if not unit_grid:  # eager only warns for a unit-size grid with align_corners=True
        for s in size:
            if s <= 0:
                raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return tr.redispatch(torch.affine_grid_generator, (theta, size, align), {})


@handles(torch.functional.einsum)
def einsum(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.einsum(eq, a, b, c)``: with three operands or more, and the ``opt_einsum``
    package installed, torch's Python wrapper asks it for a contraction order computed from
    ``int(size)`` of every dim, which would pin each symbolic size to its example.  The
    order changes only the rounding, so the call is recorded as ``aten.einsum`` without a
    path: the order torch takes when ``opt_einsum`` is absent or disabled, at every size.
    (The sublist form reaches here already turned into an equation by torch's wrapper.)"""
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])  # the old form: one list of operands
    return tr.emit(aten.einsum.default, (equation, list(operands)), {})
