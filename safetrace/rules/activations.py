"""Activations that are not plain unary table entries (elementwise.py's UNARY): the ones
with an extra output or tensor argument, softmax and log_softmax, dropout, and glu."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, float_result, is_empty, normalize_dim
from safetrace.rules.pointwise import FLOAT_ONLY, castable, reject
from safetrace.rules.registry import rule

aten = torch.ops.aten


@rule(aten.log_sigmoid.default)
def log_sigmoid(self: TensorMeta) -> TensorMeta:
    """log(sigmoid(x)) (F.logsigmoid)."""
    reject("log_sigmoid_cpu", self.dtype, FLOAT_ONLY)
    return self.like()


@rule(aten.log_sigmoid_forward.default)
def log_sigmoid_forward(self: TensorMeta) -> tuple:
    """(output, buffer): CPU's buffer has the input's shape, other devices' is empty."""
    return log_sigmoid(self), self.like(self.shape if self.device.type == "cpu" else (0,))


def _rrelu_bounds(lower: Any, upper: Any) -> None:
    check(lower <= upper, "rrelu", "Lower bound should be less than or equal to the upper "
                                   "bound")


@rule(aten.rrelu.default)
def rrelu(self: TensorMeta, lower: Any = 0.125, upper: Any = 1 / 3, training: bool = False,
          generator: Any = None) -> TensorMeta:
    """Randomized leaky relu (in eval: leaky relu with slope (lower + upper) / 2)."""
    _rrelu_bounds(lower, upper)
    reject("leaky_relu_cpu", self.dtype, FLOAT_ONLY)
    return self.like()


@rule(aten.rrelu_with_noise.default)
def rrelu_with_noise(self: TensorMeta, noise: TensorMeta, lower: Any = 0.125,
                     upper: Any = 1 / 3, training: bool = False,
                     generator: Any = None) -> TensorMeta:
    """rrelu that records the slopes drawn in `noise` (of self's shape)."""
    ok = noise.ndim == self.ndim and all(a == b for a, b in zip(noise.shape, self.shape))
    check(ok, "rrelu_with_noise", f"noise tensor shape must match self tensor shape. Got "
                                  f"self.shape = {list(self.shape)} noise.shape = "
                                  f"{list(noise.shape)}")
    return rrelu(self, lower, upper, training)


# -- softmax, dropout, gating -----------------------------------------------------------


def _softmax_dtype(op: str, self: TensorMeta, dim: int, dtype: torch.dtype | None) -> TensorMeta:
    normalize_dim(dim, self.ndim, op)
    out = self.dtype if dtype is None else dtype
    reject(op, out, FLOAT_ONLY)
    return self.like(dtype=out)


@rule(aten.softmax.int)
def softmax(self: TensorMeta, dim: int, dtype: torch.dtype | None = None) -> TensorMeta:
    """softmax: same shape; computed in `dtype` (default: the input's), floating only."""
    return _softmax_dtype("softmax", self, dim, dtype)


@rule(aten.log_softmax.int)
def log_softmax(self: TensorMeta, dim: int, dtype: torch.dtype | None = None) -> TensorMeta:
    """log_softmax: as softmax."""
    return _softmax_dtype("log_softmax", self, dim, dtype)


@rule(aten._softmax.default, aten._log_softmax.default)
def softmax_internal(self: TensorMeta, dim: int, half_to_float: bool) -> TensorMeta:
    """_softmax: half_to_float turns a half/bfloat16 input into a float32 result (not on CPU)."""
    out = _softmax_dtype("_softmax", self, dim, None)
    if not half_to_float:
        return out
    check(self.device.type != "cpu", "_softmax",
          "softmax with half to float conversion is not supported on CPU")
    check(self.dtype in (torch.float16, torch.bfloat16), "_softmax",
          f"half_to_float is True but the input dtype is {self.dtype}, expected half or bfloat16")
    return self.like(dtype=torch.float32)


def _dropout_check(op: str, input: TensorMeta, p: float, train: bool | None) -> None:
    check(0 <= p <= 1, op, f"dropout probability has to be between 0 and 1, but got {p}")
    if train is not False and 0 < p < 1:
        castable(op, float_result(input.dtype), input.dtype)


@rule(aten.dropout.default, aten.alpha_dropout.default, inplace=True)
def dropout(input: TensorMeta, p: float, train: bool) -> TensorMeta:
    """dropout: same shape and dtype, in training and in eval mode."""
    _dropout_check("dropout", input, p, train)
    return input.like()


@rule(aten.feature_dropout.default, aten.feature_alpha_dropout.default, inplace=True)
def feature_dropout(input: TensorMeta, p: float, train: bool) -> TensorMeta:
    """feature_dropout: drops whole channels, so training needs at least 2 dims."""
    _dropout_check("feature_dropout", input, p, train)
    if train:
        check(input.ndim >= 2, "feature_dropout",
              "Feature dropout requires at least 2 dimensions in the input")
    return input.like()




@rule(aten.native_dropout.default)
def native_dropout(input: TensorMeta, p: float, train: bool | None) -> tuple:
    """native_dropout: (output like input, bool mask like input)."""
    _dropout_check("native_dropout", input, p, train)
    if input.device.type == "cpu" and is_empty(input):  # CPU: an uninitialized mask like input
        return input.like(), input.like()
    return input.like(), input.like(dtype=torch.bool)


@rule(aten.glu.default)
def glu(self: TensorMeta, dim: int = -1) -> TensorMeta:
    """glu: halves `dim`, which must have an even size."""
    check(self.ndim > 0, "glu", "glu does not support 0-dimensional tensors")
    d = normalize_dim(dim, self.ndim, "glu")
    size = self.shape[d]
    check(size % 2 == 0, "glu", f"Halving dimension must be even, but dimension {d} is size "
                                f"{size}")
    reject("glu", self.dtype, FLOAT_ONLY)
    return self.like(shape=self.shape[:d] + (size // 2,) + self.shape[d + 1:])
