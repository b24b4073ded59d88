"""The Dim.AUTO re-export's answers, remembered per model.

``auto_small.split_auto_small`` exports a Dim.AUTO / DYNAMIC program that keeps a check
again with named Dims, to find a wider program, from the lowest size up (a try refused,
the next from one size up); where none is taken, the first program is returned.  That
retry cost every export several traces, warm ones included (swin: 0.04 s without it,
0.3 s with it).  Its answer is remembered: where the first program was returned, a warm
export returns it again (always sound: it keeps its checks); where a wider one was, a
warm export makes only the export with the Dims that gave it (each export is sound for
its own contract; where it was a size split, only its sides: the refused trace the split
started from is remembered with it).  To give what an export without this memory would give, an answer is
reused only where everything the retry reads is as it was when it was found:

- the call: each input's type, shape, strides, dtype, device and requires_grad (plain
  Python values by value), ``dynamic_shapes``, ``max_splits`` and the export's options;
- the first program: its graph's nodes (op, target) and its contract;
- the model: each submodule by identity at its path, its ``__dict__`` (each value by
  identity: a submodule, hook or attribute replaced), its parameters', buffers' and
  hooks' tables and its list/dict/set attributes (their items by identity), each
  parameter's and buffer's shape and dtype, the ``__dict__`` of a plain object held as
  an attribute (``self.config``: one level), and each class's own ``__dict__`` (a method
  replaced on the class);
- the code's global namespaces (``user_spaces.namespaces``: a module-level function or
  setting replaced), the names there that the code defined there reads (a script's loop
  variables are not among them), a function's closure cells and defaults, and torch's
  grad mode, autocast and default dtype.

Anything else (a value two levels down an attribute, a tensor's contents) that the
retry alone reads is not looked at: there the remembered answer stands, sound for its
space (the first program, or an export made now).  A call whose inputs or
``dynamic_shapes`` hold a value of another kind (an object, a dataclass of tensors) is
never remembered.
"""

from __future__ import annotations

import threading
import types
import weakref
from typing import Any

import torch

from safetrace.dims import DerivedDim, Dim, DimHint
from safetrace.exporter.user_spaces import namespaces

_ENTRIES = 4  # (answers kept per model: one per call shape / dynamic_shapes)
_LOCK = threading.Lock()
# model -> [(key, state, answer)], newest first
_SEEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CONTAINERS = (dict, list, set)
_UNSET = object()
_SCALARS = (int, float, bool, str, bytes, complex, type(None))


class Seen:
    """The memory for one export: ``get(ep)`` gives the answer remembered for first
    program `ep` in the same state, else None; ``put(ep, answer)`` remembers one
    (auto_small's: ``("first", refusals)`` or ``("named", {input dim: Dim}, start)``,
    `start` the refusal that export's size split started from, or None: a warm export
    traces that split's sides at once, ``splits.export_with_splits(start=)``)."""

    __slots__ = ("model", "fn", "_given", "_call", "_state")

    def __init__(self, model: Any, fn: Any, args: tuple, kwargs: dict, dynamic_shapes: Any,
                 options: tuple) -> None:
        self.model, self.fn = model, fn
        self._given = (args, kwargs, dynamic_shapes, options)  # (keyed when first asked:
        self._call: Any = _UNSET  # most exports have no Dim.AUTO size to remember)
        self._state: tuple | None = None

    @property
    def call(self) -> tuple | None:
        if self._call is _UNSET:
            args, kwargs, dynamic_shapes, options = self._given
            try:
                self._call = (_plain(args), _plain(kwargs), _plain(dynamic_shapes), options)
            except _Unkeyed:
                self._call = None
            self._given = None
        return self._call

    @call.setter
    def call(self, value: None) -> None:
        self._call = value

    def get(self, ep: Any) -> tuple | None:
        if self.call is None:
            return None
        try:
            with _LOCK:
                entries = list(_SEEN.get(self.model, ()))
        except TypeError:  # (no weak reference to it: a bound method)
            self.call = None
            return None
        if not entries:
            return None
        key = self._key(ep)
        for k, state, answer in entries:
            if k == key and state == self._now():
                return answer
        return None

    def put(self, ep: Any, answer: tuple) -> None:
        if self.call is None:
            return
        entry = (self._key(ep), self._now(), answer)
        try:
            with _LOCK:
                old = [e for e in _SEEN.get(self.model, ()) if e[0] != entry[0]]
                _SEEN[self.model] = [entry] + old[:_ENTRIES - 1]
        except TypeError:  # (no weak reference to it)
            self.call = None

    def _key(self, ep: Any) -> tuple:
        nodes = tuple((n.op, str(n.target)) for n in ep.graph.nodes)
        return self.call, nodes, repr(ep.contract), _flags()

    def _now(self) -> tuple:
        if self._state is None:
            self._state = _snapshot(self.model, self.fn)
        return self._state


class _Unkeyed(Exception):
    """A call value this memory does not key on (never remembered)."""


