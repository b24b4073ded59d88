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
``RuntimeError`` where eager's kernel was not run, as torch.export's refusals are.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from safetrace import errors as E
from safetrace.errors.base import refusals_built, with_eager_class
from safetrace.symbolic import DataDependentQuestion
from safetrace.trace.raising import catching_frame


@contextmanager
def refusals_watched(env: Any, question_error: Callable[[Any], Any]) -> Iterator[None]:
    """Around the program's run: raise a refusal its code caught (a data-dependent
    question becomes its export error, ``question_error``), also when the run then failed
    another way (the refusal is the cause)."""
    with refusals_built() as built:
        env.raised = []
        try:
            try:
                yield
            except Exception:
                _raise_caught(built, env.raised, question_error)
                raise
            _raise_caught(built, env.raised, question_error)
        finally:
            env.raised = None
            built.clear()


def _raise_caught(built: list, questions: list, question_error: Callable[[Any], Any]) -> None:
    for exc in (*built, *questions):
        where = catching_frame(exc)
        if where is not None:
            if isinstance(exc, DataDependentQuestion):
                exc = question_error(exc)
            raise E.caught_while_tracing(exc, where) from exc


@contextmanager
def eager_classes() -> Iterator[None]:
    """Around st.export: the error for a call eager rejects carries eager's class."""
    try:
        yield
    except (E.OpShapeError, E.CheckNeverHolds) as err:
        new = with_eager_class(err, err.eager or RuntimeError)
        if new is err:
            raise
        raise new.with_traceback(err.__traceback__) from err.__cause__
