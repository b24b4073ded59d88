"""The example inputs a converted program carries (``interop/torch_export.py``): each on
its placeholder's device, and the user's own as a draft export's ``real_tensor``."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree

from safetrace.interop.modes import outside_modes


def on_device(stand_in: torch.Tensor, val: Any) -> torch.Tensor:
    """`stand_in` on `val`'s device; for a device this build cannot hold data on (fake
    inputs given a CUDA ``fake_device`` on a CPU build) a fake tensor of `val`'s mode."""
    kind = val.device.type
    module = getattr(torch, kind, None)
    available = kind in ("cpu", "meta") or getattr(module, "is_available", lambda: True)()
    mode = getattr(val, "fake_mode", None)
    if available or mode is None:
        return stand_in.to(val.device)
    with mode:
        return torch.zeros(stand_in.shape, dtype=stand_in.dtype, device=val.device)


def real_example(val: Any, ep: Any, leaf: int) -> None:
    """The example input `leaf` as fake `val`'s ``real_tensor``, as torch's placeholders
    carry theirs under ``fake_tensor_propagate_real_tensors`` (its ``run_decompositions``
    then infers a custom op's missing fake kernel from a run of the real one)."""
    leaves = _pytree.tree_leaves(ep.example_inputs or ((), {}))
    if len(leaves) == len(ep.contract.inputs) and isinstance(leaves[leaf], torch.Tensor) \
            and isinstance(val, torch.Tensor) and val.dim() == leaves[leaf].dim():
        with outside_modes():  # (a copy of the user's tensor, not a fake one)
            val.real_tensor = leaves[leaf].detach().clone()
