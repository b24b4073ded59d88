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

import operator
from typing import Any

import torch

from safetrace.errors.load import bad_file, recorded_dtype
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


@run_time_check
def check_list(node: str, target: str, value: Any, records: tuple) -> None:
    """Run time: refuse the call where ``value`` (a custom op's ``List[Tensor]``) is not a
    list of ``len(records)`` tensors of each record's (dtype, rank), the file's record:
    what takes an element of it (``getitem``, held to that length at load) and what reads
    the program's metadata believe it."""
    if active_tracer() is not None:
        return
    if isinstance(value, (list, tuple)) and len(value) == len(records) and all(
            isinstance(v, torch.Tensor) and v.dtype == d and v.dim() == r
            for v, (d, r) in zip(value, records)):
        return
    raise recorded_dtype(node, target, _show_list(value), _show_list(records))


def _show_list(v: Any) -> str:
    if not isinstance(v, (list, tuple)):
        return f"a {type(v).__name__}"
    shown = [_show(x.dtype, x.dim()) if isinstance(x, torch.Tensor) else
             _show(*x) if isinstance(x, tuple) else f"a {type(x).__name__}" for x in v[:4]]
    return f"a list of {len(v)} ({', '.join(shown)}{', ...' if len(v) > 4 else ''})"


def list_length(node: torch.fx.Node) -> int | None:
    """How many values ``node`` returns where a ``getitem`` may take one: an operator's
    fixed number of results, or for one returning a list of tensors (a custom op's
    ``List[Tensor]``, ``split``), the length the file records (held to the loader's
    evaluation, or checked at call by ``check_list``; an ATen op's without a record: None,
    its rule gives it); None for other nodes (a control-flow node's: ``subgraphs.attach``)."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return None
    returns = node.target._schema.returns
    if len(returns) != 1:
        return len(returns)
    if not isinstance(returns[0].type, torch.ListType):
        return None
    rec = node.meta.get("val")
    if not isinstance(rec, (list, tuple)):
        if node.target.namespace == "aten":  # (its rule gives the length where the loader
            return None  # evaluates it: ``memory.StaticMemory._node`` holds the index)
        raise bad_file(f"node {node.name!r}", f"{node.target} returns a list of tensors, but "
                       "the file records no list for it (so no length the values taken "
                       "from it are held to)", _FIX)
    return len(rec)


def indices(graphs: list) -> None:
    """Refuse a ``getitem`` whose index is past the values its operand returns (a custom
    op's recorded 2-element list taken at 2: Python's IndexError at every call)."""
    for g in graphs:
        for node in g.nodes:
            if node.op != "call_function" or node.target is not operator.getitem or \
                    len(node.args) != 2 or not isinstance(node.args[0], torch.fx.Node) or \
                    type(node.args[1]) is not int:
                continue
            n = list_length(node.args[0])
            if n is not None and not -n <= node.args[1] < n:
                raise bad_file(f"node {node.name!r}", f"takes value {node.args[1]} of "
                               f"{node.args[0].name!r}, which the file records with {n}", _FIX)


_FIX = "the file was modified or written by another version of safetrace; re-export the " \
       "program and save it again (st.save(st.export(model, args, ...), path))"


def _show(dtype: torch.dtype, rank: int) -> str:
    return f"a {str(dtype).removeprefix('torch.')} tensor of {rank} dim{'s' * (rank != 1)}"


def guard(graphs: list, wanted: list) -> None:
    """Insert ``check`` right after the node of each (node, dtype, rank) of ``wanted`` (once
    per node: a shared subgraph's evaluations name it once each), before its sizes are
    read (``requirements.guard``'s checks of them, its users); the checks a graph holds
    (a loaded program's, traced again) are dropped first."""
    for g in graphs:
        for node in list(g.nodes):
            if node.op == "call_function" and node.target in (check, check_list) and \
                    not node.users:
                g.erase_node(node)
    done: set = set()
    for node, dtype, rank in wanted:
        if node in done:
            continue
        done.add(node)
        # (rank None: a list's record, ``dtype`` the (dtype, rank) of each element)
        fn, more = (check, (dtype, rank)) if rank is not None else (check_list, (dtype,))
        with node.graph.inserting_after(node):
            made = node.graph.call_function(fn, (node.name, str(node.target)[:100], node,
                                                 *more))
        made.meta["val"] = None
        made.meta["stack_trace"] = node.meta.get("stack_trace", "")


__all__ = ["check", "check_list", "guard", "indices", "list_length"]
