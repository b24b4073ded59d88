"""Adding nodes to a torch.fx Graph cheaply.

``Graph.create_node`` walks every argument with the general pytree library to warn about
raw torch SymInts (~15 µs per node: as much as the rest of tracing an op).  safetrace
never passes raw symbolic values (they become nodes first), so where the Graph has the
usual internals the node is created and inserted directly; otherwise ``create_node``.
A node's unique name is made as fx's namespace makes it, with the split of a candidate
name into base and number (a regular expression, ~3 µs for a long parameter name) made
once per name.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Graph, Node
from torch.fx import graph as fx_graph

FAST_NODES = all(hasattr(Graph(), a) for a in ("_insert", "_graph_namespace", "_len",
                                          "_owning_module", "_find_nodes_lookup_table")) \
    and isinstance(getattr(fx_graph, "_illegal_names", None), dict) and \
    hasattr(getattr(fx_graph, "_name_regex", None), "match") \
    and isinstance(getattr(Graph()._find_nodes_lookup_table, "table", None), dict) and \
    isinstance(getattr(Graph()._graph_namespace, "_obj_to_name", None), dict)


def add_node(graph: Graph, target: Any, args: tuple, kwargs: dict, name: str,
             op: str = "call_function") -> Node:
    """Append a call_function (or placeholder) node at the graph's insert point."""
    if not FAST_NODES or graph._owning_module is not None:
        return graph.create_node(op, target, args, kwargs, name=name)
    ns = graph._graph_namespace
    unique = unique_name(ns, name)
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
_SPLITS: dict[str, tuple[str, str | None]] = {}  # candidate -> (base, number text or None)
_NAME_REGEX = getattr(fx_graph, "_name_regex", None)
_ILLEGAL = getattr(fx_graph, "_illegal_names", None)


def unique_name(ns: Any, candidate: str) -> str:
    """``ns.create_name(candidate, None)``, its base/number split of `candidate` cached."""
    split = _SPLITS.get(candidate)
    if split is None:
        match = _NAME_REGEX.match(candidate) if _NAME_REGEX is not None else None
        if match is None:  # (characters to replace: fx's own way)
            return ns.create_name(candidate, None)
        if len(_SPLITS) > 100_000:
            _SPLITS.clear()
        split = _SPLITS[candidate] = match.group(1, 2)
    base, num = split
    used = ns._used_names
    if num is None or candidate in used:
        num = ns._base_count.get(base, 0)
        if _ILLEGAL.get(candidate) is not None:  # a keyword or builtin's name
            num += 1
            candidate = f"{base}_{num}"
    else:
        num = int(num)
    while candidate in used:
        num += 1
        candidate = f"{base}_{num}"
    used.add(candidate)
    ns._base_count[base] = num
    return candidate


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
        # the names fx's namespace gives, for candidates of every kind
        mine, theirs = Graph()._graph_namespace, Graph()._graph_namespace
        for c in ("x", "x", "x_1", "x", "add_2", "add", "add", "add_2", "list", "list",
                  "for", "p_a_b_weight", "p_a_b_weight", "_1", "a__3", "a__3", "relu_10",
                  "relu", "relu_10"):
            ok = ok and unique_name(mine, c) == theirs.create_name(c, None)
    except Exception:
        ok = False
    FAST_NODES = ok
    return ok


_selfcheck()
