"""``ep.run_decompositions(decomp_table=None)``: the program retraced by safetrace's own
tracer with each operator replaced by its decomposition (default: torch's core ATen table,
the one ``torch.export``'s ``run_decompositions`` uses).

The retrace runs the graph node by node inside ``st.export``: decomposable operators go
through their Python decomposition (whose ATen calls the tracer records), the rest are
called as they are.  The input contract is carried over: the same Dims (names, ranges,
derived forms) in the dynamic_shapes spec, and the residual conditions as ``torch._check``
on the inputs' sizes before the graph runs (a graph has no branches left to re-derive
them from).  The result is an ordinary safetrace program: it saves, loads and converts.
"""

from __future__ import annotations

import builtins
import keyword
import unicodedata
from typing import Any

import torch
from torch.utils import _pytree

from safetrace.dims import Dim
from safetrace.errors import UnsupportedOpError
from safetrace.errors import interop as EI
from safetrace.exporter.contract import ConstInput, TensorInput, linear_in
from safetrace.interop.composites import TABLE as COMPOSITES
from safetrace.interop.composites_vision import TABLE as VISION_COMPOSITES
from safetrace.interop.contract import evaluate
from safetrace.interop.implication import implied
from safetrace.interop.hops import functional_of
from safetrace.trace.asserts import assert_sym
from safetrace.symbolic.canon import subs
from safetrace.symbolic.expr import TRUE, const, floordiv, sub
from safetrace.trace.hops import submodules


_SYM_MINMAX = {builtins.min: torch.sym_min, builtins.max: torch.sym_max}


def default_table() -> dict:
    """torch's core ATen decomposition table (what torch.export decomposes with), with
    safetrace's Python forms of the composite operators torch decomposes in C++."""
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions().items())
    table.update(COMPOSITES)
    table.update(VISION_COMPOSITES)
    return table


def run_decompositions(ep: Any, decomp_table: dict | None, export: Any) -> Any:
    """`ep` retraced by `export` (``st.export``, handed in by the program: this layer
    sits below the exporter) with every operator of `decomp_table` decomposed."""
    table = default_table() if decomp_table is None else dict(decomp_table)
    original = ep
    # The contract's conditions (``h % 8 == 0`` of a Dim.AUTO size) are checked on the
    # retrace's inputs before its graph runs (`_Retracer._residuals`); on the declared Dims
    # of the retrace's spec they would be refused as narrowing, so they are taken as the
    # run-time checks they are, and the result must need no other (`_same_conditions`).
    defer = {"prefer_deferred_runtime_asserts_over_guards": True} \
        if ep.contract.conditions else {}
    for _ in range(3):
        # a decomposition's own calls are recorded as they are: one written with a
        # non-core operator (``x.to(dtype)`` inside a norm's) leaves it for one more round
        model = _Retracer(ep, table)
        args, kwargs = _examples(ep)
        ep = export(model, args, kwargs, dynamic_shapes=_spec(ep, model.arg_names), **defer)
        if defer:
            _same_conditions(original, ep)
        if not any(_decomposable(n.target, table) for n in _all_nodes(ep.graph)):
            break
    return ep


def _same_conditions(original: Any, retraced: Any) -> None:
    """The retraced program requires of its inputs only what `original` does: each of its
    conditions, its symbols replaced by the original's sizes at the same input dims, is
    one of the original's (canonical expressions: equal conditions are the same object,
    however each program's symbols are named or ordered)."""
    mine = {c.cond for c in original.contract.conditions}
    to_original = _symbols_in(original.contract, retraced.contract)
    extra = []
    for c in retraced.contract.conditions:
        cond = c.cond
        if not cond.free_symbols <= to_original.keys():
            extra.append(c.cond)
            continue
        cond = subs(cond, {n: to_original[n] for n in cond.free_symbols})
        if cond is not TRUE and cond not in mine and not implied(original.contract, cond):
            extra.append(c.cond)
    if extra:
        texts = sorted({retraced.contract.where_text(e) for e in extra})
        raise EI.decomposition_narrowed(", ".join(f"`{t}`" for t in texts))


