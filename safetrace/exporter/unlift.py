"""The program's graph as torch's unlifted module graph, for the tools that read a module's
graph instead of calling it (torch.export of a GraphModule runs it with an fx Interpreter;
fx passes; ``print``/``.code``).

The program's own graph takes its parameters, buffers and constants as placeholders and
returns the buffers it writes.  The unlifted graph takes only the user's inputs (one
placeholder per flattened leaf, the leaves of the model's own arguments: its code has the
model's calling convention) and

- calls the input checks first (``_input_checks``, a submodule: before any op computes,
  with the checks' own messages; under a tracing tool they run on its fake or symbolic
  values, so a re-export keeps them as guards),
- reads state with ``get_attr`` (a parameter the program writes in place is read detached,
  as the module's own call does),
- writes each buffer the program reassigns with an in-graph ``copy_`` (in-place writes
  already write the ``get_attr`` value),
- hands back the caller's grad mode when the graph changes it.
"""

from __future__ import annotations

import keyword
import types
import unicodedata
from typing import Any, Callable

import torch

from safetrace import pytree
from safetrace.errors import InputMismatchError
from safetrace.exporter.checks import compiled
from safetrace.interop.torch_errors import as_torch

__all__ = ["CHECKS", "InputChecks", "ProgramCodeGen", "unlifted_graph", "argument_names",
           "named_forward", "flattener"]

CHECKS = "_input_checks"  # the submodule the unlifted graph calls first


class InputChecks(torch.nn.Module):
    """The program's input checks as a module the unlifted graph calls with every leaf.

    On real tensors (and on a tracing tool's fake tensors) it runs the generated checks;
    handed fx Proxies (``torch.fx.symbolic_trace``) it records itself as one call, so a
    traced copy keeps the checks."""

    _is_impure = True  # fx's dead code elimination keeps a call without users

    def __init__(self, check: Callable[[list], None]) -> None:
        super().__init__()
        self.check = check

    def forward(self, *leaves: Any) -> None:
        proxy = next((v for v in leaves if isinstance(v, torch.fx.Proxy)), None)
        if proxy is not None:
            tracer = proxy.tracer
            return tracer.create_proxy(  # type: ignore[no-any-return]
                "call_module", tracer.path_of_module(self), leaves, {})
        try:
            self.check(list(leaves))
        except InputMismatchError as err:  # (torch's class too, as the module's call)
            raise as_torch(err).with_traceback(err.__traceback__) from None
        return None


class ProgramCodeGen(torch.fx.graph.CodeGen):
    """Code of the unlifted graph: ``forward`` takes the model's own arguments, flattens
    them (the structure checked as by the module's call) and returns the model's output
    structure."""

    def __init__(self, names: list[str], n_pos: int, flatten: Callable[[tuple, dict], list],
                 unflatten: Callable[[list], Any]) -> None:
        super().__init__()
        self.names, self.n_pos = names, n_pos
        self.flatten, self.unflatten = flatten, unflatten

    def _split(self, inputs: tuple) -> tuple[tuple, dict]:
        return (tuple(inputs[:self.n_pos]),
                dict(zip(self.names[self.n_pos:], inputs[self.n_pos:])))

    def process_inputs(self, *inputs: Any) -> Any:
        """The leaves, from the arguments given positionally in signature order (what an
        fx Interpreter, and torch.export's run of a GraphModule, hand over)."""
        return self.flatten(*self._split(inputs))

    def process_outputs(self, outputs: Any) -> Any:
        return self.unflatten(list(outputs) if isinstance(outputs, (list, tuple))
                              else [outputs])

    def additional_globals(self) -> list[tuple[str, Any]]:
        return [("_st_flatten", self.flatten), ("_st_unflatten", self.unflatten)]

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str,
                   **kwargs: Any) -> str:
        pos, kw = self.names[:self.n_pos], self.names[self.n_pos:]
        params = ", ".join(["self", *self.names])  # (torch's: every argument by name too)
        text = f"def {self._func_name}({params}){maybe_return_annotation}:"
        leaves = [v.split(":")[0].split("#")[0].strip() for v in free_vars]
        if leaves:
            args = "".join(f"{p}, " for p in pos)
            kwargs_ = ", ".join(f"{k!r}: {k}" for k in kw)
            text += f"\n    {', '.join(leaves)}, = _st_flatten(({args}), {{{kwargs_}}})"
        return text

    def generate_output(self, output_args: Any, **kwargs: Any) -> str:
        repr_fn = kwargs.get("repr_fn") or repr
        return f"return _st_unflatten([{', '.join(repr_fn(a) for a in output_args)}])"


