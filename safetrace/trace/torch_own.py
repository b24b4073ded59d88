"""torch's own function of a name, known by its code: a function named so whose ``def`` is
in torch's package.  Never by the attribute's value when a module of ours is first imported:
a user's replacement in place then would pass for torch's, be called as torch's on threads
that are not exporting, and be shadowed by ours while exporting (trace/pyhelpers.py,
trace/asserts.py, trace/vmapping.py install their replacements only over torch's own)."""

from __future__ import annotations

import os
from typing import Any

import torch

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def is_torch_own(name: str, fn: Any) -> bool:
    """Whether `fn` is torch's function ``name``: a ``def`` of that name in torch, or
    torch's decorator around one (``typing_extensions.deprecated`` wraps
    ``torch._check_is_size``)."""
    for _ in range(3):
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_name == name and code.co_filename.startswith(_TORCH_DIR):
            return True
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            return False
    return False


class Originals:
    """torch's own function of each name, noted when first seen in place."""

    def __init__(self) -> None:
        self.fns: dict[str, Any] = {}

    def learn(self, name: str, fn: Any) -> bool:
        """Note `fn` as torch's own ``name`` if it is; whether it is."""
        if fn is self.fns.get(name):
            return True
        if not is_torch_own(name, fn):
            return False
        self.fns[name] = fn
        return True

    def __getitem__(self, name: str) -> Any:
        return self.fns[name]
