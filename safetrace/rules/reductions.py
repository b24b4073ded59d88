"""Reductions (sum, mean, max, var, norm, ...), scans (cumsum, cummax) and sorting.

A reduction removes its dims (or keeps them as size 1 with ``keepdim``).  ``dim=None``
means every dim; so does ``dim=[]`` for every reduction except ``any``/``all``, where an
empty list reduces nothing (torch's behaviour, odd as it is).  Reductions without an
identity (max, amax, argmax, median, mode, aminmax) reject a reduced dim of size 0; on a
symbolic size that check becomes a guard, as in eager torch it is an error.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import (
    check,
    prod,
    dtype_category,
    float_result,
    normalize_dim,
    nonneg,
    normalize_dims,
    to_real,
)
from safetrace.errors import shape_error
from safetrace.rules.registry import rule

aten = torch.ops.aten
_LONG = torch.int64


# -- helpers ------------------------------------------------------------------------------


def reduced_dims(op: str, self: TensorMeta, dim: Any, empty_means_all: bool = True) -> list:
    """The normalized dims a reduction removes: None (and usually []) means all of them."""
    if dim is None or (empty_means_all and all_dims(dim)):
        return list(range(self.ndim))
    return normalize_dims(dim, self.ndim, op)


def all_dims(dim: Any) -> bool:
    """Whether a dim argument of a reduction means every dim (None or an empty list)."""
    return dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0)


def reduce_shape(self: TensorMeta, dims: Sequence[int], keepdim: bool) -> tuple:
    """Remove `dims` from self's shape, or make them 1 when keepdim."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(self.shape))
    return tuple(s for i, s in enumerate(self.shape) if i not in dims)


def nonempty(op: str, self: TensorMeta, dims: Sequence[int], whole: bool) -> None:
    """Reductions without an identity reject reducing over a size-0 dim."""
    if whole:
        check(self.numel() != 0, op, "Expected reduction dim to be specified for input.numel() "
                                     "== 0. Specify the reduction dim with the 'dim' argument.")
        return
    for d in dims:
        if self.ndim > 0:  # a 0-d tensor has one element along its only "dim"
            check(self.shape[d] != 0, op, f"Expected reduction dim {d} to have non-zero size.")


def real_only(op: str, dtype: torch.dtype) -> None:
    check(not dtype.is_complex, op, f"{op}(): does not support complex input")


def accumulate_dtype(self: TensorMeta, dtype: torch.dtype | None) -> torch.dtype:
    """sum/prod/cumsum: integral and bool inputs accumulate in int64 unless told otherwise."""
    if dtype is not None:
        return dtype
    return _LONG if dtype_category(self.dtype) <= 1 else self.dtype


# -- sum, prod, mean ----------------------------------------------------------------------


@rule(aten.sum.default)
def sum_all(self: TensorMeta, *, dtype: torch.dtype | None = None) -> TensorMeta:
    """sum of every element: a 0-d tensor."""
    out = self.like(shape=(), dtype=accumulate_dtype(self, dtype))
    if self.dtype is torch.bool and not out.dtype.is_floating_point:
        out.bounds = (0, self.numel())  # sum of a mask counts the True elements
    return out


@rule(aten.prod.default)
def prod_all(self: TensorMeta, *, dtype: torch.dtype | None = None) -> TensorMeta:
    """prod of every element: a 0-d tensor."""
    out = self.like(shape=(), dtype=accumulate_dtype(self, dtype))
    if self.dtype is torch.bool and not out.dtype.is_floating_point:
        out.bounds = (0, 1)  # prod of a mask is 0 or 1 (1 when empty)
    return out


@rule(aten.sum.dim_IntList, aten.nansum.default)
def sum_dim(self: TensorMeta, dim: Any = None, keepdim: bool = False, *,
            dtype: torch.dtype | None = None) -> TensorMeta:
    """sum over dims (None or [] meaning all)."""
    dims = reduced_dims("sum", self, dim)
    out = self.like(shape=reduce_shape(self, dims, keepdim), dtype=accumulate_dtype(self, dtype))
    if self.dtype is torch.bool and not out.dtype.is_floating_point:
        out.bounds = (0, prod(self.shape[d] for d in dims if d < self.ndim))  # True count
    return out


