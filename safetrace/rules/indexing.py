"""Shape rules of indexing: select/slice, advanced indexing, gather/scatter, index_* ops.

Boolean (and uint8) masks select a number of elements that depends on data; where that
number reaches the result's shape, the rule raises DataDependentError rather than guess.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.errors import DataDependentError, mask_count
from safetrace.meta import TensorMeta
from safetrace.rules.common import (broadcast_shapes, broadcast_sizes, check, either, hint_of,
                                    new_size, normalize_dim, static_zero)
from safetrace.rules.registry import rule
from safetrace.rules.slicing import slice_length
from safetrace.rules.views import diagonal, replace_dim

aten = torch.ops.aten
Size = Any

_INT_INDEX = (torch.int64, torch.int32)
_MASKS = (torch.bool, torch.uint8)


class _MaskCount:
    """The (data-dependent) number of True elements of a mask: one marker per mask."""

    def __repr__(self) -> str:
        return "<mask count>"


def _dd(op: str, what: str) -> DataDependentError:
    return mask_count(op, what)


# -- select / slice -------------------------------------------------------------------

@rule(aten.select.int, aten.select_copy.int)
def select(self: TensorMeta, dim: int, index: Size) -> TensorMeta:
    """Dim `dim` removed; `index` must be in [-size, size)."""
    check(self.ndim > 0, "select", "select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, self.ndim, "select")
    n = self.shape[d]
    msg = f"select(): index {index} out of range for tensor of size {list(self.shape)} " \
          f"at dimension {dim}"
    check(index >= -n, "select", msg)
    check(index < n, "select", msg)
    return self.like(shape=self.shape[:d] + self.shape[d + 1:])


@rule(aten.slice.Tensor, aten.slice_copy.Tensor)
def slice_rule(self: TensorMeta, dim: int = 0, start: Size | None = None,
               end: Size | None = None, step: Size = 1) -> TensorMeta:
    """Length ceil((end - start) / step) after wrapping negatives and clamping to [0, size]."""
    check(self.ndim > 0, "slice", "slice() cannot be applied to a 0-dim tensor.")
    check(step > 0, "slice", "slice step must be positive")
    d = normalize_dim(dim, self.ndim, "slice")
    return self.like(shape=replace_dim(self.shape, d, slice_length(self.shape[d], start, end,
                                                                   step)))


def _same_sizes(src: TensorMeta, want: tuple, op: str, what: str) -> None:
    msg = f"expected src to have a size equal to the {what} of self. src size = " \
          f"{list(src.shape)}, {what} size = {list(want)}"
    check(src.ndim == len(want), op, msg)
    for a, b in zip(src.shape, want):
        if a is not b:
            check(a == b, op, msg)


@rule(aten.slice_scatter.default)
def slice_scatter(self: TensorMeta, src: TensorMeta, dim: int = 0, start: Size | None = None,
                  end: Size | None = None, step: Size = 1) -> TensorMeta:
    """`self`'s shape and dtype (src converted); src must be the slice's shape."""
    region = slice_rule(self, dim, start, end, step)
    _same_sizes(src, region.shape, "slice_scatter", "slice")
    return self.like()


@rule(aten.select_scatter.default)
def select_scatter(self: TensorMeta, src: TensorMeta, dim: int, index: Size) -> TensorMeta:
    """`self`'s shape and dtype (src converted); src must be the selected slice's shape."""
    region = select(self, dim, index)
    _same_sizes(src, region.shape, "select_scatter", "embedded")
    return self.like()


@rule(aten.diagonal_scatter.default)
def diagonal_scatter(self: TensorMeta, src: TensorMeta, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> TensorMeta:
    """`self`'s shape and dtype (src converted); src must be the diagonal's shape."""
    _same_sizes(src, diagonal(self, offset, dim1, dim2).shape, "diagonal_scatter", "slice")
    return self.like()


# -- advanced indexing ----------------------------------------------------------------

def _broadcast_index_shapes(shapes: list[tuple], op: str) -> tuple:
    """Broadcast index shapes where a mask's count may appear (only against itself or 1)."""
    if all(len(s) == len(shapes[0]) and all(a is b for a, b in zip(s, shapes[0]))
           for s in shapes):
        return tuple(shapes[0])  # one index, or the same shape everywhere: no question
    ndim = max(len(s) for s in shapes)
    out: list[Size] = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            cur = out[i]
            if cur is size:
                continue
            if isinstance(size, _MaskCount) or isinstance(cur, _MaskCount):
                other = cur if isinstance(size, _MaskCount) else size
                if isinstance(other, _MaskCount) or not other == 1:
                    raise _dd(op, "broadcasting a mask index against another index")
                out[i] = size if isinstance(size, _MaskCount) else cur
            elif isinstance(cur, int) and cur == 1:
                out[i] = size  # a literal 1 broadcasts to anything: no question on `size`
            elif isinstance(size, int) and size == 1:
                continue
            elif not (isinstance(cur, int) and isinstance(size, int)):
                # symbolic: unify sizes equal on the example, no needless `size == 1` guard
                out[i] = broadcast_sizes(cur, size, i, op)
            elif size == 1:
                continue
            elif cur == 1:
                out[i] = size
            else:
                check(cur == size, op, f"shape mismatch: indexing tensors could not be "
                                       f"broadcast together with shapes "
                                       f"{[list(s) for s in shapes]}")
    return tuple(out)


