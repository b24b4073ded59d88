"""The module hierarchy of a traced program: ``nn_module_stack`` on every recorded node,
as torch.export writes it, so that ``torch.export.unflatten(ep.to_torch())`` can rebuild
the submodule tree.

While ``st.export`` traces, global forward (pre-)hooks keep the stack of submodules being
called; the tracer stamps the current stack (one shared dict per stack state, so a node
costs one reference) on each node it records.  The calls of modules named in
``preserve_module_call_signature`` are recorded too (the graph values in and out, their
pytree specs): ``ep.to_torch()`` makes them the module call signatures that
``torch.export.unflatten`` needs to rebuild a submodule that can be swapped.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch
from torch.utils import _pytree

from safetrace.errors import ConversionError, UnsupportedInputError
from safetrace.interop.contract import expr_node
from safetrace.pytree import module_walk


def _type_name(module: torch.nn.Module) -> str:
    cls = type(module)
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass
class ModuleCall:
    """One call of a module named in ``preserve_module_call_signature``: the graph values
    it received and returned (each ``("tensor" | "sym", node)`` or ``("const", value)``),
    with the pytree specs of ``(args, kwargs)`` and of its output."""

    fqn: str                      # "layer1", "layer1@1" for its second call
    key: str                      # its key in nodes' nn_module_stack
    in_spec: Any = None
    inputs: list = field(default_factory=list)
    out_spec: Any = None
    outputs: list = field(default_factory=list)


@dataclass
class Hierarchy:
    """What an export learnt of the model's module tree."""

    modules: list[str] = field(default_factory=list)  # every submodule path, model order
    calls: list[ModuleCall] = field(default_factory=list)  # preserved calls, in call order


