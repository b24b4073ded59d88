"""CPU kernels of ``torchvision::nms`` and ``torchvision::roi_align`` in plain torch.

The registry's torchvision wheel does not load its C++ extension beside a CPU-only torch
(``/work/shared/tools/tv_shim.py`` defines the ``nms`` schema so that torchvision imports at
all); its detectors then cannot run eagerly.  :func:`install` fills the gap for the two
operators the six detectors of ``detection.py`` call (``nms`` through ``batched_nms``,
``roi_align`` through ``MultiScaleRoIAlign``), only when torchvision's own kernels are absent:

- it defines the ``roi_align`` schema (the ``nms`` one comes from the shim) and registers the
  kernels below for the CPU dispatch key, plus a fake (shape-only) ``roi_align`` for
  torch.export (torchvision registers the ``nms`` fake itself);
- it tells torchvision's Python wrappers that the ops exist (``_has_ops``), so that
  ``torchvision.ops.roi_align`` calls the operator instead of its ``torch.compile``'d
  pure-Python fallback.

The kernels follow torchvision's CPU kernels (``csrc/ops/cpu/nms_kernel.cpp``,
``roi_align_kernel.cpp``) operation by operation, in the input's dtype: they are references
for checking exported programs against eager, not fast.
"""

from __future__ import annotations

import importlib

import torch

_LIB: list[torch.library.Library] = []   # keeps the fragments alive
_ROI_ALIGN = ("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
              "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor")


def nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy non-maximum suppression: int64 indices of the kept boxes, by decreasing score.

    Boxes are (x1, y1, x2, y2); a box is dropped when its IoU with a kept box of higher score
    is greater than ``iou_threshold`` (ties in score keep the input order, as the stable sort
    of torchvision's kernel does)."""
    torch._check(dets.dim() == 2 and dets.size(1) == 4, lambda: "boxes must be (N, 4)")
    torch._check(scores.dim() == 1 and scores.size(0) == dets.size(0),
                 lambda: "scores must be (N,) with N the number of boxes")
    n = dets.size(0)
    if n == 0:
        return torch.empty(0, dtype=torch.int64, device=dets.device)
    order = torch.sort(scores, dim=0, descending=True, stable=True).indices
    x1, y1, x2, y2 = dets[order].unbind(1)
    areas = (x2 - x1) * (y2 - y1)
    # IoU of every (earlier i, later j) pair, with the kernel's operations in its order
    w = (torch.minimum(x2[:, None], x2[None, :]) - torch.maximum(x1[:, None], x1[None, :]))
    h = (torch.minimum(y2[:, None], y2[None, :]) - torch.maximum(y1[:, None], y1[None, :]))
    inter = w.clamp(min=0) * h.clamp(min=0)
    iou = inter / (areas[:, None] + areas[None, :] - inter)
    suppresses = (iou > iou_threshold).triu(diagonal=1)
    alive = torch.ones(n, dtype=torch.bool, device=dets.device)
    for i in range(n):
        if alive[i]:
            alive &= ~suppresses[i]
    return order[alive]


def _axis(start: torch.Tensor, bin_size: torch.Tensor, pooled: int, grid: int,
          limit: int) -> tuple[torch.Tensor, ...]:
    """Sample positions of one RoI along one axis, (pooled, grid) each: the low and high
    pixel indices, their weights (1 - frac, frac), and whether the sample is inside
    [-1, limit]."""
    dtype = start.dtype
    p = torch.arange(pooled, dtype=dtype)[:, None]
    i = torch.arange(grid, dtype=dtype)[None, :]
    pos = start + p * bin_size + (i + 0.5) * bin_size / grid
    inside = (pos >= -1.0) & (pos <= limit)
    pos = pos.clamp(min=0)
    low = pos.to(torch.int64)
    top = low >= limit - 1
    low = torch.where(top, limit - 1, low)
    high = torch.where(top, limit - 1, low + 1)
    pos = torch.where(top, low.to(dtype), pos)
    frac = pos - low
    return low, high, 1.0 - frac, frac, inside


def roi_align(input: torch.Tensor, rois: torch.Tensor, spatial_scale: float,
              pooled_height: int, pooled_width: int, sampling_ratio: int,
              aligned: bool) -> torch.Tensor:
    """Average of bilinear samples over each bin of each RoI: (K, C, pooled_height,
    pooled_width) for ``rois`` (K, 5) = (batch index, x1, y1, x2, y2) in image coordinates
    (scaled by ``spatial_scale``; shifted by -0.5 when ``aligned``; at least 1x1 when not).
    ``sampling_ratio`` > 0 samples that many points per bin along each axis, otherwise
    ``ceil(roi size / pooled size)``; a sample outside [-1, size] counts as zero."""
    torch._check(rois.dim() == 2 and rois.size(1) == 5, lambda: "rois must be (K, 5)")
    torch._check(input.dim() == 4, lambda: "input must be (N, C, H, W)")
    torch._check(input.dtype == rois.dtype, lambda: "input and rois must have the same dtype")
    k, c = rois.size(0), input.size(1)
    height, width = input.size(2), input.size(3)
    out = input.new_zeros((k, c, pooled_height, pooled_width))
    dtype = input.dtype
    scale = torch.tensor(spatial_scale, dtype=dtype)
    offset = torch.tensor(0.5 if aligned else 0.0, dtype=dtype)
    for r in range(k):
        roi = rois[r]
        batch = int(roi[0])
        start_w, start_h = roi[1] * scale - offset, roi[2] * scale - offset
        roi_w, roi_h = roi[3] * scale - offset - start_w, roi[4] * scale - offset - start_h
        if not aligned:
            roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
        bin_h, bin_w = roi_h / pooled_height, roi_w / pooled_width
        grid_h = sampling_ratio if sampling_ratio > 0 else int(torch.ceil(roi_h / pooled_height))
        grid_w = sampling_ratio if sampling_ratio > 0 else int(torch.ceil(roi_w / pooled_width))
        count = max(grid_h * grid_w, 1)
        yl, yh, wyl, wyh, iny = _axis(start_h, bin_h, pooled_height, grid_h, height)
        xl, xh, wxl, wxh, inx = _axis(start_w, bin_w, pooled_width, grid_w, width)
        keep = (iny[:, :, None, None] & inx[None, None, :, :]).to(dtype)  # (PH, IY, PW, IX)
        feat = input[batch]

        def corner(ys: torch.Tensor, xs: torch.Tensor, wy: torch.Tensor,
                   wx: torch.Tensor) -> torch.Tensor:
            v = feat[:, ys[:, :, None, None], xs[None, None, :, :]]   # (C, PH, IY, PW, IX)
            return wy[:, :, None, None] * wx[None, None, :, :] * v

        val = (corner(yl, xl, wyl, wxl) + corner(yl, xh, wyl, wxh)
               + corner(yh, xl, wyh, wxl) + corner(yh, xh, wyh, wxh)) * keep
        out[r] = val.sum(dim=(2, 4)) / count
    return out


def _roi_align_fake(input: torch.Tensor, rois: torch.Tensor, spatial_scale: float,
                    pooled_height: int, pooled_width: int, sampling_ratio: int,
                    aligned: bool) -> torch.Tensor:
    torch._check(rois.size(1) == 5, lambda: "rois must have shape as Tensor[K, 5]")
    return input.new_empty((rois.size(0), input.size(1), pooled_height, pooled_width))


def install() -> bool:
    """Register the CPU kernels where torchvision has none; True when ``nms`` and
    ``roi_align`` run on CPU afterwards (False when torchvision does not import)."""
    try:
        import torchvision.extension
        # the module (``torchvision.ops.roi_align`` the attribute is the function)
        tv_roi_align = importlib.import_module("torchvision.ops.roi_align")
    except Exception:  # noqa: BLE001 - any import failure means: no torchvision here
        return False
    if torchvision.extension._has_ops():
        return True
    if not _LIB:
        frag = torch.library.Library("torchvision", "FRAGMENT")
        if not hasattr(torch.ops.torchvision, "roi_align"):
            frag.define(_ROI_ALIGN)
        frag.impl("nms", nms, "CPU")
        frag.impl("roi_align", roi_align, "CPU")
        _LIB.append(frag)
        torch.library.register_fake("torchvision::roi_align", _roi_align_fake, lib=frag)

    def has_ops() -> bool:
        return True

    # torchvision's wrappers ask this before calling the operators
    torchvision.extension._has_ops = has_ops
    tv_roi_align._has_ops = has_ops
    return True
