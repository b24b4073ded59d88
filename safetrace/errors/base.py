"""The base of the error catalogue: ``Where``, ``StructuredError`` (cause, where, fix) and
the public families every kind belongs to (``safetrace.errors`` re-exports them all)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar


@dataclasses.dataclass(frozen=True)
class Where:
    """Where an error happened: the input path (``xs[1]``), the dim, the source line."""

    input: str | None = None
    dim: int | None = None
    source: str | None = None   # "model.py:14 `if x.shape[0] > 1:`"


# The catalogue page: every kind has an anchor there (``docs/errors.md#<kind>``; the site
# built by mkdocs serves the same page as ``errors/#<kind>``).
DOCS_PAGE = "docs/errors.md"


def docs_link(kind: str) -> str:
    """Where a kind is documented: ``docs/errors.md#wrong-size``."""
    return f"{DOCS_PAGE}#{kind}"


class StructuredError(Exception):
    """Mixin of every safetrace error: ``cause``, ``where``, ``fix``, rendered message.

    Built by the builders of ``safetrace.errors`` with cause and fix as separate fields
    (the text is never split); the message ends with a link to the kind's docs entry.
    """

    kind: ClassVar[str] = "error"

    def __init__(self, cause: str = "", *, fix: str = "", where: Where | None = None,
                 **details: Any) -> None:
        self.cause = cause
        self.fix = fix
        self.where = where or Where()
        self.details = details
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.cause}\nFix: {self.fix}" if self.fix else self.cause
        return f"{text}\n{self.see()}"

    def see(self) -> str:
        """The last line of the message: the kind's entry in the docs."""
        return f"See {docs_link(self.kind)}"

    def __reduce__(self) -> Any:  # picklable (multiprocessing, pytest-xdist)
        return (_rebuild, (type(self), self.cause, self.fix, self.where, self.details))


def _rebuild(cls: type, cause: str, fix: str, where: Where, details: dict) -> Any:
    return cls(cause, fix=fix, where=where, **details)


# -- the families -----------------------------------------------------------------------------
class ExportError(StructuredError):
    """Base class of every error raised while exporting a program."""

    kind = "export-error"


class UnsupportedInputError(ExportError):
    """An input (or part of one) has a type that safetrace cannot flatten, or the call is bad."""

    kind = "unsupported-input"


class SpecError(ExportError):
    """The dynamic_shapes specification is malformed or does not match the inputs."""

    kind = "spec"


class ConstraintViolationError(ExportError):
    """The traced program needs a relation that contradicts the declared dynamic shapes."""

    kind = "constraint-violation"


class DataDependentError(ExportError):
    """A decision depends on tensor data, which export never reads."""

    kind = "data-dependent"


class UnsupportedOpError(ExportError):
    """An operator safetrace cannot trace (no shape rule, no fake implementation)."""

    kind = "unsupported-op"


class OpShapeError(ExportError):
    """An operator was called with shapes or dtypes that eager PyTorch would reject."""

    kind = "op-shape"

    def at(self, source: str) -> OpShapeError:
        """The same error with the user's source line added."""
        return type(self)(f"{self.cause}\n  at {source}", fix=self.fix,
                          where=dataclasses.replace(self.where, source=source), **self.details)


class ConversionError(ExportError):
    """A safetrace program cannot be handed to torch.export's stack as it is (interop)."""

    kind = "conversion"


class ConversionWarning(UserWarning):
    """torch assumed something about input sizes inside an op kernel while converting a
    program (``ep.to_torch()``) that the safetrace program does not need."""


class InputMismatchError(StructuredError, ValueError):
    """An exported program was called with inputs outside the space it was exported for."""

    kind = "input-mismatch"


class RuntimeAssertionError(StructuredError, RuntimeError):
    """A run-time check inside an exported program failed on the actual data."""

    kind = "runtime-assertion"


class LoadError(StructuredError):
    """A saved program file is truncated, corrupted, from a newer format, or hostile."""

    kind = "load"


# -- kinds that builders of several modules build --------------------------------------------
class DataRead(DataDependentError):
    """The code reads tensor data as a Python value (``if t:``, ``float(t)``)."""

    kind = "data-read"


class MissingShapeRule(UnsupportedOpError):
    """An op has no symbolic shape rule, and dynamic sizes reached it."""

    kind = "missing-shape-rule"


class UnsupportedConstruct(UnsupportedOpError):
    """Code that an exported graph cannot represent (generator state, autocast, ...)."""

    kind = "unsupported-construct"
