"""Caches outside the model that ``forward`` fills while exporting: a module-level dict of
position tables (``_CACHE[n] = torch.arange(n) * 2``), a list, or a ``functools.lru_cache``
function.  During export they receive traced values (our Proxies, sizes of the trace),
and eager code that reads them afterwards fails (torch.export leaves FakeTensors there,
which eager then returns as results).  After each export, the module-level containers of
the modules whose code the export may run (``user_spaces.py``: those defining the model's
classes and ``forward``, and the helper modules their code calls into) lose the entries
holding traced values, and an ``lru_cache`` function there that grew during the export is
cleared.
(Only those that grew: an entry replaced in place stays, and fails loudly if read.)

The same namespaces are the Python state forward may change outside the model
(``global COUNT; COUNT += 1``, ``_STATE["n"] += 1``): ``changes()`` lists the numbers,
strings and small containers forward left changed, which ``python_state.py`` checks as it
checks the model's attributes.  They are not put back (torch.export leaves them too, and
another thread may be the writer): a change only makes the export look again.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import torch

from safetrace.exporter.snapshot import ABSENT, CONTENTS, items_changed, plain_item
from safetrace.exporter.user_spaces import label, namespaces
from safetrace.trace.proxy import Proxy
from safetrace.trace.session import sessions_entered

_CONTAINERS = (dict, list, set)
_KINDS = (*_CONTAINERS, functools._lru_cache_wrapper)  # (what is scanned and cleaned)
_TRACED = (Proxy, torch.SymInt, torch.SymFloat, torch.SymBool)
_LIMIT = 10_000  # (a larger container is not scanned: it costs more than an export)
_COPIED = 256  # (a container compared item by item for changes: at most this long)
_SCALARS = (int, float, bool, str, type(None))
_GLOBAL = "global:"  # (the path of a module-level name: python_state.py, errors)
# (id(namespace), len(namespace)) -> the names there holding containers or lru caches
_NAMES: dict[tuple[int, int], tuple[str, ...]] = {}


class GlobalCaches:
    """Around one export: clean the caches of the model's modules afterwards."""

    __slots__ = ("model", "fn", "walk", "sizes", "spaces", "quiet")

    def __init__(self, model: Any, fn: Any, walk: Any = None) -> None:
        self.model, self.fn = model, fn
        self.walk = walk  # the model's pytree.walk_of, when the caller has it

    def __enter__(self) -> GlobalCaches:
        self.sizes, self.spaces = [], []
        self.quiet = -1  # (changes(): sessions_entered() when it found every namespace as
        # it was, which no export changed since while the number is the same)
        for ns in namespaces(self.model, self.fn, self.walk):
            found = _values(ns)
            if not found:  # (the usual namespace: no container, no lru cache)
                self.spaces.append((ns, ns.copy(), ()))
                continue
            # each container and lru cache with its size: one that grew is looked at after
            self.sizes += [(c, len(c) if isinstance(c, _CONTAINERS)
                            else c.cache_info().currsize) for c in found]
            # the namespace as it was, and a copy of each of its small containers (plain
            # dicts, lists and sets only: a subclass's copy may run its code, as
            # transformers' ACT2FN instantiating on every read does)
            self.spaces.append((ns, ns.copy(), [(c, c.copy()) for c in found
                                                if type(c) in _CONTAINERS and len(c) <= _COPIED]))
        return self

    def changes(self) -> list[tuple[str, Any, Any, Any, Any]]:
        """The module-level Python state forward changed, as ``snapshot.ModuleGuard``
        lists a model's: (path, owner, name, value before, value after) per number, string
        or None rebound, (path, the container, CONTENTS, items before, items now) per small
        dict/list/set whose items changed (plain items only: numbers, strings, tensors)."""
        found: list = []
        same = operator.is_
        entered, quiet = sessions_entered(), True
        for ns, before, copies in self.spaces:
            # (values by identity: a name rebound shows; keys need no look of their own)
            if len(ns) != len(before) or not all(map(same, ns.values(), before.values())):
                quiet = False
                owner = None
                for k, v in ns.items():
                    old = before.get(k, ABSENT)
                    if v is old or k.startswith("__") or not _plain_global(v) or (
                            old is not ABSENT and not _plain_global(old)) or (
                            type(v) is type(old) and v == old):
                        continue
                    owner = owner or _Space(ns)
                    found.append((f"{_GLOBAL}{label(ns)}.{k}", owner, k, old, v))
            for c, items in copies:
                if not items_changed(c, items):
                    continue
                if all(map(plain_item, c.items() if isinstance(c, dict) else c)):
                    name = next((k for k, v in ns.items() if v is c), "?")
                    found.append((f"{_GLOBAL}{label(ns)}.{name}", c, CONTENTS,
                                  items, c.copy()))
        if quiet:
            self.quiet = entered
        return found

    def __exit__(self, *exc: Any) -> None:
        # (`global N; N = x.shape[0]`: N as it was; no look where changes() found every
        # namespace as it was and no export ran forward since: no traced value got there)
        for ns, before, _ in self.spaces if self.quiet != sessions_entered() else ():
            if len(ns) != len(before) or not all(map(operator.is_, ns.values(),
                                                     before.values())):
                for k in [k for k, v in ns.items() if _traced(v)]:
                    if k in before and not _traced(before[k]):
                        ns[k] = before[k]
                    else:
                        del ns[k]
        for c, size in self.sizes:
            if isinstance(c, _CONTAINERS):
                if len(c) != size and len(c) <= _LIMIT:
                    _scrub(c)
            elif c.cache_info().currsize != size:  # (its entries cannot be read: all go)
                c.cache_clear()


def _plain_global(v: Any) -> bool:
    return type(v) in _SCALARS or isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool))


class _Space:
    """A module's namespace as an object whose ``__dict__`` it is (python_state.py sets a
    stand-in value through ``owner.__dict__``)."""

    def __init__(self, ns: dict) -> None:
        self.__dict__ = ns


def _values(ns: dict) -> list:
    key = (id(ns), len(ns))
    names = _NAMES.get(key)
    if names is None:
        if len(_NAMES) > 1_000:
            _NAMES.clear()
        names = _NAMES[key] = tuple(
            k for k, v in list(ns.items()) if not k.startswith("__") and (
                isinstance(v, _KINDS)))
    # (a name may since hold another kind of value at the same namespace size: `spec = {...}`
    # in one loop turn, `spec = None` in the next)
    return [v for v in map(ns.get, names) if isinstance(v, _KINDS)]


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
