"""torch's Python-level helpers that run no torch function, seen while exporting:
``torch.broadcast_shapes`` (and ``torch._C._infer_size`` where ``torch.nn.functional``
calls it, as torch 2.11's ``binary_cross_entropy`` does for its weight) and the random
generator's state functions.

``torch.broadcast_shapes`` never reaches the tracer's mode and asks ``size == 1`` of every
size it meets: a needless guard (``n != 1``) where the other size is a static 1.  While
exporting it answers from the broadcasting rule of pointwise ops.

The generator's state functions cannot be followed by a graph:
``torch.manual_seed(torch.initial_seed())`` in forward leaves the seed as it was, and yet
eager repeats its random numbers on every call; a seed read would become a constant of the
graph.  On an exporting thread they raise, naming the line; on every other thread they are
torch's own.  The export session installs them and restores the originals.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from safetrace.errors import rng_state_call
from safetrace.rules.common import broadcast_shapes as broadcast_rule
from safetrace.trace.current import exporting
from safetrace.trace.proxy import shape_value
from safetrace.trace.source import short, stack_trace
from safetrace.trace.torch_own import Originals

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


def _broadcast_shapes(*shapes: Any) -> Any:
    if exporting():
        return traced_broadcast_shapes(*shapes)
    return _REAL["broadcast_shapes"](*shapes)


def _infer_size(a: Any, b: Any) -> Any:
    """``torch._C._infer_size(a, b)``: the broadcast of two sizes (the C++ function takes
    only a torch.Size, not the symbolic sizes of a traced tensor)."""
    if exporting():
        return traced_broadcast_shapes(a, b)
    return _REAL_INFER_SIZE(a, b)


_REAL_INFER_SIZE = torch._C._infer_size


# seeding calls made by threads that are not exporting, while some thread exports: the
# export's own check that the generator was not seeded then cannot tell who did it
BYSTANDER_SEEDS = [0]
_MUTATORS = ("manual_seed", "seed", "set_rng_state")


def _refuse_rng(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        if exporting():
            raise rng_state_call(f"torch.{name}()", short(stack_trace(2)))
        if name in _MUTATORS:
            BYSTANDER_SEEDS[0] += 1
        return _REAL[name](*args, **kwargs)  # (known: installed only over torch's own)

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


_RNG = ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state")
# the module of torch that defines each (torch re-exports them; both are watched)
_DEFINED_IN = {"broadcast_shapes": "torch.functional", **{name: "torch.random" for name in _RNG}}
_REAL = Originals()  # torch's own function of each name (each replacement is installed
# only over torch's own: trace/torch_own.py)
_ROUTED_RNG = {name: _refuse_rng(name) for name in _RNG}
_learn = _REAL.learn

for _name in _DEFINED_IN:
    for _owner in (sys.modules[_DEFINED_IN[_name]], torch):
        if _learn(_name, getattr(_owner, _name, None)):
            break


# what `patches` reads that may change: (module name, attribute) (trace/session.py)
WATCHED = (("torch.nn.functional", "_infer_size"),
           *((owner, name) for name in _DEFINED_IN for owner in ("torch", _DEFINED_IN[name])))


def patches() -> list[tuple[Any, str, Any]]:
    """The exporting versions of torch.broadcast_shapes and the generator's state
    functions, for the export session to install (each is torch's own on threads that are
    not exporting)."""
    out: list[tuple[Any, str, Any]] = [
        (owner, "broadcast_shapes", _broadcast_shapes) for owner in (torch, torch.functional)
        if owner.broadcast_shapes is _broadcast_shapes or  # (installed by another export)
        _learn("broadcast_shapes", owner.broadcast_shapes)]  # (else the user's own: traced)
    functional = sys.modules["torch.nn.functional"]
    current = getattr(functional, "_infer_size", None)  # (gone in torch 2.13)
    if current is _REAL_INFER_SIZE or current is _infer_size:
        out.append((functional, "_infer_size", _infer_size))
    for name in _RNG:
        for owner in (sys.modules["torch"], sys.modules["torch.random"]):
            current = getattr(owner, name, None)
            # (routed already: another export installed it, and this one counts it too; a
            # function of another code is the user's own, traced as Python)
            if current is _ROUTED_RNG[name] or _learn(name, current):
                out.append((owner, name, _ROUTED_RNG[name]))
    return out
