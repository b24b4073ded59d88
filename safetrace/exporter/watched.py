"""A number read from a Python attribute that ``forward`` changes, traced again as a
watched number (``python_state.py``): arithmetic on it gives watched numbers, and a
decision on one (a comparison, ``bool``, ``int``/``float``/``index`` of it) is noted with
its source line.  ``self.calls += 1; if self.calls > 2: ...`` takes the same branch at
calls 0 and 1, so tracing again with the new value alone cannot see that a third call
takes the other; the note can.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from safetrace import errors as E


def watched(value: Any, path: str, decided: list[str]) -> Any:
    """`value` as a watched number noting decisions in `decided` (other values as they are;
    a bool is not watched: its two values are both traced)."""
    if type(value) is int:
        return _WatchedInt(value, path, decided)
    if type(value) is float:
        return _WatchedFloat(value, path, decided)
    return value


_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _note(self: Any, what: str, depth: int = 2) -> None:
    frame = sys._getframe(depth)
    code = frame.f_code
    if code.co_filename.startswith(_LIBRARY):
        return  # (safetrace's own handling of the number: the graph comparison judges it)
    self._st_decided.append(f"{what} of {E.state_name(self._st_path)} at "
                            f"{code.co_filename}:{frame.f_lineno}")


def _wrap(like: Any, value: Any) -> Any:
    if type(value) is int:
        return _WatchedInt(value, like._st_path, like._st_decided)
    if type(value) is float:
        return _WatchedFloat(value, like._st_path, like._st_decided)
    if value is NotImplemented or type(value) is bool:
        return value
    _note(like, "a computation", 3)  # (with a SymInt or other: the watch ends here)
    return value


def _arith(name: str, base: type) -> Any:
    op = getattr(base, name)

    def method(self: Any, *other: Any) -> Any:
        return _wrap(self, op(self, *other))
    method.__name__ = name
    return method


def _decision(name: str, base: type, what: str) -> Any:
    op = getattr(base, name)

    def method(self: Any, *other: Any) -> Any:
        _note(self, what)
        return op(self, *other)
    method.__name__ = name
    return method


_ARITH = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
          "__floordiv__", "__rfloordiv__", "__truediv__", "__rtruediv__", "__mod__",
          "__rmod__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__")
_DECISIONS = {"__lt__": "a comparison", "__le__": "a comparison", "__gt__": "a comparison",
              "__ge__": "a comparison", "__eq__": "a comparison", "__ne__": "a comparison",
              "__bool__": "a truth test", "__int__": "int()", "__float__": "float()",
              "__index__": "a use as an index", "__round__": "round()",
              "__trunc__": "a truncation", "__floor__": "floor()", "__ceil__": "ceil()",
              "__divmod__": "divmod()", "__rdivmod__": "divmod()"}


def _watched_class(base: type) -> type:
    body: dict[str, Any] = {"__hash__": base.__hash__}
    for name in _ARITH:
        if hasattr(base, name):
            body[name] = _arith(name, base)
    for name, what in _DECISIONS.items():
        if hasattr(base, name):
            body[name] = _decision(name, base, what)

    def new(cls: type, value: Any, path: str, decided: list[str]) -> Any:
        out = base.__new__(cls, value)
        out._st_path, out._st_decided = path, decided
        return out
    body["__new__"] = new
    body["__repr__"] = base.__repr__
    body["__reduce__"] = lambda self: (base, (base(self),))
    return type(f"Watched{base.__name__.title()}", (base,), body)


_WatchedInt = _watched_class(int)
_WatchedFloat = _watched_class(float)
