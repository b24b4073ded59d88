"""Tracing a Python function (a branch, a loop body) into a subgraph of the graph being built.

The function runs under the same tracer as the main program, so the same shape rules,
data-read errors, unbacked sizes and checks apply.  While it runs, new nodes go into a
fresh ``torch.fx.Graph``; what the function reads from outside (the enclosing graph's
values, module state, constants, symbolic sizes) is found afterwards as nodes of other
graphs and lifted into placeholders, the way torch.export lifts a branch's closure into
operands.  State and constants always get their placeholders in the root graph.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
from typing import Any, Callable, Iterator

import torch

from safetrace import pytree
from safetrace import errors
from safetrace.meta import TensorMeta
from safetrace.trace.mutation import aliased_input, base_placeholder, mutates, storage_root, \
    written_args
from safetrace.trace.proxy import Proxy
from safetrace.trace.recorder import Recorder
from safetrace.trace.scope import Scope
from safetrace.trace.source import quoted, short, stack_trace

aten = torch.ops.aten



def fn_location(fn: Any) -> str:
    """``model.py:12 `lambda x: x.cos()``` for a branch function (where it was written)."""
    target = getattr(fn, "forward", fn) if isinstance(fn, torch.nn.Module) else fn
    target = inspect.unwrap(getattr(target, "func", target))  # functools.partial
    code = getattr(target, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", type(fn).__name__)
    line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    return f"{short_path(code.co_filename)}:{code.co_firstlineno}{quoted(line)}"


def short_path(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def submodules(graph: torch.fx.Graph) -> dict[str, Any]:
    """The subgraphs a graph's get_attr nodes name (each with ``.graph`` and ``.module()``;
    empty for plain graphs)."""
    return getattr(graph, "st_submodules", {})


def add_submodule(graph: torch.fx.Graph, prefix: str, sub: Any) -> str:
    """Register `sub` under a fresh name ``<prefix>_<i>`` for `graph`'s get_attr nodes."""
    subs = graph.__dict__.setdefault("st_submodules", {})
    i = 0
    while f"{prefix}_{i}" in subs:
        i += 1
    name = f"{prefix}_{i}"
    subs[name] = sub
    return name


def owner_module(graph: torch.fx.Graph) -> torch.nn.Module:
    """An nn.Module holding `graph`'s subgraphs as GraphModules (the root a GraphModule
    copies its get_attr targets from)."""
    root = torch.nn.Module()
    for name, sub in submodules(graph).items():
        root.add_module(name, sub.module(name))
    return root


class Subgraph:
    """A graph called by a control-flow operator (traced, or read from a saved program)."""

    def __init__(self, graph: torch.fx.Graph) -> None:
        self.graph = graph
        self._module: torch.fx.GraphModule | None = None

    def module(self, class_name: str) -> torch.fx.GraphModule:
        """The subgraph as a GraphModule, built on first use, not at export (fx code
        generation costs about a millisecond per subgraph)."""
        if self._module is None:
            self._module = torch.fx.GraphModule(owner_module(self.graph), self.graph,
                                                class_name)
        return self._module


