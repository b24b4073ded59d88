"""The module namespaces whose globals an export's user code may read or write
(``global_caches.py`` watches them): the modules defining the model's classes and
forward's function, and those their code reaches by name -- a helper module it calls into
(``utils.step()``, ``from .counters import step``: ``global COUNT; COUNT += 1`` there is
state the program may depend on), a user class it names, a function held in a closure.

Found statically from the code's names (``co_names``, nested code included: a global
loaded, then an attribute read off a module), once per class and per function, and kept
while every namespace followed keeps its size (a name added or removed may bind another
module).  Only the user's own files are followed: installed libraries (transformers,
numpy) and the standard library are not (a transformers model's ~55 namespaces would
cost an export ~7 ms to copy and compare); a library class the model is made of still
has its own module watched, as before.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from typing import Any

import torch

from safetrace.trace.rewrite import code_names, original_code

_LIMIT = 2_000  # functions followed from one root (a larger closure is cut there)
_INSTALLED = tuple(sorted({os.path.join(os.path.realpath(p), "")
                           for k, p in sysconfig.get_paths().items()
                           if k in ("stdlib", "platstdlib", "purelib", "platlib")}))
_LIBRARY = tuple(os.path.join(os.path.realpath(os.path.dirname(m.__file__)), "")
                 for m in (torch, sys.modules[__name__.partition(".")[0]]))
# class -> (the namespaces its code reaches, the size of each namespace followed then)
_CLASSES: dict[type, tuple[tuple[dict, ...], tuple[tuple[dict, int], ...]]] = {}
# id(function) -> (function, its namespaces, the sizes followed): a function traced
# directly (st.export(fn, ...))
_FUNCTIONS: dict[int, tuple[Any, tuple[dict, ...], tuple[tuple[dict, int], ...]]] = {}
# a file name -> "user" (followed), "installed" or "no" (torch's, safetrace's: not followed)
_FILES: dict[str, str] = {}


def namespaces(model: Any, fn: Any, walk: Any = None) -> list[dict]:
    """The global namespaces of the user's code an export of `model` (`fn`: its forward or
    the traced function) may run: see the module's docstring.  (`walk`: the model's
    ``pytree.walk_of`` when the caller has it, its modules' classes read off it.)"""
    spaces: dict[int, dict] = {}
    if walk is not None:
        classes = {type(m) for _, m in walk}
    else:
        classes = set()
        todo = [model] if isinstance(model, torch.nn.Module) else []
        while todo:  # (the classes of the model's modules: no named walk needed)
            m = todo.pop()
            classes.add(type(m))
            if m._modules:
                todo.extend(c for c in m._modules.values() if c is not None)
    for cls in classes:
        hit = _CLASSES.get(cls)
        if hit is None or not all(len(ns) == n for ns, n in hit[1]):
            if len(_CLASSES) > 10_000:
                _CLASSES.clear()
            hit = _CLASSES[cls] = _Reach().of_class(cls)
        for ns in hit[0]:
            spaces[id(ns)] = ns
    f = getattr(fn, "__func__", fn)
    g = getattr(f, "__globals__", None)
    if isinstance(g, dict) and id(g) not in spaces:
        if users(g.get("__name__", "") or ""):  # (forward's own module, as a class's)
            spaces[id(g)] = g
        if isinstance(f, types.FunctionType):
            hit = _FUNCTIONS.get(id(f))
            if hit is None or hit[0] is not f or not all(len(ns) == n for ns, n in hit[2]):
                if len(_FUNCTIONS) > 10_000:
                    _FUNCTIONS.clear()
                reach = _Reach()
                reach.function(f)
                hit = _FUNCTIONS[id(f)] = (f, *reach.found())
            for ns in hit[1]:
                spaces.setdefault(id(ns), ns)
    return list(spaces.values())


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
        self.followed: dict[int, tuple[dict, int]] = {}
        self.seen: set[int] = set()

    def found(self) -> tuple[tuple[dict, ...], tuple[tuple[dict, int], ...]]:
        return tuple(self.spaces.values()), tuple(self.followed.values())

    def of_class(self, cls: type) -> tuple[tuple[dict, ...], tuple[tuple[dict, int], ...]]:
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
                for v in list(vars(c).values()):
                    self.value(v, ())

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
        self.followed.setdefault(id(g), (g, len(g)))
        for name in names:
            w = g.get(name)
            if w is not None:
                self.value(w, names)
        for cell in f.__closure__ or ():
            try:
                self.value(cell.cell_contents, names)
            except ValueError:  # (an empty cell)
                pass

    def value(self, v: Any, names: tuple[str, ...]) -> None:
        """Follow `v`, named by code reading `names` (the attributes a module is asked for)."""
        if isinstance(v, (staticmethod, classmethod)):
            v = v.__func__
        elif isinstance(v, property):
            for part in (v.fget, v.fset):
                self.value(part, names)
            return
        v = getattr(v, "__func__", v)  # (a bound method)
        if isinstance(v, types.FunctionType):
            self.function(v)
            self.value(getattr(v, "__wrapped__", None), names)
        elif isinstance(v, type):
            self.cls(v)
        elif isinstance(v, types.ModuleType):
            self.module(v, names)

    def module(self, m: types.ModuleType, names: tuple[str, ...]) -> None:
        """A module the code names (``utils.step()``): its namespace, and what the code
        reads off it (a submodule: ``pkg.sub.step()``)."""
        if id(m) in self.seen or not self._follows(m.__name__, getattr(m, "__file__", None)):
            return
        self.seen.add(id(m))
        ns = vars(m)
        self._space(ns)
        self.followed.setdefault(id(ns), (ns, len(ns)))
        for name in names:
            w = ns.get(name)
            if w is not None:
                self.value(w, names)
