"""Shape rules of torchvision's custom operators (``torchvision::roi_align`` & co).

torchvision registers Meta kernels for its RoI ops, not fake implementations, and its
operators exist only once torchvision is imported, so these rules are keyed by the op's
qualified name and registered for the operator object the first time a traced program
calls it (``NAMED_RULES``).  ``torchvision::nms`` needs none: its fake (a data-dependent
number of kept boxes) is registered by torchvision itself.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check

_INT32 = torch.int32


def _rois(op: str, input: TensorMeta, rois: TensorMeta) -> None:
    check(rois.ndim == 2 and rois.shape[1] == 5, op, "rois must have shape as Tensor[K, 5]")
    check(input.ndim == 4, op, f"input must be a 4d tensor (N, C, H, W), got {input.ndim}d")
    check(input.dtype == rois.dtype, op, f"Expected tensor for input to have the same type "
                                         f"as tensor for rois; but type {input.dtype} does "
                                         f"not equal {rois.dtype}")


def roi_align(input: TensorMeta, rois: TensorMeta, spatial_scale: float, pooled_height: int,
              pooled_width: int, sampling_ratio: int, aligned: bool) -> TensorMeta:
    """One (C, pooled_height, pooled_width) window per RoI."""
    _rois("roi_align", input, rois)
    shape = (rois.shape[0], input.shape[1], pooled_height, pooled_width)
    return TensorMeta(shape, input.dtype, input.device)


def roi_pool(input: TensorMeta, rois: TensorMeta, spatial_scale: float, pooled_height: int,
             pooled_width: int) -> tuple:
    """(pooled windows, int32 argmax of the same shape), one window per RoI."""
    _rois("roi_pool", input, rois)
    shape = (rois.shape[0], input.shape[1], pooled_height, pooled_width)
    return (TensorMeta(shape, input.dtype, input.device),
            TensorMeta(shape, _INT32, input.device))


def ps_roi_align(input: TensorMeta, rois: TensorMeta, spatial_scale: float,
                 pooled_height: int, pooled_width: int, sampling_ratio: int) -> tuple:
    """Position-sensitive: C / (ph * pw) channels per window, and the channel mapping."""
    _rois("ps_roi_align", input, rois)
    c = input.shape[1]
    check(c % (pooled_height * pooled_width) == 0, "ps_roi_align",
          "input channels must be a multiple of pooling height * pooling width")
    shape = (rois.shape[0], c // (pooled_height * pooled_width), pooled_height, pooled_width)
    return (TensorMeta(shape, input.dtype, input.device),
            TensorMeta(shape, _INT32, input.device))


NAMED_RULES: dict[str, Callable[..., Any]] = {
    "torchvision::roi_align": roi_align,
    "torchvision::roi_pool": roi_pool,
    "torchvision::ps_roi_align": ps_roi_align,
}