class Traced(Subgraph):
    """A function traced into a graph: its placeholders, outputs, and outside reads."""

    def __init__(self, graph: torch.fx.Graph, n_inputs: int, out_leaves: list, out_spec: Any,
                 where: str, new_symbols: set[str]) -> None:
        super().__init__(graph)
        self.n_inputs = n_inputs
        self.out_leaves = out_leaves   # Proxies (or other leaves) the function returned
        self.out_spec = out_spec
        self.where = where             # the function's source location
        self.new_symbols = new_symbols  # symbols created while it ran (unknown outside)
        # (output index, ("input", placeholder index) or ("output", earlier index)) for each
        # output given a copy because it is an input, views one, or repeats an output: eager
        # returns the alias itself (`lift`)
        self.aliases: list[tuple[int, tuple[str, int]]] = []

    def foreign(self) -> list[torch.fx.Node]:
        """Nodes of other graphs the subgraph reads, in first-use order."""
        seen: dict[torch.fx.Node, None] = {}
        for node in self.graph.nodes:
            for a in node.all_input_nodes:
                if a.graph is not self.graph:
                    seen.setdefault(a, None)
        return list(seen)

    def lift(self, outer: list[torch.fx.Node]) -> None:
        """Placeholders for `outer` (in this order, after the inputs), replacing their uses."""
        g = self.graph
        phs = [n for n in g.nodes if n.op == "placeholder"]
        anchor = phs[-1].next if phs else next(iter(g.nodes), None)
        mapping = {}
        taken = {n.target for n in phs}
        for node in outer:
            with g.inserting_before(anchor) if anchor is not None else contextlib.nullcontext():
                ph = g.placeholder(_free_name(node.name, taken))
            val = node.meta.get("val")
            ph.meta["val"] = Proxy(val.st_meta, ph) if isinstance(val, Proxy) else val
            ph.meta["stack_trace"] = ""
            mapping[node] = ph
        for node in list(g.nodes):
            if node.op == "placeholder":
                continue
            for a in node.all_input_nodes:
                if a in mapping:
                    node.replace_input_with(a, mapping[a])
        self._unalias_outputs()

    def _unalias_outputs(self) -> None:
        """Outputs that are inputs, views of inputs, or repeated get a copy: torch's
        control-flow operators require outputs that alias nothing."""
        g = self.graph
        out = next(n for n in reversed(g.nodes) if n.op == "output")
        values = out.args[0] if isinstance(out.args[0], tuple) else (out.args[0],)
        fixed, seen = [], {}
        phs = [n for n in g.nodes if n.op == "placeholder"]
        for i, node in enumerate(values):
            if not isinstance(node, torch.fx.Node) or not isinstance(
                    node.meta.get("val"), Proxy):
                fixed.append(node)  # an int or bool: a value, never an alias
                continue
            base = node if node.op == "placeholder" else base_placeholder(node)
            if node in seen or base is not None:  # (eager returns the alias: `aliases`)
                self.aliases.append((i, ("output", seen[node]) if node in seen else
                                     ("input", phs.index(base))))
                with g.inserting_before(out):
                    copy = g.call_function(aten.clone.default, (node,))
                copy.meta["val"] = Proxy(node.meta["val"].st_meta, copy)
                copy.meta["stack_trace"] = node.meta.get("stack_trace", "")
                node = copy
            seen.setdefault(node, i)
            fixed.append(node)
        out.args = (tuple(fixed) if isinstance(out.args[0], tuple) else fixed[0],)


def mark_returned_aliases(branches: list[Traced], outs: list, ops: tuple) -> None:
    """Eager's ``torch.cond`` returns what the branch returned, an operand (or a view of
    one, or one tensor twice) included, where the graph's branch returns a copy: a later
    in-place write to such an output or to the operand it views would show through the
    other in eager only, so it is refused (``mutation.writes_a_pick``)."""
    what = ("an output of torch.cond that a branch returns as an operand, a view of one or "
            "another output, or that operand")
    for t in branches:
        for i, (kind, k) in t.aliases:
            partners = ([ops[k]] if k < len(ops) else list(ops)) if kind == "input" \
                else [getattr(outs[k], "st_node", None)]  # (unmatched: every operand)
            for node in (getattr(outs[i], "st_node", None), *partners):
                if isinstance(node, torch.fx.Node):
                    storage_root(node).meta["st_picked"] = what


@contextlib.contextmanager
def _in_subgraph(tr: Recorder, graph: torch.fx.Graph, where: str) -> Iterator[set[str]]:
    """Record into `graph` while the function runs: a scope pushed on the tracer's stack
    (the enclosing scope's assertions hold in it; a print() there is refused), popped
    after; symbols made inside are forgotten outside, and so are writes to state."""
    parent = tr.scope
    n_syms = len(tr.env.symbols) if tr.env is not None else 0
    n_facts = len(tr.env.facts) if tr.env is not None else 0
    mutated = set(tr.mutated)

    def refuse_print() -> Exception:
        return errors.print_in_branch(where, short(stack_trace(3)))

    scope = Scope(graph, parent.asserted, refuse_print, where)
    scope.n_syms = n_syms
    tr.scopes.append(scope)
    tr.scope = scope
    created: set[str] = set()
    try:
        yield created
        if tr.env is not None:
            _refuse_outside_facts(tr.env, n_facts, n_syms, where)
    finally:
        if tr.env is not None:
            created.update(list(tr.env.symbols)[n_syms:])
        for name in created:  # sizes made inside are read from the subgraph's nodes
            tr.sym_sources.pop(name, None)
        tr.scopes.pop()
        tr.scope = parent
        for b in [b for b in tr.mutated if b not in mutated]:
            del tr.mutated[b]


def _refuse_outside_facts(env: Any, n_facts: int, n_syms: int, where: str) -> None:
    """A check inside a branch about a data-dependent value from outside would hold only
    where the branch runs, but the engine would rely on it everywhere after."""
    inside = set(list(env.symbols)[n_syms:])
    for fact in env.facts[n_facts:]:
        outside = [n for n in fact.cond.free_symbols
                   if n not in inside and not env.symbols[n].backed]
        if outside:
            raise errors.outside_check_in_branch(
                where, str(fact.cond),
                short(fact.origin) if isinstance(fact.origin, str) else '?')