def index_result_shape(self: TensorMeta, indices: Sequence[TensorMeta | None],
                       op: str) -> tuple:
    """Shape of ``self[indices]``; a mask's element count appears as a _MaskCount marker."""
    check(len(indices) > 0, op, "at least one index must be provided")
    # Each mask of k dims stands for k long indices of the same unknown length.
    entries: list[tuple | None] = []
    for i, index in enumerate(indices):
        if index is None:
            entries.append(None)
            continue
        check(index.dtype in _INT_INDEX + _MASKS, op,
              "tensors used as indices must be long, int, byte or bool tensors")
        if index.dtype in _MASKS:
            k = len(entries)
            check(k + index.ndim <= self.ndim, op,
                  f"too many indices for tensor of dimension {self.ndim}")
            count = index.mask_count
            if count is None:
                count = _MaskCount()
                count.hi = index.numel()
                count.mask = index
            for j, size in enumerate(index.shape):
                check(size is self.shape[k + j] or size == self.shape[k + j], op,
                      f"The shape of the mask {list(index.shape)} at index {i} does not "
                      f"match the shape of the indexed tensor {list(self.shape)} at index "
                      f"{k + j}")
                entries.append((count,))
        else:
            d = len(entries)
            n = index.numel()
            if d < self.ndim and static_zero(self.shape[d]) and isinstance(n, int):
                check(n == 0, op, "index is out of bounds for dimension with size 0")
            entries.append(index.shape)
    check(len(entries) <= self.ndim, op, f"too many indices for tensor of dimension "
                                         f"{self.ndim} (got {len(entries)})")
    entries += [None] * (self.ndim - len(entries))
    used = [d for d, e in enumerate(entries) if e is not None]
    if not used:
        return self.shape
    replacement = _broadcast_index_shapes([e for e in entries if e is not None], op)
    adjacent = used[-1] - used[0] + 1 == len(used)
    if adjacent:
        return self.shape[:used[0]] + replacement + self.shape[used[-1] + 1:]
    # Separated advanced indices put the indexed dims first (numpy's rule).
    return replacement + tuple(s for d, s in enumerate(self.shape) if entries[d] is None)


@rule(aten.index.Tensor)
def index(self: TensorMeta, indices: Sequence[TensorMeta | None]) -> TensorMeta:
    """Advanced indexing: index shapes broadcast; their dims replace the indexed ones."""
    shape = index_result_shape(self, indices, "index")
    if any(isinstance(s, _MaskCount) for s in shape):
        # x[mask]: as many rows as True elements, between 0 and the mask's numel
        counts: dict[int, Size] = {}
        out = []
        for s in shape:
            if isinstance(s, _MaskCount):
                if id(s) not in counts:
                    counts[id(s)] = new_size(0, s.hi, "x[mask]")
                    s.mask.mask_count = counts[id(s)]  # the same mask has the same count
                s = counts[id(s)]
            out.append(s)
        shape = tuple(out)
    return self.like(shape=shape)


