"""Ops recorded inside a ``torch.autocast`` region.

Autocast changes an op's dtypes only where the op has a kernel for the device's autocast
dispatch key (``AutocastCPU``: mm, linear, conv, cat...); every other op falls through to
its ordinary kernel, as if no region were open.  A composite op (CompositeImplicitAutograd)
recorded as one node would hide the autocast kernels of the ops it is made of, so it
counts as changed too.  safetrace records ops as written: an op autocast changes is refused
(``errors.autocast_active``); the others are eager's exactly.
"""

from __future__ import annotations

from typing import Any

import torch

_KEYS = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA", "xpu": "AutocastXPU",
         "mps": "AutocastMPS", "hpu": "AutocastHPU", "xla": "AutocastXLA",
         "privateuseone": "AutocastPrivateUse1"}
_has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key


def _devices(args: tuple, kwargs: dict) -> set[str]:
    """The device types of the tensors among the op's arguments (a factory op: its
    ``device`` argument, else the CPU)."""
    found: set[str] = set()
    stack: list = [args, kwargs]
    while stack:
        a = stack.pop()
        if isinstance(a, (tuple, list)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
        else:
            meta = getattr(a, "st_meta", a)  # (a proxy's metadata, or the value itself)
            device = getattr(meta, "device", None)
            if isinstance(device, torch.device):
                found.add(device.type)
    if not found:
        device = kwargs.get("device")
        found.add(torch.device(device).type if device is not None else "cpu")
    return found


def autocast_changes(op: Any, args: tuple, kwargs: dict) -> bool:
    """Would an open autocast region change what `op` computes on these arguments?"""
    name = op.name() if hasattr(op, "name") else None
    if not isinstance(name, str):
        return True
    if _has_kernel(name, "CompositeImplicitAutograd"):
        return True
    for device in _devices(args, kwargs or {}):
        key = _KEYS.get(device)
        if key is None:
            return True
        if torch.is_autocast_enabled(device) and _has_kernel(name, key):
            return True
    return False
