"""Control-flow subgraphs in saved programs (torch.cond, while_loop, map, scan).

A program's subgraphs are saved as a flat list ``"subgraphs": [{"path": ..., "nodes": [...]}]``
next to the main graph's nodes, written only when there are any (files of programs without
control flow are unchanged).  A subgraph's path is the chain of ``get_attr`` names leading
to it from the main graph (``true_graph_0``, ``true_graph_0.false_graph_0``), so a graph
can only call its own children: no cycles, and depth is bounded.  On load every
``get_attr`` must name a child that the file defines, every higher-order call must be on
the allowlist (``allowlist.HIGHER_ORDER``) with its subgraph arguments being ``get_attr``
nodes, and each subgraph must take as many inputs as the call passes it.
"""

from __future__ import annotations

import json
import keyword
import operator
import threading
import weakref
from typing import Any, Callable

import torch

from safetrace.errors import runtime_check_failed
from safetrace.exporter.eager_cond import eager_forward
from safetrace.errors.load import (loop_budget, loop_memory, requirement_in_graph,
                                   work_in_graph)
from safetrace.serialize.allowlist import HIGHER_ORDER
from safetrace.serialize.codec import IDENT_RE, expect, expect_keys, fail
from safetrace.exporter.program import ExportedGraphModule
from safetrace.trace.hops import Subgraph, owner_module, submodules

MAX_DEPTH = 16  # nesting of control flow in one program


def encode(graph: torch.fx.Graph, encode_nodes: Callable[[torch.fx.Graph], list],
           prefix: str = "") -> list[dict]:
    """Every subgraph under `graph`, parents before children."""
    out = []
    for name, sub in submodules(graph).items():
        path = f"{prefix}{name}"
        out.append({"path": path, "nodes": encode_nodes(sub.graph)})
        out.extend(encode(sub.graph, encode_nodes, path + "."))
    return out


def paths(items: Any, max_graphs: int) -> list[tuple[str, list]]:
    """(path, nodes) of each saved subgraph, paths checked."""
    items = expect(items, list, "subgraphs")
    if len(items) > max_graphs:
        raise fail("subgraphs", f"{len(items)} subgraphs, over the budget of {max_graphs}")
    out, seen = [], set()
    for i, item in enumerate(items):
        where = f"subgraphs[{i}]"
        expect_keys(item, {"path", "nodes"}, where)
        path = expect(item["path"], str, where)
        parts = path.split(".")
        if len(path) > 1000 or len(parts) > MAX_DEPTH or path in seen or \
                not all(IDENT_RE.fullmatch(p) for p in parts):
            raise fail(where, f"bad, too deep or duplicate subgraph path {path[:60]!r}")
        seen.add(path)
        out.append((path, expect(item["nodes"], list, where)))
    return out


def same_graphs(saved: list[tuple[str, list]]) -> dict[str, str]:
    """path -> a key equal for subgraphs saved identically (their nodes, metadata and
    children alike)."""
    children: dict[str, list[str]] = {}
    for path, _ in saved:
        parent, _, _ = path.rpartition(".")
        children.setdefault(parent, []).append(path)
    nodes_of = dict(saved)
    keys: dict[str, str] = {}

    def key(path: str) -> str:  # (paths are at most MAX_DEPTH deep: bounded recursion)
        if path not in keys:
            kids = sorted((p.rpartition(".")[2], key(p)) for p in children.get(path, ()))
            keys[path] = json.dumps([_numbered(nodes_of[path]), kids], sort_keys=True,
                                    separators=(",", ":"))
        return keys[path]

    for path, _ in saved:
        key(path)
    return keys


