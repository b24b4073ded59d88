"""The module hierarchy in a converted program: ``nn_module_stack`` completed on every node
(``fill_stacks``) and the preserved module calls (recorded by ``trace/modules.py`` during
the export) turned into torch's module call signatures, so that
``torch.export.unflatten(ep.to_torch())`` can rebuild the submodule tree.
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any, Callable, Iterable, Iterator

import torch

from safetrace.errors import ConversionError
from safetrace.errors import interop as EI
from safetrace.interop.contract import expr_node
from safetrace.interop.lazy import exported_program_module, graph_signature
from safetrace.symbolic.expr import terms
from safetrace.trace.modules import Hierarchy
from safetrace.trace.subclasses import ACCESS


def fill_stacks(nodes: list) -> list:
    """Each node's ``nn_module_stack``, a node recorded without one (an element of a
    multi-output op, a size read, an assertion) given the common prefix of its nearest
    stamped neighbours' stacks.

    unflatten cuts the graph into one call per run of nodes sharing a stack prefix: a node
    with no stack inside a submodule's run would split that call in two (both halves
    landing in one module's graph).  The common prefix is the innermost module certainly
    active at that point of the program, whichever side the node was recorded on."""
    stacks = [n.meta.get("nn_module_stack") or None for n in nodes]
    out = stacks[:]
    n, i, find = len(stacks), 0, stacks.index
    while True:  # (each run of unstamped nodes, found from C: most nodes are stamped)
        try:
            i = find(None, i)
        except ValueError:
            return out
        j = i + 1
        while j < n and stacks[j] is None:
            j += 1
        common = _common_prefix(stacks[i - 1] if i else None, stacks[j] if j < n else None)
        for k in range(i, j):
            out[k] = dict(common)
        i = j


def _common_prefix(a: dict | None, b: dict | None) -> dict:
    if not a or not b:
        return {}
    common = {}
    for (ka, va), (kb, _vb) in zip(a.items(), b.items()):
        if ka != kb:
            break
        common[ka] = va
    return common


def submodule_fqns(graph: torch.fx.Graph) -> list[str]:
    """Every submodule path in the graph's ``nn_module_stack``s, parents first (in order
    of first appearance at each depth: the sort is stable)."""
    return stack_fqns(node.meta.get("nn_module_stack") for node in graph.nodes)


def stack_fqns(stacks: Iterable) -> list[str]:
    """`submodule_fqns` of a graph whose nodes' stacks, in order, are `stacks`."""
    seen: dict[str, None] = {}
    last = None
    for stack in stacks:
        if not stack or stack is last or stack == last:  # (runs of nodes share a stack)
            continue
        last = stack
        for fqn, _ty in stack.values():
            seen.setdefault(fqn.split("@")[0], None)
    return sorted(seen, key=lambda f: f.count("."))


