"""The module namespaces whose globals an export's user code may read or write
(``global_caches.py`` watches them): the modules defining the model's classes and
forward's function, and those their code reaches by name -- a helper module it calls into
(``utils.step()``, ``from .counters import step``: ``global COUNT; COUNT += 1`` there is
state the program may depend on), a user class it names, a function held in a closure.

Also the attributes of a plain object such code reaches by name (``utils.counter.n += 1``
with ``counter = Counter()`` in a user file, a ``SimpleNamespace``, a callback kept in a
module-level list or dict): the object's ``__dict__`` is watched as a namespace is, named
``module:counter`` (``label``).

Found statically from the code's names (``co_names``, nested code included: a global
loaded, then an attribute read off a module or object), once per class and per function,
and kept while every namespace followed keeps its size (a name added or removed may bind
another module) and every object followed is still the one its name holds.  Only the
user's own files are followed: installed libraries (transformers, numpy) and the standard
library are not (a transformers model's ~55 namespaces would cost an export ~7 ms to copy
and compare); a library class the model is made of still has its own module watched, as
before.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
import sysconfig
import types
from typing import Any

import torch

from safetrace.trace.rewrite import code_names, original_code
from safetrace.trace.usercode import classes_of, held_in

_LIMIT = 2_000  # functions followed from one root (a larger closure is cut there)
_INSTALLED = tuple(sorted({os.path.join(os.path.realpath(p), "")
                           for k, p in sysconfig.get_paths().items()
                           if k in ("stdlib", "platstdlib", "purelib", "platlib")}))
_LIBRARY = tuple(os.path.join(os.path.realpath(os.path.dirname(m.__file__)), "")
                 for m in (torch, sys.modules[__name__.partition(".")[0]]))
_PLAIN = frozenset((int, float, bool, str, bytes, type(None), complex))
_ITEMS = 64  # (a module-level list, tuple or dict whose items are followed: at most this long)
_ITEMS_SAME = object()  # (a check: every item still the one followed)
# what a cached reach still requires: (namespace, its size then, a name there, the value it
# held) -- the name None where only the size counts
_Checks = tuple[tuple[dict, int, Any, Any], ...]
# class -> (the namespaces its code reaches, what keeps that answer current)
_CLASSES: dict[type, tuple[tuple[dict, ...], _Checks]] = {}
# id(function) -> (function, its namespaces, what keeps them current): a function traced
# directly (st.export(fn, ...))
_FUNCTIONS: dict[int, tuple[Any, tuple[dict, ...], _Checks]] = {}
# id(an object's __dict__ followed) -> its name in messages ("pkg.mod:counter")
_LABELS: dict[int, str] = {}
# a file name -> "user" (followed), "installed" or "no" (torch's, safetrace's: not followed)
_FILES: dict[str, str] = {}


def namespaces(model: Any, fn: Any, walk: Any = None) -> list[dict]:
    """The global namespaces of the user's code an export of `model` (`fn`: its forward or
    the traced function) may run: see the module's docstring.  (`walk`: the model's
    ``pytree.walk_of`` when the caller has it, its modules' classes read off it.)"""
    spaces: dict[int, dict] = {}
    if walk is None:
        walk = [("", m) for m in model.modules()] if isinstance(model, torch.nn.Module) else []
    classes = classes_of(walk)
    for m, held in held_in(walk):  # code set on an instance (``model.cb = utils.step``, a hook)
        where = f"{type(m).__module__}:{type(m).__qualname__}"
        for ns in _of_instance(held, where):
            spaces.setdefault(id(ns), ns)
    for cls in classes:
        hit = _CLASSES.get(cls)
        if hit is None or not _current(hit[1]):
            if len(_CLASSES) > 10_000:
                _CLASSES.clear()
                _LABELS.clear()
            hit = _CLASSES[cls] = _Reach().of_class(cls)
        for ns in hit[0]:
            spaces[id(ns)] = ns
    f = getattr(fn, "__func__", fn)
    g = getattr(f, "__globals__", None)
    if isinstance(g, dict) and id(g) not in spaces:
        if users(g.get("__name__", "") or ""):  # (forward's own module, as a class's)
            spaces[id(g)] = g
        if isinstance(f, types.FunctionType):
            for ns in _of_function(f):
                spaces.setdefault(id(ns), ns)
    return list(spaces.values())


