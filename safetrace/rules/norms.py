"""Shape rules of normalizations: layer, batch, group, instance and RMS norm.

Outputs keep the input's shape and dtype.  Parameters (weight, bias, running stats) must
have the input's dtype, or float32 for a float16/bfloat16 input ("mixed dtype"; CPU
raises otherwise).  The saved statistics of the native ops are float32 in the mixed case;
otherwise CPU keeps the input's dtype while other devices compute them in float32.
In eval mode, CPU batch norm saves empty (0,) statistics; other devices save (C,).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import broadcast_shapes, check, is_empty, normalize_dim
from safetrace.rules.registry import rule

aten = torch.ops.aten

REDUCED = (torch.float16, torch.bfloat16)


def param_dtypes(op: str, input: TensorMeta, *params: TensorMeta | None) -> bool:
    """Check parameter dtypes; True when they are float32 for a reduced-precision input."""
    mixed = False
    for p in params:
        if p is None or p.dtype == input.dtype:
            continue
        ok = input.dtype in REDUCED and p.dtype == torch.float32
        check(ok, op, f"mixed dtype (CPU): expect parameter to have scalar type of "
                      f"{input.dtype} (or float32 for a float16/bfloat16 input), got {p.dtype}")
        mixed = True
    return mixed


def stats_dtype(input: TensorMeta, mixed: bool) -> torch.dtype:
    """The dtype of saved mean / rstd of the native norm ops."""
    if input.dtype in REDUCED and (mixed or input.device.type != "cpu"):
        return torch.float32
    return input.dtype


def check_normalized(op: str, input: TensorMeta, normalized_shape: Sequence,
                     weight: TensorMeta | None, bias: TensorMeta | None) -> int:
    """layer/rms norm: the trailing dims equal normalized_shape; returns the first one."""
    n = len(normalized_shape)
    check(n >= 1, op, f"Expected normalized_shape to be at least 1-dimensional, i.e., "
                      f"containing at least one element, but got normalized_shape = "
                      f"{list(normalized_shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        check(p.ndim == n and _all_equal(p.shape, normalized_shape), op,
              f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
              f"shape {list(p.shape)} and normalized_shape = {list(normalized_shape)}")
    axis = input.ndim - n
    check(axis >= 0 and _all_equal(input.shape[axis:], normalized_shape), op,
          f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
          f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
          f"{list(input.shape)}")
    return axis


def _all_equal(sizes: Sequence, others: Sequence) -> Any:
    """Pairwise equality as one condition: a symbolic one stays symbolic, so that `check`
    can assume it at run time when it is on data-dependent sizes (layer_norm of a
    `(2, u0)` tensor over `normalized_shape=(u0,)` with a weight of 16)."""
    out: Any = True
    for a, b in zip(sizes, others):
        eq = a == b
        if eq is False:
            return False
        if eq is not True:
            out = eq if out is True else out & eq
    return out


@rule(aten.layer_norm.default)
def layer_norm(input: TensorMeta, normalized_shape: Sequence, weight: TensorMeta | None = None,
               bias: TensorMeta | None = None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> TensorMeta:
    """Normalize over the trailing normalized_shape dims; same shape and dtype."""
    return native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


@rule(aten.native_layer_norm.default)
def native_layer_norm(input: TensorMeta, normalized_shape: Sequence, weight: TensorMeta | None,
                      bias: TensorMeta | None, eps: float) -> tuple:
    """(out, mean, rstd); mean and rstd keep the leading dims and have 1 for the rest."""
    op = "aten.native_layer_norm"
    axis = check_normalized(op, input, normalized_shape, weight, bias)
    check(input.dtype.is_floating_point or input.dtype.is_complex, op,
          f"layer_norm is not implemented for {input.dtype}")
    mixed = param_dtypes(op, input, weight, bias)
    stats = input.like(input.shape[:axis] + (1,) * (input.ndim - axis),
                       stats_dtype(input, mixed))
    return input.like(), stats, stats


@rule(aten.rms_norm.default)
def rms_norm(input: TensorMeta, normalized_shape: Sequence, weight: TensorMeta | None = None,
             eps: float | None = None) -> TensorMeta:
    """Normalize by the RMS over trailing dims; keeps the input's dtype (any weight dtype)."""
    check_normalized("aten.rms_norm", input, normalized_shape, weight, None)
    return input.like()


