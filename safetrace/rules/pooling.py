"""Shape rules of pooling: max / average pools (ceil_mode, dilation), adaptive pools and
max_unpool.

Output sizes are floor divisions of the padded input, exact on symbolic sizes; the checks
follow the CPU kernels.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, either, every, known, negative_indicator
from safetrace.rules.registry import rule

aten = torch.ops.aten


# -- pooling ----------------------------------------------------------------------------

def pool_out(size: Any, k: Any, s: Any, p: Any, d: Any, ceil_mode: bool) -> Any:
    """Windows that fit; with ceil_mode a partial last window counts if it starts inside
    the input or the left padding (not in the right padding)."""
    out = (size + 2 * p - d * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode:
        # one window less where the last would start in the right padding: an exact
        # expression where the facts do not decide, not a guard
        past = known((out - 1) * s, "ge", size + p)
        if past is None:
            return out - negative_indicator(size + p - (out - 1) * s - 1)
        return out - 1 if past else out
    return out


def pool_input(op: str, x: TensorMeta, n: int) -> None:
    """Pooling takes (C, *spatial) or (N, C, *spatial); only N may be 0."""
    ok = x.ndim in (n + 1, n + 2)
    check(ok and every(s != 0 for s in x.shape[x.ndim - n - 1:]), op,
          f"Expected {n + 1}D or {n + 2}D (batch mode) tensor with optional 0 dim batch size "
          f"for input, but got: {list(x.shape)}")


def pool_params(op: str, n: int, kernel_size: Any, stride: Any, padding: Any,
                dilation: Any) -> tuple[list, list, list, list]:
    def one(value: Any, name: str) -> list:
        if isinstance(value, (list, tuple)):
            check(len(value) in (1, n), op, f"{name} must either be a single int, or a tuple "
                                            f"of {n} ints")
            return list(value) * n if len(value) == 1 else list(value)
        return [value] * n

    k = one(kernel_size, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else one(stride, "stride")
    p, d = one(padding, "padding"), one(dilation, "dilation")
    check(every(x > 0 for x in k), op, f"kernel size should be greater than zero, but got {k}")
    check(every(x > 0 for x in s), op, f"stride should be greater than zero, but got {s}")
    check(every(x > 0 for x in d), op, f"dilation should be greater than zero, but got {d}")
    check(every(x >= 0 for x in p), op, f"pad must be non-negative, but got pad: {p}")
    check(every(pp <= kk // 2 for pp, kk in zip(p, k)), op, f"pad should be smaller than or "
          f"equal to half of kernel size, but got pad = {p}, kernel_size = {k}")
    return k, s, p, d


def pool_nd(op: str, n: int, x: TensorMeta, kernel_size: Any, stride: Any, padding: Any,
            dilation: Any, ceil_mode: bool) -> tuple:
    pool_input(op, x, n)
    k, s, p, d = pool_params(op, n, kernel_size, stride, padding, dilation)
    spatial = x.shape[x.ndim - n:]
    out = tuple(pool_out(*a, ceil_mode) for a in zip(spatial, k, s, p, d))
    check(every(o >= 1 for o in out), op, f"Given input size: ({'x'.join(map(str, spatial))}). "
          f"Calculated output size: ({'x'.join(map(str, out))}). Output size is too small")
    return x.shape[:x.ndim - n] + out


@rule(aten.max_pool1d.default)
def max_pool1d(self: TensorMeta, kernel_size: Any, stride: Any = (), padding: Any = (0,),
               dilation: Any = (1,), ceil_mode: bool = False) -> TensorMeta:
    """(N, C, L) or (C, L) -> L_out = pooled windows."""
    return self.like(pool_nd("aten.max_pool1d", 1, self, kernel_size, stride, padding,
                             dilation, ceil_mode))


@rule(aten.max_pool2d.default)
def max_pool2d(self: TensorMeta, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> TensorMeta:
    """(N, C, H, W) or (C, H, W)."""
    return self.like(pool_nd("aten.max_pool2d", 2, self, kernel_size, stride, padding,
                             dilation, ceil_mode))


@rule(aten.max_pool3d.default)
def max_pool3d(self: TensorMeta, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> TensorMeta:
    """(N, C, D, H, W) or (C, D, H, W)."""
    return self.like(pool_nd("aten.max_pool3d", 3, self, kernel_size, stride, padding,
                             dilation, ceil_mode))


def with_indices(out: TensorMeta) -> tuple[TensorMeta, TensorMeta]:
    return out, out.like(dtype=torch.int64)


@rule(aten.max_pool1d_with_indices.default)
def max_pool1d_with_indices(self: TensorMeta, kernel_size: Any, stride: Any = (),
                            padding: Any = (0,), dilation: Any = (1,),
                            ceil_mode: bool = False) -> tuple[TensorMeta, TensorMeta]:
    """max_pool1d and the int64 argmax positions."""
    return with_indices(max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode))


@rule(aten.max_pool2d_with_indices.default)
def max_pool2d_with_indices(self: TensorMeta, kernel_size: Any, stride: Any = (),
                            padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple[TensorMeta, TensorMeta]:
    """max_pool2d and the int64 argmax positions."""
    return with_indices(max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode))


@rule(aten.max_pool3d_with_indices.default)
def max_pool3d_with_indices(self: TensorMeta, kernel_size: Any, stride: Any = (),
                            padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple[TensorMeta, TensorMeta]:
    """max_pool3d and the int64 argmax positions."""
    return with_indices(max_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode))


@rule(aten.avg_pool1d.default)
def avg_pool1d(self: TensorMeta, kernel_size: Any, stride: Any = (), padding: Any = (0,),
               ceil_mode: bool = False, count_include_pad: bool = True) -> TensorMeta:
    """Like max_pool1d without dilation."""
    return self.like(pool_nd("aten.avg_pool1d", 1, self, kernel_size, stride, padding, 1,
                             ceil_mode))


@rule(aten.avg_pool2d.default)
def avg_pool2d(self: TensorMeta, kernel_size: Any, stride: Any = (), padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> TensorMeta:
    """Like max_pool2d without dilation; divisor_override must not be 0."""
    check(divisor_override != 0, "aten.avg_pool2d", "divisor must be not zero")
    return self.like(pool_nd("aten.avg_pool2d", 2, self, kernel_size, stride, padding, 1,
                             ceil_mode))


@rule(aten.avg_pool3d.default)
def avg_pool3d(self: TensorMeta, kernel_size: Any, stride: Any = (), padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> TensorMeta:
    """Like max_pool3d without dilation."""
    check(divisor_override != 0, "aten.avg_pool3d", "divisor must be not zero")
    return self.like(pool_nd("aten.avg_pool3d", 3, self, kernel_size, stride, padding, 1,
                             ceil_mode))


def adaptive(op: str, n: int, x: TensorMeta, output_size: Any,
             spatial_only: bool = False, unless: Any = False) -> tuple:
    """(…, *spatial) -> (…, *output_size).  Every dim but the first must be non-empty
    (the CPU kernels' check, also for unbatched inputs); the 2-d average pool checks only
    its spatial dims (spatial_only); not where `unless` holds (the average pools' mean
    path, ``adaptive_avg``)."""
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
    check(len(sizes) == n, op, f"output_size must be {n}, got {len(sizes)}")
    check(x.ndim in (n + 1, n + 2), op, f"Expected {n + 1}D or {n + 2}D tensor, but got "
                                        f"{list(x.shape)}")
    for i in range(x.ndim - n if spatial_only else 1, x.ndim):
        check(either((x.shape[i] != 0, unless)), op, f"Expected input to have non-zero size "
              f"for non-batch dimensions, but input has sizes {list(x.shape)} with dimension "
              f"{i} being empty")
    check(every(s >= 0 for s in sizes), op, f"elements of output_size must be greater than or "
                                          f"equal to 0 but received {sizes}")
    return x.shape[:x.ndim - n] + tuple(sizes)


def adaptive_avg(op: str, n: int, x: TensorMeta, output_size: Any) -> TensorMeta:
    """adaptive_avg_pool{2,3}d: an all-ones output_size is a mean over the last n dims
    (any rank >= n, empty dims allowed, floating dtypes only); else the pooling kernel."""
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
    # A symbolic size that may or may not be 1 (``int(h * 0.5)``) takes the kernel's path
    # without a guard: the same output shape; its non-empty check only where some size is
    # not 1 (elsewhere eager's mean: ``max(w // 2, 1)`` pools an empty w to NaN).
    ones = [s == 1 if isinstance(s, int) else
            known(s, "le", 1) is True and known(s, "ge", 1) is True for s in sizes]
    if len(sizes) == n and all(ones):
        check(x.ndim >= n, op, f"Dimension out of range (expected to be in range of "
                               f"[{-x.ndim}, {x.ndim - 1}], but got {-n})")
        check(x.dtype.is_floating_point or x.dtype.is_complex, op,
              f"mean(): could not infer output dtype. Input dtype must be either a floating "
              f"point or complex dtype. Got: {x.dtype}")
        return x.like(x.shape[:x.ndim - n] + (1,) * n)
    maybe = len(sizes) == n and x.ndim >= n and not any(s != 1 if isinstance(s, int) else
                                                        known(s, "ge", 2) or known(s, "le", 0)
                                                        for s in sizes)
    unless = every(s == 1 for s in sizes) if maybe else False
    return x.like(adaptive(op, n, x, sizes, spatial_only=n == 2, unless=unless))


@rule(aten.adaptive_avg_pool1d.default)
def adaptive_avg_pool1d(self: TensorMeta, output_size: Any) -> TensorMeta:
    """(N, C, L) or (C, L) -> (..., output_size), through adaptive_avg_pool2d."""
    op = "aten.adaptive_avg_pool1d"
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size]
    check(len(sizes) == 1, op, "adaptive_avg_pool1d() argument 'output_size' should contain "
                               "one int")
    check(self.ndim in (2, 3), op, f"adaptive_avg_pool1d() Expected 2D or 3D input tensor, "
                                   f"but got {list(self.shape)}")
    x = self.like(self.shape[:-1] + (1, self.shape[-1]))
    out = adaptive_avg(op, 2, x, [1, sizes[0]])
    return out.like(out.shape[:-2] + out.shape[-1:])


@rule(aten.adaptive_avg_pool2d.default)
def adaptive_avg_pool2d(self: TensorMeta, output_size: Any) -> TensorMeta:
    """(N, C, H, W) or (C, H, W) -> (..., oh, ow)."""
    return adaptive_avg("aten.adaptive_avg_pool2d", 2, self, output_size)


@rule(aten.adaptive_avg_pool3d.default)
def adaptive_avg_pool3d(self: TensorMeta, output_size: Any) -> TensorMeta:
    """(N, C, D, H, W) or unbatched -> (..., od, oh, ow)."""
    return adaptive_avg("aten.adaptive_avg_pool3d", 3, self, output_size)


@rule(aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool2d(self: TensorMeta, output_size: Any) -> TensorMeta:
    """The pooling kernel itself (no mean shortcut)."""
    return self.like(adaptive("aten._adaptive_avg_pool2d", 2, self, output_size,
                              spatial_only=True))


@rule(aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool3d(self: TensorMeta, output_size: Any) -> TensorMeta:
    """The pooling kernel itself (no mean shortcut)."""
    return self.like(adaptive("aten._adaptive_avg_pool3d", 3, self, output_size))


@rule(aten.adaptive_max_pool1d.default)
def adaptive_max_pool1d(self: TensorMeta, output_size: Any) -> tuple[TensorMeta, TensorMeta]:
    """Values and int64 indices."""
    return with_indices(self.like(adaptive("aten.adaptive_max_pool1d", 1, self, output_size)))


@rule(aten.adaptive_max_pool2d.default)
def adaptive_max_pool2d(self: TensorMeta, output_size: Any) -> tuple[TensorMeta, TensorMeta]:
    """Values and int64 indices."""
    return with_indices(self.like(adaptive("aten.adaptive_max_pool2d", 2, self, output_size)))


@rule(aten.adaptive_max_pool3d.default)
def adaptive_max_pool3d(self: TensorMeta, output_size: Any) -> tuple[TensorMeta, TensorMeta]:
    """Values and int64 indices."""
    return with_indices(self.like(adaptive("aten.adaptive_max_pool3d", 3, self, output_size)))


# -- max_unpool (F.max_unpool2d / 3d) -------------------------------------------------------

def max_unpool(op: str, n: int, self: TensorMeta, indices: TensorMeta,
               output_size: Any) -> TensorMeta:
    """(N, C, *spatial) and its int64 indices -> (N, C, *output_size)."""
    check(indices.dtype == torch.int64, op, f"elements in indices should be type int64 but "
                                            f"got: {indices.dtype}")
    names = "(height, width)" if n == 2 else "(depth, height, width)"
    check(len(output_size) == n, op, f"There should be exactly {'two' if n == 2 else 'three'} "
          f"elements {names} in output_size, but got {len(output_size)} elements.")
    check(self.ndim in (n + 1, n + 2), op, f"Input to max_unpooling{n}d should be a "
          f"{n + 1}d or {n + 2}d Tensor, but got a tensor with {self.ndim} dimensions.")
    same = self.ndim == indices.ndim and all(a == b for a, b in zip(self.shape, indices.shape))
    check(same, op, f"Expected shape of indices to be same as that of the input tensor "
                    f"({list(self.shape)}) but got indices tensor with shape: "
                    f"{list(indices.shape)}")
    for i in range(1, self.ndim):
        check(self.shape[i] != 0, op, f"max_unpooling{n}d_forward_out_cpu(): Expected input to "
              f"have non-zero size for non-batch dimensions, but got {list(self.shape)} with "
              f"dimension {i} being empty.")
    check(dtype_ok(self.dtype), op, f'"max_unpool{n}d" not implemented for \'{self.dtype}\'')
    return self.like(shape=self.shape[:-n] + tuple(output_size))


def dtype_ok(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point


@rule(aten.max_unpool2d.default)
def max_unpool2d(self: TensorMeta, indices: TensorMeta, output_size: Any) -> TensorMeta:
    """(N, C, H, W) -> (N, C, *output_size)."""
    return max_unpool("aten.max_unpool2d", 2, self, indices, output_size)


@rule(aten.max_unpool3d.default)
def max_unpool3d(self: TensorMeta, indices: TensorMeta, output_size: Any, stride: Any,
                 padding: Any) -> TensorMeta:
    """(N, C, D, H, W) -> (N, C, *output_size); strides must be positive."""
    op = "aten.max_unpool3d"
    check(len(stride) == 3, op, f"There should be exactly three elements (depth, height, "
                                f"width) in stride, but got: {len(stride)} elements.")
    check(len(padding) == 3, op, f"There should be exactly three elements (depth, height, "
                                 f"width) in padding, but got: {len(padding)} elements.")
    check(every(s > 0 for s in stride), op, f"strides should be greater than zero, but got "
                                          f"stride: {list(stride)}")
    return max_unpool(op, 3, self, indices, output_size)
