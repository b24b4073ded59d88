"""Caches outside the model that ``forward`` fills while exporting: a module-level dict of
position tables (``_CACHE[n] = torch.arange(n) * 2``), a list, or a ``functools.lru_cache``
function.  During export they receive traced values (our Proxies, sizes of the trace),
and eager code that reads them afterwards fails (torch.export leaves FakeTensors there,
which eager then returns as results).  After each export, the module-level containers of
the modules that define the model's classes and ``forward`` lose the entries holding traced
values, and an ``lru_cache`` function there that grew during the export is cleared.
(Only those that grew: an entry replaced in place stays, and fails loudly if read.)
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import torch

from safetrace.trace.proxy import Proxy

_CONTAINERS = (dict, list, set)
_TRACED = (Proxy, torch.SymInt, torch.SymFloat, torch.SymBool)
_LIMIT = 10_000  # (a larger container is not scanned: it costs more than an export)
# (id(namespace), len(namespace)) -> the names there holding containers or lru caches
_NAMES: dict[tuple[int, int], tuple[str, ...]] = {}
# class -> the namespaces of the user's modules defining it and its bases
_CLASS_SPACES: dict[type, tuple[dict, ...]] = {}


class GlobalCaches:
    """Around one export: clean the caches of the model's modules afterwards."""

    __slots__ = ("model", "fn", "sizes")

    def __init__(self, model: Any, fn: Any) -> None:
        self.model, self.fn = model, fn

    def __enter__(self) -> GlobalCaches:
        # each container and lru cache with its size: one that grew is looked at after
        self.sizes = [(c, len(c) if isinstance(c, _CONTAINERS) else c.cache_info().currsize)
                      for ns in _namespaces(self.model, self.fn) for c in _values(ns)]
        return self

    def __exit__(self, *exc: Any) -> None:
        for c, size in self.sizes:
            if isinstance(c, _CONTAINERS):
                if len(c) != size and len(c) <= _LIMIT:
                    _scrub(c)
            elif c.cache_info().currsize != size:  # (its entries cannot be read: all go)
                c.cache_clear()


def _namespaces(model: Any, fn: Any) -> list[dict]:
    """The global namespaces of the user's code the export runs: the modules defining the
    model's classes (torch's own excluded) and forward's function."""
    spaces: dict[int, dict] = {}
    classes = set()
    todo = [model] if isinstance(model, torch.nn.Module) else []
    while todo:  # (the classes of the model's modules: no named walk needed)
        m = todo.pop()
        if type(m) not in classes:
            classes.add(type(m))
        if m._modules:
            todo.extend(c for c in m._modules.values() if c is not None)
    for cls in classes:
        found = _CLASS_SPACES.get(cls)
        if found is None:
            if len(_CLASS_SPACES) > 10_000:
                _CLASS_SPACES.clear()
            found = _CLASS_SPACES[cls] = tuple(
                vars(sys.modules[c.__module__]) for c in cls.__mro__
                if _users(c.__module__) and c.__module__ in sys.modules)
        for ns in found:
            spaces[id(ns)] = ns
    g = getattr(getattr(fn, "__func__", fn), "__globals__", None)
    if isinstance(g, dict) and _users(g.get("__name__", "")):
        spaces.setdefault(id(g), g)
    return list(spaces.values())


def _users(module: str) -> bool:
    """Whether a module is the user's (not torch's, Python's own or this library's)."""
    return not (module.startswith(("torch.", "safetrace.")) or
                module in ("torch", "builtins", "safetrace"))


def _values(ns: dict) -> list:
    key = (id(ns), len(ns))
    names = _NAMES.get(key)
    if names is None:
        if len(_NAMES) > 1_000:
            _NAMES.clear()
        names = _NAMES[key] = tuple(
            k for k, v in list(ns.items()) if not k.startswith("__") and (
                isinstance(v, (*_CONTAINERS, functools._lru_cache_wrapper))))
    return [ns[k] for k in names if k in ns]


def _traced(v: Any) -> bool:
    if isinstance(v, _TRACED):
        return True
    return type(v) in (tuple, list) and any(isinstance(x, _TRACED) for x in v)


def _scrub(c: Any) -> None:
    if isinstance(c, dict):
        for k in [k for k, v in c.items() if _traced(k) or _traced(v)]:
            del c[k]
    elif isinstance(c, list):
        if any(map(_traced, c)):
            c[:] = [v for v in c if not _traced(v)]
    else:
        for v in [v for v in c if _traced(v)]:
            c.discard(v)