def _free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name_1`, `name_2`, ... when a placeholder already has it: fx writes a
    placeholder's target as the argument name of the subgraph's code (a branch reading `x`
    from outside besides its operand `x` made `def forward(self, x, x)`)."""
    out, k = name, 0
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    taken.add(out)
    return out


def is_sym(v: Any) -> bool:
    return hasattr(v, "expr") and not isinstance(v, torch.Tensor)


def trace_function(tr: Recorder, fn: Callable, inputs: list, in_spec: Any, where: str,
                   what: str, single: bool = False, ints_ok: bool = False) -> Traced:
    """Trace ``fn(*unflatten(inputs))`` into a new graph whose placeholders are `inputs`.

    `inputs` are TensorMetas (or Proxies, whose metadata is used) for tensor placeholders,
    and symbolic ints (a loop's carried int: an unbacked symbol) for int placeholders.
    """
    graph = torch.fx.Graph()
    args: list = []
    taken: set[str] = set()
    for i, v in enumerate(inputs):
        node = v.st_node if isinstance(v, Proxy) else None
        ph = graph.placeholder(_free_name(
            node.name if isinstance(node, torch.fx.Node) else f"arg{i}", taken))
        ph.meta["stack_trace"] = ""
        if is_sym(v):
            ph.meta["val"] = v
            args.append(v)
            continue
        if isinstance(v, Proxy):
            meta = v.st_meta
        elif isinstance(v, torch.Tensor):  # a real operand (a parameter, buffer, constant)
            meta = TensorMeta(tuple(v.shape), v.dtype, v.device)
        else:
            meta = v
        p = Proxy(meta, ph)
        if isinstance(v, Proxy) and v.st_contig is not True:
            p.st_contig = v.st_contig
        ph.meta["val"] = p
        args.append(p)
    call_args = pytree.tree_unflatten(args, in_spec)
    with _in_subgraph(tr, graph, what) as created:
        for p, ph in zip(args, graph.nodes):  # values known only inside: read them here
            if is_sym(p):
                if p.expr.op == "sym" and p.expr.name not in tr.sym_sources:
                    tr.sym_sources[p.expr.name] = ph
                    created.add(p.expr.name)
                continue
            for d, size in enumerate(p.st_meta.shape):
                e = getattr(size, "expr", None)
                if e is not None and e.op == "sym" and e.name not in tr.sym_sources:
                    tr.sym_sources[e.name] = (p.st_node, d, 1, 0)
                    created.add(e.name)
        out = fn(*call_args)
        leaves, spec = pytree.tree_flatten(out)
        nodes: list = []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, Proxy):
                node = leaf.st_node
            elif isinstance(leaf, torch.Tensor):  # state or a constant returned as it is
                node = tr.lift(leaf)
                leaf = node.meta["val"]
                leaves[i] = leaf
            elif ints_ok and (is_sym(leaf) or isinstance(leaf, (bool, int))):
                node = tr.sym_node(leaf)  # an int or bool (a loop counter, a condition)
            else:
                raise errors.branch_output_type(what, where, leaf, i)
            if node is None:
                raise errors.branch_output_from_fake(what, where)
            nodes.append(node)
        _refuse_writes(graph, what, where)
    for i, n in enumerate(nodes):
        if isinstance(n, torch.fx.Node):
            leaves[i] = n.meta["val"]
    # a while_loop's cond_fn returns its one bool tensor bare, as torch's graphs do
    graph.output(nodes[0] if single and len(nodes) == 1 else tuple(nodes))
    return Traced(graph, len(inputs), leaves, spec, where, created)


def _refuse_writes(graph: torch.fx.Graph, what: str, where: str) -> None:
    """In-place writes to the function's inputs or to anything outside it are refused."""
    for node in graph.nodes:
        op = node.target
        if node.op != "call_function" or not isinstance(op, torch._ops.OpOverload) or \
                not mutates(op):
            continue
        for target in written_args(op, node.args, node.kwargs):
            if not isinstance(target, torch.fx.Node):
                continue
            base = base_placeholder(target)
            if base is None and target.graph is not graph:
                base = target
            if base is None:  # (a result that may be its input: ``atleast_1d(x).add_(1)``)
                base = aliased_input(target, graph)
            if base is None:
                continue
            kind = "module state" if (base.meta.get("kind") in ("parameter", "buffer")) \
                else "an input of the branch" if base.graph is graph else "a tensor from outside"
            raise errors.branch_writes_in_place(op._opname, what, where, kind, base.name,
                                                short(node.meta.get('stack_trace', '')))


def input_metas(values: list, what: str, where: str) -> list[TensorMeta]:
    """Metadata of operand leaves (tensors only)."""
    out = []
    for i, v in enumerate(values):
        if isinstance(v, Proxy):
            out.append(v.st_meta)
        elif isinstance(v, torch.Tensor):
            out.append(TensorMeta(tuple(v.shape), v.dtype, v.device))
        else:
            raise errors.operand_type(what, v, i, where)
    return out
