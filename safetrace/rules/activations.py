"""Activations that are not plain unary table entries (elementwise.py's UNARY): the ones
with an extra output or tensor argument.  Same shape and dtype as the input; floating
inputs only."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check
from safetrace.rules.elementwise import FLOAT_ONLY, reject
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
