"""Refusals the program's own code caught while tracing, and the class of what st.export
raises to its caller.

An export error raised inside the traced code stops the trace where eager would have
computed (or raised another exception).  When a ``try``/``except`` of the program (or of a
library it calls) catches it, tracing goes on down the ``except`` side, which is not what
eager runs at those sizes: every refusal built while the program's code runs is kept, and
one whose traceback stopped outside safetrace refuses the export (with the place of the
``except``).  Errors that carry eager's class (``trace/eager_raise.py``) are caught as
eager's are, and are not kept.

Once the export failed, the error raised to st.export's caller for a call eager rejects
(``OpShapeError`` and its kinds, ``CheckNeverHolds``) carries eager's class, a
``RuntimeError`` where eager's kernel was not run, as torch.export's refusals are; every
other kind carries the classes torch.export raises in its situation
(``interop/torch_errors.py``: ``UserError``, ``ConstraintViolationError``...).
"""

from __future__ import annotations

from typing import Any, Callable

from safetrace import errors as E
from safetrace.errors.base import refusals_built, with_eager_class
from safetrace.interop.torch_errors import as_strict, as_torch
from safetrace.symbolic import DataDependentQuestion
from safetrace.trace.raising import catching_frame


def refusals_watched(env: Any, question_error: Callable[[Any], Any]) -> _Watched:
    """Around the program's run: raise a refusal its code caught (a data-dependent
    question becomes its export error, ``question_error``), also when the run then failed
    another way (the refusal is the cause)."""
    return _Watched(env, question_error)


class _Watched:
    """``refusals_watched``'s context manager (a class: a generator's context manager
    costs a few microseconds more per export)."""

    __slots__ = ("env", "question_error", "collecting", "built")

    def __init__(self, env: Any, question_error: Callable[[Any], Any]) -> None:
        self.env, self.question_error = env, question_error

    def __enter__(self) -> None:
        self.collecting = refusals_built()
        self.built = self.collecting.__enter__()
        self.env.raised = []

    def __exit__(self, exc_type: Any, *exc: Any) -> bool:
        try:
            # (after an Exception too: a refusal the code caught is the failure's cause)
            if exc_type is None or issubclass(exc_type, Exception):
                _raise_caught(self.built, self.env.raised, self.question_error)
        finally:
            self.env.raised = None
            self.built.clear()
            self.collecting.__exit__(None, None, None)
        return False


def _raise_caught(built: list, questions: list, question_error: Callable[[Any], Any]) -> None:
    for exc in (*built, *questions):
        where = catching_frame(exc)
        if where is not None:
            if isinstance(exc, DataDependentQuestion):
                exc = question_error(exc)
            raise E.caught_while_tracing(exc, where) from exc


def eager_classes(strict: bool | None = None) -> _EagerClasses:
    """Around st.export: the error for a call eager rejects carries eager's class (and,
    with ``strict=True``, dynamo's ``TorchRuntimeError``, as torch.export's strict trace
    raises for an op that raised, a custom op's fake kernel found wrong included)."""
    return _EAGER_STRICT if strict else _EAGER_CLASSES


class _EagerClasses:
    """``eager_classes()``'s context manager (one serves every export of its kind)."""

    __slots__ = ("strict",)

    def __init__(self, strict: bool) -> None:
        self.strict = strict

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, err: Any, tb: Any) -> bool:
        if self.strict and getattr(err, "st_kernel_raised", False) and \
                not isinstance(err, E.ExportError):  # (a custom op's kernel run on the
            new = as_strict(err)  # example: torch's strict trace raises it as dynamo's)
            if new is not err:
                raise new.with_traceback(err.__traceback__) from err.__cause__
        if exc_type is None or not issubclass(exc_type, E.ExportError):
            return False
        new = err
        if issubclass(exc_type, (E.OpShapeError, E.CheckNeverHolds)):
            new = with_eager_class(err, err.eager or RuntimeError)
        new = as_torch(new)
        if self.strict and issubclass(exc_type, (E.OpShapeError, E.FakeKernelMismatch)):
            new = as_strict(new)
        if new is not err:
            raise new.with_traceback(err.__traceback__) from err.__cause__
        return False


_EAGER_CLASSES, _EAGER_STRICT = _EagerClasses(False), _EagerClasses(True)
