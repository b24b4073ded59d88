"""The base of the error catalogue: ``Where``, ``StructuredError`` (cause, where, fix) and
the public families every kind belongs to (``safetrace.errors`` re-exports them all)."""

from __future__ import annotations

import dataclasses
import threading
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
class _Raised(threading.local):
    seen: list | None = None


# The export errors built on this thread while a trace runs (``refusals_built``): the
# exporter reads, after the program's code returned, whether that code caught one.
_RAISED = _Raised()


def refusals_built() -> _Collecting:
    """Collect the export errors built on this thread inside the block, and the other
    exceptions the tracer let out (``note_raised``); not those that carry eager's class
    (``with_eager_class``): catching those is what eager does."""
    return _Collecting()


class _Collecting:
    """``refusals_built()``'s context manager (a class: every export enters one, and a
    generator's context manager costs a few microseconds more)."""

    __slots__ = ("outer",)

    def __enter__(self) -> list:
        self.outer = _RAISED.seen
        seen = _RAISED.seen = []
        return seen

    def __exit__(self, *exc: Any) -> None:
        _RAISED.seen = self.outer


def note_raised(exc: BaseException) -> None:
    """An exception that safetrace's tracing of a call let out into the program's code
    (kept as export errors are, unless it carries eager's class)."""
    seen = _RAISED.seen
    if seen is not None and getattr(exc, "eager", None) is None and \
            not isinstance(exc, ExportError):
        seen.append(exc)


class ExportError(StructuredError):
    """Base class of every error raised while exporting a program."""

    kind = "export-error"
    eager: ClassVar[type[BaseException] | None] = None  # eager's class too (with_eager_class)
    # What torch.export raises in the same situation, by name (``UserError.<its
    # UserErrorType>``, ``ConstraintViolationError``, ``GuardOnDataDependentSymNode``,
    # ``RuntimeError``, ``ValueError``): st.export's error is an instance of those classes
    # too (``interop/torch_errors.py``); a builder may name others for one error
    # (``torch_classes=`` among its details). docs/migration.md#errors has the table.
    torch_classes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, cause: str = "", *, fix: str = "", where: Where | None = None,
                 **details: Any) -> None:
        super().__init__(cause, fix=fix, where=where, **details)
        seen = _RAISED.seen
        if seen is not None and self.eager is None:
            seen.append(self)


class UnsupportedInputError(ExportError):
    """An input (or part of one) has a type that safetrace cannot flatten, or the call is bad."""

    kind = "unsupported-input"
    torch_classes = ("UserError.INVALID_INPUT",)


class SpecError(ExportError):
    """The dynamic_shapes specification is malformed or does not match the inputs."""

    kind = "spec"
    torch_classes = ("UserError.INVALID_INPUT",)


class ConstraintViolationError(ExportError):
    """The traced program needs a relation that contradicts the declared dynamic shapes."""

    kind = "constraint-violation"
    # (torch.export wraps its ConstraintViolationError in a UserError, except where it
    # checks the examples against the declared ranges: either class catches ours)
    torch_classes = ("UserError.CONSTRAINT_VIOLATION", "ConstraintViolationError")


class DataDependentError(ExportError):
    """A decision depends on tensor data, which export never reads."""

    kind = "data-dependent"
    # (the non-strict export raises GuardOnDataDependentSymNode, the strict one a UserError)
    torch_classes = ("GuardOnDataDependentSymNode", "UserError.ANTI_PATTERN")


class UnsupportedOpError(ExportError):
    """An operator safetrace cannot trace (no shape rule, no fake implementation)."""

    kind = "unsupported-op"
    torch_classes = ("RuntimeError",)  # (no fake kernel, an operator dynamo refuses...)


class OpShapeError(ExportError):
    """An operator was called with shapes or dtypes that eager PyTorch would reject."""

    kind = "op-shape"

    def at(self, source: str) -> OpShapeError:
        """The same error with the user's source line added."""
        return type(self)(f"{self.cause}\n  at {source}", fix=self.fix,
                          where=dataclasses.replace(self.where, source=source), **self.details)


_WITH_EAGER: dict[tuple[type, type], type] = {}


def with_eager_class(err: ExportError, eager: type[BaseException]) -> ExportError:
    """The same error, an instance of eager's exception class too (``IndexError`` where
    eager's kernel raises one): ``except IndexError`` catches it as it catches eager's.
    The builtin class eager's derives from serves; one that cannot be a base, the error
    as it is."""
    base = next((c for c in eager.__mro__ if c.__module__ == "builtins"), Exception)
    if isinstance(err, base) or not issubclass(base, Exception) or base is Exception:
        return err
    cls = type(err)
    key = (cls, base)
    both = _WITH_EAGER.get(key)
    if both is None:
        try:
            both = type(cls.__name__, (cls, base), {
                "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                "eager": base, "__reduce__": _reduce_with_eager})
        except TypeError:  # (an instance lay-out apart: OSError's)
            return err
        _WITH_EAGER[key] = both
    new = both(err.cause, fix=err.fix, where=err.where, **err.details)
    new.__dict__.update({k: v for k, v in err.__dict__.items() if k not in new.__dict__})
    return new


def _reduce_with_eager(self: ExportError) -> Any:
    return (_rebuild_with_eager, (type(self).__mro__[1], self.eager, self.cause, self.fix,
                                  self.where, self.details))


def _rebuild_with_eager(cls: type, eager: type, cause: str, fix: str, where: Where,
                        details: dict) -> Any:
    return with_eager_class(cls(cause, fix=fix, where=where, **details), eager)


class ConversionError(ExportError):
    """A safetrace program cannot be handed to torch.export's stack as it is (interop)."""

    kind = "conversion"


class ConversionWarning(UserWarning):
    """torch assumed something about input sizes inside an op kernel while converting a
    program (``ep.to_torch()``) that the safetrace program does not need."""


class InputMismatchError(StructuredError, ValueError):
    """An exported program was called with inputs outside the space it was exported for."""

    kind = "input-mismatch"
    # What torch's ``ep.module()`` raises for such an input (``interop/torch_errors.py``
    # makes the error an instance of those too where it leaves ``ep.module()``)
    torch_classes: ClassVar[tuple[str, ...]] = ()


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
