"""torch's Python-level entry points (``F.relu``, ``F.layer_norm``, ``F.batch_norm``,
``Tensor.split``) reach the tracer by one call instead of torch's general dispatch.

Those functions are written in Python: under a TorchFunctionMode they call their module's
``handle_torch_function(public_api, relevant_args, *args, **kwargs)``, which finds the
tensor-like arguments' types, pops the mode through a generator context manager, calls the
mode's ``__torch_function__(public_api, types, args, kwargs)`` and pushes it back: ~19k
instructions per call against ~3k for the same call made from C (measured on trace_mlp's
``F.relu``, docs/benchmarks.md).  While an export runs, the session installs in each such
module (``patches``) a version that does the same in one step where this thread's torch
function mode stack holds exactly one mode and that mode is an export's tracer (which reads
neither ``types`` nor anything torch computes for them, and never returns NotImplemented);
anywhere else (another thread, a mode of the user's pushed above or below the tracer,
torch function disabled) it is the module's own function, called as it would have been.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch

_LEN = torch._C._len_torch_function_stack
_AT = torch._C._get_function_stack_at
_POP = torch._C._pop_torch_function_stack
_PUSH = torch._C._push_on_torch_function_stack
_ENABLED = torch._C._is_torch_function_mode_enabled
_NO_TYPES: tuple = ()

# the classes whose modes take the one-step call (tracer.py adds its Tracer)
TRACERS: set[Any] = set()

# the modules whose Python functions call their own handle_torch_function global
_MODULES = ("torch.nn.functional", "torch._tensor", "torch.functional")
_ATTR = "handle_torch_function"
# what `patches` reads that may change: (module name, attribute) (trace/session.py)
WATCHED = tuple((name, _ATTR) for name in _MODULES)


def _direct(original: Callable[..., Any]) -> Callable[..., Any]:
    """`original` (a module's handle_torch_function), with the tracer called directly."""

    def handle_torch_function(public_api: Callable[..., Any], relevant_args: Any,
                              *args: Any, **kwargs: Any) -> Any:
        if _LEN() == 1 and _ENABLED():
            mode: Any = _AT(0)
            if mode.__class__ in TRACERS:
                _POP()  # (as torch's _pop_mode_temporarily: the mode's own calls inside
                try:    # reach no mode)
                    result = mode.__torch_function__(public_api, _NO_TYPES, args, kwargs)
                finally:
                    _PUSH(mode)
                if result is NotImplemented:  # (never, see the docstring: torch would go
                    # on to the arguments' own overrides, which this path cannot replay)
                    raise RuntimeError(f"safetrace's tracer returned NotImplemented for "
                                       f"{getattr(public_api, '__name__', public_api)}")
                return result
        return original(public_api, relevant_args, *args, **kwargs)

    handle_torch_function.__doc__ = original.__doc__
    handle_torch_function.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_torch_function


# module name -> (its own handle_torch_function, the direct version of it)
_MADE: dict[str, tuple[Any, Callable[..., Any]]] = {}


def patches() -> list[tuple[Any, str, Any]]:
    """``(module, "handle_torch_function", direct version)`` for each module of `_MODULES`
    already imported (installed by the export session, restored after it; read while
    another session holds it installed, the same row)."""
    out = []
    for name in _MODULES:
        module = sys.modules.get(name)
        original = getattr(module, _ATTR, None) if module is not None else None
        if original is None:
            continue
        hit = _MADE.get(name)
        if hit is None or hit[0] is not original and original is not hit[1]:
            hit = _MADE[name] = (original, _direct(original))
        out.append((module, _ATTR, hit[1]))
    return out
