"""Factories: tensors made from sizes and scalars (zeros, full, arange, eye, rand, ...).

The device comes from the ``device`` argument (None means CPU, or ``self``'s device for
``*_like`` and ``new_*``); the dtype from ``dtype`` (None means the default float dtype,
``self``'s dtype for ``*_like``/``new_*``, or the fill value's kind for ``full``).  Sizes
may be symbolic; a negative size is rejected, which on a symbolic size is a guard.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import (
    check, decided_max, decided_min, either, every, scalar_dtype,
)
from safetrace.rules.registry import rule
from safetrace.symbolic import SymFloat

aten = torch.ops.aten
_CPU = torch.device("cpu")


# -- helpers ------------------------------------------------------------------------------


def device_arg(device: Any, default: torch.device = _CPU) -> torch.device:
    """A device argument as a torch.device: None gives `default`; str and int convert."""
    if device is None:
        return default
    return device if isinstance(device, torch.device) else torch.device(device)


def default_float(dtype: torch.dtype | None) -> torch.dtype:
    return torch.get_default_dtype() if dtype is None else dtype


def sizes(op: str, size: Sequence[Any]) -> tuple:
    """Check a size list for negative entries (a guard when symbolic)."""
    size = tuple(size) if isinstance(size, (list, tuple)) else (size,)
    for s in size:
        ok = s >= 0
        if ok is not True:  # (the message lists them all: built only where it may be said)
            check(ok, op, f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return size


def made(op: str, size: Sequence[Any], dtype: torch.dtype, device: Any,
         default_device: torch.device = _CPU) -> TensorMeta:
    return TensorMeta(sizes(op, size), dtype, device_arg(device, default_device))


def _fits(op: str, value: Any, dtype: torch.dtype) -> None:
    """A complex fill value does not fit a real dtype (eager torch raises)."""
    if isinstance(value, complex):
        check(dtype.is_complex, op, f"value cannot be converted to type {dtype} without overflow")


def _random_float(op: str, dtype: torch.dtype) -> None:
    check(dtype.is_floating_point or dtype.is_complex, op,
          f'"{op}" not implemented for \'{dtype}\'')


# -- from sizes ---------------------------------------------------------------------------


@rule(aten.zeros.default, aten.ones.default, aten.empty.memory_format)
def zeros(size: Sequence[Any], *, dtype: torch.dtype | None = None, layout: Any = None,
          device: Any = None, pin_memory: bool | None = None,
          memory_format: Any = None) -> TensorMeta:
    """zeros/ones/empty: the given size; default float dtype."""
    return made("zeros", size, default_float(dtype), device)


@rule(aten.empty_strided.default)
def empty_strided(size: Sequence[Any], stride: Sequence[Any], *,
                  dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
                  pin_memory: bool | None = None) -> TensorMeta:
    """empty_strided: the given size (strides are not modelled)."""
    check(len(size) == len(stride), "empty_strided",
          f"mismatch in length of strides and shape: {len(size)} vs {len(stride)}")
    return made("empty_strided", size, default_float(dtype), device)


@rule(aten.rand.default, aten.randn.default)
def rand(size: Sequence[Any], *, dtype: torch.dtype | None = None, layout: Any = None,
         device: Any = None, pin_memory: bool | None = None) -> TensorMeta:
    """rand/randn: floating or complex dtypes only."""
    out = default_float(dtype)
    _random_float("rand", out)
    return made("rand", size, out, device)


@rule(aten.full.default)
def full(size: Sequence[Any], fill_value: Any, *, dtype: torch.dtype | None = None,
         layout: Any = None, device: Any = None, pin_memory: bool | None = None) -> TensorMeta:
    """full: dtype from the fill value's kind (bool, int64, default float/complex)."""
    out = scalar_dtype(fill_value) if dtype is None else dtype
    _fits("full", fill_value, out)
    return made("full", size, out, device)