@rule(aten.prod.dim_int)
def prod_dim(self: TensorMeta, dim: int, keepdim: bool = False, *,
             dtype: torch.dtype | None = None) -> TensorMeta:
    """prod over one dim."""
    dims = [normalize_dim(dim, self.ndim, "prod")]
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=accumulate_dtype(self, dtype))


def _mean_dtype(self: TensorMeta, dtype: torch.dtype | None) -> torch.dtype:
    out = self.dtype if dtype is None else dtype
    which = "Input" if dtype is None else "Optional"
    check(out.is_floating_point or out.is_complex, "mean",
          f"mean(): could not infer output dtype. {which} dtype must be either a floating "
          f"point or complex dtype. Got: {out}")
    return out


@rule(aten.mean.default)
def mean_all(self: TensorMeta, *, dtype: torch.dtype | None = None) -> TensorMeta:
    """mean of every element; floating or complex only."""
    return self.like(shape=(), dtype=_mean_dtype(self, dtype))


@rule(aten.mean.dim)
def mean_dim(self: TensorMeta, dim: Any, keepdim: bool = False, *,
             dtype: torch.dtype | None = None) -> TensorMeta:
    """mean over dims (None or [] meaning all)."""
    dims = reduced_dims("mean", self, dim)
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=_mean_dtype(self, dtype))


# -- max, min, argmax, any, all -------------------------------------------------------------


@rule(aten.amax.default, aten.amin.default)
def amax(self: TensorMeta, dim: Any = (), keepdim: bool = False) -> TensorMeta:
    """amax/amin: same dtype; [] means all dims; no identity, so no size-0 reduction."""
    dims = reduced_dims("amax", self, dim)
    nonempty("amax", self, dims, whole=all_dims(dim))
    real_only("amax", self.dtype)
    return self.like(shape=reduce_shape(self, dims, keepdim))


@rule(aten.max.default, aten.min.default)
def max_all(self: TensorMeta) -> TensorMeta:
    """max/min of every element: 0-d, same dtype; empty tensors are rejected."""
    nonempty("max", self, (), whole=True)
    real_only("max", self.dtype)
    return self.like(shape=())


@rule(aten.max.dim, aten.min.dim, aten.median.dim, aten.nanmedian.dim, aten.mode.default)
def max_dim(self: TensorMeta, dim: int = -1, keepdim: bool = False) -> tuple:
    """(values, int64 indices) reduced over one dim, which must not be empty."""
    d = normalize_dim(dim, self.ndim, "max")
    if self.ndim > 0:
        nonempty("max", self, [d], whole=False)
    real_only("max", self.dtype)
    shape = reduce_shape(self, [d], keepdim)
    return self.like(shape=shape), self.like(shape=shape, dtype=_LONG)


@rule(aten.median.default, aten.nanmedian.default)
def median_all(self: TensorMeta) -> TensorMeta:
    """median of every element (nan for an empty tensor): 0-d, same dtype."""
    real_only("median", self.dtype)
    return self.like(shape=())


@rule(aten.argmax.default, aten.argmin.default)
def argmax(self: TensorMeta, dim: int | None = None, keepdim: bool = False) -> TensorMeta:
    """argmax/argmin: int64 indices; dim=None flattens (keepdim then gives all-ones)."""
    if dim is None:
        nonempty("argmax", self, (), whole=True)
        dims = list(range(self.ndim))
    else:
        dims = [normalize_dim(dim, self.ndim, "argmax")]
        if self.ndim > 0:
            nonempty("argmax", self, dims, whole=False)
    real_only("argmax", self.dtype)
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=_LONG)