class Boundaries:
    """The preserved module calls of one conversion: each call's inputs and outputs become
    its ``ModuleCallSignature``, and no value crosses its boundary any other way.

    torch's unflatten gives a preserved module exactly the values of its signature; a node
    inside it that read anything else would grow an extra input (the module could no
    longer be swapped), and one outside that read an inner value other than an output
    would read a stale one.  Sizes are the usual such value (our size nodes read the
    program's inputs): they are computed again from the call's own inputs (or, outside,
    from the program's).  Any other crossing is refused with the module named."""

    def __init__(self, conv: Any, tree: Hierarchy | None, stacks: dict) -> None:
        self.conv = conv
        self.stacks = stacks
        self.calls = {c.key: c for c in (tree.calls if tree is not None else [])}
        self.ins = {k: {v for kind, v in c.inputs if kind != "const"}
                    for k, c in self.calls.items()}
        self.outs = {k: {v for kind, v in c.outputs if kind != "const"}
                     for k, c in self.calls.items()}
        self.sizes: dict[tuple, Any] = {}  # (call key, expression) -> new node
        specs = conv.ep.graph_signature.input_specs
        # (the state placeholders' names: read only where a call is preserved)
        self.state = {s.name for s in specs if s.kind != "user_input"} if self.calls \
            else frozenset()

    def scopes(self, node: torch.fx.Node) -> list[str]:
        """The preserved calls `node` runs inside, outermost first."""
        if not self.calls:
            return []
        return [k for k in (self.stacks.get(node) or ()) if k in self.calls]

    def arg(self, m: torch.fx.Node, user: torch.fx.Node) -> Any:
        """The new-graph value standing for `m` as an argument of `user`."""
        new = self.conv.env[m]
        if not self.calls:
            return new
        inner, outer = self.scopes(user), self.scopes(m)
        if inner == outer or (m.op == "placeholder" and m.name in self.state):
            return new
        entering = [k for k in inner if k not in outer]
        leaving = [k for k in outer if k not in inner]
        if all(m in self.ins[k] for k in entering) and all(m in self.outs[k]
                                                          for k in leaving):
            return new
        val = m.meta.get("val")
        if hasattr(val, "expr") and hasattr(val, "env"):
            return self._size(val.env.simplify(val.expr), inner[-1] if inner else "", user)
        if not leaving and self._state_read(m):  # (read again inside, as state is)
            return self._read_again(m, inner[-1], user)
        k = (entering or leaving)[0]
        how = (f"reads {m.name}, which is not one of its inputs" if entering else
               f"is read by {user.name} outside it, but is not one of its outputs")
        raise EI.preserved_crossing(self.calls[k].fqn, m.name if leaving else user.name,
                                    _where(user), how)

    def _state_read(self, m: torch.fx.Node) -> bool:
        """`m` reads an inner tensor of subclass state (``access_subclass_inner_tensor`` of
        a state placeholder, nested or not): a module may read it as it reads state."""
        while m.op == "call_function" and m.target is ACCESS:
            m = m.args[0]
        return m.op == "placeholder" and m.name in self.state

    def _read_again(self, m: torch.fx.Node, scope: str, user: torch.fx.Node) -> Any:
        """`m`'s read of subclass state made again inside the preserved call `scope` (the
        module then reads the state itself, not a value of its caller's)."""
        key = (scope, m)
        hit = self.sizes.get(key)
        if hit is None:
            parent = m.args[0]
            source = self.conv.env[parent] if parent.op == "placeholder" else \
                self._read_again(parent, scope, user)
            hit = self.conv.graph.call_function(ACCESS, (source, m.args[1]))
            hit.meta.update(val=self.conv.env[m].meta.get("val"))
            stack = self.stacks.get(user)
            if stack:
                hit.meta["nn_module_stack"] = stack
            self.sizes[key] = hit
        return hit

    def _size(self, e: Any, scope: str, user: torch.fx.Node) -> Any:
        key = (scope, e)
        hit = self.sizes.get(key)
        if hit is not None:
            return hit
        graph = self.conv.graph
        last = list(graph.nodes)[-1] if len(graph.nodes) else None
        try:
            if not scope:
                node = self.conv.emitter.node(e)
            else:
                node = expr_node(e, {}, self.conv.call, self._input_dims(scope))
        except ConversionError:
            fqn = self.calls[scope].fqn if scope else "the program"
            raise EI.preserved_size(user.name, _where(user), e, fqn) from None
        stack = self.stacks.get(user)
        created = list(graph.nodes)
        start = created.index(last) + 1 if last is not None else 0
        for n in created[start:]:
            if stack:
                n.meta["nn_module_stack"] = stack
        self.sizes[key] = node
        return node

    def _input_dims(self, scope: str) -> Any:
        """leaf(e): a size node on the call's own inputs for a size of one of them."""
        dims = {}
        for kind, v in self.calls[scope].inputs:
            val = v.meta.get("val") if kind == "tensor" else None
            for d, s in enumerate(getattr(val, "shape", ())):
                if hasattr(s, "expr"):
                    dims.setdefault(s.env.simplify(s.expr), (v, d))
            if kind == "sym" and hasattr(v.meta.get("val"), "expr"):
                s = v.meta["val"]
                dims.setdefault(s.env.simplify(s.expr), (v, None))

        roots = _linear_roots(dims)

        def read(hit: tuple) -> Any:
            src = self.conv.env[hit[0]]
            if hit[1] is None:
                return src
            return self.conv.call(torch.ops.aten.sym_size.int, (src, hit[1]),
                                  name="sym_size_int")

        def leaf(e: Any) -> Any:
            hit = dims.get(e)
            if hit is not None:
                return read(hit)
            lin = roots.get(e.name) if e.op == "sym" else None
            if lin is None:
                return None
            # a symbol the call's inputs carry only as a*s + b (a derived dim): recovered
            # as (size - b) // a, exact since the program checks the size has that form
            hit, a, b = lin
            size = read(hit)
            shifted = self.conv.call(operator.sub, (size, b)) if b else size
            return self.conv.call(operator.floordiv, (shifted, a)) if a != 1 else shifted
        return leaf

    def signatures(self) -> dict:
        """call fqn ("layer1", "layer1@1") -> its ModuleCallSignature."""
        ModuleCallSignature = exported_program_module().ModuleCallSignature

        return {c.fqn: ModuleCallSignature(
            inputs=[self._argument(kind, v) for kind, v in c.inputs],
            outputs=[self._argument(kind, v) for kind, v in c.outputs],
            in_spec=c.in_spec, out_spec=c.out_spec, forward_arg_names=None)
            for c in self.calls.values()}

    def returned_sizes(self) -> None:
        """Before the program's outputs are written: `_sizes_returned_inside` of each
        preserved call."""
        for c in self.calls.values():
            self._sizes_returned_inside(c)

    def _sizes_returned_inside(self, c: Any) -> None:
        """A size the call returns but that our graph reads outside it (``return y,
        x.shape[0]``: our size nodes read the program's inputs) read again from the call's
        own inputs after its last node, and read from there after it: torch's unflatten
        takes a module's outputs from inside its graph (it stopped at "Could not find
        output node sym_size_int_1"), and a swapped module's size is the one it returns."""
        graph = self.conv.graph
        for kind, v in c.outputs:
            new, val = self.conv.env.get(v), v.meta.get("val")
            if kind != "sym" or not isinstance(new, torch.fx.Node) or \
                    not hasattr(val, "expr") or \
                    c.key in (new.meta.get("nn_module_stack") or {}):
                continue
            order = {n: i for i, n in enumerate(graph.nodes)}
            inside = [n for n in order if c.key in (n.meta.get("nn_module_stack") or {})]
            if not inside:
                continue
            last = inside[-1]
            # (before the node after it: each node made lands after the previous one,
            # where inserting_after(last) put each first, a product read before its
            # factors: x.shape[0] * x.shape[1] returned, the graph would not copy)
            with graph.inserting_before(last.next):
                try:
                    node = expr_node(val.env.simplify(val.expr), {}, self.conv.call,
                                     self._input_dims(c.key))
                except ConversionError:
                    raise EI.preserved_size(new.name, "", val.expr, c.fqn) from None
            if node is new:  # (an input's size passed through: read there already)
                continue
            for n in graph.nodes:
                if n not in order:
                    n.meta["nn_module_stack"] = dict(last.meta["nn_module_stack"])
            end = order[last]
            new.replace_all_uses_with(node, delete_user_cb=lambda u: order.get(u, -1) > end)
            self.conv.env[v] = node  # (the program's outputs, written next, read it too)

    def _argument(self, kind: str, v: Any) -> Any:
        from torch.export.graph_signature import (ConstantArgument, SymBoolArgument,
                                                  SymFloatArgument, SymIntArgument,
                                                  TensorArgument)

        new = self.conv.env.get(v) if kind != "const" else None
        if not isinstance(new, torch.fx.Node):
            return ConstantArgument("", v if kind == "const" else new)
        val = new.meta.get("val")
        if isinstance(val, torch.SymInt):
            return SymIntArgument(new.name)
        if isinstance(val, torch.SymFloat):
            return SymFloatArgument(new.name)
        if isinstance(val, torch.SymBool):
            return SymBoolArgument(new.name)
        if isinstance(val, torch.Tensor):
            return TensorArgument(new.name)
        return ConstantArgument("", val)


