"""safetrace: export PyTorch programs into graphs sound for a declared space of inputs.

The public API is re-exported here lazily, so that ``import safetrace.symbolic`` (the
symbolic engine, pure Python) works without importing torch.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

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
    "map": "safetrace.trace.hops.looped",
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
    "to_aoti": "safetrace.interop",
    "ConversionError": "safetrace.errors",
    "ConversionWarning": "safetrace.errors",
}

__version__ = "0.2.0"  # pyproject.toml reads it from here

__all__ = sorted([*_API, "dims"])


def __getattr__(name: str) -> _Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'safetrace' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API (``__all__``) and ``__version__``: not the helpers this module
    imports, nor the subpackages that importing them binds here."""
    return sorted([*__all__, "__version__"])


del annotations  # bound by the __future__ import; not part of the API
