"""The dtype a loaded graph's node has at each call, held to the file's record of it,
where the loader could not work it out at load.

The loader evaluates every node by safetrace's own rules and refuses a file whose
recorded value (shape, dtype) differs from what it computes (``recorded.py``).  A node it
cannot work out (a custom op over sizes that vary, a slice after a custom op's number,
what follows them, past the analysis' time) keeps the file's record, which what reads
the program's metadata believes (``print(ep)``, ``to_torch()``, decompositions): its sizes
are checked in its graph before its first use (``memory.StaticMemory._as_recorded``), and
its dtype and rank by ``check``, right after it (before its sizes are read), by
``guard``.  Made by each load, never saved
(``saving.py``).  A check that fails raises a ``RuntimeAssertionError`` naming the node.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors.load import recorded_dtype
from safetrace.trace.current import active_tracer
from safetrace.trace.graph import run_time_check


@run_time_check
def check(node: str, target: str, value: Any, dtype: torch.dtype, rank: int) -> None:
    """Run time: refuse the call where ``value`` (node ``node``'s result) is not a tensor
    of ``dtype`` and ``rank`` dims, the file's record (before its sizes are read)."""
    if active_tracer() is not None:
        return  # (a loaded program's module traced by st.export: its tracer checks)
    if isinstance(value, torch.Tensor) and value.dtype == dtype and value.dim() == rank:
        return
    got = _show(value.dtype, value.dim()) if isinstance(value, torch.Tensor) else \
        f"a {type(value).__name__}"
    raise recorded_dtype(node, target, got, _show(dtype, rank))


def _show(dtype: torch.dtype, rank: int) -> str:
    return f"a {str(dtype).removeprefix('torch.')} tensor of {rank} dim{'s' * (rank != 1)}"


def guard(graphs: list, wanted: list) -> None:
    """Insert ``check`` right after the node of each (node, dtype, rank) of ``wanted`` (once
    per node: a shared subgraph's evaluations name it once each), before its sizes are
    read (``requirements.guard``'s checks of them, its users); the checks a graph holds
    (a loaded program's, traced again) are dropped first."""
    for g in graphs:
        for node in list(g.nodes):
            if node.op == "call_function" and node.target is check and not node.users:
                g.erase_node(node)
    done: set = set()
    for node, dtype, rank in wanted:
        if node in done:
            continue
        done.add(node)
        with node.graph.inserting_after(node):
            made = node.graph.call_function(check, (node.name, str(node.target)[:100], node,
                                                    dtype, rank))
        made.meta["val"] = None
        made.meta["stack_trace"] = node.meta.get("stack_trace", "")


__all__ = ["check", "guard"]