def _linear_roots(dims: dict) -> dict:
    """symbol name -> ((value, dim), a, b) for a carried size ``a*s + b`` (a >= 1) of one
    symbol, the first such size of each symbol."""
    out: dict = {}
    for e, hit in dims.items():
        ts = dict(terms(e))
        b = ts.pop((), 0)
        if len(ts) != 1:
            continue
        (mono, a), = ts.items()
        if len(mono) == 1 and mono[0].op == "sym" and a >= 1:
            out.setdefault(mono[0].name, (hit, a, b))
    return out


def _where(node: torch.fx.Node) -> str:
    trace = node.meta.get("stack_trace")
    lines = [x.strip() for x in str(trace or "").strip().splitlines() if x.strip()]
    return f" (from {lines[-1]})" if lines else ""


def arg_names(ep: Any) -> list[str]:
    """The forward's parameter names: each positional input's leading path part (made
    once per contract and input structure, kept on the contract)."""
    made = ep.contract.derived("forward arg names", lambda c: [])
    for spec, names in made:
        if spec is ep.in_spec:
            return list(names)
    names = _arg_names(ep)
    made.append((ep.in_spec, tuple(names)))
    return names


def _arg_names(ep: Any) -> list[str]:
    args_spec, kwargs_spec = _children(ep.in_spec)
    paths = [inp.path for inp in ep.contract.inputs]
    names, at = [], 0
    for i, child in enumerate(_children(args_spec)):
        n = child.num_leaves
        head = _head(paths[at]) if n else f"arg{i}"
        names.append(head if head not in names else f"arg{i}")
        at += n
    return names + [k for k in kwargs_spec.context if k not in names]