def _symbols_in(original: Any, retraced: Any) -> dict:
    """``{retraced symbol name: the original's Expr of it}``: each backed symbol of
    `retraced` as read from its input dim, that dim's size in `original`."""
    sizes = original.dims_by_where()
    dims = retraced.dims_by_where()
    out = {}
    for s in retraced.symbols:
        dim, theirs = dims.get(s.where), sizes.get(s.where)
        if dim is None or theirs is None or dim.coef <= 0:
            continue
        size = const(theirs.size) if theirs.kind == "static" else theirs.size
        out[s.name] = floordiv(sub(size, const(dim.offset)), const(dim.coef))
    return out


def _decomposable(target: Any, table: dict) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target in table and \
        not target._schema.is_mutable


def _all_nodes(graph: torch.fx.Graph) -> list:
    out = list(graph.nodes)
    for sub in submodules(graph).values():
        out += _all_nodes(sub.graph)
    return out


class _Retracer(torch.nn.Module):
    """Holds the program's state under its original names and runs its graph with
    decompositions; ``forward`` has the exported model's parameter names."""

    def __init__(self, ep: Any, table: dict) -> None:
        super().__init__()
        inner = ep.module()
        self._modules.update(inner._modules)
        self._parameters.update(inner._parameters)
        self._buffers.update(inner._buffers)
        self._non_persistent_buffers_set |= inner._non_persistent_buffers_set
        self.training = ep.exported_training
        self._ep = ep
        self._table = table
        self.kept: set[str] = set()
        self.arg_names = _arg_names(ep)
        n_pos = len(_children(_children(ep.in_spec)[0]))
        pos, kw = self.arg_names[:n_pos], self.arg_names[n_pos:]
        for name in self.arg_names:
            if not _plain_name(name, []):
                raise ValueError(f"cannot retrace: input name {name!r} is not an identifier")
        # A real function with the model's parameter names: st.export binds inputs (and
        # names them in the contract) by the forward's signature.
        params = ", ".join(["self", *pos] + (["*", *kw] if kw else []))
        call = ", ".join([*pos] + [f"{k}={k}" for k in kw])
        src = f"def forward({params}):\n    return _run(self, {call})\n"
        scope: dict[str, Any] = {"_run": type(self)._run}
        exec(compile(src, "<safetrace retrace>", "exec"), scope)  # noqa: S102 - our own code
        self.forward = scope["forward"].__get__(self)  # type: ignore[method-assign]

    def _state(self, name: str) -> torch.Tensor:
        *path, key = name.split(".")
        owner: torch.nn.Module = self
        for part in path:
            owner = owner._modules[part]
        if key in owner._parameters:
            return owner._parameters[key]
        return owner._buffers[key]

    def _set_state(self, name: str, value: torch.Tensor) -> None:
        *path, key = name.split(".")
        owner: torch.nn.Module = self
        for part in path:
            owner = owner._modules[part]
        owner._buffers[key] = value

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        ep = self._ep
        leaves = _pytree.tree_flatten((tuple(args), dict(kwargs)))[0]
        self._residuals(leaves)
        specs = {s.name: s for s in ep.graph_signature.input_specs}
        inputs = []
        for node in ep.graph.nodes:
            if node.op == "placeholder":
                s = specs[node.name]
                if s.kind == "user_input":
                    inputs.append(leaves[s.leaf])
                elif s.kind == "constant":
                    inputs.append(ep.lifted_constants[s.target])
                else:
                    inputs.append(self._state(s.target))
        outs = self._interpret(ep.graph, inputs)
        user = []
        for spec, value in zip(ep.graph_signature.output_specs, outs):
            if spec.kind == "buffer_mutation":
                if value is not self._state(spec.target):
                    self._set_state(spec.target, value)
            else:
                user.append(value)
        return _pytree.tree_unflatten(user, ep.out_spec)

    def _interpret(self, graph: torch.fx.Graph, inputs: list) -> Any:
        """Run `graph` on `inputs` (one per placeholder) with the table's decompositions;
        a control-flow subgraph (``get_attr``) becomes a function interpreted the same
        way, so the operators inside branches and loop bodies are decomposed too."""
        env: dict[torch.fx.Node, Any] = {}
        values = iter(inputs)
        subgraphs = submodules(graph)
        groups: dict[torch.fx.Node, list] = {}  # a written tensor's nodes (it, its writes)
        order = {n: i for i, n in enumerate(graph.nodes)}
        kept_views = _seen_by_writes(graph, order)
        for node in graph.nodes:
            if node.op == "placeholder":
                env[node] = next(values)
            elif node.op == "get_attr":
                env[node] = self._subgraph(subgraphs[node.target].graph)
            elif node.op == "call_function":
                a, k = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
                scatter = _view_write(node, groups, order)
                if scatter is not None:
                    base, value = scatter, self._scatter(node, a, env)
                    group = groups.setdefault(base, [base])
                    groups[node] = group
                    for member in group:
                        env[member] = value
                    env[node] = env[node.args[0]] = value  # (nothing reads them again)
                    continue
                if node in kept_views:  # (its decomposition may copy: see _seen_by_writes)
                    env[node] = node.target(*a, **k)
                    continue
                functional = _functional(node, groups, order)
                if functional is None:
                    env[node] = self._call(node.target, a, k)
                    continue
                # a write into a tensor nothing else aliases: its functional form, and every
                # later read of the tensor reads the result (what torch's functionalization
                # gives; core ATen has no in-place operators)
                group = groups.setdefault(node.args[0], [node.args[0]])
                group.append(node)
                groups[node] = group
                value = self._call(functional, a, k)
                written = a[0]
                if isinstance(value, torch.Tensor) and value.dtype != written.dtype:
                    # an in-place op keeps its tensor's dtype (add_ of a double into floats)
                    value = torch.ops.aten._to_copy.default(value, dtype=written.dtype)
                for member in group:
                    env[member] = value
            elif node.op == "output":
                return torch.fx.node.map_arg(node.args[0], env.__getitem__)
        raise ValueError("a graph without an output node")

    def _scatter(self, node: torch.fx.Node, a: tuple, env: dict) -> Any:
        """``copy_(base[view]...[view], src)`` (slices and selects, one or more) as
        ``slice_scatter`` / ``select_scatter`` from the innermost view out."""
        aten = torch.ops.aten
        chain = _write_chain(node)
        views = [env[chain[0].args[0]]]  # the base's value now, then each view of it
        for view in chain:
            vargs = torch.fx.node.map_arg(view.args, env.__getitem__)
            views.append(view.target(views[-1], *vargs[1:]))
        dst, src = views[-1], a[1]
        if not isinstance(src, torch.Tensor):
            src = aten.full.default([], src, dtype=dst.dtype, device=dst.device)
        if src.dtype != dst.dtype:
            src = aten._to_copy.default(src, dtype=dst.dtype)
        src = aten.expand.default(src, list(dst.shape))
        for view, base in zip(reversed(chain), reversed(views[:-1])):
            vargs = torch.fx.node.map_arg(view.args, env.__getitem__)
            scatter = aten.select_scatter.default if view.target is aten.select.int else \
                aten.slice_scatter.default
            src = scatter(base, src, *vargs[1:])
        return src

    def _subgraph(self, graph: torch.fx.Graph) -> Any:
        def run(*args: Any) -> Any:
            return self._interpret(graph, list(args))

        return run

    def _call(self, target: Any, args: tuple, kwargs: dict) -> Any:
        if target is assert_sym:
            torch._check(args[0], lambda: args[1])
            return None
        if target is torch.ops.aten.sym_size.int:
            return args[0].shape[args[1]]
        if target in _SYM_MINMAX and len(args) >= 2 and not kwargs:
            # (a size's min/max: Python's would compare, deciding it at the example)
            out = args[0]
            for b in args[1:]:
                out = _SYM_MINMAX[target](out, b)
            return out
        if isinstance(target, torch._ops.OpOverload) and not target._schema.is_mutable:
            fn = self._table.get(target)
            if fn is not None:
                try:
                    return fn(*args, **kwargs)
                except UnsupportedOpError:
                    # the decomposition calls something the tracer cannot record: the
                    # operator stays as it is (a partly traced decomposition records
                    # nothing the result depends on: its outputs are dropped)
                    self.kept.add(str(target))
        return target(*args, **kwargs)

    def _residuals(self, leaves: list) -> None:
        """The contract's residual conditions, on this trace's input sizes."""
        contract = self._ep.contract
        if not contract.conditions:
            return
        values: dict[str, Any] = {}
        for i, inp in enumerate(contract.inputs):
            if isinstance(inp, TensorInput):
                shape = (leaves[i],) if inp.scalar else leaves[i].shape
                for d, dim in enumerate(inp.dims):
                    if dim.kind == "bind":
                        values[dim.symbol] = shape[d]
                    elif dim.kind == "derived":
                        values[dim.symbol] = (shape[d] - dim.offset) // dim.coef
        for c in contract.conditions:
            if c.cond.free_symbols <= values.keys():
                torch._check(evaluate(c.cond, values))


