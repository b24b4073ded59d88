"""Shape rules of flips, rotations and diagonals: fliplr/flipud, rot90, diag, diag_embed,
diagflat, fill_diagonal_.

(flip, roll and diagonal, the views these build on, are in views.py.)
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, every, normalize_dim
from safetrace.rules.registry import rule
from safetrace.rules.views import swapped, diagonal

aten = torch.ops.aten


@rule(aten.fliplr.default)
def fliplr(self: TensorMeta) -> TensorMeta:
    """flip(self, [1]): same shape; at least 2 dims."""
    check(self.ndim >= 2, "fliplr", "Input must be >= 2-d.")
    return self.like()


@rule(aten.flipud.default)
def flipud(self: TensorMeta) -> TensorMeta:
    """flip(self, [0]): same shape; at least 1 dim."""
    check(self.ndim >= 1, "flipud", "Input must be >= 1-d.")
    return self.like()


@rule(aten.rot90.default)
def rot90(self: TensorMeta, k: int = 1, dims: Sequence[int] = (0, 1)) -> TensorMeta:
    """Rotation in the plane of `dims`: an odd number of quarter turns swaps their sizes."""
    op = "rot90"
    check(len(dims) == 2, op, f"expected total rotation dims == 2, but got dims = {len(dims)}")
    check(self.ndim >= 2, op, f"expected total dims >= 2, but got total dims = {self.ndim}")
    check(dims[0] != dims[1] and abs(dims[0] - dims[1]) != self.ndim, op,
          f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = "
          f"{dims[1]}")
    a = normalize_dim(dims[0], self.ndim, op)
    b = normalize_dim(dims[1], self.ndim, op)
    if k % 4 in (1, 3):
        return swapped(self, a, b, op)
    return self.like()


_diagonal = diagonal  # diag's argument `diagonal` shadows the rule's name


@rule(aten.diag.default)
def diag(self: TensorMeta, diagonal: int = 0) -> TensorMeta:
    """A 1-d tensor becomes a square matrix of side n + |diagonal|; a 2-d one its diagonal."""
    check(self.ndim in (1, 2), "diag", f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
    if self.ndim == 1:
        n = self.shape[0] + abs(diagonal)
        return self.like(shape=(n, n))
    return _diagonal(self, diagonal, 0, 1)



@rule(aten.diag_embed.default)
def diag_embed(self: TensorMeta, offset: int = 0, dim1: int = -2, dim2: int = -1) -> TensorMeta:
    """The last dim (n) becomes the diagonal of new dims dim1, dim2 of size n + |offset|."""
    ndim = self.ndim + 1
    a = normalize_dim(dim1, ndim, "diag_embed")
    b = normalize_dim(dim2, ndim, "diag_embed")
    check(a != b, "diag_embed", f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = self.shape[-1] + abs(offset)
    rest = iter(self.shape[:-1])
    return self.like(shape=tuple(n if i in (a, b) else next(rest) for i in range(ndim)))


@rule(aten.diagflat.default)
def diagflat(self: TensorMeta, offset: int = 0) -> TensorMeta:
    """The flattened input on diagonal `offset` of a square matrix of side numel + |offset|."""
    n = self.numel() + abs(offset)
    return self.like(shape=(n, n))


@rule(aten.fill_diagonal_.default)
def fill_diagonal_(self: TensorMeta, fill_value: Any, wrap: bool = False) -> TensorMeta:
    """In place, the same shape: at least 2 dims, all of one length beyond 2 (eager's
    checks; a tall matrix with wrap writes every (cols + 1)th row, no shape change)."""
    op = "fill_diagonal_"
    check(self.ndim >= 2, op, "dimensions must larger than 1")
    if self.ndim > 2:
        check(every(s == self.shape[0] for s in self.shape[1:]), op,
              "all dimensions of input must be of equal length")
    return self.like()
