"""The model as export found it: a snapshot of every submodule's state, put back after
tracing whatever ``forward`` did (export never mutates the model)."""

from __future__ import annotations

import functools
import operator
import types
from typing import Any

import torch

from safetrace import errors as E
from safetrace import pytree
from safetrace.trace.modules import followed
from safetrace.trace.usercode import held_code, scanned_keys
from safetrace.trace.proxy import Proxy


_CONTAINERS = {list: list, dict: dict, set: set}
_SCALARS = frozenset({int, float, bool, str, type(None)})
_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)  # (a value from the input's sizes)
CONTENTS = "<contents>"  # (the attribute of a container forward changed: its items)
ABSENT = object()  # (the value before of an attribute forward added)


def plain_item(item: Any) -> bool:
    """Whether a container's item (a dict's (key, value)) holds only plain Python values,
    values from the input's sizes or tensors (``self.hist.append(x)``)."""
    if type(item) is tuple:
        return all(map(plain_item, item))
    return type(item) in _SCALARS or isinstance(item, (*_SYMBOLIC, torch.Tensor))


def items_changed(obj: Any, contents: Any) -> bool:
    """Whether a container's items differ from its copy (by identity: items may be tensors)."""
    if len(obj) != len(contents):
        return True
    if isinstance(obj, list):
        return not all(map(operator.is_, obj, contents))
    if isinstance(obj, dict):
        return any(k not in contents or contents[k] is not v for k, v in obj.items())
    return obj != contents


_MODULE_INTERNALS = frozenset(torch.nn.Module().__dict__)
# where an export following a module's calls sets its own call (trace/modules.py): another
# export running at the same time may set or remove it while this one runs
_FOLLOWED_KEY = "_compiled_call_impl"
# tuple(a module's __dict__ keys) -> (those that are not nn.Module's own, an itemgetter
# of their values or None for fewer than two, a getter of the values usercode.held_code
# scans or None) (modules of one class share one key layout: the filter runs once per
# layout)
_USER_KEYS: dict[tuple, tuple] = {}
# the types of attribute values the snapshot keeps nothing of beyond the module's
# ``__dict__`` copy: no container, tensor or object with attributes of its own (a tuple
# has no ``__dict__``: a conv's kernel_size)
_KEPT_AS_IS = frozenset((*_SCALARS, tuple))


def _user_keys(layout: tuple) -> tuple:
    if len(_USER_KEYS) > 10_000:
        _USER_KEYS.clear()
    user = tuple(k for k in layout if k not in _MODULE_INTERNALS)
    # the keys usercode.held_code scans (the user's and nn.Module's own flag attributes),
    # read in one call (a key twice where there is one: a tuple all the same), where they
    # hold every user key (not so while another export's call is set: then None)
    scanned = scanned_keys(layout)
    plain = None if not set(user) <= set(scanned) else \
        operator.itemgetter(*scanned) if len(scanned) > 1 else \
        operator.itemgetter(scanned[0], scanned[0]) if scanned else _NO_VALUES
    hit = _USER_KEYS[layout] = (user, operator.itemgetter(*user) if len(user) > 1 else None,
                                plain)
    return hit


def _NO_VALUES(d: dict) -> tuple:
    return ()


# a module's hook tables: forward may register hooks on its submodules lazily, once
# (transformers' output capturing installs them on its first call and marks the model with
# an attribute); the snapshot takes their contents back with the attribute, or the next
# eager call would install them again beside the first ones
_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs",
                "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs",
                "_backward_hooks", "_backward_pre_hooks")
_EMPTY: dict = {}


_HOOKS_OF = operator.itemgetter(*_HOOK_TABLES)  # (the seven read in one C call)


def _hook_tables(d: dict) -> tuple:
    """A module's hook tables where one is missing (a module pickled by an older torch:
    a table it lacks is empty)."""
    return tuple(d.get(k, _EMPTY) for k in _HOOK_TABLES)


# type -> whether its objects held as a module attribute are plain Python objects whose
# attributes forward may change (``self.cfg.n += 1``): snapshot and restored one level deep
_OBJECT_TYPES: dict[type, bool] = {}


