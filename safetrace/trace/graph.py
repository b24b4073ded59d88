"""Adding nodes to a torch.fx Graph cheaply.

``Graph.create_node`` walks every argument with the general pytree library to warn about
raw torch SymInts (~15 µs per node: as much as the rest of tracing an op).  safetrace
never passes raw symbolic values (they become nodes first), so where the Graph has the
usual internals the node is created and inserted directly; otherwise ``create_node``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Graph, Node

FAST_NODES = all(hasattr(Graph(), a) for a in ("_insert", "_graph_namespace", "_len",
                                          "_owning_module", "_find_nodes_lookup_table")) \
    and isinstance(getattr(Graph()._find_nodes_lookup_table, "table", None), dict) and \
    isinstance(getattr(Graph()._graph_namespace, "_obj_to_name", None), dict)


def add_node(graph: Graph, target: Any, args: tuple, kwargs: dict, name: str,
             op: str = "call_function") -> Node:
    """Append a call_function (or placeholder) node at the graph's insert point."""
    if not FAST_NODES or graph._owning_module is not None:
        return graph.create_node(op, target, args, kwargs, name=name)
    ns = graph._graph_namespace
    unique = ns.create_name(name, None)
    n = Node(graph, unique, op, target, args, kwargs or {})
    ns._obj_to_name[n] = unique  # (associate_name_with_obj of a new node)
    graph._insert(n)
    # (the find_nodes table's insert: keyed by op, and target for call_function)
    graph._find_nodes_lookup_table.table[
        (op, target if op == "call_function" else None)][n] = None
    graph._len += 1
    return n


def add_placeholder(graph: Graph, name: str) -> Node:
    """Append a placeholder (a graph input) named after `name`, as Graph.placeholder does."""
    if not FAST_NODES:
        return graph.placeholder(name)
    base = _PLACEHOLDER_BASES.get(name)
    if base is None:
        if len(_PLACEHOLDER_BASES) > 100_000:
            _PLACEHOLDER_BASES.clear()
        base = _PLACEHOLDER_BASES[name] = graph._target_to_str(name)
    return add_node(graph, name, (), {}, base, op="placeholder")


_PLACEHOLDER_BASES: dict[str, str] = {}  # placeholder target -> fx's base name for it


def _selfcheck() -> bool:
    """The fast path builds the same graph as create_node (checked once at import)."""
    global FAST_NODES
    if not FAST_NODES:
        return False
    try:
        g = Graph()
        x = g.placeholder("x")
        a = add_node(g, torch.ops.aten.relu.default, (x,), {}, "relu")
        b = add_node(g, torch.ops.aten.relu.default, (a,), {}, "relu")
        g.output((b,))
        ok = [n.name for n in g.nodes] == ["x", "relu", "relu_1", "output"] and \
            list(a.users) == [b] and len(g.nodes) == 4 and \
            g.find_nodes(op="call_function", target=torch.ops.aten.relu.default) == [a, b] \
            and g.find_nodes(op="placeholder") == [x] and \
            g._graph_namespace.create_name("relu", None) == "relu_2"
        g.lint()
    except Exception:
        ok = False
    FAST_NODES = ok
    return ok


_selfcheck()
