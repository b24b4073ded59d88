"""torch.distributed's in-place collectives (``dist.all_reduce(t)``, ``all_gather``,
``all_gather_into_tensor``, ``reduce_scatter_tensor``, ``all_to_all_single``), traced as
torch.export records them: the functional collective (``_c10d_functional.*``), its
``wait_tensor``, and a ``copy_`` into the output; the same rewrite dynamo makes
(``traceable_collective_remaps``), through torch's own ``*_inplace`` functions.  An
``async_op=True`` call returns a Work handle no graph can hold: refused with the fix."""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable

import torch

from safetrace.errors import collective_async
from safetrace.trace.registry import handles
from safetrace.trace.source import short, stack_trace
from safetrace.trace.recorder import Recorder

_REMAPS: list[tuple[str, str]] = [  # torch.distributed's function -> funcol's in-place one
    ("all_reduce", "all_reduce_inplace"),
    ("all_gather", "all_gather_inplace"),
    ("all_gather_into_tensor", "all_gather_tensor_inplace"),
    ("all_gather_single", "all_gather_tensor_inplace"),  # (the newer names, which the
    ("reduce_scatter_tensor", "reduce_scatter_tensor_inplace"),  # older ones call)
    ("reduce_scatter_single", "reduce_scatter_tensor_inplace"),
    ("all_to_all_single", "all_to_all_inplace"),
]


FUNCOL = "torch.distributed._functional_collectives"
# (whether torch was built with torch.distributed: read once, it cannot change)
_DISTRIBUTED = torch.distributed.is_available()


def load_when_grouped() -> None:
    """Import torch's functional collectives before an export once a process group exists
    (``ExportSession`` calls this on entry).  They are imported here, not at import time:
    the module costs ~40 ms to import and serves only programs that call collectives, and
    no collective runs (in eager or in an export) without an initialized process group.
    Importing it before the session builds its table lets ``trace/shims.py`` wait on the
    results of funcol's calls as torch.export does."""
    if FUNCOL not in sys.modules and _DISTRIBUTED and torch.distributed.is_initialized():
        from torch.distributed import _functional_collectives  # noqa: F401 - see above


def _remap(legacy: Callable[..., Any], inplace_name: str) -> Callable:
    parts: list = []  # (inplace function, its accepted names, legacy signature, ReduceOp
    # names): made at the first call, from funcol, imported by then (load_when_grouped)

    def handler(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
        if not parts:
            import torch.distributed._functional_collectives as funcol  # (see above)

            inplace = getattr(funcol, inplace_name)
            parts[:] = [inplace, set(inspect.signature(inplace).parameters),
                        inspect.signature(legacy), funcol.REDUCE_OP_TO_STR]
        inplace, accepted, signature, ops = parts
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        given = dict(bound.arguments)
        if given.get("async_op"):
            raise collective_async(f"torch.distributed.{legacy.__name__}",
                                   short(stack_trace(3)))
        if "op" in given:  # a ReduceOp: funcol takes its name
            given["op"] = ops.get(given["op"], given["op"])
        with tr:
            inplace(**{k: v for k, v in given.items() if k in accepted})
        return None

    return handler


def _register() -> None:
    if not torch.distributed.is_available():
        return
    for legacy_name, inplace_name in _REMAPS:
        legacy = getattr(torch.distributed, legacy_name, None)
        if legacy is not None:  # (funcol has each in-place function in torch 2.13)
            handles(legacy)(_remap(legacy, inplace_name))


_register()
