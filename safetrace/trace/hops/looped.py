"""``st.map``: a per-item step over dim 0 that is a Python loop when run and one ``map``
node when exported.

torch's own ``torch._higher_order_ops.map`` compiles its body with torch.compile when
called eagerly (a detector's body, which writes a cache attribute, refuses that) and, with
grad enabled, first traces the body for autograd (a size computed from data in the body
stops that).  A model that calls ``st.map`` instead runs the body on each item as plain
Python, autograd recording as through any eager code, and needs no
``torch.compiler.is_exporting()`` branch: inside ``st.export`` the call is traced into one
``map_impl`` node (the mapped size stays symbolic), under torch.export or torch.compile it
is torch's ``map``.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace import errors, pytree
from safetrace.trace.current import active_tracer
from safetrace.trace.hops import routing
from safetrace.trace.source import short, stack_trace

__all__ = ["map"]


def map(f: Callable, xs: Any, *args: Any) -> Any:  # noqa: A001 - torch's name
    """``f(x, *args)`` for each slice ``x`` of ``xs`` along dim 0 (``xs``: a tensor or a
    container of tensors of one length), each output stacked on a new dim 0: torch's
    ``map(f, xs, *args)``.  Eagerly a Python loop; inside ``st.export`` one map node."""
    tr = active_tracer()
    if tr is not None and tr.recording or torch.compiler.is_compiling() or \
            torch.compiler.is_exporting():
        # st.export: one map node; torch.export, torch.compile: torch's own map
        return routing.map(f, xs, *args)
    leaves, spec = pytree.tree_flatten(xs)
    if not leaves or not all(isinstance(t, torch.Tensor) and t.dim() >= 1 for t in leaves):
        raise errors.nothing_to_map(short(stack_trace(2)))
    n = leaves[0].shape[0]
    if any(t.shape[0] != n for t in leaves):
        where = short(stack_trace(2))
        odd = next(t for t in leaves if t.shape[0] != n)
        raise errors.xs_lengths("map", where, 0, _shape(leaves[0]), _shape(odd))
    if n == 0:
        raise errors.xs_empty("map", short(stack_trace(2)), 0)
    columns = [t.unbind(0) for t in leaves]
    results = [f(pytree.tree_unflatten([c[i] for c in columns], spec), *args)
               for i in range(n)]
    flat = [pytree.tree_flatten(r) for r in results]
    out_spec = flat[0][1]
    return pytree.tree_unflatten([torch.stack(column) for column in zip(*(v for v, _ in flat))],
                                 out_spec)


def _shape(t: torch.Tensor) -> str:
    return f"Tensor{list(t.shape)}"
