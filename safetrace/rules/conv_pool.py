"""Shape rules of convolutions, pooling and pixel (un)shuffle.

Output sizes are floor divisions of the padded input, so they stay exact on symbolic
sizes: ``(L + 2*p - d*(k-1) - 1) // s + 1``.  The checks follow the CPU kernels (the meta
kernels skip several: channel counts, bias sizes, groups divisibility, empty inputs).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import (
    check, either, every, is_empty, known, negative_indicator,
)
from safetrace.rules.registry import rule

aten = torch.ops.aten


def expand_param(op: str, value: Any, n: int, name: str) -> list:
    """An int or a list of 1 or n values -> n values (conv/pool parameters)."""
    if isinstance(value, (list, tuple)):
        check(len(value) in (1, n), op, f"expected {name} to be a single integer value or a "
                                        f"list of {n} values to match the convolution "
                                        f"dimensions, but got {name}={list(value)}")
        return list(value) * n if len(value) == 1 else list(value)
    return [value] * n


# -- convolution ------------------------------------------------------------------------

def conv_out(size: Any, k: Any, s: Any, p: Any, d: Any) -> Any:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv_transpose_out(size: Any, k: Any, s: Any, p: Any, d: Any, op_: Any) -> Any:
    return (size - 1) * s - 2 * p + d * (k - 1) + op_ + 1


def convolution_shape(op: str, input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None,
                      stride: Any, padding: Any, dilation: Any, transposed: bool,
                      output_padding: Any, groups: Any) -> tuple:
    """The output shape of a batched convolution (input (N, C, *spatial)), checked as CPU."""
    check(weight.ndim >= 3, op, "weight should have at least three dimensions")
    check(input.ndim == weight.ndim, op, f"Expected {weight.ndim}-dimensional input for "
          f"{weight.ndim}-dimensional weight {list(weight.shape)}, but got "
          f"{input.ndim}-dimensional input of size {list(input.shape)} instead")
    n = weight.ndim - 2
    stride = expand_param(op, stride, n, "stride")
    padding = expand_param(op, padding, n, "padding")
    dilation = expand_param(op, dilation, n, "dilation")
    output_padding = expand_param(op, output_padding, n, "output_padding")
    check(every(s > 0 for s in stride), op, "non-positive stride is not supported")
    check(every(p >= 0 for p in padding), op, "negative padding is not supported")
    check(every(d > 0 for d in dilation), op, "dilation should be greater than zero")
    check(every(p >= 0 for p in output_padding), op, "negative output_padding is not supported")
    check(groups > 0, op, "non-positive groups is not supported")
    check(input.dtype == weight.dtype, op, f"expected scalar type {input.dtype} but found "
                                           f"{weight.dtype}")
    if bias is not None:
        check(input.dtype == bias.dtype, op, f"Input type ({input.dtype}) and bias type "
                                             f"({bias.dtype}) should be the same")
    batch, channels, spatial = input.shape[0], input.shape[1], input.shape[2:]
    kernel = weight.shape[2:]
    check(weight.shape[0] % groups == 0, op, f"Given groups={groups}, expected weight to be "
          f"divisible by {groups} at dimension 0, but got weight of size "
          f"{list(weight.shape)} instead")
    if transposed:
        check(channels == weight.shape[0], op, f"Given transposed=1, weight of size "
              f"{list(weight.shape)}, expected input{list(input.shape)} to have "
              f"{weight.shape[0]} channels, but got {channels} channels instead")
        out_channels = weight.shape[1] * groups
        for p, s, d in zip(output_padding, stride, dilation):
            check(p < s or p < d, op, f"output padding must be smaller than either stride or "
                                      f"dilation, but got output_padding={output_padding}, "
                                      f"stride={stride}, dilation={dilation}")
    else:
        check(channels == weight.shape[1] * groups, op, f"Given groups={groups}, weight of "
              f"size {list(weight.shape)}, expected input{list(input.shape)} to have "
              f"{weight.shape[1] * groups} channels, but got {channels} channels instead")
        out_channels = weight.shape[0]
        padded = [x + 2 * p for x, p in zip(spatial, padding)]
        effective = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
        check(every(p >= e for p, e in zip(padded, effective)), op,
              f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
              f"Kernel size: ({' x '.join(map(str, effective))}). Kernel size can't be "
              f"greater than actual input size")
    if bias is not None:
        check(bias.ndim == 1 and bias.shape[0] == out_channels, op,
              f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional "
              f"with {out_channels} elements, but got bias of size {list(bias.shape)} instead")
    # one requirement (`x != 0` asked alone refused an empty dim where the batch is 0)
    check(either((every(x != 0 for x in spatial), batch == 0, channels == 0)), op,
          f"Only zero batch or zero channel inputs are supported, but got input shape: "
          f"{list(input.shape)}")
    if transposed:
        out = [conv_transpose_out(x, k, s, p, d, o) for x, k, s, p, d, o in
               zip(spatial, kernel, stride, padding, dilation, output_padding)]
        # (an empty batch skips it: an output size of 0 computes, eager's reshape raises < 0)
        check(either((every(o > 0 for o in out), every([batch == 0] + [o >= 0 for o in out]))),
              op, f"Given input size per channel: "
              f"({' x '.join(map(str, spatial))}). Calculated output size per channel: "
              f"({' x '.join(map(str, out))}). Output size is too small")
    else:
        out = [conv_out(x, k, s, p, d) for x, k, s, p, d in
               zip(spatial, kernel, stride, padding, dilation)]
    if channels == 0:  # torch gives an empty result with 0 output channels too
        out_channels = 0
    return (batch, out_channels, *out)


def batchify(op: str, input: TensorMeta, n: int) -> tuple[TensorMeta, bool]:
    """conv{n}d accepts an unbatched input (C, *spatial); add the batch dim."""
    check(input.ndim in (n + 1, n + 2), op, f"Expected {n + 1}D (unbatched) or {n + 2}D "
          f"(batched) input to conv{n}d, but got input of size: {list(input.shape)}")
    if input.ndim == n + 1:
        return input.like((1, *input.shape)), True
    return input, False


def conv_nd(op: str, n: int, input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None,
            stride: Any, padding: Any, dilation: Any, groups: Any, transposed: bool = False,
            output_padding: Any = 0) -> TensorMeta:
    x, unbatched = batchify(op, input, n)
    check(weight.ndim == n + 2, op, f"weight should have {n + 2} dimensions for conv{n}d, "
                                    f"got {list(weight.shape)}")
    shape = convolution_shape(op, x, weight, bias, stride, padding, dilation, transposed,
                              output_padding, groups)
    return input.like(shape[1:] if unbatched else shape)


def conv_padding_str(op: str, n: int, input: TensorMeta, weight: TensorMeta,
                     bias: TensorMeta | None, stride: Any, padding: str, dilation: Any,
                     groups: Any) -> TensorMeta:
    """padding="valid" is 0; "same" pads by d*(k-1) in total, so the size is kept."""
    check(padding in ("same", "valid"), op, f"Invalid padding string: '{padding}'")
    if padding == "valid":
        return conv_nd(op, n, input, weight, bias, stride, 0, dilation, groups)
    strides = expand_param(op, stride, n, "stride")
    check(every(s == 1 for s in strides), op,
          "padding='same' is not supported for strided convolutions")
    x, unbatched = batchify(op, input, n)
    check(weight.ndim == n + 2, op, f"weight should have {n + 2} dimensions for conv{n}d, "
                                    f"got {list(weight.shape)}")
    dil = expand_param(op, dilation, n, "dilation")
    # "same" pads floor(total/2) on both sides and the odd remainder on the right; the
    # symmetric part goes through the generic checks, then the size is the input's.
    pads = [d * (k - 1) // 2 for d, k in zip(dil, weight.shape[2:])]
    extra = [d * (k - 1) % 2 for d, k in zip(dil, weight.shape[2:])]
    padded = x.like(x.shape[:2] + tuple(s + e for s, e in zip(x.shape[2:], extra)))
    shape = convolution_shape(op, padded, weight, bias, 1, pads, dil, False, 0, groups)
    shape = shape[:2] + tuple(x.shape[2:])
    return input.like(shape[1:] if unbatched else shape)


@rule(aten.conv1d.default)
def conv1d(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
           stride: Any = (1,), padding: Any = (0,), dilation: Any = (1,),
           groups: Any = 1) -> TensorMeta:
    """(N, C, L) or (C, L) -> (N, out, L_out)."""
    return conv_nd("aten.conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@rule(aten.conv2d.default)
def conv2d(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
           stride: Any = (1, 1), padding: Any = (0, 0), dilation: Any = (1, 1),
           groups: Any = 1) -> TensorMeta:
    """(N, C, H, W) or (C, H, W) -> (N, out, H_out, W_out)."""
    return conv_nd("aten.conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@rule(aten.conv3d.default)
def conv3d(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
           stride: Any = (1, 1, 1), padding: Any = (0, 0, 0), dilation: Any = (1, 1, 1),
           groups: Any = 1) -> TensorMeta:
    """(N, C, D, H, W) or unbatched -> (N, out, D_out, H_out, W_out)."""
    return conv_nd("aten.conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


@rule(aten.conv1d.padding)
def conv1d_padding(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
                   stride: Any = (1,), padding: str = "valid", dilation: Any = (1,),
                   groups: Any = 1) -> TensorMeta:
    """conv1d with padding "same" or "valid"."""
    return conv_padding_str("aten.conv1d", 1, input, weight, bias, stride, padding, dilation,
                            groups)


@rule(aten.conv2d.padding)
def conv2d_padding(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
                   stride: Any = (1, 1), padding: str = "valid", dilation: Any = (1, 1),
                   groups: Any = 1) -> TensorMeta:
    """conv2d with padding "same" or "valid"."""
    return conv_padding_str("aten.conv2d", 2, input, weight, bias, stride, padding, dilation,
                            groups)


@rule(aten.conv3d.padding)
def conv3d_padding(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
                   stride: Any = (1, 1, 1), padding: str = "valid",
                   dilation: Any = (1, 1, 1), groups: Any = 1) -> TensorMeta:
    """conv3d with padding "same" or "valid"."""
    return conv_padding_str("aten.conv3d", 3, input, weight, bias, stride, padding, dilation,
                            groups)


@rule(aten.conv_transpose1d.default)
def conv_transpose1d(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
                     stride: Any = (1,), padding: Any = (0,), output_padding: Any = (0,),
                     groups: Any = 1, dilation: Any = (1,)) -> TensorMeta:
    """weight (C_in, out/groups, k): L_out = (L-1)*s - 2p + d(k-1) + output_padding + 1."""
    return conv_nd("aten.conv_transpose1d", 1, input, weight, bias, stride, padding,
                   dilation, groups, True, output_padding)


@rule(aten.conv_transpose2d.input)
def conv_transpose2d(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
                     stride: Any = (1, 1), padding: Any = (0, 0),
                     output_padding: Any = (0, 0), groups: Any = 1,
                     dilation: Any = (1, 1)) -> TensorMeta:
    """The 2-d transposed convolution."""
    return conv_nd("aten.conv_transpose2d", 2, input, weight, bias, stride, padding,
                   dilation, groups, True, output_padding)


@rule(aten.conv_transpose3d.input)
def conv_transpose3d(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None,
                     stride: Any = (1, 1, 1), padding: Any = (0, 0, 0),
                     output_padding: Any = (0, 0, 0), groups: Any = 1,
                     dilation: Any = (1, 1, 1)) -> TensorMeta:
    """The 3-d transposed convolution."""
    return conv_nd("aten.conv_transpose3d", 3, input, weight, bias, stride, padding,
                   dilation, groups, True, output_padding)


@rule(aten.convolution.default)
def convolution(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None,
                stride: Sequence, padding: Sequence, dilation: Sequence, transposed: bool,
                output_padding: Sequence, groups: Any) -> TensorMeta:
    """The batched convolution every conv lowers to (no unbatched inputs here)."""
    return input.like(convolution_shape("aten.convolution", input, weight, bias, stride,
                                        padding, dilation, transposed, output_padding, groups))


@rule(aten._convolution.default, aten._convolution.deprecated)
def _convolution(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None,
                 stride: Sequence, padding: Sequence, dilation: Sequence, transposed: bool,
                 output_padding: Sequence, groups: Any, benchmark: bool, deterministic: bool,
                 cudnn_enabled: bool, allow_tf32: bool = True) -> TensorMeta:
    """Like convolution; the backend flags do not change shapes."""
    return input.like(convolution_shape("aten._convolution", input, weight, bias, stride,
                                        padding, dilation, transposed, output_padding, groups))


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


# -- pixel shuffle ----------------------------------------------------------------------

@rule(aten.pixel_shuffle.default)
def pixel_shuffle(self: TensorMeta, upscale_factor: int) -> TensorMeta:
    """(..., C*r*r, H, W) -> (..., C, H*r, W*r)."""
    op, r = "aten.pixel_shuffle", upscale_factor
    check(self.ndim >= 3, op, f"pixel_shuffle expects input to have at least 3 dimensions, "
                              f"but got input with {self.ndim} dimension(s)")
    check(r > 0, op, f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c, h, w = self.shape[-3:]
    check(c % (r * r) == 0, op, f"pixel_shuffle expects its input's 'channel' dimension to be "
          f"divisible by the square of upscale_factor, but input.size(-3)={c} is not "
          f"divisible by {r * r}")
    return self.like(self.shape[:-3] + (c // (r * r), h * r, w * r))


@rule(aten.channel_shuffle.default, aten.native_channel_shuffle.default)
def channel_shuffle(self: TensorMeta, groups: Any) -> TensorMeta:
    """(N, C, *) with C divisible by groups: same shape (channels permuted)."""
    op = "aten.channel_shuffle"
    check(self.ndim > 2, op, f"channel_shuffle expects input with > 2 dims, but got input "
                             f"with sizes {list(self.shape)}")
    check(groups > 0, op, f"Number of groups to divide channels in must be positive. Value "
                          f"of groups:{groups}")
    check(self.shape[1] % groups == 0, op, f"Number of channels must be divisible by groups. "
                                           f"Got {self.shape[1]} channels and {groups} groups.")
    return self.like()


@rule(aten.pixel_unshuffle.default)
def pixel_unshuffle(self: TensorMeta, downscale_factor: int) -> TensorMeta:
    """(..., C, H*r, W*r) -> (..., C*r*r, H, W)."""
    op, r = "aten.pixel_unshuffle", downscale_factor
    check(self.ndim >= 3, op, f"pixel_unshuffle expects input to have at least 3 dimensions, "
                              f"but got input with {self.ndim} dimension(s)")
    check(r > 0, op, f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    c, h, w = self.shape[-3:]
    check(h % r == 0, op, f"pixel_unshuffle expects height to be divisible by "
                          f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    check(w % r == 0, op, f"pixel_unshuffle expects width to be divisible by "
                          f"downscale_factor, but input.size(-1)={w} is not divisible by {r}")
    if r != 1 and is_empty(self):  # eager returns an empty input unchanged
        return self.like()
    return self.like(self.shape[:-3] + (c * r * r, h // r, w // r))



# -- im2col / col2im (F.unfold / F.fold) ------------------------------------------------

@rule(aten.im2col.default)
def im2col(self: TensorMeta, kernel_size: Any, dilation: Any, padding: Any,
           stride: Any) -> TensorMeta:
    """(N, C, H, W) -> (N, C*kh*kw, L): L sliding blocks of the padded input."""
    op = "aten.im2col"
    k = expand_param(op, kernel_size, 2, "kernel_size")
    d = expand_param(op, dilation, 2, "dilation")
    p, s = expand_param(op, padding, 2, "padding"), expand_param(op, stride, 2, "stride")
    check(every(v > 0 for v in k), op, f"kernel size should be greater than zero, but got {k}")
    check(every(v > 0 for v in d), op, f"dilation should be greater than zero, but got {d}")
    check(every(v >= 0 for v in p), op, f"padding should be non-negative, but got {p}")
    check(every(v > 0 for v in s), op, f"stride should be greater than zero, but got {s}")
    check(self.ndim in (3, 4), op, "Expected 3D or 4D (batch mode) tensor with possibly 0 "
          "batch size and other non-zero dimensions for input")
    c, h, w = self.shape[-3:]
    check(every((c != 0, h != 0, w != 0)), op, "Expected 3D or 4D (batch mode) tensor with "
          "possibly 0 batch size and other non-zero dimensions for input")
    oh, ow = conv_out(h, k[0], s[0], p[0], d[0]), conv_out(w, k[1], s[1], p[1], d[1])
    check(every((oh >= 1, ow >= 1)), op, "Given input with spatial size, the calculated shape of "
          "the array of sliding blocks must be at least one")
    return self.like(shape=self.shape[:-3] + (c * k[0] * k[1], oh * ow))


@rule(aten.col2im.default)
def col2im(self: TensorMeta, output_size: Any, kernel_size: Any, dilation: Any, padding: Any,
           stride: Any) -> TensorMeta:
    """(N, C*kh*kw, L) -> (N, C, *output_size): L must be the number of sliding blocks."""
    op = "aten.col2im"
    o = expand_param(op, output_size, 2, "output_size")
    k = expand_param(op, kernel_size, 2, "kernel_size")
    d = expand_param(op, dilation, 2, "dilation")
    p, s = expand_param(op, padding, 2, "padding"), expand_param(op, stride, 2, "stride")
    check(every((o[0] > 0, o[1] > 0)), op, f"output_size should be greater than zero, but got {o}")
    check(every(v > 0 for v in k), op, f"kernel size should be greater than zero, but got {k}")
    check(every(v > 0 for v in d), op, f"dilation should be greater than zero, but got {d}")
    check(every(v >= 0 for v in p), op, f"padding should be non-negative, but got {p}")
    check(every(v > 0 for v in s), op, f"stride should be greater than zero, but got {s}")
    check(self.ndim in (2, 3), op, f"Expected 2D or 3D (batch mode) tensor for input with "
          f"possibly 0 batch size and non-zero dimensions for input, but got: "
          f"{list(self.shape)}")
    ck, length = self.shape[-2:]
    check(every((ck != 0, length != 0)), op, f"Expected 2D or 3D (batch mode) tensor for "
          f"input with possibly 0 batch size and non-zero dimensions for input, but got: "
          f"{list(self.shape)}")
    check(ck % (k[0] * k[1]) == 0, op, f"Expected size of input's dimension 1 to be divisible "
          f"by the product of kernel_size, but got input.size(1)={ck} and kernel_size={k}.")
    bh, bw = conv_out(o[0], k[0], s[0], p[0], d[0]), conv_out(o[1], k[1], s[1], p[1], d[1])
    check(every((bh >= 1, bw >= 1)), op, f"Given output_size={o}, kernel_size={k}, dilation={d}, "
          f"padding={p}, stride={s}, calculated shape of the array of sliding blocks as "
          f"({bh}, {bw}), but its components must be at least one.")
    check(length == bh * bw, op, f"Given output_size={o}, kernel_size={k}, dilation={d}, "
          f"padding={p}, stride={s}, expected size of input's dimension 2 to match the "
          f"calculated number of sliding blocks {bh} * {bw} = {bh * bw}, but got "
          f"input.size(2)={length}.")
    check(self.dtype.is_floating_point or self.dtype.is_complex, op,
          f'"col2im_out_cpu" not implemented for \'{self.dtype}\'')
    return self.like(shape=self.shape[:-2] + (ck // (k[0] * k[1]), o[0], o[1]))


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
