"""torch's Python-level helpers that run no torch function, seen while exporting:
``torch.broadcast_shapes`` and the random generator's state functions.

``torch.broadcast_shapes`` never reaches the tracer's mode and asks ``size == 1`` of every
size it meets: a needless guard (``n != 1``) where the other size is a static 1.  While
exporting it answers from the broadcasting rule of pointwise ops.

The generator's state functions cannot be followed by a graph:
``torch.manual_seed(torch.initial_seed())`` in forward leaves the seed as it was, and yet
eager repeats its random numbers on every call; a seed read would become a constant of the
graph.  While exporting they raise, naming the line.  Both are restored on every exit.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch

from safetrace.errors import rng_state_call
from safetrace.rules.common import broadcast_shapes as broadcast_rule
from safetrace.trace.proxy import shape_value
from safetrace.trace.source import short, stack_trace

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

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


_RNG = ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state")
_PATCHES = ((torch, "broadcast_shapes", traced_broadcast_shapes),
            (torch.functional, "broadcast_shapes", traced_broadcast_shapes)) + tuple(
    (owner, name, _refuse_rng(name)) for name in _RNG for owner in (torch, torch.random))


@contextlib.contextmanager
def torch_helpers_routed() -> Iterator[None]:
    """Install the exporting versions; the originals come back on every exit."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in _PATCHES]
    for owner, name, routed in _PATCHES:
        setattr(owner, name, routed)
    try:
        yield
    finally:
        for owner, name, real in saved:
            setattr(owner, name, real)
