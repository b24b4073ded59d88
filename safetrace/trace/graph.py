"""Adding nodes to a torch.fx Graph cheaply.

``Graph.create_node`` walks every argument with the general pytree library to warn about
raw torch SymInts (~15 µs per node: as much as the rest of tracing an op).  safetrace
never passes raw symbolic values (they become nodes first), so where the Graph has the
usual internals the node is created and inserted directly; otherwise ``create_node``.
A node's unique name is made as fx's namespace makes it, with the split of a candidate
name into base and number (a regular expression, ~3 µs for a long parameter name) made
once per name.  The node itself is made by torch's C base class (``Node.__init__`` only
checks its arguments and calls it) and linked in by the C ``_prepend`` of the node the
graph inserts before (what ``Node.prepend`` calls): two Python calls less per node.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import Graph, Node
from torch.fx import graph as fx_graph
from torch.fx.immutable_collections import immutable_dict

_NODE_BASE = getattr(torch._C, "_NodeBase", None)
FAST_NODES = all(hasattr(Graph(), a) for a in ("_insert", "_graph_namespace", "_len",
                                          "_owning_module", "_find_nodes_lookup_table")) \
    and _NODE_BASE is not None and _NODE_BASE in Node.__mro__ and \
    hasattr(_NODE_BASE, "_prepend") and hasattr(_NODE_BASE, "_update_args_kwargs") \
    and isinstance(getattr(fx_graph, "_illegal_names", None), dict) and \
    hasattr(getattr(fx_graph, "_name_regex", None), "match") \
    and isinstance(getattr(Graph()._find_nodes_lookup_table, "table", None), dict) and \
    isinstance(getattr(Graph()._graph_namespace, "_obj_to_name", None), dict)


# ``n = NEW_NODE(Node); INIT_NODE(n, graph, name, op, target, None);
# n._update_args_kwargs(args, kwargs)`` is ``Node(graph, name, op, target, args, kwargs)``
# without its argument checks (scope.py's record does it inline too)
NEW_NODE = Node.__new__
INIT_NODE = _NODE_BASE.__init__ if _NODE_BASE is not None else None
PREPEND = Node.prepend  # (graph._insert is a node's prepend unless inserting_after)
# the kwargs of every node made here without any: fx's own ``_update_args_kwargs`` keeps an
# empty immutable_dict as given (it makes a new one from a plain ``{}``: ~0.9k instructions
# a node, a Python class called from C); immutable, so one is shared
NO_KWARGS = immutable_dict()


def add_node(graph: Graph, target: Any, args: tuple, kwargs: dict, name: str,
             op: str = "call_function") -> Node:
    """Append a call_function (or placeholder) node at the graph's insert point."""
    if not FAST_NODES or graph._owning_module is not None:
        return graph.create_node(op, target, args, kwargs, name=name)
    ns = graph._graph_namespace
    unique = unique_name(ns, name)
    n = NEW_NODE(Node)
    INIT_NODE(n, graph, unique, op, target, None)
    n._update_args_kwargs(args, kwargs or NO_KWARGS)
    ns._obj_to_name[n] = unique  # (associate_name_with_obj of a new node)
    insert = graph._insert
    if getattr(insert, "__func__", None) is PREPEND:
        insert.__self__._prepend(n)
    else:
        insert(n)
    # (the find_nodes table's insert: keyed by op, and target for call_function)
    graph._find_nodes_lookup_table.table[
        (op, target if op == "call_function" else None)][n] = None
    graph._len += 1
    return n


def add_getitems(graph: Graph, node: Node, count: int, stack_trace: str) -> list[Node]:
    """``[add_node(graph, operator.getitem, (node, i), {}, "getitem") for i in
    range(count)]``, each with `stack_trace`: one call for the pieces of a result (a
    split's), their names worked out as ``unique_name`` does, inline."""
    if not count:  # (an unbind of a size-0 dim: no piece, no table entry)
        return []
    if not FAST_NODES or graph._owning_module is not None or _GETITEM_ODD:
        out = [add_node(graph, operator.getitem, (node, i), {}, "getitem")
               for i in range(count)]
    else:
        ns = graph._graph_namespace
        used, counts, names = ns._used_names, ns._base_count, ns._obj_to_name
        insert = graph._insert
        prepend = insert.__self__._prepend if getattr(insert, "__func__", None) is PREPEND \
            else None
        # (fx's find_nodes table: keyed by op and target)
        table = graph._find_nodes_lookup_table.table[("call_function", operator.getitem)]
        out = []
        for i in range(count):
            num = counts.get("getitem", 0)  # (unique_name of "getitem": its base, no
            unique = "getitem"                # number, not a name fx refuses)
            while unique in used:
                num += 1
                unique = f"getitem_{num}"
            used.add(unique)
            counts["getitem"] = num
            n = NEW_NODE(Node)  # (add_node's fast path, as it makes each node)
            INIT_NODE(n, graph, unique, "call_function", operator.getitem, None)
            n._update_args_kwargs((node, i), NO_KWARGS)
            names[n] = unique
            if prepend is not None:
                prepend(n)
            else:
                insert(n)
            table[n] = None
            out.append(n)
        graph._len += count
    for n in out:
        n.meta["stack_trace"] = stack_trace
    return out


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