def call_graph(ep: Any, graph: torch.fx.Graph, kept: dict, arg_names: list[str],
               stacks: Iterable | None = None, found: Iterable | None = None) -> list:
    """The root, every submodule, the preserved calls (`kept`: fqn -> signature);
    `stacks`: the graph's nodes' ``nn_module_stack``s where known (a conversion's: each
    node it adds has a prefix of a neighbour's stack, so the same submodules); `found`:
    ``stack_fqns`` of them, where the caller has it."""
    module = exported_program_module()
    ModuleCallEntry, ModuleCallSignature = module.ModuleCallEntry, module.ModuleCallSignature

    # the root's inputs and outputs are empty, as torch.export writes them: the graph
    # signature already names them, and passes that rename outputs (ExecuTorch's edge
    # passes) update the graph signature only, so names here would go stale
    signature = ModuleCallSignature(
        inputs=[], outputs=[], in_spec=ep.in_spec, out_spec=ep.out_spec,
        forward_arg_names=arg_names)
    # every submodule (torch's unflatten adds an empty module for one the forward
    # never calls, e.g. a dropout that attention takes only the rate of), parents first
    tree = getattr(ep, "module_tree", None)
    fqns = list(tree.modules) if tree is not None else []
    if found is None:
        found = submodule_fqns(graph) if stacks is None else stack_fqns(stacks)
    fqns += [f for f in found if f and f not in fqns]
    entries = [ModuleCallEntry(fqn="", signature=signature)]
    entry = _entry_maker(ModuleCallEntry)  # (a submodule's entry per node run: ~20 on
    entries += [entry(fqn, kept.get(fqn)) for fqn in fqns]  # a small conv net)
    # later calls of a preserved module last, as torch.export lists them
    return entries + [ModuleCallEntry(fqn=k, signature=v) for k, v in kept.items()
                      if "@" in k]