def _plain_object(t: type) -> bool:
    found = _OBJECT_TYPES.get(t)
    if found is None:
        found = _OBJECT_TYPES[t] = t not in _SCALARS and not issubclass(
            t, (torch.nn.Module, torch.Tensor, type, types.ModuleType, types.FunctionType,
                types.MethodType, types.BuiltinFunctionType, functools.partial)) and \
            not any("__call__" in c.__dict__ for c in t.__mro__)
    return found


def _copy(table: Any) -> dict:
    """A copy of a module's parameters or buffers: its dict, or a TorchScript module's
    table kept in C++ (torch.jit's OrderedDictWrapper: items() only)."""
    return table.copy() if isinstance(table, dict) else dict(table.items())


def _table(table: Any) -> dict:
    return table if isinstance(table, dict) else dict(table.items())


def _script_attributes(mod: Any) -> list[tuple[Any, str, Any]]:
    """A TorchScript module's attributes held in C++ (``self.n = self.n + 1`` in a script
    method run as Python while exporting writes there, not to ``__dict__``): (its C++
    module, name, value) for each that is not a tensor (parameters and buffers are restored
    through their tables)."""
    c = getattr(mod, "_c", None)
    if not isinstance(mod, torch.jit.ScriptModule) or c is None:
        return []
    try:
        named = torch._C._jit_debug_module_iterators(c)["named_attributes"]
    except (AttributeError, KeyError, RuntimeError):  # (another torch: nothing to list)
        return []
    return [(c, k, v) for k, v in named if not isinstance(v, torch.Tensor)]


def _same(a: Any, b: Any) -> bool:
    """Whether a TorchScript attribute read back equals the saved one (reads convert anew:
    identity says nothing)."""
    try:
        return a is b or (type(a) is type(b) and bool(a == b))
    except Exception:  # noqa: BLE001 - a value without a plain ==: set it back
        return False


def _restore(table: Any, saved: dict) -> None:
    if isinstance(table, dict):
        table.clear()
        table.update(saved)
    else:  # (a TorchScript module's table: its names are fixed, each value is set back)
        for k, v in saved.items():
            if table[k] is not v:
                table[k] = v