def _of_function(f: types.FunctionType) -> tuple[dict, ...]:
    """The namespaces function `f`'s code reaches, cached while they hold."""
    hit = _FUNCTIONS.get(id(f))
    if hit is None or hit[0] is not f or not _current(hit[2]):
        if len(_FUNCTIONS) > 10_000:
            _FUNCTIONS.clear()
            _LABELS.clear()
        reach = _Reach()
        reach.function(f)
        hit = _FUNCTIONS[id(f)] = (f, *reach.found())
    return hit[1]


def _of_instance(held: list[tuple[str, Any]], where: str) -> list[dict]:
    """The namespaces that the code a module instance holds reaches (`held`: its
    attributes as ``usercode.held_code`` gives them; `where`: its class, for labels).  A
    function alone is cached as a traced one is; anything else is walked each export."""
    out: list[dict] = []
    for key, v in held:
        if type(v) is types.FunctionType:
            out += _of_function(v)
            continue
        reach = _Reach()
        if key.startswith("_") and key.endswith("_hooks") and isinstance(v, dict):
            for w in list(v.values()):  # (a hook dict's values: the hooks)
                reach.value(w, (), (None, None, f"{where}.{key}"))
        else:
            reach.value(v, (), (None, None, f"{where}.{key}"))
        out += reach.found()[0]
    return out


def label(ns: dict) -> str:
    """A namespace as messages name it: a module's name, or an object's (``pkg.mod:counter``)."""
    found = _LABELS.get(id(ns))
    return found if found is not None else ns.get("__name__", "?")


def _current(checks: _Checks) -> bool:
    for ns, n, key, v in checks:
        if len(ns) != n:
            return False
        if key is _ITEMS_SAME:  # (a list, tuple or dict whose items were followed)
            if not all(map(operator.is_, ns.values() if type(ns) is dict else ns, v)):
                return False
        elif key is not None and ns.get(key) is not v:
            return False
    return True


def users(module: str) -> bool:
    """Whether a module is the user's (not torch's, Python's own or this library's)."""
    return not (module.startswith(("torch.", "safetrace.")) or
                module in ("torch", "builtins", "safetrace"))


def _kind(path: str) -> str:
    found = _FILES.get(path)
    if found is None:
        if len(_FILES) > 10_000:
            _FILES.clear()
        if path.startswith("<"):  # exec'd source (notebooks, generated code) is the user's
            found = "no" if path.startswith("<frozen") else "user"
        else:
            real = os.path.realpath(path)
            found = "no" if real.startswith(_LIBRARY) else \
                "installed" if real.startswith(_INSTALLED) else "user"
        _FILES[path] = found
    return found


