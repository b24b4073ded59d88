"""Shape rules of the splits into pieces: unbind, split / split_with_sizes, chunk,
tensor_split, hsplit / vsplit / dsplit.

How many pieces there are is a list length, which must be a plain int: ``concrete_count``
(views.py) pins it with a guard (the tracer's lazily counted pieces, trace/pieces.py,
avoid asking where only some pieces are read).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, normalize_dim
from safetrace.rules.registry import rule
from safetrace.rules.slicing import slice_length
from safetrace.rules.views import concrete_count, replace_dim

aten = torch.ops.aten
Size = Any


def _pieces(self: TensorMeta, d: int, sizes: Sequence[Size]) -> list:
    return [self.like(shape=replace_dim(self.shape, d, s)) for s in sizes]


@rule(aten.unbind.int)
def unbind(self: TensorMeta, dim: int = 0) -> list:
    """One tensor per index of `dim`, each without that dim (the count is pinned)."""
    check(self.ndim > 0, "unbind", "Dimension specified as 0 but tensor has no dimensions")
    d = normalize_dim(dim, self.ndim, "unbind")
    count = concrete_count(self.shape[d], "unbind")
    rest = self.shape[:d] + self.shape[d + 1:]
    return [self.like(shape=rest) for _ in range(count)]


@rule(aten.split.Tensor, aten.unsafe_split.Tensor)
def split(self: TensorMeta, split_size: Size, dim: int = 0) -> list:
    """Pieces of `split_size` along `dim`; the last one takes the remainder."""
    check(self.ndim > 0, "split", "split expects at least a 1-dimensional tensor")
    check(split_size >= 0, "split", f"split expects split_size be non-negative, but got "
                                    f"split_size={split_size}")
    d = normalize_dim(dim, self.ndim, "split")
    n = self.shape[d]
    if split_size == 0:
        check(n == 0, "split", f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        return _pieces(self, d, [n])
    count = concrete_count((n + split_size - 1) // split_size, "split")
    count = max(count, 1)
    last = n - split_size * (count - 1)
    return _pieces(self, d, [split_size] * (count - 1) + [last])


@rule(aten.split_with_sizes.default, aten.split.sizes, aten.unsafe_split_with_sizes.default)
def split_with_sizes(self: TensorMeta, split_sizes: Sequence[Size], dim: int = 0) -> list:
    """Pieces of the given sizes, which must add up to the size of `dim`."""
    check(self.ndim > 0, "split_with_sizes", "split expects at least a 1-dimensional tensor")
    d = normalize_dim(dim, self.ndim, "split_with_sizes")
    n = self.shape[d]
    for s in split_sizes:
        ok = s >= 0
        if ok is not True:  # (the message lists them all: built only where it may be said)
            check(ok, "split_with_sizes", f"split_with_sizes expects split_sizes have only "
                                          f"non-negative entries, but got split_sizes="
                                          f"{list(split_sizes)}")
    total = sum(split_sizes[1:], split_sizes[0]) if split_sizes else 0
    check(total == n, "split_with_sizes",
          f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
          f"at dimension {d}), but got split_sizes={list(split_sizes)}")
    return _pieces(self, d, split_sizes)


@rule(aten.chunk.default, aten.unsafe_chunk.default)
def chunk(self: TensorMeta, chunks: int, dim: int = 0) -> list:
    """At most `chunks` pieces of ceil(n / chunks); fewer when n is small."""
    check(self.ndim > 0, "chunk", "chunk expects at least a 1-dimensional tensor")
    check(chunks > 0, "chunk", f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, self.ndim, "chunk")
    n = self.shape[d]
    piece = (n + chunks - 1) // chunks
    if n == 0:  # split would drop the count: every piece is empty
        return _pieces(self, d, [0] * chunks)
    return split(self, piece, d)


@rule(aten.tensor_split.sections)
def tensor_split_sections(self: TensorMeta, sections: Size, dim: int = 0) -> list:
    """`sections` balanced pieces, the longer ones first."""
    check(self.ndim > 0, "tensor_split", f"tensor_split expected at least a 1-dimensional "
                                         f"tensor, but got a tensor with {self.ndim} dims")
    check(sections > 0, "tensor_split", f"number of sections must be larger than 0, got "
                                        f"{sections}")
    d = normalize_dim(dim, self.ndim, "tensor_split")
    n = self.shape[d]
    k = concrete_count(sections, "tensor_split")
    return _pieces(self, d, [(n + k - 1 - i) // k for i in range(k)])


@rule(aten.tensor_split.indices)
def tensor_split_indices(self: TensorMeta, indices: Sequence[Size], dim: int = 0) -> list:
    """Pieces between consecutive split points, each a slice (wrapped and clamped)."""
    check(self.ndim > 0, "tensor_split", f"tensor_split expected at least a 1-dimensional "
                                         f"tensor, but got a tensor with {self.ndim} dims")
    d = normalize_dim(dim, self.ndim, "tensor_split")
    n = self.shape[d]
    bounds = [0, *indices, None]
    return _pieces(self, d, [slice_length(n, a, b) for a, b in zip(bounds, bounds[1:])])


def _split_dim(op: str, self: TensorMeta, min_ndim: int, dim: int) -> int:
    """The dim h/v/dsplit split, after checking self has enough dims."""
    check(self.ndim >= min_ndim, op, f"torch.{op} requires a tensor with at least {min_ndim} "
                                     f"dimension{'s' if min_ndim > 1 else ''}, but got a tensor "
                                     f"with {self.ndim} dimensions!")
    return dim


def _split_even(op: str, self: TensorMeta, d: int, sections: Size) -> list:
    """`sections` equal pieces of dim `d`, whose size `sections` must divide."""
    n = self.shape[d]
    check(not (isinstance(sections, int) and sections == 0) and n % sections == 0, op,
          f"torch.{op} attempted to split along dimension {d}, but the size of the dimension "
          f"{n} is not divisible by the split_size {sections}!")
    k = concrete_count(sections, op)
    return _pieces(self, d, [n // k] * k)


def _directional_split(packet: Any, min_ndim: int, dim: int) -> None:
    """Register h/v/dsplit: equal sections, or tensor_split at indices, along `dim`
    (hsplit splits dim 0 of a 1-d tensor)."""
    name = packet.__name__

    def split_int(self: TensorMeta, sections: Size) -> list:
        d = _split_dim(name, self, min_ndim, 0 if self.ndim == 1 else dim)
        return _split_even(name, self, d, sections)

    def split_array(self: TensorMeta, indices: Sequence[Size]) -> list:
        d = _split_dim(name, self, min_ndim, 0 if self.ndim == 1 else dim)
        return tensor_split_indices(self, indices, d)

    split_int.__name__ = split_int.__qualname__ = f"{name}_int"
    split_array.__name__ = split_array.__qualname__ = f"{name}_array"
    split_int.__doc__ = f"{name}: `sections` equal pieces along dim {dim}."
    split_array.__doc__ = f"{name}: tensor_split at `indices` along dim {dim}."
    rule(packet.int)(split_int)
    rule(packet.array)(split_array)


for _packet, _min_ndim, _dim in ((aten.hsplit, 1, 1), (aten.vsplit, 2, 0),
                                 (aten.dsplit, 3, 2)):
    _directional_split(_packet, _min_ndim, _dim)