class ModuleGuard:
    """Snapshot every submodule's state; restore it after tracing whatever happened.

    Parameters, buffers, tensor attributes, the training flag and every other attribute
    (``self.calls += 1`` in forward) come back as they were, and so do the contents of
    list/dict/set attributes (``self.log.append(...)``): export never mutates the model.
    """

    def __init__(self, model: Any, walk: list | None = None) -> None:
        self.model = model
        self.walk = walk  # pytree.module_walk(model), when the caller has it
        # per module: (path, module, its parameters, buffers, training flag, __dict__ (copies),
        # its key order, its hook tables, copies of their contents or None where all were
        # empty)
        self.saved: list = []
        # (list/dict/set attribute, its copy, its path)
        self.containers: list[tuple[Any, Any, str]] = []
        # (a plain object held as an attribute, a copy of its __dict__, its path)
        self.objects: list[tuple[Any, dict, str]] = []
        self.changed: list[tuple[str, Any, Any]] = []
        self.scripted: list[tuple[Any, str, Any]] = []  # (C++ module, attribute, value)
        # (path, module, attribute, value before, value after) per plain Python value
        # (int, float, bool, str, None) forward changed: exporter/python_state.py
        self.scalars: list[tuple[str, Any, str, Any, Any]] = []
        # (path, attribute, tensor) per plain tensor attribute of a module (``self.c =
        # torch.ones(3)``): the program's constants' names (api.Exporter._constant_namer)
        self.tensor_attrs: list[tuple[str, str, Any]] = []

    def __enter__(self) -> ModuleGuard:
        if isinstance(self.model, torch.nn.Module) and not self.saved:
            tensor = torch.Tensor
            objects = _OBJECT_TYPES  # (_plain_object's table, read inline: an int's answer)
            hooks_of = _HOOKS_OF
            walk = self.walk if self.walk is not None else pytree.module_walk(self.model)
            # the code the modules hold (usercode.held_in's answer), found with the
            # snapshot where the walk has none yet: a module whose scanned values are all
            # plain Python scalars and whose hook dicts are empty holds none (held_code's
            # scan of any other)
            held = [] if type(walk) is pytree.ModuleWalk and walk.held is None else None
            scanned_ids: set[int] = set()  # (modules held_code scanned: each once)
            seen: set[int] = set()
            for mname, mod in walk:
                d = mod.__dict__
                # the user's attributes (nn.Module's own bookkeeping, most of __dict__,
                # holds no tensor and no user container; it is restored below as a whole)
                layout = tuple(d)
                hit = _USER_KEYS.get(layout)
                user, values, scanned = hit if hit is not None else _user_keys(layout)
                try:
                    tables = hooks_of(d)
                except KeyError:
                    tables = _hook_tables(d)
                hooked = any(tables)
                if held is not None:  # (plain: every scanned value a Python scalar)
                    plain = scanned is not None and _SCALARS.issuperset(map(type, scanned(d)))
                    if (hooked or not plain) and id(mod) not in scanned_ids:
                        scanned_ids.add(id(mod))
                        attrs = held_code(mod)
                        if attrs:
                            held.append((mod, attrs))
                    if plain:
                        user = ()  # (the user's keys are among those scanned)
                # (each value's type checked in one pass in C first: numbers, strings and
                # tuples, the usual attributes, need nothing below)
                if user and _KEPT_AS_IS.issuperset(
                        map(type, values(d)) if values is not None else (type(d[user[0]]),)):
                    user = ()
                for k in user:
                    v = d[k]
                    t = type(v)
                    if t in _CONTAINERS:  # user containers: their contents too
                        self.containers.append((v, _CONTAINERS[t](v),
                                                f"{mname}.{k}" if mname else k))
                    elif isinstance(v, tensor):
                        self.tensor_attrs.append((mname, k, v))
                    elif (objects[t] if t in objects else _plain_object(t)) and \
                            type(getattr(v, "__dict__", None)) is dict \
                            and id(v) not in seen:  # (self.cfg: one snapshot per object)
                        seen.add(id(v))
                        self.objects.append((v, v.__dict__.copy(),
                                             f"{mname}.{k}" if mname else k))
                # (copies of the dicts: their values and keys are compared by identity
                # on exit, in order, which finds any change in one pass each; the hook
                # tables with copies of their contents, None where all were empty, in
                # the same entry: no second list)
                params, buffers = mod._parameters, mod._buffers
                # (_copy inline for plain dicts: two Python calls less per module)
                self.saved.append((mname, mod,
                                   params.copy() if type(params) is dict else _copy(params),
                                   buffers.copy() if type(buffers) is dict else _copy(buffers),
                                   mod.training, d.copy(), layout, tables,
                                   tuple(t.copy() for t in tables) if hooked else None))
                if "_c" in d or "_actual_script_module" in d:
                    self.scripted += _script_attributes(mod)
            if held is not None:
                walk.held = held
        return self

    def __exit__(self, *exc: Any) -> None:
        same = operator.is_
        hooked = []  # (path, hook tables, copies) of the modules with a hook before or now
        for mname, mod, params, buffers, training, everything, layout, tables, copies \
                in self.saved:
            # whether each dict differs from its copy now: the same keys in the same order
            # (tuples of keys compared in C: equal keys are the same key to a dict), each
            # with the same value object (a key removed and added again reads as changed:
            # then the dict is restored from the copy, which changes nothing)
            now = mod._buffers
            if type(now) is not dict:
                now = _table(now)
            # (an empty table that is still empty: no pass at all)
            if len(now) != len(buffers) or buffers and (
                    not all(map(same, now.values(), buffers.values()))
                    or tuple(now) != tuple(buffers)):
                now = mod._buffers
                for k, v in now.items():
                    if k in buffers and buffers[k] is not v:
                        self.changed.append((f"{mname}.{k}" if mname else k, v, buffers[k]))
                _restore(now, buffers)
            now = mod._parameters
            if type(now) is not dict:
                now = _table(now)
            if len(now) != len(params) or params and (
                    not all(map(same, now.values(), params.values()))
                    or tuple(now) != tuple(params)):
                _restore(mod._parameters, params)
            d = mod.__dict__
            if len(d) != len(everything) or not all(map(same, d.values(), everything.values())) \
                    or tuple(d) != layout:  # (the keys at entry: `everything`'s)
                self._note_scalars(mname, mod, d, everything)
                for k in [k for k in d if k not in everything]:
                    if not (k == _FOLLOWED_KEY and followed(d[k])):  # (another export's)
                        del d[k]
                if followed(everything.get(_FOLLOWED_KEY)):  # (another export's, which
                    # removes it when it ends: never put back)
                    everything = {k: v for k, v in everything.items() if k != _FOLLOWED_KEY}
                    if not followed(d.get(_FOLLOWED_KEY)):
                        d.pop(_FOLLOWED_KEY, None)
                d.update(everything)
            if mod.training is not training:  # (bools; a Parameter named training: as is)
                mod.training = training
            if copies is not None or any(tables):  # (taken back below, in module order)
                hooked.append((mname, tables, copies))
        for mname, tables, copies in hooked:
            for name, t, before in zip(_HOOK_TABLES, tables, copies or (_EMPTY,) * 7):
                if t.keys() != before.keys():  # (hooks forward registered: taken back,
                    # and traced again with them as state, python_state.py)
                    self.scalars.append((f"{mname}.{name}" if mname else name, t, CONTENTS,
                                         dict(before), dict(t)))
                    t.clear()
                    t.update(before)
        for obj, before, path in self.objects:
            d = obj.__dict__
            if len(d) != len(before) or not all(map(same, d.values(), before.values())) \
                    or not all(map(same, d, before)):
                self._note_object(path, obj, d, before)  # (self.cfg.n += 1 in forward)
                d.clear()
                d.update(before)
        for c, k, v in self.scripted:
            if not _same(c.getattr(k), v):
                c.setattr(k, v)
        for obj, contents, path in self.containers:
            if items_changed(obj, contents):  # self.log.append(...) in forward: undone
                if all(map(plain_item, obj.items() if isinstance(obj, dict) else obj)):
                    now = _CONTAINERS[type(obj)](obj)
                    self.scalars.append((path, obj, CONTENTS, contents, now))
                obj.clear()
                if isinstance(obj, list):
                    obj.extend(contents)
                else:
                    obj.update(contents)

    def _note_scalars(self, mname: str, mod: Any, now: dict, before: dict) -> None:
        for k, v in now.items():
            old = before.get(k, ABSENT)
            if isinstance(v, torch.Tensor) and isinstance(old, torch.Tensor) and v is not old:
                # a plain tensor attribute replaced (``self.c = self.c + 1``): traced again
                # with a stand-in, as an object's (python_state.py)
                self.scalars.append((f"{mname}.{k}" if mname else k, mod, k, old, v))
                continue
            if v is old or (type(v) not in _SCALARS and not isinstance(v, _SYMBOLIC)) or (
                    old is not ABSENT and type(old) not in _SCALARS):
                continue
            if type(v) is type(old) and v == old:
                continue
            self.scalars.append((f"{mname}.{k}" if mname else k, mod, k, old, v))

    def _note_object(self, path: str, obj: Any, now: dict, before: dict) -> None:
        """Like _note_scalars for a plain object's attributes, tensors included (a tensor
        forward leaves there is traced again with a stand-in: python_state.py)."""
        for k, v in now.items():
            old = before.get(k, ABSENT)
            if v is old or not plain_item(v) or (old is not ABSENT and not plain_item(old)):
                continue
            if type(v) is type(old) and type(v) in _SCALARS and v == old:
                continue
            self.scalars.append((f"{path}.{k}", obj, k, old, v))

    def reassigned_buffers(self) -> list[tuple[str, Any, Any]]:
        """(name, the value forward assigned, the buffer it replaced) per buffer assigned."""
        return self.changed


def same_form(target: str, value: Any, before: Any) -> None:
    """Refuse a buffer that forward reassigned with another shape or dtype (a growing cache):
    module state keeps one, and the next call would run a graph traced for the old one."""
    if not (isinstance(value, torch.Tensor) and isinstance(before, torch.Tensor)):
        return
    shape = value.st_meta.shape if isinstance(value, Proxy) else tuple(value.shape)
    dtype = value.st_meta.dtype if isinstance(value, Proxy) else value.dtype
    if len(shape) == before.ndim and dtype == before.dtype and all(
            isinstance(a, int) and a == b for a, b in zip(shape, before.shape)):
        return
    raise E.state_reassigned_changed(target, _annotation(shape, dtype),
                                     _annotation(before.shape, before.dtype))


def _annotation(shape: Any, dtype: torch.dtype) -> str:
    return f"{str(dtype).removeprefix('torch.')}[{', '.join(str(s) for s in shape)}]"
