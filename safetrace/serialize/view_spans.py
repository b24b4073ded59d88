"""A strided view a loaded graph makes stays within the memory of the tensor it views.

``as_strided(x, size, stride, offset)`` takes its offset into ``x``'s storage, not into
``x``: on a tensor the caller sliced from a larger one (``batch[i]``, ``buf[4:8]``) it
views the caller's memory around it, which the caller never gave the program; a write
through that view (``add_``) changes it.  Torch checks the view against the storage only.
The loader puts a check before each such node (``guard``): at call, the view's elements
must lie within the tensor's own (its lowest to its highest element, with no gaps between
its elements there), else a ``RuntimeAssertionError`` names the node before it runs.  The
checks are made by each load and never saved (``saving.py``).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors.load import view_outside
from safetrace.trace.current import active_tracer
from safetrace.trace.graph import run_time_check

aten = torch.ops.aten
# the strided views whose offset is into the storage (as_strided_ itself is refused)
STRIDED = frozenset((aten.as_strided.default, aten.as_strided_copy.default))


def _span(offset: int, size: Any, stride: Any) -> tuple[int, int] | None:
    """The lowest and highest storage element a view reaches (None: no element)."""
    lo = hi = offset
    for n, st in zip(size, stride):
        if n == 0:
            return None
        lo += min(0, (n - 1) * st)
        hi += max(0, (n - 1) * st)
    return lo, hi


@run_time_check
def check(node: str, x: Any, size: Any, stride: Any, offset: Any = None) -> None:
    """Run time: refuse the view of ``node`` if it reaches outside ``x``'s elements."""
    if not isinstance(x, torch.Tensor) or active_tracer() is not None or x.is_meta:
        return  # (a loaded program's module traced by st.export: no memory to reach)
    try:
        size, stride = [int(n) for n in size], [int(s) for s in stride]
        view = _span(x.storage_offset() if offset is None else int(offset), size, stride)
    except (TypeError, ValueError):
        return  # arguments the kernel itself refuses: its own error, when it runs
    if view is None:
        return
    own = _span(x.storage_offset(), x.shape, x.stride())
    gaps = own is not None and own[1] - own[0] + 1 > x.numel()
    if own is None or gaps or view[0] < own[0] or view[1] > own[1]:
        raise view_outside(node, "aten.as_strided", view,
                           own[:2] + (gaps,) if own is not None else (0, -1, False))


def guard(graph: torch.fx.Graph) -> None:
    """Insert ``check`` before each strided view of ``graph`` (the checks a file holds
    are dropped first: the loader's own replace them)."""
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is check and not node.users:
            graph.erase_node(node)
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in STRIDED:
            continue
        given = {**dict(zip(("self", "size", "stride", "storage_offset"), node.args)),
                 **node.kwargs}
        with graph.inserting_before(node):
            guard_node = graph.call_function(check, (
                node.name, given.get("self"), given.get("size"), given.get("stride"),
                given.get("storage_offset")))
        guard_node.meta["val"] = None
        guard_node.meta["stack_trace"] = node.meta.get("stack_trace", "")


__all__ = ["STRIDED", "check", "guard"]
