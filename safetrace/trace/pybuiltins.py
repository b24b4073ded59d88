"""Python-level helpers that see traced sizes (``len(x)``, ``torch.broadcast_shapes``) or
reach the random generator's state (``torch.manual_seed``, ``torch.initial_seed``, ...).

CPython's ``len()`` turns whatever ``__len__`` returns into a plain int, so ``len(x)`` of a
tensor with a dynamic first dim would pin that size to the example's value (a guard), where
``x.shape[0]`` stays symbolic.  ``torch.broadcast_shapes`` runs no torch function (the mode
never sees it) and asks ``size == 1`` of every size it meets, a needless guard where the
other size is a static 1.  While a trace runs, both answer from the shape rules, as
torch.export's tracer does; ``len`` of anything but a traced tensor is the real ``len``.
Code that needs a real int (``range(len(x))``, ``[0] * len(x)``) converts the symbolic size
with ``__index__``, which guards exactly as before.

The generator's state functions run no torch function either; a graph cannot follow them
(``torch.manual_seed(torch.initial_seed())`` in forward leaves the seed as it was, and yet
eager repeats its random numbers on every call), so while a trace runs they raise.
"""

from __future__ import annotations

import builtins
from typing import Any

import torch

from safetrace.errors import rng_state_call
from safetrace.rules.common import broadcast_shapes as broadcast_rule
from safetrace.trace.proxy import Proxy, shape_value
from safetrace.trace.source import short, stack_trace

_real_len = builtins.len
_real_broadcast_shapes = torch.broadcast_shapes
_depth = [0]


def traced_len(obj: Any) -> Any:
    """``len(obj)``; a traced tensor's first size stays symbolic."""
    if isinstance(obj, Proxy):
        shape = obj.st_meta.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]
    return _real_len(obj)


def traced_broadcast_shapes(*shapes: Any) -> Any:
    """``torch.broadcast_shapes``: the broadcasting rule of pointwise ops (an int is a 1-d
    shape, as in torch)."""
    as_tuples = [(s,) if not isinstance(s, (tuple, list)) else tuple(s) for s in shapes]
    for shape in as_tuples:
        for size in shape:
            if isinstance(size, int) and size < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {size}: "
                                   f"{shape}")
    return shape_value(broadcast_rule(*as_tuples, op="torch.broadcast_shapes"))


def _refuse_rng(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise rng_state_call(f"torch.{name}()", short(stack_trace(2)))

    refuse.__name__ = name
    return refuse


_RNG = ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state")
_PATCHES = ((builtins, "len", _real_len, traced_len),
            (torch, "broadcast_shapes", _real_broadcast_shapes, traced_broadcast_shapes),
            (torch.functional, "broadcast_shapes", _real_broadcast_shapes,
             traced_broadcast_shapes)) + tuple(
    (owner, name, getattr(owner, name), _refuse_rng(name))
    for name in _RNG for owner in (torch, torch.random))


def enter() -> None:
    """Install the tracing helpers (nested traces share one installation)."""
    if _depth[0] == 0:
        for owner, name, _, traced in _PATCHES:
            setattr(owner, name, traced)
    _depth[0] += 1


def leave() -> None:
    """Restore the real helpers when the outermost trace ends."""
    _depth[0] -= 1
    if _depth[0] == 0:
        for owner, name, real, _ in _PATCHES:
            setattr(owner, name, real)