def _numbered(nodes: list) -> list:
    """``nodes`` with each node's name (and every reference to it) replaced by its
    position: graphs that differ only in names (a placeholder named after the operand
    passed to it) are the same graph."""
    index = {n["name"]: i for i, n in enumerate(nodes)
             if isinstance(n, dict) and isinstance(n.get("name"), str)}

    def refs(v: Any) -> Any:
        if isinstance(v, dict):
            if len(v) == 1 and isinstance(v.get("node"), str) and v["node"] in index:
                return {"node": index[v["node"]]}
            return {k: refs(x) for k, x in v.items()}
        if isinstance(v, list):
            return [refs(x) for x in v]
        return v

    return [{**n, "name": i, "args": refs(n.get("args")), "kwargs": refs(n.get("kwargs")),
             "meta": _without_call_count(n.get("meta"))}
            if isinstance(n, dict) else n for i, n in enumerate(nodes)]


def _without_call_count(meta: Any) -> Any:
    """A node's saved metadata less its torch_fn (("cos_7", ...): which call of the user's
    function made it), so the bodies of one cond called in a loop stay one graph."""
    extra = meta.get("extra") if isinstance(meta, dict) else None
    if not isinstance(extra, dict) or "torch_fn" not in extra:
        return meta
    return {**meta, "extra": {k: v for k, v in extra.items() if k != "torch_fn"}}


def attach(graphs: dict[str, torch.fx.Graph], max_loop_iterations: int | None = None) -> None:
    """Give each graph (path "" is the main graph) the subgraphs its get_attr nodes name,
    and check every higher-order call against what it calls; the condition and body of
    each while_loop count its iterations (``max_loop_iterations``, if given)."""
    shared: dict[int, Subgraph] = {}  # a graph used twice is one Subgraph: one module
    for path, graph in graphs.items():
        prefix = f"{path}." if path else ""
        for node in graph.nodes:
            if node.op != "get_attr":
                continue
            child = graphs.get(prefix + str(node.target))
            if child is None:
                raise fail(f"node {node.name!r}", f"get_attr of {str(node.target)[:60]!r}, "
                                                  "which is not a subgraph of this graph")
            sub = shared.setdefault(id(child), Subgraph(child))
            graph.__dict__.setdefault("st_submodules", {})[node.target] = sub
            for user in node.users:
                _only_called(node, user)
        for node in graph.nodes:
            if node.op == "call_function" and isinstance(node.target,
                                                         torch._ops.HigherOrderOperator):
                _check_call(node, graph)
                if node.target.name() in _ITERATING and max_loop_iterations is not None:
                    _count_loop(node, graph, max_loop_iterations)
    unused = [p for p in graphs if p and not _reachable(p, graphs)]
    if unused:
        raise fail("subgraphs", f"subgraph {unused[0][:60]!r} is not called by its parent")


def _only_called(node: torch.fx.Node, user: torch.fx.Node) -> None:
    """A subgraph's get_attr is used only as a subgraph argument of a higher-order call
    (not as a value: an operand, an operator's argument, an output)."""
    spec = HIGHER_ORDER.get(user.target.name()) if isinstance(
        user.target, torch._ops.HigherOrderOperator) else None
    places = [] if spec is None else [a for i, a in enumerate(user.args)
                                      if i in spec.subgraph_args]
    if _count(user, node) != sum(1 for a in places if a is node):
        raise fail(f"node {user.name!r}", f"uses the subgraph {node.name!r} as a value (a "
                                          "subgraph is only called by cond, while_loop, map "
                                          "or scan)")


def _count(user: torch.fx.Node, node: torch.fx.Node) -> int:
    """How many times ``node`` appears in ``user``'s arguments."""
    found = []
    torch.fx.node.map_arg((user.args, user.kwargs), lambda n: found.append(n) or n)
    return sum(1 for n in found if n is node)


def _reachable(path: str, graphs: dict[str, torch.fx.Graph]) -> bool:
    parent, _, name = path.rpartition(".")
    return name in submodules(graphs.get(parent, torch.fx.Graph()))


