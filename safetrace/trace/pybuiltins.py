"""Python's ``min``, ``max`` and ``len`` of symbolic sizes, kept symbolic while tracing.

``max(0, a.size(1) - b.size(0))`` in user code would otherwise compare the two sizes (a
guard on the example's branch) and pin the result to one of them.  The builtins cannot be
overloaded by a class, so while tracing they are replaced by versions that build a Min/Max
expression (as ``torch.sym_min`` does; one of the arguments where the known facts
decide, still without a guard) when every argument is an
int or a symbolic int and one of them is symbolic.  Every other call (floats, keys,
defaults, strings, safetrace's own code) goes to the original builtin unchanged.
``len()`` must return an int; under tracing ``len(x)`` of a traced tensor is its symbolic
first size and ``len(x.chunk(2))`` the symbolic number of pieces (no guard).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
from typing import Any, Callable, Iterator

from safetrace.rules.common import decided_max, decided_min
from safetrace.symbolic import SymInt
from safetrace.trace.pieces import Pieces
from safetrace.trace.proxy import Proxy

_ORIGINAL = {"min": builtins.min, "max": builtins.max, "len": builtins.len}
_real_len = builtins.len  # this module's own len() calls must not go through the routed one
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _sizes(items: Any) -> list | None:
    """The items as a list when they are ints and symbolic ints with at least one symbolic
    (bools excluded: ``min(True, n)`` keeps Python's bool result)."""
    symbolic = False
    for v in items:
        c = v.__class__
        if c is int:
            continue
        if isinstance(v, SymInt):
            symbolic = True
        elif not isinstance(v, int) or isinstance(v, bool):
            return None
    return list(items) if symbolic else None


def _routed(name: str, combine: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    original = _ORIGINAL[name]

    def routed(*args: Any, **kwargs: Any) -> Any:
        if _real_len(args) == 1 and not isinstance(args[0], (list, tuple)):
            args = (list(args[0]),)  # a generator is consumed once: keep its items
        items = args[0] if _real_len(args) == 1 else args
        if "key" in kwargs or _real_len(kwargs) > ("default" in kwargs):
            return original(*args, **kwargs)
        sizes = _sizes(items) if items else None
        if sizes is None or sys._getframe(1).f_code.co_filename.startswith(_OWN_DIR):
            return original(*args, **kwargs)  # safetrace's own code keeps Python's min
        acc = sizes[0]
        for v in sizes[1:]:
            acc = combine(acc, v)
        return acc

    routed.__name__ = routed.__qualname__ = name
    routed.__doc__ = original.__doc__
    return routed


def _len(obj: Any) -> Any:
    if isinstance(obj, (Proxy, Pieces)) and \
            not sys._getframe(1).f_code.co_filename.startswith(_OWN_DIR):
        if isinstance(obj, Pieces):
            return obj.symbolic_len()
        if obj.st_meta.ndim:
            return obj.st_meta.shape[0]
    return _ORIGINAL["len"](obj)


_len.__name__ = _len.__qualname__ = "len"
_len.__doc__ = _ORIGINAL["len"].__doc__
_ROUTED = {"min": _routed("min", decided_min), "max": _routed("max", decided_max),
           "len": _len}


@contextlib.contextmanager
def symbolic_min_max() -> Iterator[None]:
    """While tracing, ``min``/``max`` of sizes build Min/Max expressions and ``len`` of a
    traced tensor or of pieces is a symbolic size (no guard); the builtins are restored on
    every exit."""
    saved = (builtins.min, builtins.max, builtins.len)
    builtins.min, builtins.max, builtins.len = _ROUTED["min"], _ROUTED["max"], _ROUTED["len"]
    try:
        yield
    finally:
        builtins.min, builtins.max, builtins.len = saved
