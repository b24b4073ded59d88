"""A torchbind object the program holds, as torch.export lifts it: a ``CUSTOM_OBJ`` input
whose placeholder's value is the fake object torch makes from the registered fake class
(``maybe_to_fake_obj``); its ``call_torchbind`` nodes then get their values from torch's
own fake implementation of the operator, and each tensor's shape is compared with ours
as any node's is."""

from __future__ import annotations

from typing import Any

import torch

from torch._library.fake_class_registry import FakeScriptObject, maybe_to_fake_obj

from safetrace.interop.lazy import graph_signature
from safetrace.interop.state import torch_target


def custom_obj_input(conv: Any, spec: Any, node: Any, obj: Any) -> Any:
    """The InputSpec of the object's placeholder `node` (its value set)."""
    gs = graph_signature()
    fake = node.meta["val"] = maybe_to_fake_obj(conv.mode, obj)
    conv.fake_objects = True  # (custom_obj_values then runs)
    target = torch_target(conv.ep, spec)
    conv.custom_targets[node.name] = target
    return gs.InputSpec(gs.InputKind.CUSTOM_OBJ,
                        gs.CustomObjArgument(node.name, obj._type().qualified_name(), fake),
                        target)


def const_input(conv: Any, node: Any, value: Any) -> Any:
    """The InputSpec of a user input specialized at export (`node` its placeholder, its
    value set): a torchbind object is torch's ``CustomObjArgument`` holding its fake, any
    other value a ``ConstantArgument``."""
    gs = graph_signature()
    if type(value) is torch.ScriptObject:
        fake = node.meta["val"] = maybe_to_fake_obj(conv.mode, value)
        conv.fake_objects = True  # (custom_obj_values then runs)
        arg = gs.CustomObjArgument(node.name, value._type().qualified_name(), fake)
        return gs.InputSpec(gs.InputKind.USER_INPUT, arg, None)
    node.meta["val"] = value
    return gs.InputSpec(gs.InputKind.USER_INPUT, gs.ConstantArgument(node.name, value), None)


def custom_obj_values(conv: Any, graph: Any) -> None:
    """After propagation, each object placeholder's value is torch's final form, a
    CustomObjArgument holding the fake object (what torch's verifier accepts); run where
    a placeholder got a fake object (``conv.fake_objects``)."""
    gs = graph_signature()
    for node in graph.find_nodes(op="placeholder"):
        fake = node.meta.get("val")
        if isinstance(fake, FakeScriptObject):
            target = conv.custom_targets.get(node.name, node.name)
            node.meta["val"] = gs.CustomObjArgument(target, fake.script_class_name, fake)

