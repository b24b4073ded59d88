"""st.export's errors as torch.export's exception classes too.

A user who replaces ``torch.export.export`` with ``st.export`` keeps code (and tests) that
catch torch's classes: ``except torch._dynamo.exc.UserError as e`` reading ``e.error_type``,
``except ConstraintViolationError``, ``except GuardOnDataDependentSymNode``.  Each catalogue
kind names, by ``torch_classes`` (``errors/base.py``), the classes torch.export raises in
the same situation; at st.export's boundary (``exporter/caught.py``) the error becomes an
instance of a class deriving from its own kind and those (one class per pair, kept), so
``except st.ExportError`` and the torch ``except`` both catch it.  Nothing runs inside the
trace: the program's own ``except`` never sees torch's classes (``exporter/caught.py``).

torch's modules are imported here, when an error leaves st.export, and only then (about a
second the first time in a process that never imported torch._dynamo): the ``except``
clause that names them is evaluated after the error is raised, so the classes must be
there whether the caller imported them first or not.
"""

from __future__ import annotations

import builtins
import traceback
from typing import Any, TypeVar

from safetrace.errors.base import StructuredError, Where
from safetrace.interop import lazy

E = TypeVar("E", bound=StructuredError)
_COMBINED: dict[tuple[type, tuple[str, ...]], type] = {}


def as_torch(err: E) -> E:
    """``err``, an instance of torch.export's classes for its situation too (the same
    error where it is one already, or where torch's classes cannot be had).  An
    ``InputMismatchError`` kind names the classes torch's ``ep.module()`` raises."""
    names = err.details.get("torch_classes", type(err).torch_classes)
    if not names or type(err).__reduce__ is not StructuredError.__reduce__:
        return err  # (a class made for eager's exception keeps its own pickling)
    try:
        classes = [_torch_class(n) for n in names]
    except ImportError:  # (a torch without dynamo: our class and the builtin ones only)
        return err
    bases = tuple(dict.fromkeys(c for c, _ in classes if not isinstance(err, c)))
    if not bases:
        return err
    key = (type(err), bases)
    cls = _COMBINED.get(key)
    if cls is None:
        try:
            cls = type(type(err).__name__, (type(err), *bases), {
                "__module__": type(err).__module__, "__qualname__": type(err).__qualname__,
                "__reduce__": _reduce, "catalogue_class": type(err)})
        except TypeError:  # (an instance lay-out apart)
            return err
        cls = _COMBINED.setdefault(key, cls)  # (another thread's, if it was first)
    new = BaseException.__new__(cls, *err.args)  # (no __init__ of either side: a copy)
    new.__dict__.update(err.__dict__)
    for c, member in classes:
        _torch_fields(new, c, member, err)
    return new


def _torch_class(name: str) -> tuple[type, Any]:
    """The class a ``torch_classes`` name stands for, and the ``error_type`` member."""
    head, _, member = name.partition(".")
    if head == "UserError":
        from torch._dynamo.exc import UserError, UserErrorType
        return UserError, UserErrorType[member]
    if head in ("ConstraintViolationError", "GuardOnDataDependentSymNode"):
        return getattr(lazy.symbolic_shapes(), head), None
    if head == "MetadataMismatchError":  # (a RuntimeError: fake kernel against kernel)
        return lazy.fake_tensor().MetadataMismatchError, None
    return getattr(builtins, head), None


def _torch_fields(new: Any, cls: type, member: Any, err: StructuredError) -> None:
    """The attributes torch's ``__init__`` would have set (what its own handlers read)."""
    if member is not None:  # UserError (a TorchDynamoException)
        new.error_type = member
        if not isinstance(getattr(type(new), "msg", None), property):
            new.msg = str(new)
        new.real_stack = traceback.StackSummary()
        new.skip_frame = False
        new.logged = False
        new._torch_dynamo_tracer_output = None
        new.frame_exec_strategy = None
    elif cls.__name__ == "GuardOnDataDependentSymNode":
        new.cond = err.details.get("expr")  # (our text of the condition, not a sympy one)


def _reduce(self: Any) -> Any:
    return (_rebuild, (type(self).catalogue_class, self.cause, self.fix, self.where,
                       self.details))


def _rebuild(cls: type, cause: str, fix: str, where: Where, details: dict) -> Any:
    return as_torch(cls(cause, fix=fix, where=where, **details))


def as_strict(err: E) -> E:
    """``err`` (already torch.export's classes), an instance of dynamo's
    ``TorchRuntimeError`` too: what torch.export's ``strict=True`` trace raises where an op
    raised while tracing (its fake kernel, or a custom op's kernel found wrong)."""
    try:
        from torch._dynamo.exc import TorchRuntimeError
    except ImportError:
        return err
    if isinstance(err, TorchRuntimeError):
        return err
    key = (type(err), (TorchRuntimeError,))
    cls = _COMBINED.get(key)
    if cls is None:
        attrs = {"__module__": type(err).__module__, "__qualname__": type(err).__qualname__,
                 "__reduce__": _reduce_strict, "strict_of": type(err)}
        try:
            cls = type(type(err).__name__, (type(err), TorchRuntimeError), attrs)
        except TypeError:  # (a plain RuntimeError: dynamo's class goes first)
            try:
                cls = type(type(err).__name__, (TorchRuntimeError, type(err)), attrs)
            except TypeError:  # (an instance lay-out apart)
                return err
        cls = _COMBINED.setdefault(key, cls)
    new = BaseException.__new__(cls, *err.args)
    new.__dict__.update(err.__dict__)
    new.real_stack = traceback.StackSummary()  # (what dynamo's handlers read)
    return new


def _reduce_strict(self: Any) -> Any:
    plain = BaseException.__new__(type(self).strict_of, *self.args)  # (the class it
    plain.__dict__.update(self.__dict__)  # extends, pickled as that class pickles)
    rebuild, args = plain.__reduce__()[:2]
    return (_rebuild_strict, (rebuild, args))


def _rebuild_strict(rebuild: Any, args: tuple) -> Any:
    return as_strict(rebuild(*args))
