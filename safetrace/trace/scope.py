"""Scopes: the graph being recorded and what belongs to it alone.

The tracer keeps a stack of scopes (``Tracer.scopes``; the top is ``Tracer.scope``): the
program's own graph at the bottom, and one scope per branch or loop body being traced
above it (``hops/subgraph.py`` pushes and pops them).  A scope holds its graph, its first
recorded op (where reads of input sizes go), the nodes already made for symbolic sizes,
the conditions already asserted in it, and what a ``print()`` in it does; recording an op
(``Scope.record``) adds its node to the scope's graph.
"""

from __future__ import annotations

from types import MethodType
from typing import Any, Callable

import torch.fx.traceback as fx_traceback
from torch.fx import Graph, Node

from safetrace.trace.graph import (FAST_NODES, INIT_NODE, NEW_NODE, NO_KWARGS, PREPEND,
                                   SPLITS, unique_name)


class Scope:
    """One graph being recorded (the program's, or a branch's or loop body's)."""

    __slots__ = ("graph", "first_op", "sym_nodes", "asserted", "print_refusal", "where",
                 "n_syms", "_ns", "_names", "_table", "_by_target")

    def __init__(self, graph: Graph, asserted: set | None = None,
                 print_refusal: Callable[[], Exception] | None = None,
                 where: str = "") -> None:
        self.graph = graph
        self.first_op: Node | None = None  # the first op recorded (input sizes read before)
        self.sym_nodes: dict[Any, Node] = {}  # id(size) / float symbol -> the node of it
        # conditions already asserted at this point (a branch starts with its parent's)
        self.asserted: set = set() if asserted is None else set(asserted)
        self.print_refusal = print_refusal  # the error for a print() here (None: allowed)
        self.where = where  # the branch's or body's source location ('' for the program)
        self.n_syms = 0  # how many symbols the environment held when the scope began
        # the graph's internals for adding a node directly (graph.py's fast path)
        fast = FAST_NODES and graph._owning_module is None
        self._ns: Any = graph._graph_namespace if fast else None
        self._names: Any = graph._graph_namespace._obj_to_name if fast else None
        self._table: Any = graph._find_nodes_lookup_table.table if fast else None
        # id(target) -> the find_nodes table's entry for it (an OpOverload hashes in
        # Python; the graph's nodes keep their targets, so the ids stay theirs)
        self._by_target: dict[int, dict] = {}

    def record(self, target: Any, args: tuple, kwargs: dict, name: str,
               stack_trace: str) -> Node:
        """A call_function node of `target` at the graph's insert point (the first op of
        the scope when none was yet)."""
        ns = self._ns
        if ns is None:
            node = self.graph.create_node("call_function", target, args, kwargs, name=name)
        else:  # (graph.add_node's fast path, inline: one Python call less per op)
            if name in SPLITS:  # (graph.unique_name, inline: the name's split is known)
                base, num, illegal = SPLITS[name]
                unique = name
                used, counts = ns._used_names, ns._base_count
                if num is None or unique in used:
                    num = counts[base] if base in counts else 0
                    if illegal:
                        num += 1
                        unique = f"{base}_{num}"
                else:
                    num = int(num)
                while unique in used:
                    num += 1
                    unique = f"{base}_{num}"
                used.add(unique)
                counts[base] = num
            else:
                unique = unique_name(ns, name)
            node = NEW_NODE(Node)  # (graph.py's add_node, inline)
            INIT_NODE(node, self.graph, unique, "call_function", target, None)
            node._update_args_kwargs(args, kwargs or NO_KWARGS)  # (graph.NO_KWARGS)
            self._names[node] = unique
            insert = self.graph._insert  # (read each time: inserting_before changes it)
            if insert.__class__ is MethodType and insert.__func__ is PREPEND:
                insert.__self__._prepend(node)
            else:
                insert(node)
            by_target = self._by_target
            key = id(target)
            if key not in by_target:  # (setdefault: an OpOverload hashes once, in Python)
                by_target[key] = self._table.setdefault(("call_function", target), {})
            by_target[key][node] = None
            self.graph._len += 1
        node.meta["stack_trace"] = stack_trace
        replayed = fx_traceback.current_meta
        if replayed:  # (empty unless annotated or replaying a graph: a dict's truth test)
            _keep_recorded(node.meta, replayed)
        if self.first_op is None:
            self.first_op = node
        return node


def _keep_recorded(meta: dict, replayed: dict) -> None:
    """What torch's fx metadata context holds for the op being recorded: the user's
    ``torch.fx.traceback.annotate({...})`` regions (``custom``), and while a GraphModule is
    replayed node by node (an exported program's module exported again), the replayed
    node's own ``stack_trace`` and ``nn_module_stack``, as torch.export keeps them."""
    custom = replayed.get("custom")
    if custom:
        meta["custom"] = dict(custom)
    trace = replayed.get("stack_trace")
    if trace:
        meta["stack_trace"] = trace
    stack = replayed.get("nn_module_stack")
    if stack:
        meta["nn_module_stack"] = dict(stack)
