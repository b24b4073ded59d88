"""Which tensors an op writes in place, and which graph input a written tensor belongs to.

Used while tracing (to record writes to parameters and buffers) and by ``ep.module()``
(to give written state its own storage, so running the program never changes the model
it was exported from).  Besides the schema's ``(a!)`` annotations, batch norm in training
mode updates its running statistics without declaring it.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

# op name -> (training flag index and name, running stat indices): unannotated writes
_RUNNING_STATS = {
    "batch_norm": (5, "training"), "native_batch_norm": (5, "training"),
    "_batch_norm_impl_index": (5, "training"), "instance_norm": (5, "use_input_stats"),
    "_native_batch_norm_legit": (5, "training"), "cudnn_batch_norm": (5, "training"),
    "miopen_batch_norm": (5, "training"),
}


def mutates(op: Any) -> bool:
    """Whether `op` may write one of its inputs in place."""
    return bool(op._schema.is_mutable) or op._opname in _RUNNING_STATS


def written_args(op: Any, args: tuple | list, kwargs: dict) -> list:
    """The argument values `op` writes in place (positional or keyword)."""
    out = []
    for i, a in enumerate(op._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            v = args[i] if i < len(args) else kwargs.get(a.name)
            if v is not None:
                out.append(v)
    stats = _RUNNING_STATS.get(op._opname)
    if stats is not None:
        idx, name = stats
        training = args[idx] if idx < len(args) else kwargs.get(name)
        if training is True:
            for i in (3, 4):
                v = args[i] if i < len(args) else None
                if v is not None and all(v is not w for w in out):
                    out.append(v)
    return out


def _aliases_first_arg(node: torch.fx.Node) -> bool:
    target = node.target
    if target is operator.getitem:  # an element of split/unbind/chunk: a view of its input
        src = node.args[0]
        return isinstance(src, torch.fx.Node) and src.op == "call_function" and \
            isinstance(src.target, torch._ops.OpOverload) and _view_op(src.target)
    return isinstance(target, torch._ops.OpOverload) and _view_op(target)


def _view_op(op: Any) -> bool:
    returns = op._schema.returns
    return bool(returns) and returns[0].alias_info is not None


def base_placeholder(node: Any) -> Any:
    """The placeholder a chain of views (or in-place results) of `node` starts from."""
    for _ in range(256):
        if not isinstance(node, torch.fx.Node):
            return None
        if node.op == "placeholder":
            return node
        if node.op != "call_function" or not node.args or not _aliases_first_arg(node):
            return None
        node = node.args[0]
    return None


def written_placeholders(graph: torch.fx.Graph) -> set:
    """Names of the placeholders the graph writes in place (directly or through views)."""
    names = set()
    for node in graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if not mutates(node.target):
            continue
        for v in written_args(node.target, node.args, node.kwargs):
            base = base_placeholder(v)
            if base is not None:
                names.add(base.name)
    return names
