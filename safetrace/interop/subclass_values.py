"""A tensor subclass the program builds from its inner tensors (``subclasses.rebuild``: a
value it returns, or one crossing a preserved module call's boundary), in torch.export's
form: ``torch.ops.higher_order.flat_apply`` of the class's ``__tensor_unflatten__`` held as
a pytree constant, its arguments flattened with their spec as a graph attribute (torch's
training IR calls a subclass constructor the same way, ``torch._export.wrappers``).  The
value is torch's own: the class's ``__tensor_unflatten__`` run on the fake inner tensors."""

from __future__ import annotations

from typing import Any

import torch
from torch._higher_order_ops.flat_apply import _ConstantFunction
from torch.utils import _pytree

from safetrace.errors import subclass_call_decomposed, subclass_output_conversion
from safetrace.interop.torch_errors import as_torch
from safetrace.trace.subclasses import CLASSES

FLAT_APPLY = torch.ops.higher_order.flat_apply


def rebuild_call(conv: Any, args: tuple) -> tuple[Any, tuple]:
    """The target and arguments of torch's node for our ``rebuild(cls, inner, ctx, size,
    stride)`` node (`args` already the new graph's nodes)."""
    name, inner, ctx, size, stride = args
    cls = CLASSES.get(name)
    if cls is None:  # (a program loaded in a process that never exported the class)
        raise subclass_output_conversion(name.rpartition(".")[2])
    flat, in_spec = _pytree.tree_flatten(((inner, ctx, size, stride), {}))
    _, func_spec = _pytree.tree_flatten(_ConstantFunction(cls.__tensor_unflatten__))
    key = cls.__name__.lower()
    return FLAT_APPLY, (_spec_node(conv, f"{key}_const_func_spec", func_spec),
                        _spec_node(conv, f"{key}_unflatten_spec", in_spec), *flat)


def _spec_node(conv: Any, base: str, spec: Any) -> torch.fx.Node:
    """A get_attr node of the new graph holding the pytree spec `spec` (one attribute per
    distinct spec, as torch's tracer keeps them)."""
    name = next((k for k, v in conv.attrs.items() if k.startswith(base) and v == spec), None)
    if name is None:
        name, n = base, 0
        while name in conv.attrs:
            n += 1
            name = f"{base}_{n}"
        conv.attrs[name] = spec
    node = conv.graph.get_attr(name)
    node.meta["val"] = spec
    return node


def refuse_decomposed_boundaries(tep: Any) -> None:
    """Raise before torch's ``run_decompositions`` of converted program `tep` where a
    preserved module call's input or output is a subclass rebuilt for the boundary: the
    decomposition desugars it into inner tensors and torch's verifier then stops at a
    boundary name the new graph lacks (``SpecViolationError``).  The error is torch's
    ValueError for a subclass parameter crossing a preserved call, naming the parameter
    where the value is one rebuilt from a placeholder's inner tensors."""
    nodes = {n.name: n for n in tep.graph.nodes}
    for entry in tep.module_call_graph:
        if entry.signature is None:
            continue
        for side, args in (("input", entry.signature.inputs),
                           ("output", entry.signature.outputs)):
            for arg in args:
                node = nodes.get(getattr(arg, "name", None))
                if node is not None and node.target is FLAT_APPLY:
                    raise as_torch(subclass_call_decomposed(entry.fqn, _source(node), side))


def _source(rebuild: torch.fx.Node) -> str:
    """The placeholder whose inner tensors `rebuild` puts together again (the subclass
    parameter or input itself), else the rebuild's own name."""
    inner = [a for a in rebuild.args[2:] if isinstance(a, torch.fx.Node)]
    owners = {a.args[0] for a in inner if _reads_inner(a)}
    if len(owners) == 1 and all(_reads_inner(a) for a in inner):
        owner = next(iter(owners))
        if owner.op == "placeholder":
            return owner.name
    return rebuild.name


def _reads_inner(node: torch.fx.Node) -> bool:
    """Whether `node` is torch's read of one inner tensor of a subclass value."""
    return getattr(node.target, "__name__", "") == "access_subclass_inner_tensor.default" \
        and getattr(node.target, "namespace", "") == "export"