def _functional(node: torch.fx.Node, groups: dict, order: dict) -> Any:
    """The functional overload of an in-place operator writing its first argument (``add_``
    -> ``add``, ``copy_`` -> ``copy``), when that argument is a tensor the graph computed
    and no view of it exists (a view would see the write); else None."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or not target._schema.is_mutable:
        return None
    functional = functional_of(target)
    if functional is None:
        return None
    written = node.args[0] if node.args else None
    if not isinstance(written, torch.fx.Node) or written.op != "call_function":
        return None
    if written not in groups and (not isinstance(written.target, torch._ops.OpOverload) or
                                  _aliases(written.target)) and not _lone_view(written):
        return None
    if _views_before(groups.get(written, [written]), node, order, set()):
        return None  # a view of the written tensor, which would see the write
    return functional


def _seen_by_writes(graph: torch.fx.Graph, order: dict) -> set:
    """The view nodes called as they are, not decomposed: those that a later in-place write
    into the same memory (the view, its base, another view of it) must reach.

    A view operator's decomposition may copy where eager's op returns a view (``flatten``
    of a contiguous tensor is a view; its decomposition through ``reshape`` clones), and
    the write would then miss it (or its base).  Writes that become functional (a write
    into a view nothing else reads, `_lone_view`) need no such view."""
    parent: dict = {}

    def root(n: Any) -> Any:
        while parent.get(n, n) is not n:
            n = parent[n]
        return n

    writes = []
    for node in graph.nodes:
        t = node.target
        if node.op != "call_function" or not isinstance(t, torch._ops.OpOverload) or \
                not _aliases(t) or not node.args or not isinstance(node.args[0], torch.fx.Node):
            continue
        parent[root(node)] = root(node.args[0])  # (same memory as its first argument)
        if t._schema.is_mutable:
            writes.append(node)
    unsure = {}  # memory class -> the last write that may stay a write
    for w in writes:
        written = w.args[0]
        lone = _lone_view(written) and functional_of(w.target) is not None and all(
            u.target._schema.is_mutable and u.args[0] is written for u in written.users
            if isinstance(u.target, torch._ops.OpOverload) and _aliases(u.target))
        if not lone:
            unsure[root(w)] = max(unsure.get(root(w), -1), order[w])
    if not unsure:
        return set()
    return {n for n in parent if not n.target._schema.is_mutable and
            order[n] < unsure.get(root(n), -1)}


def _lone_view(view: torch.fx.Node) -> bool:
    """Whether `view` is a view (``flatten``, ``view``, ``transpose``: a chain of them) of a
    tensor the graph computed that nothing reads but that chain: a write into `view` is
    then seen only through `view` itself (``nn.Dropout(inplace=True)`` after a flatten),
    and its functional form, read by `view`'s later users, is what eager computes."""
    node = view
    while isinstance(node.target, torch._ops.OpOverload) and _aliases(node.target):
        if node.target._schema.is_mutable or not node.args:
            return False  # (a write's result: its own group decides)
        base = node.args[0]
        if not isinstance(base, torch.fx.Node) or base.op != "call_function" or \
                len(base.users) != 1:
            return False  # an input's or state's memory, or a tensor read elsewhere
        node = base
    return node is not view and isinstance(node.target, torch._ops.OpOverload)


