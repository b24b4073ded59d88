"""Ops whose output size or value depends on tensor data.

Each result size is a fresh unbacked symbol with the tightest range that holds for all
data: ``nonzero(x)`` has between 0 and ``x.numel()`` rows, ``.item()`` of
``count_nonzero(x)`` lies in [0, x.numel()], ``unique`` has at least one element when the
input is not empty.  Decisions on these sizes must then be provable (or checked).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.errors import complex_item
from safetrace.rules.common import (
    broadcast_shapes, check, either, is_empty, new_float, new_size, normalize_dim, prod,
)
from safetrace.rules.kernel_checks import kernel_check
from safetrace.rules.registry import rule

aten = torch.ops.aten
_LONG = torch.int64

_DTYPE_RANGE = {torch.bool: (0, 1), torch.uint8: (0, 255), torch.int8: (-128, 127),
                torch.int16: (-(2 ** 15), 2 ** 15 - 1), torch.int32: (-(2 ** 31), 2 ** 31 - 1)}


@rule(aten.item.default, aten._local_scalar_dense.default)
def item(self: TensorMeta) -> Any:
    """The value of a one-element tensor: an unbacked int, bool or float."""
    check(self.numel() == 1, "item", f"a Tensor with {self.numel()} elements cannot be "
                                     f"converted to Scalar",
          "pick or reduce to one element first (`x[0].item()`, `x.sum().item()`), or keep "
          "the tensor and compute with it (a 0-d tensor broadcasts in tensor ops)")
    if self.dtype.is_floating_point:
        return new_float(".item()")  # the graph computes with it; decisions need checks
    if self.dtype.is_complex:
        raise complex_item(self.dtype)
    lo, hi = self.bounds if self.bounds is not None else _DTYPE_RANGE.get(self.dtype,
                                                                          (None, None))
    u = new_size(lo, hi, ".item()")
    if self.dtype is torch.bool:
        return u == 1
    return u


@rule(aten.nonzero.default, aten.argwhere.default)
def nonzero(self: TensorMeta) -> TensorMeta:
    """One row per nonzero element (at most numel), one column per dim."""
    n = new_size(0, self.numel(), "nonzero()")
    return TensorMeta((n, self.ndim), _LONG, self.device)


@rule(aten.masked_select.default)
def masked_select(self: TensorMeta, mask: TensorMeta) -> TensorMeta:
    """The selected elements: at most the broadcast numel of self and mask."""
    check(mask.dtype is torch.bool, "masked_select",
          f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = broadcast_shapes(self.shape, mask.shape, op="masked_select")
    return TensorMeta((new_size(0, prod(shape), "masked_select()"),), self.dtype, self.device)


def _unique_count(self: TensorMeta, what: str) -> Any:
    """Number of distinct elements: in [1, numel] for a non-empty input, 0 when empty."""
    n = self.numel()
    if isinstance(n, int):
        return new_size(min(n, 1), n, what)
    return new_size(0, n, what)


@rule(aten._unique2.default)
def unique2(self: TensorMeta, sorted: bool = True, return_inverse: bool = False,
            return_counts: bool = False) -> tuple:
    """(values, inverse or empty, counts or empty)."""
    return _unique_outputs(self, return_inverse, return_counts, "unique()")


def _unique_outputs(self: TensorMeta, return_inverse: bool, return_counts: bool,
                    what: str) -> tuple:
    """(values (u,), inverse (self's shape or empty), counts ((u,) or empty))."""
    u = _unique_count(self, what)
    inverse = self.shape if return_inverse else (0,)
    counts = (u,) if return_counts else (0,)
    return (TensorMeta((u,), self.dtype, self.device), TensorMeta(inverse, _LONG, self.device),
            TensorMeta(counts, _LONG, self.device))


@rule(aten._unique.default)
def unique1(self: TensorMeta, sorted: bool = True, return_inverse: bool = False) -> tuple:
    """(values, inverse or empty)."""
    return _unique_outputs(self, return_inverse, False, "unique()")[:2]


@rule(aten.unique_consecutive.default)
def unique_consecutive(self: TensorMeta, return_inverse: bool = False,
                       return_counts: bool = False, dim: int | None = None) -> tuple:
    """Runs of equal elements (or slices along `dim`)."""
    if dim is not None:
        return unique_dim(self, dim, True, return_inverse, return_counts)
    return _unique_outputs(self, return_inverse, return_counts, "unique_consecutive()")


@rule(aten.unique_dim.default)
def unique_dim(self: TensorMeta, dim: int, sorted: bool = True, return_inverse: bool = False,
               return_counts: bool = False) -> tuple:
    """Distinct slices along `dim`."""
    d = normalize_dim(dim, self.ndim, "unique_dim")
    size = self.shape[d]
    others = prod(s for i, s in enumerate(self.shape) if i != d)
    check(either((others != 0, size == 0)), "unique_dim", "There are 0 sized dimensions, and they "
                                                   "aren't selected, so unique cannot be applied")
    u = new_size(min(size, 1), size, "unique(dim=...)") if isinstance(size, int) else \
        new_size(0, size, "unique(dim=...)")
    shape = self.shape[:d] + (u,) + self.shape[d + 1:]
    return (TensorMeta(shape, self.dtype, self.device),
            TensorMeta((size,), _LONG, self.device), TensorMeta((u,), _LONG, self.device))


@rule(aten.repeat_interleave.Tensor)
def repeat_interleave(repeats: TensorMeta, *, output_size: Any = None) -> TensorMeta:
    """arange(len(repeats)) repeated: sum(repeats) elements (given by output_size if set)."""
    check(repeats.ndim <= 1, "repeat_interleave", "repeats must be 0-dim or 1-dim tensor")
    n = output_size if output_size is not None else new_size(0, None, "repeat_interleave()")
    return TensorMeta((n,), repeats.dtype, repeats.device)


@rule(aten.repeat_interleave.self_Tensor)
def repeat_interleave_self(self: TensorMeta, repeats: TensorMeta, dim: int | None = None, *,
                           output_size: Any = None) -> TensorMeta:
    """Each slice along `dim` repeated by its count; without dim the input is flattened."""
    check(repeats.ndim <= 1, "repeat_interleave", "repeats must be 0-dim or 1-dim tensor")
    if repeats.ndim == 1 and not (isinstance(repeats.shape[0], int) and repeats.shape[0] == 1):
        along = self.numel() if dim is None else \
            self.shape[normalize_dim(dim, self.ndim, "repeat_interleave")]
        check(either((repeats.shape[0] == along, repeats.shape[0] == 1)), "repeat_interleave",
              f"repeats must have the same size as input along dim, but got repeats.size(0) = "
              f"{repeats.shape[0]} and input.size({0 if dim is None else dim}) = {along}")
    n = output_size if output_size is not None else new_size(0, None, "repeat_interleave()")
    if dim is None:
        return TensorMeta((n,), self.dtype, self.device)
    d = normalize_dim(dim, self.ndim, "repeat_interleave")
    return TensorMeta(self.shape[:d] + (n,) + self.shape[d + 1:], self.dtype, self.device)


@rule(aten.bincount.default)
def bincount(self: TensorMeta, weights: TensorMeta | None = None,
             minlength: int = 0) -> TensorMeta:
    """max(input) + 1 bins, at least `minlength`."""
    check(self.ndim == 1, "bincount", "bincount only supports 1-d non-negative integral inputs.")
    check(not self.dtype.is_floating_point, "bincount",
          "bincount only supports 1-d non-negative integral inputs.")
    check(minlength >= 0, "bincount", "minlength should be >= 0")
    # eager returns int64 zeros, weights or not (without weights, a size >= minlength
    # already admits that: no guard)
    if (weights is not None or isinstance(self.numel(), int)) and is_empty(self):
        return TensorMeta((minlength,), _LONG, self.device)
    if weights is not None:
        check(weights.ndim == 1 and weights.shape[0] == self.shape[0], "bincount",
              "weights should be 1-d and have the same length as input")
    n = new_size(minlength, None, "bincount()")
    dtype = _LONG if weights is None else (weights.dtype if weights.dtype.is_floating_point
                                           else torch.float64)
    return TensorMeta((n,), dtype, self.device)


@rule(aten.where.default)
def where_condition(condition: TensorMeta) -> list:
    """``torch.where(cond)``: one index tensor per dim, all of the nonzero count."""
    n = new_size(0, condition.numel(), "torch.where(cond)")
    return [TensorMeta((n,), _LONG, condition.device) for _ in range(max(condition.ndim, 1))]


@rule(aten.nonzero_static.default)
def nonzero_static(self: TensorMeta, *, size: Any, fill_value: int = -1) -> TensorMeta:
    """The first `size` nonzero indices, padded with `fill_value`: (size, ndim) int64."""
    check(size >= 0, "nonzero_static",
          f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    return TensorMeta((size, self.ndim), _LONG, self.device)


@rule(aten.multinomial.default)
def multinomial(self: TensorMeta, num_samples: Any, replacement: bool = False, *,
                generator: Any = None) -> TensorMeta:
    """`num_samples` category indices per distribution (the last dim): int64, shaped
    (num_samples,) or (rows, num_samples)."""
    op = "aten.multinomial"
    check(0 < self.ndim <= 2, op, f"prob_dist must be 1 or 2 dim, got {self.ndim}")
    check(self.dtype.is_floating_point, op,
          f"multinomial only supports floating-point dtypes for input, got: {self.dtype}")
    # (torch's meta leaves these two to the kernel: see kernel_checks; more than 2**24
    # categories: the kernel itself raises at run time, as in eager)
    kernel_check(num_samples > 0, op, "cannot sample n_sample <= 0 samples")
    if not replacement:
        kernel_check(num_samples <= self.shape[-1], op,
                     "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    shape = (num_samples,) if self.ndim == 1 else (self.shape[0], num_samples)
    return TensorMeta(shape, _LONG, self.device)