def placeholder_before_ops(graph: Graph, name: str) -> Node:
    """A placeholder named after `name` placed before the graph's first node that is not
    one (an input of the whole program met while tracing: a lifted constant or object)."""
    anchor = next((n for n in graph.nodes if n.op != "placeholder"), None)
    if anchor is None:
        return graph.placeholder(name)
    with graph.inserting_before(anchor):
        return graph.placeholder(name)


def add_placeholders(graph: Graph, targets: list[str]) -> list[Node]:
    """``[add_placeholder(graph, t) for t in targets]``.  On a graph with no node yet (the
    program's state, lifted first) the unique names, and the namespace's names and counts
    after them, are a function of `targets` alone: kept per list of targets, so the nodes
    are made and linked in one loop with no name to work out."""
    ns = graph._graph_namespace if FAST_NODES and graph._owning_module is None else None
    if ns is None or graph._len or ns._used_names or ns._base_count or ns._obj_to_name:
        return [add_placeholder(graph, t) for t in targets]
    insert = graph._insert
    key = tuple(targets)
    hit = _PLACEHOLDER_RUNS.get(key)
    if hit is None or getattr(insert, "__func__", None) is not PREPEND:
        nodes = [add_placeholder(graph, t) for t in targets]
        if len(_PLACEHOLDER_RUNS) > 1_000:
            _PLACEHOLDER_RUNS.clear()
        _PLACEHOLDER_RUNS[key] = (tuple(n.name for n in nodes), frozenset(ns._used_names),
                                  dict(ns._base_count))
        return nodes
    uniques, used, counts = hit
    ns._used_names.update(used)
    ns._base_count.update(counts)
    names, at = ns._obj_to_name, insert.__self__
    table = graph._find_nodes_lookup_table.table[("placeholder", None)]
    nodes = []
    for target, unique in zip(targets, uniques):
        n = NEW_NODE(Node)  # (add_node's fast path, as it makes each node)
        INIT_NODE(n, graph, unique, "placeholder", target, None)
        n._update_args_kwargs((), NO_KWARGS)
        names[n] = unique
        at._prepend(n)
        table[n] = None
        nodes.append(n)
    graph._len += len(nodes)
    return nodes


# tuple(targets) -> (the placeholders' unique names, the namespace's used names and base
# counts after them), for a graph with no node before them (add_placeholders)
_PLACEHOLDER_RUNS: dict[tuple, tuple] = {}


def calls_any(graph: Graph, targets: Any, ids: frozenset) -> bool:
    """Whether `graph` has a call_function node of one of `targets` (`ids`: their ids):
    read from fx's table of the graph's nodes by (op, target), without a walk of every
    node, and without hashing a target (an OpOverload's hash is a Python call: a lookup
    per target cost more than a pass over the table's few keys)."""
    if FAST_NODES:
        for (_, target), nodes in graph._find_nodes_lookup_table.table.items():
            if nodes and id(target) in ids:  # (keys of other ops: (op, None))
                return True
        return False
    return any(graph.find_nodes(op="call_function", target=t, sort=False) for t in targets)


def target_name(graph: Graph, target: Any) -> str:
    """``graph._target_to_str(target)`` (fx's base name of a node calling `target`; it
    depends on the target alone), made once per target."""
    try:
        name = _TARGET_NAMES.get(target)
    except TypeError:  # (an unhashable target)
        return graph._target_to_str(target)
    if name is None:
        if len(_TARGET_NAMES) > 10_000:
            _TARGET_NAMES.clear()
        name = _TARGET_NAMES[target] = graph._target_to_str(target)
    return name