def flattener(ep: Any) -> Callable[[tuple, dict], list]:
    """The leaves of a call's arguments, their structure checked as by ``ep.flat_inputs``;
    an argument that is an fx Proxy (``torch.fx.symbolic_trace``) is indexed along the
    exported structure instead, each leaf a Proxy of its own."""
    def flatten(args: tuple, kwargs: dict) -> list:
        try:
            return ep.flat_inputs(args, kwargs)  # type: ignore[no-any-return]
        except InputMismatchError:
            if not any(isinstance(v, torch.fx.Proxy) for v in (*args, *kwargs.values())):
                raise
            args_spec, kwargs_spec = _children(ep.in_spec)
            if len(args) != args_spec.num_children or set(kwargs) != set(kwargs_spec.context):
                raise
            out: list = []
            for v, spec in zip(args, _children(args_spec)):
                _by_spec(v, spec, out)
            for k, spec in zip(kwargs_spec.context, _children(kwargs_spec)):
                _by_spec(kwargs[k], spec, out)
            return out
    return flatten


def _by_spec(value: Any, spec: Any, out: list) -> None:
    if spec.is_leaf():
        out.append(value)
        return
    if spec.type is dict:
        keys = spec.context
    elif spec.type in (list, tuple):
        keys = range(spec.num_children)
    else:
        raise TypeError(f"cannot trace through a {spec.type.__name__} input symbolically")
    for k, child in zip(keys, _children(spec)):
        _by_spec(value[k], child, out)


def argument_names(ep: Any) -> tuple[list[str], int] | None:
    """(the model's argument names, positional ones first; how many are positional), or
    None when they cannot be a Python signature (a keyword that is no identifier)."""
    args_spec, kwargs_spec = _children(ep.in_spec)
    children = _children(args_spec)
    paths = [inp.path for inp in ep.contract.inputs]
    names: list[str] = []
    at = 0
    for i, child in enumerate(children):
        head = paths[at] if child.num_leaves and at < len(paths) else ""
        for j, ch in enumerate(head):
            if ch in "[.":
                head = head[:j]
                break
        names.append(head if _usable(head, names) else f"arg{i}")
        at += child.num_leaves
    kw = list(kwargs_spec.context or ())
    if not all(isinstance(k, str) and _usable(k, names) for k in kw) or len(set(kw)) < len(kw):
        return None
    names += kw
    if any(names.count(n) > 1 for n in names):
        return None
    return names, len(children)


def _usable(name: str, taken: list[str]) -> bool:
    # (Python reads an identifier in its NFKC form: a loaded file's "ｘ" beside "x", or
    # "ｓｅｌｆ", would be a duplicate argument of the generated code; the source of a
    # model's own forward is always in that form)
    return (name.isidentifier() and unicodedata.normalize("NFKC", name) == name
            and not keyword.iskeyword(name) and name != "self"
            and not name.startswith("_st_") and name not in taken)


