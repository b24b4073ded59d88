"""Shape rules of the shuffles: pixel_shuffle / pixel_unshuffle and channel_shuffle."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, is_empty
from safetrace.rules.registry import rule

aten = torch.ops.aten


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