def _plain(v: Any) -> Any:
    """`v` as a comparable value: tensors by their metadata, containers item by item."""
    t = type(v)
    if t in _SCALARS:
        return t, v
    if isinstance(v, torch.Tensor):
        return (t, tuple(v.shape), v.stride() if v.layout == torch.strided else None,
                v.dtype, v.device, v.layout, v.requires_grad)
    if t in (tuple, list):
        return t, tuple(_plain(x) for x in v)
    if t is dict:
        return t, tuple((_plain(k), _plain(x)) for k, x in v.items())
    if t in (torch.dtype, torch.device, torch.Size):
        return t, v
    if isinstance(v, (Dim, DerivedDim, DimHint)):
        return t, repr(v)
    raise _Unkeyed


def _flags() -> tuple:
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            torch.is_autocast_enabled(), torch.get_default_dtype())


def _snapshot(model: Any, fn: Any) -> tuple:
    """What `get` compares (the module docstring's list), as plain values: each value a
    Python scalar by value, any other by its type and identity (no reference to it is
    kept: the memory keeps no model or global alive)."""
    out: list = []
    seen: set[int] = set()

    def keep(d: Any, owner: Any = None) -> None:
        key = id(d if owner is None else owner)  # (a class: its __dict__ is made anew)
        if key in seen:
            return
        seen.add(key)
        if not d:  # (most of a module's hook tables)
            out.append(key)
            return
        mapping = isinstance(d, (dict, types.MappingProxyType))
        values = tuple(d.values()) if mapping else tuple(d)
        kinds = tuple(map(type, values))  # (types and identities read in C)
        at = _BY_VALUE.get(kinds)
        if at is None:
            at = _by_value(kinds)
        out.append((key, tuple(d) if mapping else None, kinds, tuple(map(id, values)),
                    tuple([_marker(values[i]) for i in at])))

    walk: list = []
    if isinstance(model, torch.nn.Module):
        walk = list(model.named_modules(remove_duplicate=False))
        out.append(tuple((p, id(m), type(m)) for p, m in walk))
        for _, mod in walk:
            d = mod.__dict__
            keep(d)
            for v in d.values():
                t = type(v)
                if t in _CONTAINERS or isinstance(v, dict):
                    keep(v)
                elif t not in _SCALARS and type(getattr(v, "__dict__", None)) is dict and \
                        not isinstance(v, (torch.nn.Module, torch.Tensor, type)):
                    keep(v.__dict__)  # (self.config: one level)
                elif isinstance(v, torch.Tensor):  # (a tensor attribute: `.data =` too)
                    out.append((tuple(v.shape), v.dtype))
            out.append(tuple((k, tuple(p.shape), p.dtype) for k, p in
                             (*mod._parameters.items(), *mod._buffers.items())
                             if p is not None))
        for cls in dict.fromkeys(type(m) for _, m in walk):
            for c in cls.__mro__:
                if c is torch.nn.Module:
                    break
                keep(c.__dict__, c)
    for f in (fn, getattr(fn, "__func__", None)):
        if f is not None and getattr(f, "__closure__", None):
            out.append(tuple(_marker(_cell(c)) for c in f.__closure__))
        if f is not None and hasattr(f, "__code__"):
            out.append((_marker(f.__code__), _marker(getattr(f, "__defaults__", None)),
                        _marker(getattr(f, "__kwdefaults__", None))))
    for ns in namespaces(model, fn, walk or None):
        read = _read_names(ns)  # (a script's own loop variables change every export)
        out.append((id(ns), tuple((k, _marker(ns[k])) for k in ns if k in read)))
    return tuple(out)


# the code objects of a namespace's functions and classes -> the global names they read
_READS: dict[tuple, frozenset] = {}


def _read_names(ns: dict) -> frozenset:
    """The names the code defined in namespace `ns` (its functions, its classes' methods,
    and the functions and lambdas nested in them) reads as globals."""
    name = ns.get("__name__")
    codes = []
    for v in list(ns.values()):
        if isinstance(v, types.FunctionType) and v.__globals__ is ns:
            codes.append(v.__code__)
        elif isinstance(v, type) and v.__module__ == name:
            for m in list(v.__dict__.values()):
                m = getattr(m, "__func__", getattr(m, "fget", m))
                if isinstance(m, types.FunctionType) and m.__globals__ is ns:
                    codes.append(m.__code__)
    key = tuple(map(id, codes))
    found = _READS.get(key)
    if found is None:
        if len(_READS) > 1_000:
            _READS.clear()
        names: set[str] = set()
        todo = codes
        while todo:
            c = todo.pop()
            names.update(c.co_names)
            todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        found = _READS[key] = frozenset(names)
    return found


# the types of a table's values -> the places of those compared by value (Python scalars,
# tuples: `_marker`); each other value is compared by type and identity
_BY_VALUE: dict[tuple, tuple] = {}


def _by_value(kinds: tuple) -> tuple:
    if len(_BY_VALUE) > 10_000:
        _BY_VALUE.clear()
    at = _BY_VALUE[kinds] = tuple(i for i, t in enumerate(kinds) if t in _SCALARS or t is tuple)
    return at


def _marker(v: Any) -> Any:
    """A Python scalar (or a tuple of them) itself; any other value its type and id."""
    t = type(v)
    if t in _SCALARS or t is tuple and all(type(x) in _SCALARS for x in v):
        return t, v
    return t, id(v)


def _cell(c: Any) -> Any:
    try:
        return c.cell_contents
    except ValueError:  # (an empty cell)
        return None