def _check_call(node: torch.fx.Node, graph: torch.fx.Graph) -> None:
    where = f"node {node.name!r}"
    spec = HIGHER_ORDER[node.target.name()]
    args = node.args
    if node.kwargs or len(args) != len(spec.subgraph_args) + len(spec.operand_args) + \
            spec.other_args:
        raise fail(where, f"{node.target.name()} takes {len(spec.subgraph_args)} subgraphs "
                          f"and {len(spec.operand_args)} operand lists")
    subs = []
    for i in spec.subgraph_args:
        a = args[i]
        if not isinstance(a, torch.fx.Node) or a.op != "get_attr" or a.graph is not graph:
            raise fail(where, f"argument {i} must be a get_attr of a subgraph")
        subs.append(submodules(graph)[a.target].graph)
    n_operands = 0
    for i in spec.operand_args:
        if not isinstance(args[i], (list, tuple)):
            raise fail(where, f"argument {i} must be a list of operands")
        if any(isinstance(v, (list, tuple, dict)) for v in args[i]):
            # (torch's control flow takes flat lists: a nested one fails at every call)
            raise fail(where, f"argument {i} must be a flat list of operands, not of lists")
        n_operands += len(args[i])
    for sub in subs:
        n_in = sum(1 for n in sub.nodes if n.op == "placeholder")
        if n_in != n_operands:
            raise fail(where, f"calls a subgraph taking {n_in} inputs with {n_operands}")
    kind = node.target.name()
    counts = [_n_outputs(sub) for sub in subs]
    if kind == "cond" and counts[0] != counts[1]:
        raise fail(where, f"cond's branches return {counts[0]} and {counts[1]} values")
    if kind == "while_loop" and (counts[0] != 1 or counts[1] != len(args[2])):
        raise fail(where, f"while_loop's condition returns {counts[0]} values (1 expected) "
                          f"and its body {counts[1]} ({len(args[2])} are carried)")
    if kind == "scan" and counts[0] < len(args[1]):
        raise fail(where, f"scan's combine returns {counts[0]} values, fewer than the "
                          f"{len(args[1])} carried")
    n_out = len(args[2]) if kind == "while_loop" else counts[0]
    for user in node.users:
        index = user.args[1] if user.target is operator.getitem and len(user.args) == 2 \
            else None
        if isinstance(index, int) and not 0 <= index < n_out:
            raise fail(f"node {user.name!r}", f"takes result {index} of {node.name!r}, "
                                              f"which has {n_out}")


def _n_outputs(graph: torch.fx.Graph) -> int:
    """How many values a subgraph returns (its output node's tuple)."""
    out = next((n for n in graph.nodes if n.op == "output"), None)
    if out is None or not out.args:
        return 0
    value = out.args[0]
    return len(value) if isinstance(value, (list, tuple)) else 1


_ITERATING = frozenset(("while_loop", "map_impl", "scan"))


def _count_loop(node: torch.fx.Node, graph: torch.fx.Graph, limit: int) -> None:
    subs = graph.__dict__["st_submodules"]
    kind = node.target.name()
    loop = _Loop(node.name, limit, "while_loop" if kind == "while_loop" else
                 "map" if kind == "map_impl" else "scan")
    if kind == "scan":  # (its combine takes the carried values first, then the slices)
        loop.carried = len(node.args[1])
    parts = (("cond", node.args[0]), ("body", node.args[1])) if kind == "while_loop" else \
        (("slices", node.args[0]),)
    for role, arg in parts:
        subs[arg.target] = LoopPart(subs[arg.target].graph, loop, role)


class _Loop:
    """The iterations of one loaded while_loop, counted per thread (or of the loops nested
    in the body of a map or a scan, over all its slices: ``kind``)."""

    def __init__(self, node: str, limit: int, kind: str = "while_loop") -> None:
        self.node, self.limit, self.kind = node, limit, kind
        self.carried = 0  # (a scan's combine: how many carried values precede the slices)
        self.local = threading.local()
        # elements one iteration touches at least (the loader's work bound), and the budget
        self.per_iteration, self.work_limit = 0, 0
        self.max_bytes = 0  # of what the body returns (a carry may grow each iteration)


