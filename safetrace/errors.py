"""Every exception safetrace raises, with the text that explains cause and fix.

Export-time errors derive from :class:`ExportError`; errors raised when an exported
program is called derive from :class:`InputMismatchError`; file errors are
:class:`LoadError`.  Messages say what the user did (input path, dim, source line),
what was expected, and the fix as code.
"""

from __future__ import annotations


class ExportError(Exception):
    """Base class of every error raised while exporting a program."""


class UnsupportedInputError(ExportError):
    """An input (or part of one) has a type that safetrace cannot flatten."""


class ConstraintViolationError(ExportError):
    """The traced program needs a relation that contradicts the declared dynamic shapes."""


class DataDependentError(ExportError):
    """A decision depends on tensor data, which export never reads."""


class UnsupportedOpError(ExportError):
    """An operator safetrace cannot trace (no shape rule, no fake implementation)."""


class OpShapeError(ExportError):
    """An operator was called with shapes or dtypes that eager PyTorch would reject."""


class SpecError(ExportError):
    """The dynamic_shapes specification is malformed or does not match the inputs."""


class ConversionError(ExportError):
    """A safetrace program cannot be handed to torch.export's stack as it is (interop)."""


class ConversionWarning(UserWarning):
    """torch assumed something about input sizes inside an op kernel while converting a
    program (``ep.to_torch()``) that the safetrace program does not need."""


class InputMismatchError(ValueError):
    """An exported program was called with inputs outside the space it was exported for."""


class RuntimeAssertionError(RuntimeError):
    """A run-time check inside an exported program failed on the actual data."""


class LoadError(Exception):
    """A saved program file is truncated, corrupted, from a newer format, or hostile."""


def shape_error(op: str, message: str) -> OpShapeError:
    """Build the error a shape rule raises when eager PyTorch would reject the call."""
    return OpShapeError(f"{op}: {message}")