@contextlib.contextmanager
def module_stack(model: Any, tracer: Any, preserve: Any = (),
                 walk: list | None = None) -> Iterator[Hierarchy]:
    """Maintain ``tracer.nn_stack`` ({key: (fqn, type name)}) during the trace, and record
    the calls of the submodules named in `preserve` (their inputs and outputs).  `walk`:
    the model's ``pytree.module_walk``, when the caller has it."""
    found = Hierarchy()
    preserve = _preserved_names(model, preserve)
    if not isinstance(model, torch.nn.Module):
        yield found
        return
    names: dict[int, str] = {}
    paths: dict[str, None] = {}  # (a dict: a list's `in` made this quadratic)
    for fqn, mod in walk if walk is not None else module_walk(model):
        names.setdefault(id(mod), fqn)
        if fqn:
            paths[fqn] = None
    found.modules = list(paths)
    calls: dict[str, int] = {}
    stack: list[tuple[int, dict | None]] = []
    # torch's global module hooks run on every thread: only this export's thread counts
    thread = threading.get_ident()

    def pre(module: torch.nn.Module, args: Any) -> None:
        if threading.get_ident() != thread:
            return
        fqn = names.get(id(module))
        if not fqn:  # the root, or a module that is not a submodule of the model
            stack.append((id(module), None))
            return
        n = calls.get(fqn, 0)
        calls[fqn] = n + 1
        key = f"L__self___{fqn.replace('.', '_')}" + (f"@{n}" if n else "")
        stack.append((id(module), tracer.nn_stack))
        current = dict(tracer.nn_stack or {})
        current[key] = (fqn, _type_name(module))  # as torch's: the call count in the key
        tracer.nn_stack = current

    def post(module: torch.nn.Module, args: Any, output: Any) -> None:
        if threading.get_ident() != thread:
            return
        while stack:
            ident, previous = stack.pop()
            if previous is not None or names.get(ident):
                tracer.nn_stack = previous
            if ident == id(module):
                break

    open_calls: dict[int, list[ModuleCall]] = {}

    def call_pre(module: torch.nn.Module, args: Any, kwargs: Any) -> None:
        fqn = names[id(module)]
        n = calls[fqn] - 1  # the global pre-hook above ran first
        key = f"L__self___{fqn.replace('.', '_')}" + (f"@{n}" if n else "")
        call = ModuleCall(fqn if not n else f"{fqn}@{n}", key)
        leaves, call.in_spec = _pytree.tree_flatten((tuple(args), dict(kwargs)))
        call.inputs = [_value(tracer, v, f"{fqn} input") for v in leaves]
        open_calls.setdefault(id(module), []).append(call)

    def call_post(module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        pending = open_calls.get(id(module))
        if not pending:
            return
        call = pending.pop()
        leaves, call.out_spec = _pytree.tree_flatten(output)
        call.outputs = [_value(tracer, v, f"{call.fqn} output") for v in leaves]
        found.calls.append(call)

    h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = torch.nn.modules.module.register_module_forward_hook(post, always_call=True)
    handles = []
    for fqn in preserve:
        mod = model.get_submodule(fqn)
        handles.append(mod.register_forward_pre_hook(call_pre, with_kwargs=True))
        handles.append(mod.register_forward_hook(call_post, with_kwargs=True))
    try:
        yield found
    finally:
        for h in (h1, h2, *handles):
            h.remove()
        tracer.nn_stack = None
    never = [f for f in preserve if not any(c.fqn.split("@")[0] == f for c in found.calls)]
    if never:
        raise UnsupportedInputError(
            f"preserve_module_call_signature names {never[0]!r}, which the exported "
            f"forward never calls (no call signature to keep).",
            fix=f"leave {never[0]!r} out of preserve_module_call_signature")


def _preserved_names(model: Any, preserve: Any) -> list[str]:
    if isinstance(preserve, str):
        preserve = (preserve,)
    preserve = list(preserve or ())
    if not preserve:
        return []
    if not isinstance(model, torch.nn.Module):
        raise UnsupportedInputError(
            "preserve_module_call_signature names submodules, but the exported callable "
            "is a function, not an nn.Module.", fix="export the nn.Module that owns them")
    known = {fqn for fqn, _ in model.named_modules() if fqn}
    for fqn in preserve:
        if not isinstance(fqn, str) or fqn not in known:
            close = sorted(known, key=lambda k: (not k.endswith(str(fqn)), len(k)))[:3]
            raise UnsupportedInputError(
                f"preserve_module_call_signature names {fqn!r}, which is not a submodule "
                f"of {type(model).__name__} (its submodules include {close}).",
                fix="name submodules by their path in model.named_modules(), e.g. "
                    "\"encoder.layer.0\"")
    return list(dict.fromkeys(preserve))


def _value(tracer: Any, v: Any, what: str) -> tuple[str, Any]:
    """A recorded call value: a tensor's or a symbolic size's node, or a constant."""
    if isinstance(v, torch.Tensor):
        node = tracer.unwrap(v)[1]
        if isinstance(node, torch.fx.Node):
            return ("tensor", node)
    elif hasattr(v, "expr") and hasattr(v, "env"):
        node = tracer.sym_node(v)
        return ("sym", node) if isinstance(node, torch.fx.Node) else ("const", node)
    elif v is None or isinstance(v, (int, float, bool, str, torch.dtype, torch.device)):
        return ("const", v)
    raise UnsupportedInputError(
        f"the {what} is a {type(v).__name__}, which a preserved module call signature "
        f"cannot hold (tensors, sizes and Python constants only).",
        fix="leave this module out of preserve_module_call_signature")


def fill_stacks(nodes: list) -> list:
    """Each node's ``nn_module_stack``, a node recorded without one (an element of a
    multi-output op, a size read, an assertion) given the common prefix of its nearest
    stamped neighbours' stacks.

    unflatten cuts the graph into one call per run of nodes sharing a stack prefix: a node
    with no stack inside a submodule's run would split that call in two (both halves
    landing in one module's graph).  The common prefix is the innermost module certainly
    active at that point of the program, whichever side the node was recorded on."""
    stacks = [n.meta.get("nn_module_stack") or None for n in nodes]
    after: list = [None] * len(nodes)
    nxt = None
    for i in range(len(nodes) - 1, -1, -1):
        after[i] = nxt
        if stacks[i] is not None:
            nxt = stacks[i]
    out, prev = [], None
    for i, s in enumerate(stacks):
        if s is None:
            s = _common_prefix(prev, after[i])
        else:
            prev = s
        out.append(s)
    return out


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
    """Every submodule path in the graph's ``nn_module_stack``s, parents first."""
    seen: dict[str, None] = {}
    for node in graph.nodes:
        for fqn, _ty in (node.meta.get("nn_module_stack") or {}).values():
            seen.setdefault(fqn.split("@")[0], None)
    return sorted(seen, key=lambda f: (f.count("."), list(seen).index(f)))


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
        self.state = {s.name for s in specs if s.kind != "user_input"}

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
        k = (entering or leaving)[0]
        how = (f"reads {m.name}, which is not one of its inputs" if entering else
               f"is read by {user.name} outside it, but is not one of its outputs")
        raise ConversionError(
            f"the preserved module {self.calls[k].fqn!r}: {m.name if leaving else user.name}"
            f"{_where(user)} {how}; its call signature would not be "
            f"its whole interface.\nFix: pass the value to the module as an argument "
            f"(or return it), or leave {self.calls[k].fqn.split('@')[0]!r} out of "
            f"preserve_module_call_signature")

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
            raise ConversionError(
                f"{user.name}{_where(user)} uses the size {e}, which no input of "
                f"{fqn!r} carries; the preserved call signature cannot supply it.\nFix: "
                f"pass a tensor of that size to the module, or leave it out of "
                f"preserve_module_call_signature") from None
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

        def leaf(e: Any) -> Any:
            hit = dims.get(e)
            if hit is None:
                return None
            src = self.conv.env[hit[0]]
            if hit[1] is None:
                return src
            return self.conv.call(torch.ops.aten.sym_size.int, (src, hit[1]),
                                  name="sym_size_int")
        return leaf

    def signatures(self) -> dict:
        """call fqn ("layer1", "layer1@1") -> its ModuleCallSignature."""
        from torch.export.exported_program import ModuleCallSignature

        return {c.fqn: ModuleCallSignature(
            inputs=[self._argument(kind, v) for kind, v in c.inputs],
            outputs=[self._argument(kind, v) for kind, v in c.outputs],
            in_spec=c.in_spec, out_spec=c.out_spec, forward_arg_names=None)
            for c in self.calls.values()}

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


def _where(node: torch.fx.Node) -> str:
    trace = node.meta.get("stack_trace")
    lines = [x.strip() for x in str(trace or "").strip().splitlines() if x.strip()]
    return f" (from {lines[-1]})" if lines else ""
