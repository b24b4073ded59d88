"""Shape rules of joins: cat and its spellings, stack, hstack/vstack/dstack, meshgrid."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import (broadcast_shapes, check, normalize_dim, prod, result_type,
                                    static_zero)
from safetrace.rules.registry import rule

aten = torch.ops.aten
Size = Any


def cat_shape(shapes: Sequence[tuple], dim: int, op: str = "cat") -> tuple | None:
    """The shape of concatenating tensors of `shapes` along `dim` (None: all were skipped)."""
    # Legacy: 1-d tensors of shape (0,) are skipped whatever the others are.  When every
    # tensor has the same rank, skipping them changes nothing (they add 0), so the question
    # is only asked (a guard on a symbolic size) when ranks differ.
    if all(len(s) == len(shapes[0]) for s in shapes):
        if all(len(s) == 1 and static_zero(s[0]) for s in shapes):
            return None
        kept = list(enumerate(shapes))
    else:
        kept = [(i, s) for i, s in enumerate(shapes) if not (len(s) == 1 and s[0] == 0)]
    if not kept:
        return None
    first = kept[0][1]
    d = normalize_dim(dim, len(first), op)
    total: Size = first[d]
    for i, shape in kept[1:]:
        check(len(shape) == len(first), op, f"Tensors must have same number of dimensions: "
                                             f"got {len(first)} and {len(shape)}")
        for j, (a, b) in enumerate(zip(first, shape)):
            if j != d and a is not b:
                check(a == b, op, f"Sizes of tensors must match except in dimension {d}. "
                                  f"Expected size {a} but got size {b} for tensor number {i} "
                                  f"in the list.")
        total = total + shape[d]
    out = list(first)
    out[d] = total
    return tuple(out)


@rule(aten.cat.default, aten.concat.default, aten.concatenate.default)
def cat(tensors: Sequence[TensorMeta], dim: int = 0) -> TensorMeta:
    """Sizes add along `dim`, every other dim must match; dtypes promote."""
    check(len(tensors) > 0, "cat", "torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        check(t.ndim > 0, "cat", f"zero-dimensional tensor (at position {i}) cannot be "
                                 f"concatenated")
    shape = cat_shape([t.shape for t in tensors], dim)
    dtype = result_type(*tensors)
    if shape is None:
        return tensors[0].like(shape=(0,), dtype=dtype)
    return tensors[0].like(shape=shape, dtype=dtype)


@rule(aten.stack.default)
def stack(tensors: Sequence[TensorMeta], dim: int = 0) -> TensorMeta:
    """A new dim of len(tensors) at `dim`; all shapes must be equal."""
    check(len(tensors) > 0, "stack", "stack expects a non-empty TensorList")
    first = tensors[0].shape
    d = normalize_dim(dim, len(first) + 1, "stack")
    for i, t in enumerate(tensors[1:], start=1):
        same = len(t.shape) == len(first) and all(a is b or a == b
                                                  for a, b in zip(first, t.shape))
        check(same, "stack", f"stack expects each tensor to be equal size, but got "
                             f"{list(first)} at entry 0 and {list(t.shape)} at entry {i}")
    shape = first[:d] + (len(tensors),) + first[d:]
    return tensors[0].like(shape=shape, dtype=result_type(*tensors))


def _at_least(t: TensorMeta, n: int) -> TensorMeta:
    """atleast_1d / 2d / 3d: numpy's placement of the added size-1 dims."""
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return t.like(shape=(1,) * n)
    if t.ndim == 1:
        return t.like(shape=(1,) + t.shape + (1,) * (n - 2))
    return t.like(shape=t.shape + (1,))


def _stacked(tensors: Sequence[TensorMeta], n: int, dim: int, op: str) -> TensorMeta:
    check(len(tensors) > 0, op, f"{op} expects a non-empty TensorList")
    return cat([_at_least(t, n) for t in tensors], dim)


