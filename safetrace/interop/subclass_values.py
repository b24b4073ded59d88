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

from safetrace.errors import subclass_output_conversion
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
