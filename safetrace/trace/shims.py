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

import sys
from typing import Any, Callable

import torch

from safetrace.trace.current import exporting


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


def _wait_now(tensor: torch.Tensor) -> torch.Tensor:
    """torch's functional collectives wrap a result in an AsyncCollectiveTensor (a tensor
    subclass that waits on first use) unless dynamo or a fake mode is tracing (a check
    bound at import, which the export's is_compiling() cannot reach); a traced program
    waits right away, as torch.export's does: ``_c10d_functional.wait_tensor`` now."""
    return torch.ops._c10d_functional.wait_tensor(tensor)


# (module, attribute, replacement)
SHIMS: list[tuple[str, str, Callable[..., Any]]] = [
    ("torchvision.ops.boxes", "_batched_nms_coordinate_trick", _batched_nms_coordinate_trick),
    ("torch.distributed._functional_collectives", "_maybe_wrap_tensor", _wait_now),
]


def _gated(replacement: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return (replacement if exporting() else original)(*args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(original, "__name__", "shim")
    call.__doc__ = replacement.__doc__
    return call


_GATED: dict[tuple[str, str], tuple[Any, Callable[..., Any]]] = {}


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
        out.append((module, attr, hit[1]))
    return out