def _view_write(node: torch.fx.Node, groups: dict, order: dict) -> Any:
    """The base tensor of ``copy_(base[slice or index]..., src)`` when each view of that
    chain is read by the next only and the base could be written functionally (see
    `_functional`); else None.  The write becomes a scatter into the base (`_scatter`)."""
    if node.target is not torch.ops.aten.copy_.default or len(node.args) < 2 or node.kwargs:
        return None
    chain = _write_chain(node)
    if not chain:
        return None
    base = chain[0].args[0]
    if not isinstance(base, torch.fx.Node) or base.op != "call_function":
        return None
    if base not in groups and (not isinstance(base.target, torch._ops.OpOverload) or
                               _aliases(base.target)):
        return None
    if _views_before(groups.get(base, [base]), node, order, set(chain)):
        return None
    return base


def _write_chain(write: torch.fx.Node) -> list:
    """The views ``write`` writes through, base side first: slices and selects, each read
    by nothing but the next (or the write); [] where the written tensor is not such a
    view."""
    aten = torch.ops.aten
    chain: list = []
    view = write.args[0]
    while isinstance(view, torch.fx.Node) and view.target in (
            aten.slice.Tensor, aten.select.int) and len(view.users) == 1 and not view.kwargs:
        chain.insert(0, view)
        view = view.args[0]
    return chain


