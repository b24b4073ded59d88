"""torch's objects of a conversion, made without fixed costs no conversion needs.

The graph: ``Graph.create_node`` walks every argument of every node with pytree to warn of
a raw SymInt among them (never the case here: arguments are nodes and plain values by
construction), at ~2 µs a leaf, the largest single cost of building a converted graph;
``append_call`` makes the same node without the walk.

The program: ``ExportedProgram``'s constructor, see ``exported_program``.

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

from typing import Any

import torch


def append_call(graph: torch.fx.Graph, target: Any, args: tuple, kwargs: dict | None = None,
                name: str | None = None) -> torch.fx.Node:
    """``graph.call_function(target, args, kwargs, name=name)`` as ``create_node`` makes it,
    less its scan of the arguments for raw SymInts (a warning, for code that could pass
    one); ``create_node`` itself where the graph is not the plain kind this knows."""
    if graph.owning_module is not None or not all(
            hasattr(graph, a) for a in ("_insert", "_find_nodes_lookup_table", "_len")):
        return graph.call_function(target, args, kwargs, name=name)
    namespace = graph._graph_namespace
    name = namespace.create_name(name if name is not None else graph._target_to_str(target),
                                 None)
    node = torch.fx.Node(graph, name, "call_function", target, args,
                         kwargs if kwargs else torch.fx.immutable_collections.immutable_dict())
    namespace.associate_name_with_obj(name, node)
    graph._insert(node)
    graph._find_nodes_lookup_table.insert(node)
    graph._len += 1
    return node


def exported_program(*, validate: bool, **fields: Any) -> Any:
    """``ExportedProgram(**fields)`` with a lazily compiled graph module, validated by its
    verifiers if `validate`."""
    from torch.export import ExportedProgram
    from torch.export import exported_program as module
    from torch.fx._lazy_graph_module import _LazyGraphModule

    class _Unchecked(ExportedProgram):
        def validate(self) -> None:  # the constructor's last step; see below
            pass

    eager = module._create_graph_module_for_export
    # (the constructor's module-level helper: the one place its graph module is made)
    module._create_graph_module_for_export = _LazyGraphModule
    try:
        tep = _Unchecked(**fields)
    finally:
        module._create_graph_module_for_export = eager
    tep.__class__ = ExportedProgram
    if validate:
        tep.validate()
    return tep
