"""safetrace: export PyTorch programs into graphs sound for a declared space of inputs.

The public API is re-exported here lazily, so that ``import safetrace.symbolic`` (the
symbolic engine, pure Python) works without importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

# ``dims`` (the helper) is bound eagerly: importing the submodule of the same name would
# otherwise replace it by the module ("'module' object is not callable"). dims.py does not
# import torch.
from safetrace.dims import dims  # noqa: E402

_API = {
    "export": "safetrace.exporter.api",
    "explain": "safetrace.exporter.explain",
    "ExportedProgram": "safetrace.exporter.program",
    "register_dataclass": "safetrace.pytree",
    "register_pytree_node": "safetrace.pytree",
    "register_shape_rule": "safetrace.rules",
    "TensorMeta": "safetrace.meta",
    "Dim": "safetrace.dims",
    "check": "safetrace.trace.asserts",
    "cond": "safetrace.trace.hops",
    "custom_op": "safetrace.trace.custom",
    "register_fake": "safetrace.trace.custom",
    "new_dynamic_size": "safetrace.trace.custom",
    "ShapesCollection": "safetrace.exporter.shapes",
    "AdditionalInputs": "safetrace.exporter.shapes",
    "refine_dynamic_shapes_from_suggested_fixes": "safetrace.exporter.shapes",
    "ExportError": "safetrace.errors",
    "UnsupportedInputError": "safetrace.errors",
    "ConstraintViolationError": "safetrace.errors",
    "DataDependentError": "safetrace.errors",
    "UnsupportedOpError": "safetrace.errors",
    "OpShapeError": "safetrace.errors",
    "SpecError": "safetrace.errors",
    "InputMismatchError": "safetrace.errors",
    "RuntimeAssertionError": "safetrace.errors",
    "LoadError": "safetrace.errors",
    "save": "safetrace.serialize",
    "load": "safetrace.serialize",
    "to_onnx": "safetrace.interop",
    "to_executorch": "safetrace.interop",
    "ConversionError": "safetrace.errors",
    "ConversionWarning": "safetrace.errors",
}

__all__ = sorted([*_API, "dims"])


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'safetrace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
