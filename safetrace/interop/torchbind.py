"""A torchbind object the program holds, as torch.export lifts it: a ``CUSTOM_OBJ`` input
whose placeholder's value is the fake object torch makes from the registered fake class
(``maybe_to_fake_obj``); its ``call_torchbind`` nodes then get their values from torch's
own fake implementation of the operator, and each tensor's shape is compared with ours
as any node's is."""

from __future__ import annotations

from typing import Any

from safetrace.interop.lazy import graph_signature
from safetrace.interop.state import torch_target


def custom_obj_input(conv: Any, spec: Any, node: Any, obj: Any) -> Any:
    """The InputSpec of the object's placeholder `node` (its value set)."""
    from torch._library.fake_class_registry import maybe_to_fake_obj

    gs = graph_signature()
    fake = node.meta["val"] = maybe_to_fake_obj(conv.mode, obj)
    return gs.InputSpec(gs.InputKind.CUSTOM_OBJ,
                        gs.CustomObjArgument(node.name, obj._type().qualified_name(), fake),
                        torch_target(conv.ep, spec))