@rule(aten.aminmax.default)
def aminmax(self: TensorMeta, *, dim: int | None = None, keepdim: bool = False) -> tuple:
    """aminmax: (min, max), both of self's dtype."""
    if dim is None:
        dims = list(range(self.ndim))
        check(self.numel() != 0, "aminmax", "aminmax(): cannot compute aminmax over an empty "
                                            "dimension as the operation has no identity.")
    else:
        dims = [normalize_dim(dim, self.ndim, "aminmax")]
        if self.ndim > 0:
            nonempty("aminmax", self, dims, whole=False)
    real_only("aminmax", self.dtype)
    shape = reduce_shape(self, dims, keepdim)
    return self.like(shape=shape), self.like(shape=shape)


def _logical_dtype(self: TensorMeta) -> torch.dtype:
    return torch.uint8 if self.dtype is torch.uint8 else torch.bool


@rule(aten.any.default, aten.all.default)
def any_all(self: TensorMeta) -> TensorMeta:
    """any/all of every element: bool (uint8 stays uint8)."""
    return self.like(shape=(), dtype=_logical_dtype(self))


@rule(aten.any.dim, aten.all.dim)
def any_dim(self: TensorMeta, dim: int, keepdim: bool = False) -> TensorMeta:
    """any/all over one dim."""
    dims = [normalize_dim(dim, self.ndim, "any")]
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=_logical_dtype(self))


@rule(aten.any.dims, aten.all.dims)
def any_dims(self: TensorMeta, dim: Any = None, keepdim: bool = False) -> TensorMeta:
    """any/all over dims: None means all, but [] reduces nothing."""
    dims = reduced_dims("any", self, dim, empty_means_all=False)
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=_logical_dtype(self))


@rule(aten.count_nonzero.default, aten.count_nonzero.dim_IntList)
def count_nonzero(self: TensorMeta, dim: Any = None) -> TensorMeta:
    """count_nonzero: int64 counts; None or [] means every dim."""
    dims = reduced_dims("count_nonzero", self, dim)
    out = self.like(shape=reduce_shape(self, dims, False), dtype=_LONG)
    out.bounds = (0, prod(self.shape[d] for d in dims if d < self.ndim))  # a count
    return out


# -- var, std, norm, logsumexp --------------------------------------------------------------


def _var(op: str, self: TensorMeta, dim: Any, keepdim: bool) -> TensorMeta:
    check(self.dtype.is_floating_point or self.dtype.is_complex, op,
          "std and var only support floating point and complex dtypes")
    dims = reduced_dims(op, self, dim)
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=to_real(self.dtype))


@rule(aten.var.default, aten.std.default)
def var_all(self: TensorMeta, unbiased: bool = True) -> TensorMeta:
    """var/std of every element: 0-d, real dtype."""
    return _var("var", self, None, False)


@rule(aten.var.dim, aten.std.dim)
def var_dim(self: TensorMeta, dim: Any, unbiased: bool = True, keepdim: bool = False) -> TensorMeta:
    """var/std over dims (None or [] meaning all)."""
    return _var("var", self, dim, keepdim)


@rule(aten.var.correction, aten.std.correction)
def var_correction(self: TensorMeta, dim: Any = None, *, correction: Any = None,
                   keepdim: bool = False) -> TensorMeta:
    """var/std with an explicit correction."""
    return _var("var", self, dim, keepdim)


def _var_mean(self: TensorMeta, dim: Any, keepdim: bool) -> tuple:
    check(self.dtype.is_floating_point or self.dtype.is_complex, "var_mean",
          "var_mean only support floating point and complex dtypes")
    var = _var("var_mean", self, dim, keepdim)
    return var, var.like(dtype=self.dtype)


@rule(aten.var_mean.default, aten.std_mean.default)
def var_mean_all(self: TensorMeta, unbiased: bool = True) -> tuple:
    """(var, mean): the var is real, the mean keeps self's dtype."""
    return _var_mean(self, None, False)