@rule(aten.index_put.default, aten.index_put_.default)
def index_put(self: TensorMeta, indices: Sequence[TensorMeta | None], values: TensorMeta,
              accumulate: bool = False) -> TensorMeta:
    """Same shape as self; `values` must expand to the indexing result."""
    op = "index_put"
    target = index_result_shape(self, indices, op)
    check(values.dtype == self.dtype, op,
          f"Index put requires the source and destination dtypes match, got {self.dtype} "
          f"for the destination and {values.dtype} for the source.")
    mismatch = f"shape mismatch: value tensor of shape {list(values.shape)} cannot be " \
               f"broadcast to indexing result of shape {list(target)}"
    check(values.ndim <= len(target), op, mismatch)
    for v, r in zip(reversed(values.shape), reversed(target)):
        if v is r or (not isinstance(v, int) and not isinstance(r, (int, _MaskCount))
                      and v.expr is r.expr):
            continue
        if isinstance(r, _MaskCount):
            if not v == 1:
                raise _dd(op, "whether the values fit x[mask]")
        elif (hv := hint_of(v)) is not None and hv == hint_of(r):
            check(v == r, op, mismatch)  # equal on the example: unified, no size-1 guard
        elif not v == 1:
            check(v == r, op, mismatch)
    return self.like()


