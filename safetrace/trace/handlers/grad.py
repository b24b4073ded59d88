"""Grad-mode regions: ``with torch.no_grad():`` (``torch.enable_grad``,
``torch.set_grad_enabled``) inside the traced code.  Each change of grad mode is a node
of the graph, as in torch.export's pre-dispatch graph (``torch._C._set_grad_enabled``),
so gradients through the program are eager's: nothing computed inside a ``no_grad``
block gets one.  A restore (the block's exit) sets the mode the caller had when the
block began, read at run time (``torch.is_grad_enabled()``), not the export's: a program
called under ``torch.no_grad()`` stays without gradients after the block.  A mode the code
sets and never restores (``torch.set_grad_enabled(False)`` as a call) holds to the end
of the program, which then gives the caller's mode back, as torch.export's region does."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.trace.registry import handles
from safetrace.trace.source import stack_trace
from safetrace.trace.recorder import Recorder

_SET = torch._C._set_grad_enabled


def _node(tr: Recorder, fn: Any, args: tuple) -> torch.fx.Node:
    node = tr.scope.graph.call_function(fn, args)
    node.meta["stack_trace"] = stack_trace(3)
    node.meta["val"] = None
    return node


@handles(_SET)
def set_grad_enabled(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """Record the change (a restore when it returns to the mode before the innermost
    open change), then make it, so the rest of the trace sees the new mode."""
    mode = bool(args[0] if args else kwargs["mode"])
    before = torch.is_grad_enabled()
    opened = tr.grad_regions
    if opened and opened[-1][1] == mode:
        caller, _ = opened.pop()
        _node(tr, _SET, (caller,))
    else:
        caller = _node(tr, torch.is_grad_enabled, ())
        caller.meta["val"] = before
        _node(tr, _SET, (mode,))
        opened.append((caller, before))
    return func(*args, **kwargs)


def close_grad_regions(tr: Recorder) -> None:
    """At the program's end: restore the caller's grad mode over every change left open."""
    opened = tr.grad_regions
    while opened:
        caller, _ = opened.pop()
        _node(tr, _SET, (caller,))