@rule(aten.var_mean.dim, aten.std_mean.dim)
def var_mean_dim(self: TensorMeta, dim: Any, unbiased: bool = True,
                 keepdim: bool = False) -> tuple:
    """(var, mean) over dims."""
    return _var_mean(self, dim, keepdim)


@rule(aten.var_mean.correction, aten.std_mean.correction)
def var_mean_correction(self: TensorMeta, dim: Any = None, *, correction: Any = None,
                        keepdim: bool = False) -> tuple:
    """(var, mean) with an explicit correction."""
    return _var_mean(self, dim, keepdim)


def norm_result_dtype(op: str, self: TensorMeta, dtype: torch.dtype | None) -> torch.dtype:
    """The real dtype a norm returns, after torch's checks of the input and `dtype`."""
    check(self.dtype.is_floating_point or self.dtype.is_complex, op,
          f"{op}: Expected a floating point or complex tensor as input. Got {self.dtype}")
    if dtype is None:
        return to_real(self.dtype)
    check(dtype.is_floating_point or dtype.is_complex, op,
          f"{op}: dtype should be floating point or complex. Got {dtype}")
    check(dtype.is_complex == self.dtype.is_complex, op,
          f"{op}: dtype should be {'complex' if self.dtype.is_complex else 'real'} for "
          f"{'complex' if self.dtype.is_complex else 'real'} inputs, but got {dtype}")
    check(torch.promote_types(self.dtype, dtype) == dtype, op,
          f"{op}: the dtype of the input ({self.dtype}) should be convertible without "
          f"narrowing to the specified dtype ({dtype})")
    return to_real(dtype)


@rule(aten.linalg_vector_norm.default)
def vector_norm(self: TensorMeta, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: torch.dtype | None = None) -> TensorMeta:
    """linalg.vector_norm: real result; negative and inf orders need non-empty dims."""
    op = "linalg.vector_norm"
    out = norm_result_dtype(op, self, dtype)
    dims = reduced_dims(op, self, dim)
    if ord < 0 or ord == math.inf:
        msg = (f"{op} cannot compute the {ord} norm on an empty tensor because the operation "
               "does not have an identity")
        if all_dims(dim):
            check(self.numel() != 0, op, msg)
        else:
            for d in dims:
                check(self.ndim == 0 or self.shape[d] != 0, op, msg)
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=out)


@rule(aten.norm.Scalar)
def norm_all(self: TensorMeta, p: Any = 2) -> TensorMeta:
    """norm of every element."""
    return vector_norm(self, 2 if p is None else p)


@rule(aten.norm.ScalarOpt_dim)
def norm_dim(self: TensorMeta, p: Any, dim: Any, keepdim: bool = False) -> TensorMeta:
    """norm over dims ([] meaning all)."""
    return vector_norm(self, 2 if p is None else p, dim, keepdim)


@rule(aten.norm.ScalarOpt_dim_dtype)
def norm_dim_dtype(self: TensorMeta, p: Any, dim: Any, keepdim: bool, *,
                   dtype: torch.dtype) -> TensorMeta:
    """norm over dims, computed in `dtype`."""
    return vector_norm(self, 2 if p is None else p, dim, keepdim, dtype=dtype)


@rule(aten.norm.ScalarOpt_dtype)
def norm_dtype(self: TensorMeta, p: Any, *, dtype: torch.dtype) -> TensorMeta:
    """norm of every element, computed in `dtype`."""
    return vector_norm(self, 2 if p is None else p, dtype=dtype)


@rule(aten.logsumexp.default)
def logsumexp(self: TensorMeta, dim: Any, keepdim: bool = False) -> TensorMeta:
    """logsumexp: integer inputs give the default float dtype."""
    # eager torch fails on dim=[] for a tensor with dims (its out= resize disagrees)
    check(not (isinstance(dim, (list, tuple)) and len(dim) == 0 and self.ndim > 0),
          "logsumexp", "output with shape [] doesn't match the broadcast shape "
                       f"{[1] * self.ndim}")
    dims = reduced_dims("logsumexp", self, dim)
    return self.like(shape=reduce_shape(self, dims, keepdim), dtype=float_result(self.dtype))


