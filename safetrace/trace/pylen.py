"""``len(t)`` of a traced tensor keeps its first size symbolic.

CPython's builtin ``len`` turns whatever ``__len__`` returns into a Python int, which pins
a dynamic size to its example value (a guard) and cannot answer at all for a size computed
from data (``num_rois = len(rois)`` in torchvision's RoI pooler, after a score filter).  While
a program is traced, ``builtins.len`` is replaced by a function that returns the first size
of a traced tensor as it is (an int, or a symbolic int the graph computes) and calls the
original for everything else; it is restored on exit.
"""

from __future__ import annotations

import builtins
from typing import Any

from safetrace.trace.proxy import Proxy

_LEN = builtins.len


def _len(obj: Any) -> Any:
    if type(obj) is Proxy or isinstance(obj, Proxy):
        shape = obj.st_meta.shape
        if shape:
            return shape[0]
    return _LEN(obj)


_len.__name__ = _len.__qualname__ = "len"
_len.__doc__ = _LEN.__doc__


def enter() -> Any:
    """Install the symbolic len; returns what to hand to ``leave``."""
    saved = builtins.len
    builtins.len = _len
    return saved


def leave(saved: Any) -> None:
    builtins.len = saved