_TARGET_NAMES: dict[Any, str] = {}  # call target -> fx's base name for it
_PLACEHOLDER_BASES: dict[str, str] = {}  # placeholder target -> fx's base name for it
# candidate -> (base, number text or None, whether fx refuses the candidate itself: a
# keyword or a builtin's name); Scope.record reads it inline
SPLITS: dict[str, tuple[str, str | None, bool]] = {}
_NAME_REGEX = getattr(fx_graph, "_name_regex", None)
_ILLEGAL = getattr(fx_graph, "_illegal_names", None)
# (whether fx splits "getitem" otherwise than as a base with no number, or refuses it:
# add_getitems then names its nodes by unique_name)
_GETITEM_ODD = _NAME_REGEX is None or _ILLEGAL is None or "getitem" in _ILLEGAL or \
    getattr(_NAME_REGEX.match("getitem"), "group", lambda *_: None)(1, 2) != ("getitem", None)


def unique_name(ns: Any, candidate: str) -> str:
    """``ns.create_name(candidate, None)``, its base/number split of `candidate` cached.
    (``Scope.record`` does the same inline for each op once `candidate` is in SPLITS.)"""
    split = SPLITS.get(candidate)
    if split is None:
        match = _NAME_REGEX.match(candidate) if _NAME_REGEX is not None else None
        if match is None:  # (characters to replace: fx's own way)
            return ns.create_name(candidate, None)
        if len(SPLITS) > 100_000:
            SPLITS.clear()
        split = SPLITS[candidate] = (*match.group(1, 2), _ILLEGAL.get(candidate) is not None)
    base, num, illegal = split
    used = ns._used_names
    if num is None or candidate in used:
        num = ns._base_count.get(base, 0)
        if illegal:
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
        with g.inserting_before(b):
            c = add_node(g, torch.ops.aten.neg.default, (a,), {}, "neg")
        with g.inserting_after(c):
            d = add_node(g, torch.ops.aten.neg.default, (c,), {}, "neg")
        g.output((b,))
        ok = [n.name for n in g.nodes] == ["x", "relu", "neg", "neg_1", "relu_1", "output"] \
            and list(a.users) == [b, c] and d.args == (c,) and c.users == {d: None} and \
            type(d) is Node and d.meta == {} and d.type is None and d.op == "call_function" \
            and d.target is torch.ops.aten.neg.default and d.kwargs == {} and \
            type(d.kwargs) is type(Node(g, "k", "call_function", abs, (), {}).kwargs) and \
            d.kwargs is NO_KWARGS and type(NO_KWARGS) is type(d.kwargs) and not NO_KWARGS and \
            len(g.nodes) == 6 and \
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
        targets = ["p_a", "p_a", "for", "x_1", "x"]
        fx = Graph()
        expected = [fx.placeholder(t).name for t in targets]
        for _ in range(2):  # (made, then from the kept names)
            h = Graph()
            made = add_placeholders(h, targets)
            ok = ok and [n.name for n in made] == expected and list(h.nodes) == made and \
                h.find_nodes(op="placeholder") == made and \
                [n.target for n in made] == targets and \
                h._graph_namespace._used_names == fx._graph_namespace._used_names and \
                h._graph_namespace._base_count == fx._graph_namespace._base_count
    except Exception:
        ok = False
    FAST_NODES = ok
    return ok


_selfcheck()


RUN_TIME_CHECKS: set = set()  # every function `run_time_check` marked (they return None)


def run_time_check(fn: Any) -> Any:
    """Mark `fn` (a graph target that raises where its check fails and returns nothing)
    impure to torch.fx: ``Graph.eliminate_dead_code()`` and passes that call it (a user's,
    a compiler's) must keep a check node whose result nothing reads."""
    RUN_TIME_CHECKS.add(fn)
    mark = getattr(torch.fx.node, "has_side_effect", None)
    if mark is not None:
        return mark(fn)
    torch.fx.node._side_effectful_functions.add(fn)  # (torch releases without the helper)
    return fn


def one_line(message: str) -> str:
    """`message` as a run-time check's message in a graph: one line, without a double
    quote or a backslash.  Compilers paste a check's message into the source they generate
    unescaped (inductor: ``throw std::runtime_error("<message>")`` in its C++ kernels and
    AOTInductor's wrapper), where a line break or a quote is a compile error."""
    return " ".join(message.replace("\\", "/").replace('"', "'").split())