# -- scans and sorting ----------------------------------------------------------------------


@rule(aten.cumsum.default, aten.cumprod.default)
def cumsum(self: TensorMeta, dim: int, *, dtype: torch.dtype | None = None) -> TensorMeta:
    """cumsum/cumprod: same shape; integral inputs accumulate in int64."""
    normalize_dim(dim, self.ndim, "cumsum")
    return self.like(dtype=accumulate_dtype(self, dtype))


@rule(aten.cummax.default, aten.cummin.default)
def cummax(self: TensorMeta, dim: int) -> tuple:
    """cummax/cummin: (values like self, int64 indices like self)."""
    normalize_dim(dim, self.ndim, "cummax")
    return self.like(), self.like(dtype=_LONG)


@rule(aten.sort.default)
def sort(self: TensorMeta, dim: int = -1, descending: bool = False) -> tuple:
    """sort: (values like self, int64 indices like self)."""
    normalize_dim(dim, self.ndim, "sort")
    return self.like(), self.like(dtype=_LONG)


@rule(aten.sort.stable)
def sort_stable(self: TensorMeta, *, stable: bool | None, dim: int = -1,
                descending: bool = False) -> tuple:
    """sort with an explicit stability flag."""
    return sort(self, dim, descending)


@rule(aten.argsort.default)
def argsort(self: TensorMeta, dim: int = -1, descending: bool = False) -> TensorMeta:
    """argsort: int64 indices like self."""
    normalize_dim(dim, self.ndim, "argsort")
    return self.like(dtype=_LONG)


@rule(aten.argsort.stable)
def argsort_stable(self: TensorMeta, *, stable: bool, dim: int = -1,
                   descending: bool = False) -> TensorMeta:
    """argsort with an explicit stability flag."""
    return argsort(self, dim, descending)