def limit_loop_work(node: torch.fx.Node, per_iteration: int, work_limit: int,
                    max_bytes: int = 0) -> None:
    """Hold the loop of ``node`` to ``work_limit`` elements touched per call, one iteration
    touching at least ``per_iteration`` (work.py: the iterations multiply the body's), and
    what its body returns to ``max_bytes`` (a carried tensor may grow each iteration:
    ``cat([x, x])``)."""
    part = node.graph.__dict__.get("st_submodules", {}).get(getattr(node.args[1], "target", ""))
    if isinstance(part, LoopPart):
        part.loop.per_iteration, part.loop.work_limit = per_iteration, work_limit
        part.loop.max_bytes = max_bytes


def limit_nested_work(graphs: list, work_limit: int) -> None:
    """Hold the loops nested in each map's and scan's body to ``work_limit`` elements
    touched in all, over all its slices (a while_loop's own: ``limit_loop_work``)."""
    for g in graphs:
        for part in g.__dict__.get("st_submodules", {}).values():
            if isinstance(part, LoopPart) and part.loop.kind != "while_loop":
                part.loop.work_limit = work_limit


class LoopPart(Subgraph):
    """The condition or the body of a loaded while_loop, whose module counts iterations:
    a file's loop whose body stops making progress must not hang the call."""

    def __init__(self, graph: torch.fx.Graph, loop: _Loop, role: str) -> None:
        super().__init__(graph)
        self.loop, self.role = loop, role

    def module(self, class_name: str) -> torch.fx.GraphModule:
        if self._module is None:
            gm = _Counted(owner_module(self.graph), self.graph, class_name)
            gm.st_loop, gm.st_role = self.loop, self.role
            self._module = gm
        return self._module


class _Counted(torch.fx.GraphModule):
    """A loop's body counts its calls as iterations; its condition called on other values
    than what the body just returned starts the count again (a new call of the loop).

    The count of a loop includes the iterations of the loops nested in its body (their
    own counts start again at each iteration of the outer one, so per loop the budgets
    would multiply: two nested loops of 10,000 iterations each run 100,000,000): each
    iteration counts for the loop and for every loop whose body is running on this thread
    around it (``_RUNNING``, kept by the bodies' calls)."""

    st_loop: _Loop
    st_role: str
    # (each part runs through eager_forward: a cond or a loop in its graph runs as
    # ep.module()'s do, not through torch's eager dispatch, about 1 ms a call: a loop
    # whose body holds a cond ran its 10,000 iterations in 12 s)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        state = self.st_loop.local
        if self.st_role == "slices":  # (a map's body, a scan's combine: one slice)
            base = _slices_of(args[self.st_loop.carried:])
            call = getattr(_RUNNING, "call", 0)
            if base is None or getattr(state, "xs", None) is None or state.xs() is not base \
                    or state.call != call:
                state.count, state.work = 0, 0  # (the first slice of another call)
                state.xs = None if base is None else weakref.ref(base)
                state.call = call
            running = _running()
            running.append(self.st_loop)
            try:
                return eager_forward(self)(*args, **kwargs)
            finally:
                running.pop()
        if self.st_role == "body":  # (one more iteration: of this loop and those around it)
            running = _running()
            for outer in [self.st_loop, *reversed(running)]:
                _iteration(outer, self.st_loop.per_iteration, outer is not self.st_loop)
            running.append(self.st_loop)
            try:
                out = eager_forward(self)(*args, **kwargs)
            finally:
                running.pop()
            _same_kinds(self.st_loop.node, args, out)
            state.last = out
            limit = self.st_loop.max_bytes
            held = sum(t.numel() * t.element_size() for t in out if isinstance(
                t, torch.Tensor)) if limit and isinstance(out, (list, tuple)) else 0
            if held > limit:
                state.last, state.count = None, 0
                raise loop_memory(self.st_loop.node, held, limit)
            return out
        last = getattr(state, "last", None)
        state.last = None
        going_on = last is not None and len(args) >= len(last) and all(
            a is b for a, b in zip(args, last))
        if not going_on:
            state.count, state.work = 0, 0
        return eager_forward(self)(*args, **kwargs)