@rule(aten._fused_rms_norm.default)
def _fused_rms_norm(input: TensorMeta, normalized_shape: Sequence, weight: TensorMeta | None,
                    eps: float | None) -> tuple:
    """(out, rstd); rstd keeps the leading dims, in float32 for reduced-precision inputs."""
    dtype = torch.float32 if input.dtype in REDUCED else input.dtype
    if len(normalized_shape) == 0:  # what the CPU kernel does (rms_norm itself rejects [])
        return input.like(), input.like((1,) * input.ndim, dtype)
    # the kernel only counts normalized_shape's dims; a weight multiplies by broadcasting
    op = "aten._fused_rms_norm"
    axis = input.ndim - len(normalized_shape)
    check(axis >= 0, op, f"normalized_shape {list(normalized_shape)} has more dims than the "
                         f"input {list(input.shape)}")
    if weight is not None:
        out = broadcast_shapes(input.shape, weight.shape, op=op)
        check(len(out) == input.ndim, op, f"weight {list(weight.shape)} does not broadcast "
                                          f"to the input {list(input.shape)}")
    return input.like(), input.like(input.shape[:axis] + (1,) * (input.ndim - axis), dtype)


def check_channels(op: str, input: TensorMeta, channels: Any,
                   **params: TensorMeta | None) -> None:
    for name, p in params.items():
        if p is not None:
            check(p.numel() == channels, op, f"{name} should contain {channels} elements not "
                                             f"{p.numel()}")


def check_affine_of_empty(op: str, weight: TensorMeta | None, bias: TensorMeta | None,
                          repeats: Any) -> None:
    """Eager scales an empty input by weight[0] and shifts it by bias[0] (parameters
    repeated `repeats` times): an error where they have no elements."""
    for p in (weight, bias):
        if p is not None:
            check(p.numel() * repeats != 0, op, "select(): index 0 out of range for tensor of "
                                                "size [0] at dimension 0")


