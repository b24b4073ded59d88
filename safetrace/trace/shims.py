"""Library functions replaced, while a program is traced, by versions without a branch on
data-dependent sizes that compute exactly the same result for every input.

A branch on a size computed from data (``if boxes.numel() == 0: return empty``) can only
be traced one way; data taking the other way is then refused at run time.  Where a
library's branch exists only to avoid an op that raises on empty input, a branch-free
spelling gives the same values on both sides, so the traced program handles that data too.
Each replacement says why it is equal.  A library is patched only if the traced code has
already imported it, only on the exporting thread, and everything is restored when the
export ends, also on errors.
"""

from __future__ import annotations

import math
import struct
import sys
from typing import Any, Callable

import torch

from safetrace.trace.current import exporting
from safetrace.trace.hops.routing import while_loop


def _batched_nms_coordinate_trick(boxes: torch.Tensor, scores: torch.Tensor,
                                  idxs: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision's per-class NMS by coordinate offsets, without its ``numel() == 0``
    early return.  The largest coordinate is taken over the boxes plus one element that
    never wins (-inf, or the dtype's minimum): the same value for any non-empty set (NaN
    included), and for no boxes a value that only multiplies empty tensors, so ``nms``
    returns the same empty int64 tensor as the early return."""
    lowest = float("-inf") if boxes.dtype.is_floating_point else torch.iinfo(boxes.dtype).min
    floor = torch.full((1,), lowest, dtype=boxes.dtype, device=boxes.device)
    max_coordinate = torch.cat([boxes.reshape(-1), floor]).max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    return torch.ops.torchvision.nms(boxes_for_nms, scores, iou_threshold)


def _infer_scale(feature: torch.Tensor, original_size: list[int]) -> float:
    """torchvision's ``2 ** round(log2(h_feature / h_image))`` (``poolers._infer_scale``:
    the power of two nearest to the ratio of heights, computed by float32 tensor ops whose
    result it reads back), without reading a tensor: the power ``2 ** k`` at the example,
    and guards keeping the ratio inside ``k``'s rounding interval narrowed by a relative
    1e-4 (0.00014 in log2; float32 rounding of the ratio and of ``log2`` moves it by less
    than 1e-5 for any ratio a float32 holds), where the original gives the same ``2 ** k``.
    An example too close to a rounding edge (or static sizes) is left to the original."""
    ratio = feature.shape[-2] / original_size[0]
    env = getattr(ratio, "env", None)
    if env is None:
        return _ORIGINALS["_infer_scale"](feature, original_size)
    at = struct.unpack("f", struct.pack("f", env.hint(ratio.expr)))[0]  # float32, as torch
    k = round(math.log2(at)) if at > 0 else None
    lo, hi = (2.0 ** (k - 0.5) * (1 + 1e-4), 2.0 ** (k + 0.5) * (1 - 1e-4)) if k is not None \
        else (1.0, 0.0)
    if not lo < at < hi:
        return _ORIGINALS["_infer_scale"](feature, original_size)
    if not (ratio > lo and ratio < hi):  # the guards (they hold at the example)
        raise AssertionError("unreachable: the guards hold at the example")
    return float(2 ** k)


def _bilinear_taps(dst: torch.Tensor, out_size: torch.Tensor, in_size: int) -> tuple:
    """The two source indices and weights of ``F.interpolate(..., mode="bilinear",
    align_corners=False)`` for destination indices `dst` of outputs `out_size` long, from
    an input `in_size` long: torch's CPU kernel's float32 arithmetic (scale ``in / out``,
    source ``scale * (dst + 0.5) - 0.5`` clamped at 0, the lower index at most
    ``in - 1``, the weight clamped to [0, 1])."""
    scale = torch.full_like(out_size, in_size, dtype=torch.float32) / out_size.float()
    src = (scale * (dst.float() + 0.5) - 0.5).clamp(min=0)
    low = src.floor().long().clamp(max=in_size - 1)
    high = low + (low < in_size - 1).long()
    w_high = (src - low.float()).clamp(0, 1)
    return low, high, 1 - w_high, w_high


def _paste_masks_in_image(masks: torch.Tensor, boxes: torch.Tensor, img_shape: Any,
                          padding: int = 1) -> torch.Tensor:
    """torchvision's ``paste_masks_in_image`` (Mask R-CNN's post-processing) without its
    Python loop over the detections, which resizes each mask to its box's size read from
    data (``int(box[2] - box[0] + 1)``: sizes no graph holds).  Every image pixel instead
    reads the bilinear interpolation of its box's mask at the pixel's offset in the box
    (``_bilinear_taps``: the interpolation's own indices and weights), and pixels outside
    the box's part of the image are 0: the loop's ``im_mask[y0:y1, x0:x1] = mask[...]``
    on a zero image.  That equality holds for boxes with ``x1 >= x0`` and ``y1 >= y0``
    (every box of the post-processing: clipped to the image, then widened about its
    centre); for any other box the loop's slices can disagree in length (eager raises),
    and the program refuses the data with a run-time check."""
    from torchvision.models.detection import roi_heads

    if masks.dtype != torch.float32:  # the weights below are float32, as for float32 masks
        return _ORIGINALS["paste_masks_in_image"](masks, boxes, img_shape, padding)
    masks, scale = roi_heads.expand_masks(masks, padding=padding)
    boxes = roi_heads.expand_boxes(boxes, scale).to(dtype=torch.int64)
    im_h, im_w = img_shape
    side = masks.shape[-1]
    grid = masks[:, 0]                                          # [N, side, side]
    b0, b1, b2, b3 = (c[:, None] for c in boxes.unbind(1))      # [N, 1] each
    x0, x1 = b0.clamp(min=0), (b2 + 1).clamp(max=im_w)
    y0, y1 = b1.clamp(min=0), (b3 + 1).clamp(max=im_h)
    torch._assert_async(((x1 >= x0) & (y1 >= y0)).all(),
                        "paste_masks_in_image: a box whose clipped extent is negative "
                        "(the traced program pastes only boxes with x1 >= x0, y1 >= y0)")
    ys = torch.arange(im_h, device=masks.device)[None]         # [1, H]
    xs = torch.arange(im_w, device=masks.device)[None]         # [1, W]
    rows_in = (ys >= y0) & (ys < y1)                           # [N, H]
    cols_in = (xs >= x0) & (xs < x1)                           # [N, W]
    h, w = (b3 - b1 + 1).clamp(min=1), (b2 - b0 + 1).clamp(min=1)
    r0, r1, wr0, wr1 = _bilinear_taps((ys - b1).clamp(min=0), h, side)
    c0, c1, wc0, wc1 = _bilinear_taps((xs - b0).clamp(min=0), w, side)
    n, height, width = grid.shape[0], ys.shape[1], xs.shape[1]

    def rows(index: torch.Tensor) -> torch.Tensor:             # [N, H, side]
        return grid.gather(1, index[:, :, None].expand(n, height, side))

    def cols(row: torch.Tensor, index: torch.Tensor) -> torch.Tensor:   # [N, H, W]
        return row.gather(2, index[:, None, :].expand(n, height, width))

    top, bottom = rows(r0), rows(r1)
    wc0, wc1 = wc0[:, None, :], wc1[:, None, :]
    upper = cols(top, c0) * wc0 + cols(top, c1) * wc1
    lower = cols(bottom, c0) * wc0 + cols(bottom, c1) * wc1
    value = upper * wr0[:, :, None] + lower * wr1[:, :, None]
    inside = rows_in[:, :, None] & cols_in[:, None, :]
    return torch.where(inside, value, torch.zeros((), dtype=value.dtype))[:, None]


def _heatmaps_to_keypoints(maps: torch.Tensor, rois: torch.Tensor) -> tuple:
    """torchvision's ``heatmaps_to_keypoints`` (Keypoint R-CNN's decoding) with its Python
    loop over the detections as a ``while_loop`` over them: the same per-box step, op for
    op (each box's heatmaps resized, bicubic, to ``ceil`` of its width and height read from
    data, the argmax of each, its coordinates and score), written into the box's row.  The
    sizes read from data live only inside one iteration (the resized heatmaps are as large
    as eager's, never all boxes' at once), and the number of iterations is the number of
    boxes at run time, so the values are eager's for every input."""
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    widths_ceil, heights_ceil = widths.ceil(), heights.ceil()
    count, keypoints = rois.shape[0], maps.shape[1]
    xy_preds = torch.zeros((count, 3, keypoints), dtype=torch.float32, device=maps.device)
    end_scores = torch.zeros((count, keypoints), dtype=torch.float32, device=maps.device)

    def more(i: torch.Tensor, xy: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return i < count

    def step(i: torch.Tensor, xy: torch.Tensor, scores: torch.Tensor) -> tuple:
        at = i.view(1)

        def row(t: torch.Tensor) -> torch.Tensor:     # t[i], i a tensor (no negative index)
            return t.index_select(0, at)[0]

        # eager's int(ceil(w).item()): whole floats >= 1 (NaN, inf: eager's int raises,
        # their conversion here is out of range and the checks refuse them at run time)
        roi_map_width = row(widths_ceil).long().item()
        roi_map_height = row(heights_ceil).long().item()
        torch._check(roi_map_width >= 1)
        torch._check(roi_map_height >= 1)
        width_correction = row(widths) / roi_map_width
        height_correction = row(heights) / roi_map_height
        roi_map = torch.nn.functional.interpolate(
            row(maps)[:, None], size=(roi_map_height, roi_map_width), mode="bicubic",
            align_corners=False)[:, 0]
        pos = roi_map.reshape(keypoints, -1).argmax(dim=1)
        x_int = pos % roi_map_width
        y_int = torch.div(pos - x_int, roi_map_width, rounding_mode="floor")
        x = (x_int.float() + 0.5) * width_correction
        y = (y_int.float() + 0.5) * height_correction
        box = row(rois)
        preds = torch.stack([x + box[0], y + box[1], torch.ones_like(x)]).to(xy.dtype)
        score = roi_map[torch.arange(keypoints, device=roi_map.device), y_int, x_int]
        return i + 1, xy.index_copy(0, at, preds[None]).contiguous(), \
            scores.index_copy(0, at, score.to(scores.dtype)[None]).contiguous()

    start = torch.zeros((), dtype=torch.int64, device=maps.device)
    _, xy_preds, end_scores = while_loop(more, step, (start, xy_preds, end_scores))
    return xy_preds.permute(0, 2, 1), end_scores


def _wait_now(tensor: torch.Tensor) -> torch.Tensor:
    """torch's functional collectives wrap a result in an AsyncCollectiveTensor (a tensor
    subclass that waits on first use) unless dynamo or a fake mode is tracing (a check
    bound at import, which the export's is_compiling() cannot reach); a traced program
    waits right away, as torch.export's does: ``_c10d_functional.wait_tensor`` now."""
    return torch.ops._c10d_functional.wait_tensor(tensor)


def _sdpa_decided_flags(query: Any, key: Any, value: Any, attn_mask: Any = None,
                       dropout_p: float = 0.0, is_causal: Any = False, scale: Any = None,
                       enable_gqa: Any = False) -> Any:
    """``scaled_dot_product_attention`` with a symbolic bool ``is_causal``/``enable_gqa``
    (transformers' ``is_causal = q_length > 1 and ...``: ``and`` returns its falsy operand,
    a SymBool on a symbolic size) decided first, as eager passes the bool it computes;
    torch's argument parser refuses a SymBool there.  The decision is the one the code
    already made (the same condition): no new guard."""
    if isinstance(is_causal, torch.SymBool):
        is_causal = bool(is_causal)
    if isinstance(enable_gqa, torch.SymBool):
        enable_gqa = bool(enable_gqa)
    return _ORIGINALS["scaled_dot_product_attention"](
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)


# (module, attribute, replacement)
SHIMS: list[tuple[str, str, Callable[..., Any]]] = [
    ("torchvision.ops.boxes", "_batched_nms_coordinate_trick", _batched_nms_coordinate_trick),
    ("torchvision.ops.poolers", "_infer_scale", _infer_scale),
    ("torchvision.models.detection.transform", "paste_masks_in_image", _paste_masks_in_image),
    ("torchvision.models.detection.roi_heads", "paste_masks_in_image", _paste_masks_in_image),
    ("torchvision.models.detection.roi_heads", "heatmaps_to_keypoints",
     _heatmaps_to_keypoints),
    ("torch.distributed._functional_collectives", "_maybe_wrap_tensor", _wait_now),
    ("torch.nn.functional", "scaled_dot_product_attention", _sdpa_decided_flags),
]
_ORIGINALS: dict[str, Callable[..., Any]] = {}


def _gated(replacement: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return (replacement if exporting() else original)(*args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(original, "__name__", "shim")
    call.__doc__ = replacement.__doc__
    return call


_GATED: dict[tuple[str, str], tuple[Any, Callable[..., Any]]] = {}


# what `patches` reads that may change: (module name, attribute) (trace/session.py)
WATCHED = tuple((module_name, attr) for module_name, attr, _ in SHIMS)


def patches() -> list[tuple[Any, str, Any]]:
    """``(module, attribute, replacement)`` for the libraries already imported: installed
    by the export session; the replacement is the library's own function on threads that
    are not exporting."""
    out = []
    for module_name, attr, replacement in SHIMS:
        module = sys.modules.get(module_name)
        original = getattr(module, attr, None) if module is not None else None
        if original is None:
            continue
        hit = _GATED.get((module_name, attr))
        if hit is None or hit[0] is not original and original is not hit[1]:
            hit = _GATED[(module_name, attr)] = (original, _gated(replacement, original))
        _ORIGINALS.setdefault(attr, hit[0])
        out.append((module, attr, hit[1]))
    return out
