"""torch's ``ExportedProgram`` of a conversion, made without its constructor's fixed costs.

``ExportedProgram(...)`` generates and compiles the graph module's Python code and runs
torch's verifier over the whole program before returning: on a small model that is most of
the conversion (an MLP: ~60% of ``to_torch()``), for code that the tools reading the
program (``run_decompositions``, ONNX, ExecuTorch, AOTInductor) never execute, and a check
of a graph the conversion built node for node from ATen schemas.  Here the graph module is
torch's lazy kind (``_LazyGraphModule``: the code is generated on its first call, print or
pickle, exactly as it would have been) and the verifier runs where asked
(``to_torch(verify=True)``, on in the tests).
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Iterator

import torch

from safetrace.interop.hierarchy import fill_stacks


def exported_program(*, validate: bool, **fields: Any) -> Any:
    """``ExportedProgram(**fields)`` with a lazily compiled graph module, validated by its
    verifiers if `validate`."""
    from torch.export import ExportedProgram
    from torch.export import exported_program as module
    from torch.fx._lazy_graph_module import _LazyGraphModule

    eager = module._create_graph_module_for_export
    # (the constructor's module-level helper: the one place its graph module is made)
    module._create_graph_module_for_export = _LazyGraphModule
    try:
        tep = _unchecked()(**fields)
    finally:
        module._create_graph_module_for_export = eager
    tep.__class__ = ExportedProgram
    if validate:
        tep.validate()
    return tep


@functools.cache
def _unchecked() -> type:
    """``ExportedProgram`` whose constructor skips its last step, ``validate`` (made once)."""
    from torch.export import ExportedProgram

    class _Unchecked(ExportedProgram):
        def validate(self) -> None:  # run by exported_program where asked
            pass

    return _Unchecked


@contextlib.contextmanager
def config_set(config: Any, name: str, value: Any) -> Iterator[None]:
    """``config.patch(name=value)`` of a torch config module without its cost (``patch``
    defines a class per call: ~5% of a small model's conversion)."""
    before = getattr(config, name)
    setattr(config, name, value)
    try:
        yield
    finally:
        setattr(config, name, before)


def provenance(graph: torch.fx.Graph, root_type: str) -> None:
    """``from_node`` and ``nn_module_stack`` on every node, as torch.export's graphs have:
    run_decompositions maps the module call signatures' names through the first (without
    it an output whose op decomposes away is lost), unflatten reads the second."""
    from torch.fx.traceback import NodeSource, NodeSourceAction

    root = {"L__self__": ("", root_type)}  # (the exported class, as torch writes it)
    # (a subgraph's get_attr too: unflatten places it in a module like any node)
    calls = [n for n in graph.nodes if n.op in ("call_function", "get_attr")]
    for node in calls:  # a subgraph's get_attr: in the module of the cond/loop reading it
        if node.op == "get_attr" and not node.meta.get("nn_module_stack"):
            stack = next((u.meta["nn_module_stack"] for u in node.users
                          if u.meta.get("nn_module_stack")), None)
            if stack:
                node.meta["nn_module_stack"] = stack
    for node, stack in zip(calls, fill_stacks(calls)):
        node.meta["from_node"] = [NodeSource(node, "safetrace.to_torch",
                                             NodeSourceAction.CREATE)]
        # torch's stacks start at the root module (unflatten reads every node's)
        node.meta["nn_module_stack"] = {**root, **stack}


def training_verifier() -> Any:
    from torch._export.verifier import TrainingIRVerifier

    return TrainingIRVerifier