_RUNNING = threading.local()  # .loops: the loops whose body runs now (innermost last)


def new_call() -> None:
    """A call of a loaded program begins on this thread (its input checks ran): a map's or
    a scan's count starts again, even on the tensor the last call sliced."""
    _RUNNING.call = getattr(_RUNNING, "call", 0) + 1


def _slices_of(args: tuple) -> Any:
    """The tensor a map's or a scan's slices are views of (torch's map and scan slice
    their xs with views: one call's slices share it), else None."""
    for a in args:
        base = getattr(a, "_base", None) if isinstance(a, torch.Tensor) else None
        if base is not None:
            return base
    return None


def _running() -> list:
    loops = getattr(_RUNNING, "loops", None)
    if loops is None:
        loops = _RUNNING.loops = []
    return loops


def _iteration(loop: _Loop, work: int, nested: bool) -> None:
    """Count one more iteration (touching at least ``work`` elements) for ``loop``, run
    by it or by a loop nested in its body: refused past its budgets."""
    state = loop.local
    state.count = getattr(state, "count", 0) + 1
    state.work = getattr(state, "work", 0) + work
    if state.count > loop.limit:
        state.count = 0
        raise loop_budget(loop.node, loop.limit, nested, loop.kind)
    if loop.work_limit and state.work > loop.work_limit:
        need, state.work = state.work, 0
        raise work_in_graph(loop.node, f"{loop.kind}, {work} elements an iteration", need,
                            loop.work_limit)


def _same_kinds(node: str, carried: tuple, out: Any) -> None:
    """A while_loop body returns its carried values' kinds, dtypes and ranks (torch's
    while_loop requires it; the loader checks it at load where its evaluation knows what
    the body returns): else the next iteration would run the condition and the body on
    values they were never checked for."""
    for i, (a, b) in enumerate(zip(carried, out if isinstance(out, (list, tuple)) else ())):
        ta, tb = isinstance(a, torch.Tensor), isinstance(b, torch.Tensor)
        if ta != tb or ta and (a.dtype != b.dtype or a.dim() != b.dim()):
            shown = [f"{list(v.shape)} {v.dtype}" if isinstance(v, torch.Tensor) else
                     type(v).__name__ for v in (a, b)]
            raise runtime_check_failed(requirement_in_graph(
                node, "while_loop", f"its body to return carried value {i} as {shown[0]}",
                f"it returned {shown[1]}; torch's while_loop carries values of one kind, "
                "dtype and rank"))


def output_ok(args: tuple) -> bool:
    """A subgraph returns a tuple or list of values, or one value (a loop's condition)."""
    return len(args) == 1


def check_target(target: Any, where: str) -> None:
    if target.name() not in HIGHER_ORDER:
        raise fail(where, f"higher-order operator {target.name()!r} is not allowed")


# a subgraph becomes an attribute of the module that runs its parent graph: it must not
# shadow one (``code``, ``forward``, ``_ep``, ``__deepcopy__``, ``_graph_forward`` ...)
# (and what a GraphModule sets on itself: ``meta``, ``shape_env``, which no class lists)
RESERVED = frozenset(dir(ExportedGraphModule)) | frozenset(vars(torch.nn.Module())) | \
    frozenset(vars(torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()))) | {
        "code", "graph", "training", "self"}


def reserved(name: str) -> bool:
    """Whether ``name`` cannot be a subgraph's attribute name."""
    return name.startswith("_") or name in RESERVED or keyword.iskeyword(name)


def get_attr(graph: torch.fx.Graph, name: str, target: Any, where: str) -> torch.fx.Node:
    if not isinstance(target, str) or not IDENT_RE.fullmatch(target):
        raise fail(where, f"bad get_attr target {str(target)[:60]!r}")
    if reserved(target):
        raise fail(where, f"subgraph name {target!r} is reserved (an attribute of the module "
                          "that runs the graph, or a private name)")
    return graph.create_node("get_attr", target, name=name)


__all__ = ["encode", "paths", "attach", "output_ok", "check_target", "get_attr"]