@rule(aten.topk.default)
def topk(self: TensorMeta, k: Any, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> tuple:
    """topk: `dim` becomes k, which must lie in [0, size]."""
    d = normalize_dim(dim, self.ndim, "topk")
    size = self.shape[d] if self.ndim > 0 else 1
    check(k >= 0, "topk", f"selected index k out of range (k={k}, dim size {size})")
    check(k <= size, "topk", f"selected index k out of range (k={k}, dim size {size})")
    shape = self.shape[:d] + (k,) + self.shape[d + 1:] if self.ndim > 0 else ()
    return self.like(shape=shape), self.like(shape=shape, dtype=_LONG)


@rule(aten.kthvalue.default)
def kthvalue(self: TensorMeta, k: Any, dim: int = -1, keepdim: bool = False) -> tuple:
    """kthvalue: (values, int64 indices) reduced over `dim`; k must lie in [1, size]."""
    d = normalize_dim(dim, self.ndim, "kthvalue")
    size = self.shape[d] if self.ndim > 0 else 1
    msg = f"kthvalue(): selected number k out of range for dimension {d}"
    check(k >= 1, "kthvalue", msg)
    check(k <= size, "kthvalue", msg)
    real_only("kthvalue", self.dtype)
    shape = reduce_shape(self, [d], keepdim)
    return self.like(shape=shape), self.like(shape=shape, dtype=_LONG)


@rule(aten.histc.default)
def histc(self: TensorMeta, bins: int = 100, min: Any = 0, max: Any = 0) -> TensorMeta:
    """A histogram of `bins` counts, in the input's (floating) dtype."""
    check(bins > 0, "histc", f"torch.histc(): bins must be > 0, but got {bins} for dim 0")
    check(self.dtype.is_floating_point, "histc",
          f"torch.histc: input tensor of dtype {self.dtype} is not floating point")
    return TensorMeta((bins,), self.dtype, self.device)


@rule(aten.diff.default)
def diff(self: TensorMeta, n: int = 1, dim: int = -1, prepend: TensorMeta | None = None,
         append: TensorMeta | None = None) -> TensorMeta:
    """n-th forward difference along `dim` (after prepend/append): length - n, at least 0."""
    check(self.ndim > 0, "diff", "diff expects input to be at least one-dimensional")
    check(n >= 0, "diff", f"order must be non-negative but got {n}")
    d = normalize_dim(dim, self.ndim, "diff")
    length = self.shape[d]
    for extra, name in ((prepend, "prepend"), (append, "append")):
        if extra is not None:
            check(extra.ndim == self.ndim, "diff",
                  "diff expects prepend or append to be the same dimension as input")
            for i in range(self.ndim):
                if i != d and not (extra.shape[i] == self.shape[i]):
                    raise shape_error("diff", f"diff expects the shape of tensor to {name} "
                                              f"to match that of input except along the "
                                              f"differencing dimension")
            length = length + extra.shape[d]
    shape = self.shape[:d] + (nonneg(length - n),) + self.shape[d + 1:]
    return self.like(shape=shape)


@rule(aten.msort.default)
def msort(self: TensorMeta) -> TensorMeta:
    """msort: sorted along dim 0, same shape and dtype."""
    return sort(self, 0)[0]


@rule(aten.logcumsumexp.default)
def logcumsumexp(self: TensorMeta, dim: int) -> TensorMeta:
    """logcumsumexp: same shape and dtype; floating or complex inputs only."""
    normalize_dim(dim, self.ndim, "logcumsumexp")
    check(dtype_category(self.dtype) >= 2, "logcumsumexp",
          f'"logcumsumexp_out_cpu" not implemented for \'{self.dtype}\'')
    return self.like()


@rule(aten.nanmean.default)
def nanmean(self: TensorMeta, dim: Any = None, keepdim: bool = False, *,
            dtype: torch.dtype | None = None) -> TensorMeta:
    """nanmean: mean ignoring NaNs; floating or complex input, the dtype as mean's."""
    check(self.dtype.is_floating_point or self.dtype.is_complex, "nanmean",
          f"nanmean(): expected input to have floating point or complex dtype but got "
          f"{self.dtype}")
    return mean_dim(self, dim, keepdim, dtype=dtype)


@rule(aten.sum_to_size.default)
def sum_to_size(self: TensorMeta, size: Sequence[Any]) -> TensorMeta:
    """Summed down to `size`, which must expand to self's shape.  Integral inputs that are
    actually summed accumulate in int64; when nothing is summed self comes back as is."""
    op = "sum_to_size"
    lead = self.ndim - len(size)
    ok = lead >= 0
    if ok:
        for s, n in zip(size, self.shape[lead:]):
            if not (s is n or (isinstance(s, int) and s == 1) or s == n or s == 1):
                ok = False
                break
    check(ok, op, f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    dtype = self.dtype
    if dtype_category(dtype) <= 1:
        # eager sums over the leading dims and the dims where size is 1 but self's is not
        summed = lead > 0 or any(isinstance(s, int) and s == 1 and not n == 1
                                 for s, n in zip(size, self.shape[lead:]))
        dtype = _LONG if summed else dtype
    return self.like(shape=tuple(size), dtype=dtype)


# -- bucketize, searchsorted ----------------------------------------------------------------


def _search_dtype(op: str, out_int32: bool, *dtypes: torch.dtype) -> torch.dtype:
    for d in dtypes:
        check(dtype_category(d) in (1, 2), op, f'"searchsorted_out_cpu" not implemented for '
                                               f"'{d}'")
    return torch.int32 if out_int32 else _LONG


@rule(aten.bucketize.Tensor)
def bucketize(self: TensorMeta, boundaries: TensorMeta, *, out_int32: bool = False,
              right: bool = False) -> TensorMeta:
    """bucketize: an index per element of self; boundaries are 1-d."""
    check(boundaries.ndim == 1, "bucketize", f"boundaries tensor must be 1 dimension, but "
                                             f"got dim({boundaries.ndim})")
    return self.like(dtype=_search_dtype("bucketize", out_int32, self.dtype, boundaries.dtype))


@rule(aten.bucketize.Scalar)
def bucketize_scalar(self: Any, boundaries: TensorMeta, *, out_int32: bool = False,
                     right: bool = False) -> TensorMeta:
    """bucketize of a Python number: a 0-d index."""
    check(boundaries.ndim == 1, "bucketize", f"boundaries tensor must be 1 dimension, but "
                                             f"got dim({boundaries.ndim})")
    dtype = _search_dtype("bucketize", out_int32, boundaries.dtype)
    return TensorMeta((), dtype, boundaries.device)


def _search_checks(op: str, sorted_sequence: TensorMeta, self: TensorMeta | None,
                   right: bool, side: str | None, sorter: TensorMeta | None) -> None:
    if sorter is not None:
        check(sorter.dtype == _LONG, op, f"torch.searchsorted(): sorter must be a tensor of "
                                         f"long dtype but got dtype {sorter.dtype}")
        same = sorter.ndim == sorted_sequence.ndim and all(
            a == b for a, b in zip(sorter.shape, sorted_sequence.shape))
        check(same, op, f"torch.searchsorted(): boundary and sorter must have the same size, "
                        f"but got boundary tensor {list(sorted_sequence.shape)}and got sorter "
                        f"tensor {list(sorter.shape)}")
    ndim = 0 if self is None else self.ndim
    check(ndim > 0 or sorted_sequence.ndim == 1, op,
          f"torch.searchsorted(): input value can be a scalar only when boundaries tensor "
          f"dimension is 1, but we got boundaries tensor dim({sorted_sequence.ndim}) and "
          f"input value's dim({ndim}) numel(1)")
    check(sorted_sequence.ndim != 0, op, "torch.searchsorted(): boundaries tensor should have "
                                         "positive dimension, but got 0 dimension")
    if sorted_sequence.ndim != 1:
        assert self is not None
        same = sorted_sequence.ndim == self.ndim and all(
            a == b for a, b in zip(sorted_sequence.shape[:-1], self.shape[:-1]))
        check(same, op, f"torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                        f"first N-1 dimensions of boundaries tensor and input value tensor "
                        f"must match, but we got boundaries tensor {list(sorted_sequence.shape)}"
                        f" and input value tensor {list(self.shape)}")
    if side is not None:
        check(side in ("left", "right"), op, f"torch.searchsorted(): side can only be 'left' or "
                                             f"'right' but got {side}")
        check(not right or side == "right", op, f"torch.searchsorted(): side and right can't "
                                                f"be set to opposites, got side of {side} "
                                                f"while right was True")


@rule(aten.searchsorted.Tensor)
def searchsorted(sorted_sequence: TensorMeta, self: TensorMeta, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None,
                 sorter: TensorMeta | None = None) -> TensorMeta:
    """searchsorted: an index per element of self; an n-d sequence matches self's leading
    dims."""
    _search_checks("searchsorted", sorted_sequence, self, right, side, sorter)
    dtype = _search_dtype("searchsorted", out_int32, sorted_sequence.dtype, self.dtype)
    return self.like(dtype=dtype)


@rule(aten.searchsorted.Scalar)
def searchsorted_scalar(sorted_sequence: TensorMeta, self: Any, *, out_int32: bool = False,
                        right: bool = False, side: str | None = None,
                        sorter: TensorMeta | None = None) -> TensorMeta:
    """searchsorted of a Python number: a 0-d index into a 1-d sequence."""
    _search_checks("searchsorted", sorted_sequence, None, right, side, sorter)
    dtype = _search_dtype("searchsorted", out_int32, sorted_sequence.dtype)
    return TensorMeta((), dtype, sorted_sequence.device)

