"""Exceptions that escape torch or the user's code while tracing, because the tracer's
stand-ins (proxies, symbolic sizes) reached code that expects real values, turned into
export errors with the construct and the fix; an exception eager raises too is returned as
it is."""

from __future__ import annotations

import dis
import os

from safetrace import errors as E
from safetrace.trace.proxy import Proxy
from safetrace.trace.source import raised_at

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# the instructions through which safetrace's code calls or raises: an exception raised
# there may be eager's own (torch's argument parser, a deliberate eager-like raise)
_CALLS = frozenset(n for n in dis.opname if n.startswith(("CALL", "PRECALL", "RAISE",
                                                           "RERAISE")))

_SIZE_CLASSES = ("TorchSymInt", "TorchSymFloat", "TorchSymBool", "OpaqueFloat")


def _stdlib_number_type(exc: TypeError) -> bool:
    """``fractions.Fraction(n, 4)`` of a size: the TypeError of the numeric tower's check
    (it names no class)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.endswith(
        ("/fractions.py", "/_pydecimal.py", "/statistics.py"))


def export_error_for(exc: Exception) -> Exception:
    """An export error for an exception the tracer's stand-ins caused in torch or in the
    user's code (not one eager raises too, which is returned as it is)."""
    where = raised_at(exc.__traceback__) or "<unknown location>"
    if isinstance(exc, AttributeError) and isinstance(getattr(exc, "obj", None), Proxy):
        return E.tensor_attribute(exc.name, where)  # a tensor subclass's own attribute
    if isinstance(exc, TypeError) and str(exc).startswith("__index__ returned non-int") and \
            "Sym" in str(exc):  # CPython's check of the size the tracer gave for `range(t)`
        return E.tensor_as_python_int(where)
    if isinstance(exc, TypeError) and (any(
            f"type {c}" in str(exc) or f"'{c}'" in str(exc) or f"from {c} " in str(exc)
            for c in _SIZE_CLASSES) or _stdlib_number_type(exc)):
        # json.dumps / numpy of a size: the user's call, not the library's raise
        return E.size_as_python_value(str(exc), raised_at(exc.__traceback__, True) or where)
    internal = internal_error_for(exc)
    if internal is not None:
        return internal
    tb = exc.__traceback__
    while tb is not None:  # torch.vmap's own set-up given a traced batch size
        if "/torch/_functorch/" in tb.tb_frame.f_code.co_filename:
            return E.below_tracer("torch.vmap", where)
        tb = tb.tb_next
    return exc


def internal_error_for(exc: Exception) -> Exception | None:
    """The export error naming a bug of safetrace's own code that raised `exc` (see
    `_internal`), or None."""
    inside = _internal(exc)
    if not inside:
        return None
    where = raised_at(exc.__traceback__) or "<unknown location>"
    return E.internal_exception(f"{type(exc).__name__}: {exc}", inside, where)


def _internal(exc: Exception) -> str:
    """``rules/data_dependent.py:178`` when `exc` was raised by a Python operation of
    safetrace's own code (a comparison, an attribute, a subscript: a bug, not a call into
    torch or the user's code, nor a raise of eager's error), else ''."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not code.co_filename.startswith(_PACKAGE):
        return ""
    try:
        name = dis.opname[code.co_code[tb.tb_lasti]]
    except IndexError:
        return ""
    if name in _CALLS:
        return ""
    return f"{os.path.relpath(code.co_filename, _PACKAGE)}:{tb.tb_lineno}"