def _views_before(members: list, node: torch.fx.Node, order: dict, allowed: set) -> bool:
    """Whether a view of one of `members` (other than `allowed` and the writes folded into
    scatters) was taken before `node`: it would see a write at `node`."""
    for member in members:
        for u in member.users:
            if u in allowed or not isinstance(u.target, torch._ops.OpOverload) or \
                    not _aliases(u.target) or order[u] >= order[node]:
                continue
            if u.args and u.args[0] is member and u.target._schema.is_mutable:
                continue  # a write into it
            if _only_written_through(u):
                continue  # a view only written through (folded into a scatter)
            return True
    return False


def _only_written_through(view: torch.fx.Node) -> bool:
    """Whether `view` (a slice or select) is read only by ``copy_`` into it or by such
    views of it: writes each folded into a scatter of the base."""
    if view.target not in (torch.ops.aten.slice.Tensor, torch.ops.aten.select.int):
        return False
    return all(w.target is torch.ops.aten.copy_.default and w.args[0] is view or
               _only_written_through(w) and w.args[0] is view for w in view.users)


def _aliases(op: Any) -> bool:
    """Whether `op`'s result may share memory with an argument (a view or a write)."""
    return any(r.alias_info is not None for r in op._schema.returns)


def _children(spec: Any) -> list:
    fn = getattr(spec, "children", None)
    return list(fn()) if callable(fn) else list(spec.children_specs)


