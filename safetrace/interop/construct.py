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

from typing import Any


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