@rule(aten.hstack.default)
def hstack(tensors: Sequence[TensorMeta]) -> TensorMeta:
    """cat along dim 0 for vectors, dim 1 otherwise (after atleast_1d)."""
    check(len(tensors) > 0, "hstack", "hstack expects a non-empty TensorList")
    ones = [_at_least(t, 1) for t in tensors]
    return cat(ones, 0 if ones[0].ndim == 1 else 1)


@rule(aten.vstack.default)
def vstack(tensors: Sequence[TensorMeta]) -> TensorMeta:
    """cat along dim 0 after atleast_2d."""
    return _stacked(tensors, 2, 0, "vstack")


@rule(aten.dstack.default)
def dstack(tensors: Sequence[TensorMeta]) -> TensorMeta:
    """cat along dim 2 after atleast_3d."""
    return _stacked(tensors, 3, 2, "dstack")


@rule(aten.meshgrid.default)
def meshgrid(tensors: Sequence[TensorMeta]) -> list:
    """One grid per input, of shape (numel of each input) ("ij" indexing)."""
    return meshgrid_indexing(tensors, indexing="ij")


@rule(aten.meshgrid.indexing)
def meshgrid_indexing(tensors: Sequence[TensorMeta], *, indexing: str) -> list:
    """One grid per input; "xy" swaps the first two grid dims."""
    op = "meshgrid"
    check(len(tensors) > 0, op, "meshgrid expects a non-empty TensorList")
    check(indexing in ("xy", "ij"), op, f'torch.meshgrid: indexing must be one of "xy" or '
                                        f'"ij", but received: {indexing}')
    for t in tensors:
        check(t.ndim <= 1, op, f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
        check(t.dtype == tensors[0].dtype, op, "meshgrid expects all tensors to have the "
                                               "same dtype")
        check(t.device == tensors[0].device, op, "meshgrid expects all tensors to have the "
                                                 "same device")
    shape = [t.shape[0] if t.ndim == 1 else 1 for t in tensors]
    if indexing == "xy" and len(shape) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    return [t.like(shape=tuple(shape)) for t in tensors]


@rule(aten.cartesian_prod.default)
def cartesian_prod(tensors: Sequence[TensorMeta]) -> TensorMeta:
    """1-d tensors of sizes n1..nk -> (n1*...*nk, k); a single tensor comes back as is."""
    for t in tensors:
        check(t.ndim == 1, "cartesian_prod", f"Expect a 1D vector, but got shape "
                                             f"{list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0].like()
    meshgrid_indexing(tensors, indexing="ij")
    return tensors[0].like(shape=(prod(t.shape[0] for t in tensors), len(tensors)))


@rule(aten.broadcast_tensors.default)
def broadcast_tensors(tensors: Sequence[TensorMeta]) -> list:
    """Every tensor expanded to the common broadcast shape (each keeps its dtype)."""
    shape = broadcast_shapes(*(t.shape for t in tensors), op="broadcast_tensors")
    return [t.like(shape=shape) for t in tensors]


@rule(aten.block_diag.default)
def block_diag(tensors: Sequence[TensorMeta]) -> TensorMeta:
    """Blocks along the diagonal: 0-d is 1x1, 1-d (n,) is 1xn; rows and columns add up."""
    rows: Size = 0
    cols: Size = 0
    for i, t in enumerate(tensors):
        check(t.ndim <= 2, "block_diag", f"torch.block_diag: Input tensors must have 2 or fewer "
                                         f"dimensions. Input {i} has {t.ndim} dimensions")
        r, c = (1, 1) if t.ndim == 0 else (1, t.shape[0]) if t.ndim == 1 else t.shape
        rows, cols = rows + r, cols + c
    if not tensors:  # torch answers a (1, 0) tensor of the default dtype
        return TensorMeta((1, 0), torch.get_default_dtype(), torch.device("cpu"))
    return tensors[0].like(shape=(rows, cols), dtype=result_type(*tensors))