_ENTRY: list = [None, None]  # ModuleCallEntry, and its maker (`_entry_maker`)


def _entry_maker(cls: type) -> Any:
    """``lambda fqn, signature: cls(fqn=fqn, signature=signature)`` for torch's
    ModuleCallEntry dataclass, its two fields set on a new object without the
    constructor's frame where that gives the same fields in the same order (checked
    once per class)."""
    if _ENTRY[0] is cls:
        return _ENTRY[1]

    def direct(fqn: str, signature: Any) -> Any:
        made = new(cls)
        made.fqn = fqn
        made.signature = signature
        return made

    new = object.__new__
    try:
        same = list(vars(direct("a", None)).items()) == \
            list(vars(cls(fqn="a", signature=None)).items()) and \
            direct("a", None) == cls(fqn="a", signature=None)
    except Exception:  # noqa: BLE001 - torch's class changed: its constructor serves
        same = False
    maker = direct if same else (lambda fqn, signature: cls(fqn=fqn, signature=signature))
    _ENTRY[:] = [cls, maker]
    return maker


def _children(spec: Any) -> list:
    fn = getattr(spec, "children", None)
    return list(fn()) if callable(fn) else list(spec.children_specs)


def _head(path: str) -> str:
    for i, ch in enumerate(path):
        if ch in "[.":
            return path[:i]
    return path


@contextlib.contextmanager
def sizes_held_through_decomposition(tep: Any) -> Iterator[Callable[[Any], None]]:
    """Around torch's ``run_decompositions`` of converted program `tep`: a size a
    preserved call returns (read inside the call, ``_sizes_returned_inside``) is
    hoisted by torch's retrace onto the program's input, the node the signature names
    gone (torch's verifier: "Output sym_size_int_2 does not exist in the graph").
    Held as a constant argument meanwhile; the function yielded names, in the new
    program, a node of the same size."""
    ConstantArgument = graph_signature().ConstantArgument
    SymIntArgument = graph_signature().SymIntArgument
    nodes = {n.name: n for n in tep.graph.nodes}
    held = []
    for k, entry in enumerate(tep.module_call_graph):
        outs = entry.signature.outputs if entry.signature is not None else []
        for i, arg in enumerate(outs):
            node = nodes.get(arg.name) if isinstance(arg, SymIntArgument) else None
            if node is not None and (node.target is torch.ops.aten.sym_size.int or
                                     node.target in _SIZE_ARITHMETIC):
                held.append((k, outs, i, arg, str(node.meta["val"])))
                outs[i] = ConstantArgument("", None)

    def restore(out: Any) -> None:
        sizes = {}
        for n in out.graph.nodes:
            if isinstance(n.meta.get("val"), torch.SymInt):
                sizes.setdefault(str(n.meta["val"]), n.name)
        for k, _outs, i, arg, size in held:
            name = sizes.get(size)  # (none: the old name, for a loud failure later)
            entry = out.module_call_graph[k]
            if name is not None:
                name = _read_inside(out, entry, name)
            entry.signature.outputs[i] = SymIntArgument(name) if name is not None else arg

    try:
        yield restore
    finally:
        for _k, outs, i, arg, _size in held:
            outs[i] = arg