class _Reach:
    """One walk from a class or function through the names its code reads."""

    def __init__(self) -> None:
        self.spaces: dict[int, dict] = {}
        self.followed: dict[int, tuple[dict, int, Any, Any]] = {}
        self.bound: list[tuple[dict, int, Any, Any]] = []  # (objects: still the one named)
        self.seen: set[int] = set()

    def found(self) -> tuple[tuple[dict, ...], _Checks]:
        return tuple(self.spaces.values()), (*self.followed.values(), *self.bound)

    def of_class(self, cls: type) -> tuple[tuple[dict, ...], _Checks]:
        self.cls(cls)
        return self.found()

    @staticmethod
    def _follows(module: str, path: str | None) -> bool:
        """Whether code of `module` (its file `path`) is followed: the user's own files."""
        return users(module) and path is not None and _kind(path) == "user"

    def _space(self, ns: dict) -> None:
        self.spaces.setdefault(id(ns), ns)

    def cls(self, cls: type) -> None:
        for c in cls.__mro__:
            if id(c) in self.seen or c is object:
                continue
            self.seen.add(id(c))
            m = sys.modules.get(c.__module__ or "")
            if m is None or not users(m.__name__):
                continue
            self._space(vars(m))  # (a library's class too: its own module, watched)
            if self._follows(m.__name__, getattr(m, "__file__", None)):
                space = vars(c)
                for k, v in list(space.items()):
                    self.value(v, (), (space, k, f"{m.__name__}:{c.__qualname__}.{k}"))

    def function(self, f: types.FunctionType) -> None:
        if id(f) in self.seen or len(self.seen) > _LIMIT:
            return
        self.seen.add(id(f))
        code = original_code(f)
        g = f.__globals__
        if not isinstance(g, dict) or not \
                self._follows(g.get("__name__", "") or "", code.co_filename):
            return
        self._space(g)
        names = tuple(sorted(code_names(code)))  # (a fixed order: the spaces found)
        self.followed.setdefault(id(g), (g, len(g), None, None))
        for name in names:
            w = g.get(name)
            if w is not None:
                self.value(w, names, (g, name, f"{g.get('__name__', '?')}:{name}"))
        where = f"{g.get('__name__', '?')}:{f.__qualname__}"
        for var, cell in zip(code.co_freevars, f.__closure__ or ()):
            try:
                self.value(cell.cell_contents, names, (None, None, f"{where}.{var}"))
            except ValueError:  # (an empty cell)
                pass

    def value(self, v: Any, names: tuple[str, ...], where: tuple | None = None) -> None:
        """Follow `v`, named by code reading `names` (the attributes a module or object is
        asked for); `where`: (the namespace holding it, its name there, its label)."""
        if isinstance(v, (staticmethod, classmethod)):
            v = v.__func__
        elif isinstance(v, property):
            for part in (v.fget, v.fset):
                self.value(part, names)
            return
        elif isinstance(v, functools.partial):  # (its function and what it is bound to)
            for part in (v.func, *v.args, *v.keywords.values()):
                if type(part) not in _PLAIN:
                    self.value(part, names, where)
            return
        if isinstance(v, types.MethodType) and where is not None and self._object(v.__self__):
            self.obj(v.__self__, names, (None, None, f"{where[2]}.__self__"))
        v = getattr(v, "__func__", v)  # (a bound method)
        if isinstance(v, types.FunctionType):
            self.function(v)
            self.value(getattr(v, "__wrapped__", None), names)
        elif isinstance(v, type):
            self.cls(v)
        elif isinstance(v, types.ModuleType):
            self.module(v, names)
        elif where is not None:
            if type(v) in (list, tuple, dict) and len(v) <= _ITEMS:  # (callbacks kept there)
                if id(v) in self.seen:
                    return
                self.seen.add(id(v))
                items = v.values() if type(v) is dict else v
                self.bound.append((v, len(v), _ITEMS_SAME, tuple(items)))
                for i, w in (v.items() if type(v) is dict else enumerate(v)):
                    if type(w) not in _PLAIN:
                        self.value(w, names, (None, None, f"{where[2]}[{i!r}]"))
            elif self._object(v):
                self.obj(v, names, where)

    def _object(self, v: Any) -> bool:
        """Whether `v` is a plain object of the user's whose attributes are state: an
        instance of a class in the user's files (not a module, tensor or nn.Module), or a
        ``SimpleNamespace``."""
        cls = type(v)
        if cls is types.SimpleNamespace:
            return True
        if cls in _PLAIN or isinstance(v, (torch.nn.Module, torch.Tensor)) or \
                not isinstance(getattr(v, "__dict__", None), dict):
            return False
        m = sys.modules.get(cls.__module__ or "")
        return m is not None and self._follows(m.__name__, getattr(m, "__file__", None))

    def obj(self, v: Any, names: tuple[str, ...], where: tuple) -> None:
        """An object the code names (``utils.counter``): its ``__dict__`` watched as a
        namespace, its class's code followed, and what the code reads off it."""
        owner, key, name = where
        if owner is not None:  # (a cached reach holds while the name holds this object)
            self.bound.append((owner, len(owner), key, v))
        ns = vars(v)
        if len(name) < len(_LABELS.get(id(ns), name + ".")):  # (the plainest name it has)
            _LABELS[id(ns)] = name
        if id(v) in self.seen:
            return
        self.seen.add(id(v))
        self._space(ns)
        self.followed.setdefault(id(ns), (ns, len(ns), None, None))
        self.cls(type(v))
        for attr in names:
            w = ns.get(attr)
            if w is not None and type(w) not in _PLAIN:
                self.value(w, names, (ns, attr, f"{name}.{attr}"))

    def module(self, m: types.ModuleType, names: tuple[str, ...]) -> None:
        """A module the code names (``utils.step()``): its namespace, and what the code
        reads off it (a submodule: ``pkg.sub.step()``)."""
        if id(m) in self.seen or not self._follows(m.__name__, getattr(m, "__file__", None)):
            return
        self.seen.add(id(m))
        ns = vars(m)
        self._space(ns)
        self.followed.setdefault(id(ns), (ns, len(ns), None, None))
        for name in names:
            w = ns.get(name)
            if w is not None:
                self.value(w, names, (ns, name, f"{m.__name__}:{name}"))