def batch_norm_outputs(op: str, input: TensorMeta, weight: TensorMeta | None,
                       bias: TensorMeta | None, running_mean: TensorMeta | None,
                       running_var: TensorMeta | None, training: bool,
                       native: bool = True) -> tuple:
    """(out, save_mean, save_invstd) of the batch norm ops (`native`: not the composite)."""
    check(input.ndim >= 2, op, f"Dimension out of range (expected to be in range of "
                               f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")
    c = input.shape[1]
    check_channels(op, input, c, weight=weight, bias=bias, running_mean=running_mean,
                   running_var=running_var)
    mixed = param_dtypes(op, input, weight, bias, running_mean, running_var)
    dtype = stats_dtype(input, mixed)
    if training and native and input.device.type == "cpu" and is_empty(input):
        # CPU's statistics kernel refuses an empty input, except in half precision without
        # float32 parameters, which goes another way and saves float32 statistics
        check(input.dtype in REDUCED and not mixed, op, f"input tensor must have at least one "
                                                        f"element, but got input_sizes = "
                                                        f"{list(input.shape)}")
        dtype = torch.float32
    saved = c if training or input.device.type != "cpu" else 0
    stats = input.like((saved,), dtype)
    return input.like(), stats, stats


@rule(aten.batch_norm.default)
def batch_norm(input: TensorMeta, weight: TensorMeta | None, bias: TensorMeta | None,
               running_mean: TensorMeta | None, running_var: TensorMeta | None,
               training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> TensorMeta:
    """(N, C, *) normalized per channel C; parameters have C elements."""
    check_affine_of_empty("aten.batch_norm", weight, bias, 1)
    return batch_norm_outputs("aten.batch_norm", input, weight, bias, running_mean,
                              running_var, training, native=False)[0]


@rule(aten.native_batch_norm.default)
def native_batch_norm(input: TensorMeta, weight: TensorMeta | None, bias: TensorMeta | None,
                      running_mean: TensorMeta | None, running_var: TensorMeta | None,
                      training: bool, momentum: float, eps: float) -> tuple:
    """(out, save_mean, save_invstd); the saved stats are (C,) (CPU eval: (0,))."""
    return batch_norm_outputs("aten.native_batch_norm", input, weight, bias, running_mean,
                              running_var, training)


@rule(aten._native_batch_norm_legit_no_training.default)
def _native_batch_norm_legit_no_training(input: TensorMeta, weight: TensorMeta | None,
                                         bias: TensorMeta | None, running_mean: TensorMeta,
                                         running_var: TensorMeta, momentum: float,
                                         eps: float) -> tuple:
    """Eval-mode batch norm with running stats."""
    return batch_norm_outputs("aten._native_batch_norm_legit_no_training", input, weight, bias,
                              running_mean, running_var, False)


@rule(aten._native_batch_norm_legit.default)
def _native_batch_norm_legit(input: TensorMeta, weight: TensorMeta | None,
                             bias: TensorMeta | None, running_mean: TensorMeta,
                             running_var: TensorMeta, training: bool, momentum: float,
                             eps: float) -> tuple:
    """Batch norm that updates the running stats in place."""
    return batch_norm_outputs("aten._native_batch_norm_legit", input, weight, bias,
                              running_mean, running_var, training)


@rule(aten._native_batch_norm_legit.no_stats)
def _native_batch_norm_legit_no_stats(input: TensorMeta, weight: TensorMeta | None,
                                      bias: TensorMeta | None, training: bool,
                                      momentum: float, eps: float) -> tuple:
    """Batch norm without running stats."""
    return batch_norm_outputs("aten._native_batch_norm_legit", input, weight, bias, None,
                              None, training)


@rule(aten.instance_norm.default)
def instance_norm(input: TensorMeta, weight: TensorMeta | None, bias: TensorMeta | None,
                  running_mean: TensorMeta | None, running_var: TensorMeta | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> TensorMeta:
    """Batch norm of the (1, N*C, *) view; parameters are per channel, repeated N times."""
    op = "aten.instance_norm"
    check(input.ndim >= 2, op, f"Dimension out of range (expected to be in range of "
                               f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")
    n, c = input.shape[0], input.shape[1]
    check_affine_of_empty(op, weight, bias, n)
    for name, p in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if p is not None:
            check(p.numel() * n == n * c, op, f"{name} should contain {n * c} elements not "
                                              f"{p.numel() * n}")
    param_dtypes(op, input, weight, bias, running_mean, running_var)
    return input.like()


@rule(aten.group_norm.default)
def group_norm(input: TensorMeta, num_groups: int, weight: TensorMeta | None = None,
               bias: TensorMeta | None = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> TensorMeta:
    """(N, C, *) with C divisible by num_groups; weight and bias are (C,)."""
    op = "aten.group_norm"
    check(input.ndim >= 2, op, f"Dimension out of range (expected to be in range of "
                               f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")
    c = input.shape[1]
    check(c % num_groups == 0, op, f"Expected number of channels in input to be divisible by "
                                   f"num_groups, but got input of shape {list(input.shape)} "
                                   f"and num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            check(p.ndim == 1 and p.numel() == c, op, f"Expected {name} to be a vector of "
                  f"size equal to the number of channels in input, but got {name} of shape "
                  f"{list(p.shape)} and input of shape {list(input.shape)}")
    param_dtypes(op, input, weight, bias)
    return input.like()


@rule(aten.native_group_norm.default)
def native_group_norm(input: TensorMeta, weight: TensorMeta | None, bias: TensorMeta | None,
                      N: Any, C: Any, HxW: Any, group: int, eps: float) -> tuple:
    """(out, mean (N, group), rstd (N, group)); N*C*HxW must be the input's numel."""
    op = "aten.native_group_norm"
    check(input.numel() == N * C * HxW, op, f"Expected X.numel() == N * C * HxW, got "
                                            f"{input.numel()} and {N} * {C} * {HxW}")
    check(C % group == 0, op, f"Expected number of channels in input to be divisible by "
                              f"num_groups, but got C={C} and num_groups={group}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            check(p.numel() == C, op, f"Expected {name} to have {C} elements, got "
                                      f"{list(p.shape)}")
    mixed = param_dtypes(op, input, weight, bias)
    stats = input.like((N, group), torch.float32 if mixed else input.dtype)
    return input.like(), stats, stats



@rule(aten.renorm.default, aten.renorm_.default)
def renorm(self: TensorMeta, p: Any, dim: int, maxnorm: Any) -> TensorMeta:
    """renorm: sub-tensors along `dim` rescaled to norm <= maxnorm; same shape and dtype."""
    op = "renorm"
    check(p > 0, op, "renorm: non-positive-norm not supported")
    check(maxnorm >= 0, op, f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    check(self.ndim > 1, op, f"renorm: input needs at least 2 dimensions, got {self.ndim} "
                             f"dimensions")
    normalize_dim(dim, self.ndim, op)
    check(self.dtype.is_floating_point or self.dtype.is_complex, op,
          f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
          f"{self.dtype}")
    return self.like()
