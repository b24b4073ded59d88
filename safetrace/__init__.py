"""safetrace: export PyTorch programs into graphs sound for a declared space of inputs."""

from safetrace.errors import (ConstraintViolationError, DataDependentError, ExportError,
                              InputMismatchError, LoadError, OpShapeError,
                              RuntimeAssertionError, SpecError, UnsupportedInputError,
                              UnsupportedOpError)
from safetrace.export.api import export
from safetrace.export.program import ExportedProgram
from safetrace.pytree import register_dataclass, register_pytree_node
from safetrace.rules import register_shape_rule

__all__ = [
    "export", "ExportedProgram", "register_dataclass", "register_pytree_node",
    "register_shape_rule", "ExportError", "UnsupportedInputError", "ConstraintViolationError",
    "DataDependentError", "UnsupportedOpError", "OpShapeError", "SpecError",
    "InputMismatchError", "RuntimeAssertionError", "LoadError",
]