def _arg_names(ep: Any) -> list[str]:
    args_spec, kwargs_spec = _children(ep.in_spec)
    paths = [inp.path for inp in ep.contract.inputs]
    names: list[str] = []
    at = 0
    for i, child in enumerate(_children(args_spec)):
        head = paths[at] if child.num_leaves else f"arg{i}"
        for j, ch in enumerate(head):
            if ch in "[.":
                head = head[:j]
                break
        names.append(head if _plain_name(head, names) else f"arg{i}")
        at += child.num_leaves
    return names + [k for k in kwargs_spec.context if k not in names]


def _plain_name(name: str, taken: list[str]) -> bool:
    """A name the generated ``forward`` can take as it is (a loaded file's paths are any
    text: Python reads "ｘ" as "x", and "self" is taken)."""
    return name.isidentifier() and unicodedata.normalize("NFKC", name) == name and \
        not keyword.iskeyword(name) and name not in ("self", "_run") and name not in taken


def _examples(ep: Any) -> tuple[tuple, dict]:
    env = next((s.env for n in ep.graph.nodes if n.op == "placeholder"
                for s in getattr(n.meta.get("val"), "shape", ()) if hasattr(s, "env")), None)
    leaves = []
    for inp in ep.contract.inputs:
        if isinstance(inp, ConstInput):
            leaves.append(inp.value)
            continue
        shape = [d.size if d.kind == "static" else _hint(env, ep.contract, d.size)
                 for d in inp.dims]
        if inp.scalar:  # an int declared dynamic
            leaves.append(shape[0])
            continue
        leaves.append(torch.randn(shape).to(inp.dtype) if inp.dtype.is_floating_point
                      else torch.zeros(shape, dtype=inp.dtype))
    args, kwargs = _pytree.tree_unflatten(leaves, ep.in_spec)
    return tuple(args), dict(kwargs)


def _hint(env: Any, contract: Any, size: Any) -> int:
    if env is not None:
        return int(env.hint(size))
    binding = {}
    for s in contract.symbols:  # a loaded program: the smallest sizes its ranges allow
        binding[s.name] = max(s.lo or 0, 2) if s.hi is None else min(max(s.lo or 0, 2), s.hi)
    return int(size.evaluate(binding))


def _spec(ep: Any, names: list[str]) -> Any:
    """A dynamic_shapes spec that declares the program's own contract."""
    contract = ep.contract
    dims: dict[str, Any] = {}
    labels = getattr(ep, "dim_names", {})

    def dim(name: str) -> Any:
        if name not in dims:
            s = contract.symbol(name)
            kw = {}
            if s is not None and s.lo is not None:
                kw["min"] = s.lo
            if s is not None and s.hi is not None:
                kw["max"] = s.hi
            dims[name] = Dim(labels.get(name, name), **kw)
        return dims[name]

    leaf_specs = []
    dynamic = False
    for inp in contract.inputs:
        if isinstance(inp, ConstInput):
            leaf_specs.append(None)
            continue
        entry = {}
        for d, idim in enumerate(inp.dims):
            if idim.kind == "static":
                continue
            dynamic = True
            if idim.kind == "bind":
                entry[d] = dim(idim.symbol)
            elif idim.kind == "derived":
                entry[d] = idim.coef * dim(idim.symbol) + idim.offset
            elif idim.size.op == "sym":
                entry[d] = dim(idim.size.name)
            else:
                free = sorted(idim.size.free_symbols)
                lin = linear_in(idim.size, free[0]) if len(free) == 1 else None
                entry[d] = (lin[0] * dim(free[0]) + lin[1] if lin is not None and lin[0] > 0
                            else Dim.AUTO)
        # an int declared dynamic: its one entry as it is
        leaf_specs.append(entry.get(0) if inp.scalar else entry or None)
    if not dynamic:
        return None
    args, kwargs = _pytree.tree_unflatten(leaf_specs, ep.in_spec)
    spec = dict(zip(names, args))
    spec.update(kwargs)
    return spec