@rule(aten.randint.default)
def randint(high: Any, size: Sequence[Any], *, dtype: torch.dtype | None = torch.int64,
            layout: Any = None, device: Any = None, pin_memory: bool | None = None) -> TensorMeta:
    """randint(high, size): int64 by default; needs 0 < high."""
    return randint_low(0, high, size, dtype=dtype, device=device)


@rule(aten.randint.low)
def randint_low(low: Any, high: Any, size: Sequence[Any], *,
                dtype: torch.dtype | None = torch.int64, layout: Any = None, device: Any = None,
                pin_memory: bool | None = None) -> TensorMeta:
    """randint(low, high, size): needs low < high."""
    check(low < high, "randint",
          f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return made("randint", size, torch.int64 if dtype is None else dtype, device)


@rule(aten.eye.default)
def eye(n: Any, *, dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
        pin_memory: bool | None = None) -> TensorMeta:
    """eye(n): n x n."""
    return eye_m(n, n, dtype=dtype, device=device)


@rule(aten.eye.m)
def eye_m(n: Any, m: Any, *, dtype: torch.dtype | None = None, layout: Any = None,
          device: Any = None, pin_memory: bool | None = None) -> TensorMeta:
    """eye(n, m): n x m."""
    check(n >= 0, "eye", f"n must be greater or equal to 0, got {n}")
    check(m >= 0, "eye", f"m must be greater or equal to 0, got {m}")
    return TensorMeta((n, m), default_float(dtype), device_arg(device))


@rule(aten.scalar_tensor.default)
def scalar_tensor(s: Any, *, dtype: torch.dtype | None = None, layout: Any = None,
                  device: Any = None, pin_memory: bool | None = None) -> TensorMeta:
    """scalar_tensor: 0-d; the default float dtype whatever the kind of `s`."""
    out = default_float(dtype)
    _fits("scalar_tensor", s, out)
    return TensorMeta((), out, device_arg(device))


# -- ranges -------------------------------------------------------------------------------


def _is_integral(x: Any) -> bool:
    """Ints, bools and symbolic ints (not floats, symbolic or not)."""
    return not isinstance(x, (float, complex, SymFloat))


def _finite(x: Any) -> Any:
    """``math.isfinite(x)``; for a float of sizes proven from its interval when it can be
    (``math.isfinite`` would specialize it), else an exact guard ``x - x == 0``."""
    if isinstance(x, SymFloat):
        known = x.is_finite()
        return known if known is not None else (x - x == 0.0)
    return math.isfinite(x)


@rule(aten.arange.default)
def arange(end: Any, *, dtype: torch.dtype | None = None, layout: Any = None,
           device: Any = None, pin_memory: bool | None = None) -> TensorMeta:
    """arange(end): [0, end)."""
    return arange_start_step(0, end, 1, dtype=dtype, device=device)


@rule(aten.arange.start)
def arange_start(start: Any, end: Any, *, dtype: torch.dtype | None = None,
                 layout: Any = None, device: Any = None,
                 pin_memory: bool | None = None) -> TensorMeta:
    """arange(start, end): [start, end)."""
    return arange_start_step(start, end, 1, dtype=dtype, device=device)


@rule(aten.arange.start_step)
def arange_start_step(start: Any, end: Any, step: Any = 1, *,
                      dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
                      pin_memory: bool | None = None) -> TensorMeta:
    """arange: ceil((end - start) / step) elements; int64 when every bound is an int."""
    integral = all(_is_integral(x) for x in (start, end, step))
    out = dtype if dtype is not None else (torch.int64 if integral else
                                           torch.get_default_dtype())
    check(step != 0, "arange", "step must be nonzero")
    if not integral:
        for x in (start, end):
            if not _is_integral(x):  # an int (symbolic or not) is finite: ask nothing
                check(_finite(x), "arange", f"unsupported range: {start} -> {end}")
    check(either((every((step > 0, start <= end)), every((step < 0, start >= end)))), "arange",
          "upper bound and lower bound inconsistent with step sign")
    int_bounds = _is_integral(start) and _is_integral(end)
    if int_bounds and isinstance(step, float) and step.is_integer():
        step_i = int(step)  # arange(-n, n, 1.0): exact integer length, no float of a size
        length = -((start - end) // step_i)
    elif integral:
        length = -((start - end) // step)  # ceil division, exact on ints and symbolic ints
    else:
        length = math.ceil((end - start) / step)
    # the sign check above makes the length non-negative: no clamp needed
    return TensorMeta((length,), out, device_arg(device))


def _space(op: str, start: Any, end: Any, steps: Any, dtype: torch.dtype | None,
           device: Any) -> TensorMeta:
    for name, x in (("start", start), ("end", end)):
        if isinstance(x, TensorMeta):
            check(x.ndim == 0, op, f"{op} only supports 0-dimensional start and end tensors, "
                                   f"but got {name} with {x.ndim} dimension(s)")
    check(steps >= 0, op, "number of steps must be non-negative")
    if dtype is None:
        cplx = any(isinstance(x, complex) for x in (start, end))
        dtype = scalar_dtype(1j) if cplx else torch.get_default_dtype()
    return TensorMeta((steps,), dtype, device_arg(device))


@rule(aten.linspace.default, aten.linspace.Tensor_Tensor, aten.linspace.Tensor_Scalar,
      aten.linspace.Scalar_Tensor)
def linspace(start: Any, end: Any, steps: Any, *, dtype: torch.dtype | None = None,
             layout: Any = None, device: Any = None, pin_memory: bool | None = None) -> TensorMeta:
    """linspace: `steps` elements; default float (complex for complex bounds)."""
    return _space("linspace", start, end, steps, dtype, device)


@rule(aten.logspace.default, aten.logspace.Tensor_Tensor, aten.logspace.Tensor_Scalar,
      aten.logspace.Scalar_Tensor)
def logspace(start: Any, end: Any, steps: Any, base: float = 10.0, *,
             dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
             pin_memory: bool | None = None) -> TensorMeta:
    """logspace: as linspace."""
    return _space("logspace", start, end, steps, dtype, device)


# -- like another tensor ------------------------------------------------------------------


@rule(aten.zeros_like.default, aten.ones_like.default, aten.empty_like.default)
def zeros_like(self: TensorMeta, *, dtype: torch.dtype | None = None, layout: Any = None,
               device: Any = None, pin_memory: bool | None = None,
               memory_format: Any = None) -> TensorMeta:
    """zeros_like/ones_like/empty_like: self's shape; dtype and device default to self's."""
    return TensorMeta(self.shape, dtype or self.dtype, device_arg(device, self.device))


@rule(aten.rand_like.default, aten.randn_like.default)
def rand_like(self: TensorMeta, *, dtype: torch.dtype | None = None, layout: Any = None,
              device: Any = None, pin_memory: bool | None = None,
              memory_format: Any = None) -> TensorMeta:
    """rand_like/randn_like: floating or complex dtypes only."""
    out = zeros_like(self, dtype=dtype, device=device)
    _random_float("rand_like", out.dtype)
    return out


@rule(aten.full_like.default)
def full_like(self: TensorMeta, fill_value: Any, *, dtype: torch.dtype | None = None,
              layout: Any = None, device: Any = None, pin_memory: bool | None = None,
              memory_format: Any = None) -> TensorMeta:
    """full_like: self's dtype (not the fill value's) unless told otherwise."""
    out = zeros_like(self, dtype=dtype, device=device)
    _fits("full_like", fill_value, out.dtype)
    return out


@rule(aten.randint_like.default)
def randint_like(self: TensorMeta, high: Any, *, dtype: torch.dtype | None = None,
                 layout: Any = None, device: Any = None, pin_memory: bool | None = None,
                 memory_format: Any = None) -> TensorMeta:
    """randint_like(self, high): self's shape and dtype."""
    return randint_like_low(self, 0, high, dtype=dtype, device=device)


@rule(aten.randint_like.low_dtype)
def randint_like_low(self: TensorMeta, low: Any, high: Any, *,
                     dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
                     pin_memory: bool | None = None, memory_format: Any = None) -> TensorMeta:
    """randint_like(self, low, high): needs low < high."""
    check(low < high, "randint_like",
          f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return zeros_like(self, dtype=dtype, device=device)


@rule(aten.new_zeros.default, aten.new_ones.default, aten.new_empty.default)
def new_zeros(self: TensorMeta, size: Sequence[Any], *, dtype: torch.dtype | None = None,
              layout: Any = None, device: Any = None,
              pin_memory: bool | None = None) -> TensorMeta:
    """new_zeros/new_ones/new_empty: the given size; dtype and device default to self's."""
    return made("new_zeros", size, dtype or self.dtype, device, self.device)


@rule(aten.new_full.default)
def new_full(self: TensorMeta, size: Sequence[Any], fill_value: Any, *,
             dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
             pin_memory: bool | None = None) -> TensorMeta:
    """new_full: like new_zeros; self's dtype unless told otherwise."""
    out = new_zeros(self, size, dtype=dtype, device=device)
    _fits("new_full", fill_value, out.dtype)
    return out


# -- triangles ----------------------------------------------------------------------------


@rule(aten.tril.default, aten.triu.default)
def tril(self: TensorMeta, diagonal: Any = 0) -> TensorMeta:
    """tril/triu: same shape and dtype; at least 2 dims."""
    check(self.ndim >= 2, "tril", "tril: input tensor must have at least 2 dimensions")
    return self.like()


rule(aten.tril_.default, aten.triu_.default)(tril)


def tril_size(row: Any, col: Any, offset: int) -> Any:
    """How many elements of a row x col matrix lie on or below diagonal `offset` (torch's
    get_tril_size, its min/max kept as expressions rather than guards)."""
    if row == 0 or col == 0:  # eager branches here: a guard when symbolic
        return 0
    if offset > 0:
        first = decided_min(col, 1 + offset)
    else:  # (row + offset > 0) as 0 or 1
        first = decided_min(decided_max(row + offset, 0), 1)
    last = decided_max(0, decided_min(col, row + offset))
    rows = decided_max(0, decided_min(row, row + offset))
    trapezoid = last - first + 1
    size = (first + last) * trapezoid // 2
    return size + decided_max(rows - trapezoid, 0) * col


def _indices(op: str, row: Any, col: Any, dtype: torch.dtype | None, device: Any) -> None:
    check(row >= 0, op, f"row must be non-negative, got{row}")
    check(col >= 0, op, f"col must be non-negative, got{col}")
    check(dtype in (None, torch.int32, torch.int64), op, f'"{op}" not implemented for '
                                                         f"'{dtype}'")


@rule(aten.tril_indices.default)
def tril_indices(row: Any, col: Any, offset: int = 0, *, dtype: torch.dtype | None = torch.int64,
                 layout: Any = None, device: Any = None, pin_memory: Any = None) -> TensorMeta:
    """(2, N): the coordinates of the N elements on or below diagonal `offset`."""
    _indices("tril_indices", row, col, dtype, device)
    return made("tril_indices", (2, tril_size(row, col, offset)), dtype or torch.int64, device)


@rule(aten.triu_indices.default)
def triu_indices(row: Any, col: Any, offset: int = 0, *, dtype: torch.dtype | None = torch.int64,
                 layout: Any = None, device: Any = None, pin_memory: Any = None) -> TensorMeta:
    """(2, N): the coordinates of the N elements on or above diagonal `offset`."""
    _indices("triu_indices", row, col, dtype, device)
    n = row * col - tril_size(row, col, offset - 1)
    return made("triu_indices", (2, n), dtype or torch.int64, device)