def _read_inside(out: Any, entry: Any, name: str) -> str:
    """The name of a node of size `name`'s value inside `entry`'s call in program `out`:
    `name` itself where it is there; else a ``sym_size`` of one of the call's input
    tensors read again after the call's last node (torch's retrace hoists the read onto
    the program's input, and ``torch.export.unflatten`` finds no such output inside the
    call: "Could not find output node sym_size_int_1"), which the nodes after the call
    read instead, as the conversion wrote it (sums, products and floor divisions of the
    call's input dims); refused where those do not give it (the catalogue's error)."""
    nodes = list(out.graph.nodes)
    hoisted = next(n for n in nodes if n.name == name)
    inside = [n for n in nodes if entry.fqn in _stack_fqns(n)]
    by_name = {n.name: n for n in nodes}
    inputs = {by_name.get(getattr(a, "name", None)) for a in entry.signature.inputs}
    if not inside or hoisted in inside and not _reads_outside(hoisted, {*inside, *inputs}):
        return name
    value = hoisted.meta["val"]
    dims = {}  # (an input dim's symbol -> (tensor node, dim))
    for arg in entry.signature.inputs:
        tensor = by_name.get(getattr(arg, "name", None))
        shape = getattr(getattr(tensor, "meta", {}).get("val"), "shape", ())
        for d, size in enumerate(shape):
            if isinstance(size, torch.SymInt) and size.node.expr.is_symbol:
                dims.setdefault(size.node.expr, (tensor, d))
    last = inside[-1]
    stack = dict(_stack_upto(last, entry.fqn))
    made: list = []

    def emit(target: Any, args: tuple, val: Any) -> Any:
        node = out.graph.call_function(target, args)
        node.meta.update(val=val, nn_module_stack=dict(stack))
        made.append(node)
        return node

    with out.graph.inserting_before(last.next):
        try:
            again = _size_nodes(value.node.expr, dims, emit)
        except LookupError:
            again = None
    if not isinstance(again, torch.fx.Node):
        for node in reversed(made):
            out.graph.erase_node(node)
        raise EI.preserved_size_not_readable(entry.fqn, str(value))
    after = nodes[nodes.index(last) + 1:]
    hoisted.replace_all_uses_with(again, delete_user_cb=lambda user: user in after)
    for spec in out.graph_signature.output_specs:
        if getattr(spec.arg, "name", None) == name:
            spec.arg = type(spec.arg)(name=again.name)
    out.graph_module.recompile()
    return again.name


_SIZE_ARITHMETIC = (operator.add, operator.sub, operator.mul, operator.floordiv,
                    operator.mod, operator.neg, torch.sym_max, torch.sym_min)


def _size_nodes(expr: Any, dims: dict, emit: Callable[..., Any]) -> Any:
    """Nodes computing size `expr` (torch's sympy) from `dims` (symbol -> (tensor node,
    dim)): sums, products and floor divisions of the dims; LookupError for anything
    else (then refused)."""
    from torch.utils._sympy.functions import FloorDiv

    if expr.is_Integer:
        return int(expr)
    if expr.is_symbol:
        if expr not in dims:
            raise LookupError(expr)
        tensor, d = dims[expr]
        return emit(torch.ops.aten.sym_size.int, (tensor, d),
                    tensor.meta["val"].shape[d])
    if expr.is_Add or expr.is_Mul:
        op = operator.add if expr.is_Add else operator.mul
        parts = [_size_nodes(a, dims, emit) for a in expr.args]
        acc = parts[0]
        for part in parts[1:]:
            acc = emit(op, (acc, part), op(_val(acc), _val(part)))
        return acc
    if isinstance(expr, FloorDiv):
        a, b = (_size_nodes(x, dims, emit) for x in expr.args)
        return emit(operator.floordiv, (a, b), _val(a) // _val(b))
    raise LookupError(expr)


def _reads_outside(node: Any, within: set) -> bool:
    """Whether size `node` reads, through its size arithmetic, a node not in `within`
    (torch's retrace reads a product's factors from the program's input)."""
    for arg in node.all_input_nodes:
        if arg not in within or _reads_outside(arg, within):
            return True
    return False


def _val(x: Any) -> Any:
    return x.meta["val"] if isinstance(x, torch.fx.Node) else x


def _stack_fqns(node: Any) -> list[str]:
    return [fqn for fqn, _ in (node.meta.get("nn_module_stack") or {}).values()]


def _stack_upto(node: Any, fqn: str) -> list:
    """`node`'s module stack entries down to the one of call `fqn`."""
    out = []
    for key, entry in (node.meta.get("nn_module_stack") or {}).items():
        out.append((key, entry))
        if entry[0] == fqn:
            break
    return out