def named_forward(forward: Callable[..., Any], names: list[str], n_pos: int) -> Callable[..., Any]:
    """A copy of `forward` (which takes ``*args, **kwargs``) that presents the model's own
    arguments, ``forward(self, x, mask)`` as torch's unlifted module's: to
    ``inspect.signature`` (torch.export binds ``dynamic_shapes`` against it) and to
    ``torch.fx.symbolic_trace`` (which makes one placeholder per argument of the code
    ``inspect.unwrap`` finds).  Calls still run `forward` itself: no frame is added, and a
    call the signature would not bind is refused by the input checks' structure error."""
    params = ", ".join(["self", *names])
    args = "".join(f"{p}, " for p in names[:n_pos])
    kwargs = ", ".join(f"{k!r}: {k}" for k in names[n_pos:])
    src = f"def forward({params}):\n    return _st_forward(self, {args}**{{{kwargs}}})\n"
    scope: dict[str, Any] = {"_st_forward": forward}
    exec(compiled(src, "<safetrace ProgramModule.forward>"), scope)  # noqa: S102
    copy_ = types.FunctionType(forward.__code__, forward.__globals__, forward.__name__,
                               forward.__defaults__, forward.__closure__)
    copy_.__dict__.update(forward.__dict__)
    copy_.__qualname__, copy_.__module__ = forward.__qualname__, forward.__module__
    copy_.__wrapped__ = scope["forward"]  # type: ignore[attr-defined]
    return copy_


def unlifted_graph(ep: Any, const_attrs: dict[str, str], grad_nodes: bool) -> torch.fx.Graph:
    """A new graph computing what `ep.graph` computes, unlifted (see the module's
    docstring); constants are read from the attributes `const_attrs` names."""
    src = ep.graph
    specs = ep.graph_signature.input_specs
    placeholders = [n for n in src.nodes if n.op == "placeholder"]
    by_leaf = {s.leaf: ph for s, ph in zip(specs, placeholders) if s.kind == "user_input"}
    written = ep.written_placeholders()
    g = torch.fx.Graph()
    env: dict[torch.fx.Node, Any] = {}
    leaves = []
    for i, inp in enumerate(ep.contract.inputs):
        ph = by_leaf.get(i)
        node = g.placeholder(ph.name if ph is not None else _leaf_name(inp.path, i))
        if ph is not None:
            node.meta = dict(ph.meta)
            env[ph] = node
        leaves.append(node)
    g.call_module(CHECKS, tuple(leaves))
    grad = g.call_function(torch.is_grad_enabled) if grad_nodes else None
    state_nodes: dict[str, torch.fx.Node] = {}
    for s, ph in zip(specs, placeholders):
        if s.kind == "user_input":
            continue
        node = g.get_attr(const_attrs[s.target] if s.kind == "constant" else s.target)
        node.meta = dict(ph.meta)
        if s.kind != "constant":
            state_nodes[s.target] = node
        if s.kind == "parameter" and s.name in written:
            node = g.call_function(torch.ops.aten.detach.default, (node,))
            node.meta = dict(ph.meta)
        env[ph] = node
    out = None
    for n in src.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            out = n
            break
        env[n] = g.node_copy(n, lambda a: env[a])
    assert out is not None
    values = list(out.args[0])
    user = []
    for spec, v in zip(ep.graph_signature.output_specs, values):
        new = env[v] if isinstance(v, torch.fx.Node) else v
        if spec.kind != "buffer_mutation":
            user.append(new)
            continue
        buf = state_nodes.get(spec.target)
        if buf is None:
            buf = state_nodes[spec.target] = g.get_attr(spec.target)
        if new is not buf:  # (an in-place write already wrote the buffer)
            # written as the module's call writes it: the value, not its autograd history
            value = g.call_function(torch.ops.aten.detach.default, (new,))
            g.call_function(torch.ops.aten.copy_.default, (buf, value))
    if grad is not None:
        g.call_function(torch._C._set_grad_enabled, (grad,))
    g.output(tuple(user))
    return g


def _leaf_name(path: str, i: int) -> str:
    name = pytree.placeholder_name(path)
    return name if name.isidentifier() and not keyword.iskeyword(name) else f"arg_{i}"


def _children(spec: Any) -> list:
    """A TreeSpec's child specs (``children()`` in new torch, ``children_specs`` before)."""
    fn = getattr(spec, "children", None)
    return list(fn()) if callable(fn) else list(spec.children_specs)
