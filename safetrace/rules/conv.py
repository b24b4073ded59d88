"""Shape rules of convolutions (conv{1,2,3}d, transposed, padding strings) and of their
sliding blocks (im2col / col2im: F.unfold / F.fold).

Output sizes are floor divisions of the padded input, so they stay exact on symbolic
sizes: ``(L + 2*p - d*(k-1) - 1) // s + 1``.  The checks follow the CPU kernels (the meta
kernels skip several: channel counts, bias sizes, groups divisibility, empty inputs).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, either, every
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