@rule(aten.masked_scatter.default)
def masked_scatter(self: TensorMeta, mask: TensorMeta, source: TensorMeta) -> TensorMeta:
    """self and mask broadcast; source must have self's dtype."""
    # Whether `source` has enough elements depends on the mask's data: not checked.
    check(mask.dtype is torch.bool, "masked_scatter",
          f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    check(self.dtype == source.dtype, "masked_scatter",
          f"masked_scatter: expected self and source to have same dtypes but got "
          f"{self.dtype} and {source.dtype}")
    return self.like(shape=broadcast_shapes(self.shape, mask.shape, op="masked_scatter"))


@rule(aten.masked_scatter_.default)
def masked_scatter_inplace(self: TensorMeta, mask: TensorMeta, source: TensorMeta) -> TensorMeta:
    """masked_scatter_: the mask must broadcast to self's shape."""
    out = masked_scatter(self, mask, source)
    ok = out.ndim == self.ndim and all(a == b for a, b in zip(out.shape, self.shape))
    check(ok, "masked_scatter_", f"masked_scatter_: mask of shape {list(mask.shape)} does not "
                                 f"broadcast to self of shape {list(self.shape)}")
    return self.like()


# -- index_select / gather / take_along_dim ---------------------------------------------

@rule(aten.index_select.default)
def index_select(self: TensorMeta, dim: int, index: TensorMeta) -> TensorMeta:
    """Dim `dim` replaced by the number of indices."""
    op = "index_select"
    d = normalize_dim(dim, self.ndim, op)
    check(index.ndim <= 1, op, "index_select(): Index is supposed to be a vector")
    check(index.dtype in _INT_INDEX, op, "index_select(): Expected dtype int32 or int64 "
                                         "for index")
    if self.ndim == 0:
        check(index.numel() == 1, op, f"index_select(): Index to scalar can have only 1 "
                                      f"value, got {index.numel()} value(s)")
        return self.like()
    return self.like(shape=replace_dim(self.shape, d, index.numel()))


def _size_or_one(t: TensorMeta, d: int) -> Size:
    return t.shape[d] if t.ndim > 0 else 1


@rule(aten.gather.default)
def gather(self: TensorMeta, dim: int, index: TensorMeta, *,
           sparse_grad: bool = False) -> TensorMeta:
    """The index's shape; it may not exceed self apart from `dim`."""
    op = "gather"
    d = normalize_dim(dim, self.ndim, op)
    if not static_zero(index.numel()):
        check(index.dtype in _INT_INDEX, op, f"gather(): Expected dtype int32/int64 for "
                                             f"index, but got {index.dtype}")
        check(max(self.ndim, 1) == max(index.ndim, 1), op,
              "Index tensor must have the same number of dimensions as input tensor")
        for i in range(max(self.ndim, 1)):
            if i != d:
                check(_size_or_one(index, i) <= _size_or_one(self, i), op,
                      f"Size does not match at dimension {i} expected index "
                      f"{list(index.shape)} to be no larger than self {list(self.shape)} "
                      f"apart from dimension {d}")
    return self.like(shape=index.shape)


@rule(aten.take_along_dim.default)
def take_along_dim(self: TensorMeta, indices: TensorMeta, dim: int | None = None) -> TensorMeta:
    """gather along `dim` after broadcasting the other dims; flat when dim is None."""
    op = "take_along_dim"
    if dim is None:  # a flat gather, which also takes int32 indices
        check(indices.dtype in _INT_INDEX, op, f"gather(): Expected dtype int32/int64 for "
                                               f"index, but got {indices.dtype}")
        return self.like(shape=(indices.numel(),))
    check(indices.dtype is torch.int64, op, f"torch.take_along_dim(): dtype of indices "
                                            f"should be Long but got {indices.dtype}")
    check(self.ndim == indices.ndim, op,
          f"torch.take_along_dim(): input and indices should have the same number of "
          f"dimensions, but got {self.ndim} dimensions for input, and {indices.ndim} "
          f"dimensions for indices")
    check(self.ndim > 0, op, "Dimension specified as 0 but tensor has no dimensions")
    d = normalize_dim(dim, self.ndim, op)
    shape = replace_dim(self.shape, d, indices.shape[d])
    return self.like(shape=broadcast_shapes(shape, indices.shape, op=op))


# -- scatter ----------------------------------------------------------------------------

_OLD_REDUCE = ("add", "multiply")
_NEW_REDUCE = ("sum", "prod", "mean", "amax", "amin")


def _scatter_checks(self: TensorMeta, dim: int, index: TensorMeta,
                    src: TensorMeta | None) -> None:
    op = "scatter"
    d = normalize_dim(dim, self.ndim, op)
    if static_zero(index.numel()):
        return
    check(index.dtype in _INT_INDEX, op, "scatter(): Expected dtype int32/int64 for index")
    if src is not None:
        check(self.dtype == src.dtype, op, "scatter(): Expected self.dtype to be equal to "
                                           "src.dtype")
    nd = max(self.ndim, 1)
    check(nd == max(index.ndim, 1), op,
          "Index tensor must have the same number of dimensions as self tensor")
    for i in range(nd):
        if i != d:
            check(_size_or_one(index, i) <= _size_or_one(self, i), op,
                  f"Expected index {list(index.shape)} to be no larger than self "
                  f"{list(self.shape)} apart from dimension {d}")
    if src is not None:
        check(nd == max(src.ndim, 1), op,
              "Index tensor must have the same number of dimensions as src tensor")
        for i in range(nd):
            check(_size_or_one(index, i) <= _size_or_one(src, i), op,
                  f"Expected index {list(index.shape)} to be no larger than src "
                  f"{list(src.shape)}")


@rule(aten.scatter.src, aten.scatter_add.default, aten.scatter_.src, aten.scatter_add_.default)
def scatter_src(self: TensorMeta, dim: int, index: TensorMeta, src: TensorMeta) -> TensorMeta:
    """Self's shape; index fits in self (apart from dim) and in src."""
    _scatter_checks(self, dim, index, src)
    return self.like()


@rule(aten.scatter.value, aten.scatter_.value)
def scatter_value(self: TensorMeta, dim: int, index: TensorMeta, value: Any) -> TensorMeta:
    """Self's shape; index fits in self apart from dim."""
    _scatter_checks(self, dim, index, None)
    return self.like()


@rule(aten.scatter.reduce, aten.scatter_.reduce)
def scatter_reduce_old(self: TensorMeta, dim: int, index: TensorMeta, src: TensorMeta, *,
                       reduce: str) -> TensorMeta:
    """scatter.src with reduce "add" or "multiply"."""
    _scatter_checks(self, dim, index, src)
    check(reduce in _OLD_REDUCE, "scatter", "reduce argument must be either add or multiply.")
    return self.like()


@rule(aten.scatter.value_reduce, aten.scatter_.value_reduce)
def scatter_value_reduce(self: TensorMeta, dim: int, index: TensorMeta, value: Any, *,
                         reduce: str) -> TensorMeta:
    """scatter.value with reduce "add" or "multiply"."""
    _scatter_checks(self, dim, index, None)
    check(reduce in _OLD_REDUCE, "scatter", "reduce argument must be either add or multiply.")
    return self.like()


@rule(aten.scatter_reduce.two, aten.scatter_reduce_.two)
def scatter_reduce(self: TensorMeta, dim: int, index: TensorMeta, src: TensorMeta,
                   reduce: str, *, include_self: bool = True) -> TensorMeta:
    """scatter.src with reduce sum, prod, mean, amax or amin."""
    _scatter_checks(self, dim, index, src)
    check(reduce in _NEW_REDUCE, "scatter_reduce", f"reduce argument must be either sum, "
                                                   f"prod, mean, amax or amin, got {reduce}")
    return self.like()


# -- index_add / index_copy / index_fill --------------------------------------------------

def _index_source_checks(self: TensorMeta, d: int, index: TensorMeta, source: TensorMeta,
                         op: str) -> None:
    """source matches self except along d, where it has one slice per index."""
    check(index.ndim <= 1, op, f"{op}(): Index is supposed to be a vector, but got dim: "
                               f"{index.ndim}")
    check(self.dtype == source.dtype, op, f"{op}(): self ({self.dtype}) and source "
                                          f"({source.dtype}) must have the same scalar type")
    shapes = f"self.shape = {list(self.shape)} source.shape = {list(source.shape)}"
    if source.ndim == 0 and self.ndim > 0 and op == "index_copy_":
        check(index.numel() == 1, op, f"{op}(): Number of indices ({index.numel()}) should "
                                      f"be equal to source.size(dim) (1)")
        return
    check(source.ndim == self.ndim, op, f"source tensor shape must match self tensor shape, "
                                        f"excluding the specified dimension. Got {shapes}")
    slices = _size_or_one(source, d)
    check(index.numel() == slices, op, f"{op}(): Number of indices ({index.numel()}) should "
                                       f"be equal to source.size(dim): ({slices}), for dim: {d}")
    for i, (a, b) in enumerate(zip(self.shape, source.shape)):
        if i != d and a is not b:
            check(a == b, op, f"source tensor shape must match self tensor shape, excluding "
                              f"the specified dimension. Got {shapes}")


@rule(aten.index_add.default, aten.index_add_.default)
def index_add(self: TensorMeta, dim: int, index: TensorMeta, source: TensorMeta, *,
              alpha: Any = 1) -> TensorMeta:
    """Self's shape; source has one slice of self per index."""
    op = "index_add_"
    d = normalize_dim(dim, self.ndim, op)
    check(index.dtype in _INT_INDEX, op, f"{op}(): Expected dtype int32/int64 for index but "
                                         f"got: {index.dtype}")
    _index_source_checks(self, d, index, source, op)
    return self.like()


@rule(aten.index_copy.default, aten.index_copy_.default)
def index_copy(self: TensorMeta, dim: int, index: TensorMeta, source: TensorMeta) -> TensorMeta:
    """Self's shape; source has one slice of self per index (long indices only)."""
    op = "index_copy_"
    d = normalize_dim(dim, self.ndim, op)
    check(index.dtype is torch.int64, op, f"{op}(): Expected a long tensor for index, but "
                                          f"got {index.dtype}")
    _index_source_checks(self, d, index, source, op)
    return self.like()


@rule(aten.index_fill.int_Scalar, aten.index_fill.int_Tensor, aten.index_fill_.int_Scalar,
      aten.index_fill_.int_Tensor)
def index_fill(self: TensorMeta, dim: int, index: TensorMeta, value: Any) -> TensorMeta:
    """Self's shape; a vector of long indices and a scalar (or 0-d tensor) value."""
    op = "index_fill_"
    normalize_dim(dim, self.ndim, op)
    check(index.dtype is torch.int64, op, f"{op}(): Expected dtype int64 for index.")
    check(index.ndim <= 1, op, "Index has to be a vector/scalar")
    if isinstance(value, TensorMeta):
        check(value.ndim == 0, op, f"index_fill_ only supports a 0-dimensional value tensor, "
                                   f"but got tensor with {value.ndim} dimension(s).")
    return self.like()


@rule(aten.take.default)
def take(self: TensorMeta, index: TensorMeta) -> TensorMeta:
    """Elements of the flattened self at int64 `index`: index's shape, self's dtype."""
    check(index.dtype == torch.int64, "take", f"take(): Expected a long tensor for index, but "
                                              f"got {index.dtype}")
    check(either((index.numel() == 0, self.numel() != 0)), "take",
          "take(): tried to take from an empty tensor")
    return self.like(shape=index.shape)
