"""A torch function run with a few of its module's globals read as other values, nothing of
torch's modified.

Setting a torch module's attribute around a call (``module.helper = ours; try: ...
finally: restore``) changes it for every thread meanwhile: a ``torch.export`` on another
thread would run with ours.  Here the function is copied (same code object, defaults,
keyword defaults and closure) with a global namespace holding the names replaced and
reading every other name through to the module's current one (a later patch of torch's
module, a test's monkeypatch, is seen), so torch's function and its module stay as they
were for every other caller.  (Python looks up a global of a function whose globals are a
``dict`` subclass by ``__getitem__``, so ``__missing__`` serves the names read through;
builtins come from the namespace's ``__builtins__``.)
"""

from __future__ import annotations

import builtins
import sys
import types
from typing import Any


def rebound(fn: Any, names: dict[str, Any]) -> Any:
    """`fn` (a plain function of a module) as a copy whose globals read each of `names` as
    its value here; None where `fn` is not a plain function whose globals are its module's
    namespace or whose own code reads none of `names` as a name (a wrapper, a patched
    method, a renamed helper): the caller then uses another way."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "", None)
    if not isinstance(fn, types.FunctionType) or module is None or \
            fn.__globals__ is not vars(module) or \
            not all(name in fn.__code__.co_names for name in names):
        return None
    copy = types.FunctionType(fn.__code__, ReadThrough(vars(module), names), fn.__name__,
                              fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = dict(fn.__kwdefaults__ or {})
    copy.__qualname__ = fn.__qualname__
    copy.__doc__ = fn.__doc__
    return copy


class ReadThrough(dict):
    """A module's namespace read through (its current values), but for the names this dict
    holds (the replaced ones and ``__builtins__``)."""

    def __init__(self, namespace: dict, names: dict[str, Any]) -> None:
        super().__init__(names)
        base = namespace.get("__builtins__", builtins)
        self["__builtins__"] = base
        self.namespace = namespace
        self.builtins = vars(base) if isinstance(base, types.ModuleType) else base

    def __missing__(self, name: str) -> Any:
        value = self.namespace.get(name, _ABSENT)
        if value is _ABSENT:  # (a builtin: found here rather than by a second lookup)
            value = self.builtins.get(name, _ABSENT)
            if value is _ABSENT:
                raise KeyError(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        return self.namespace.get(name, default)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self.namespace


_ABSENT = object()
