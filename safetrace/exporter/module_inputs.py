"""An ``nn.Module`` passed as an input to ``forward``: its parameters and buffers are the
program's inputs (``m['w']``), as torch.export takes it.

While an export, a call of the program or a conversion flattens such inputs, the module's
class is a pytree node of torch's registry (and only then: a module stays a leaf for the
user's own pytree code): its children are the module's parameters and buffers by name,
and rebuilding it from other tensors gives a copy of the module holding them (the
module passed is never changed).  Two modules of one class with the same state names
have the same structure, so a program exported with one module runs with another.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import weakref
from typing import Any, Iterator

import torch
from torch.utils import _pytree as pytree


class _Prototype:
    """The module a spec was made from, compared by class (any module of the class with the
    same state names fits the spec); equal to torch.export's own for the class
    (``_proto_cls`` is the attribute torch's compares) and called as torch's is."""

    __slots__ = ("_proto_cls", "ref")

    def __init__(self, module: torch.nn.Module) -> None:
        self._proto_cls = type(module)
        self.ref = weakref.ref(module)

    @property
    def cls(self) -> type:
        return self._proto_cls

    def __call__(self) -> torch.nn.Module | None:
        """The module, or None once collected: a weak reference's call, as torch's own
        prototype (a ``weakref.ref``) answers it where torch unflattens our spec (its
        ``run_decompositions`` of a ``to_torch()`` program)."""
        return self.ref()

    def __eq__(self, other: object) -> bool:
        return getattr(other, "_proto_cls", None) is self._proto_cls

    def __hash__(self) -> int:
        return hash(self._proto_cls)

    def __repr__(self) -> str:
        return f"<{self.cls.__qualname__} module>"


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def _flatten(module: torch.nn.Module) -> tuple[list, Any]:
    state = _state(module)
    return list(state.values()), [list(state), _Prototype(module)]


def _flatten_with_keys(module: torch.nn.Module) -> tuple[list, Any]:
    values, context = _flatten(module)
    return [(pytree.MappingKey(k), v) for k, v in zip(context[0], values)], context


def _unflatten(values: Any, context: Any) -> torch.nn.Module:
    names, proto = context
    module = proto.ref()
    if module is None:
        raise RuntimeError(f"the {proto.cls.__qualname__} module passed as an input was "
                           f"garbage collected")
    values = list(values)
    state = _state(module)
    if all(v is state.get(n) for n, v in zip(names, values)):
        return module
    new = {id(state[n]): v for n, v in zip(names, values) if n in state}
    return _copy_with(module, new, {})


def _copy_with(module: torch.nn.Module, new: dict[int, Any], done: dict) -> torch.nn.Module:
    """A copy of `module` (its submodules copied too, each once) whose parameters and buffers
    are replaced by identity through `new` (tied tensors stay tied)."""
    if id(module) in done:
        return done[id(module)]
    out = copy.copy(module)
    done[id(module)] = out
    out.__dict__ = dict(module.__dict__)
    out._parameters = {k: new.get(id(v), v) for k, v in module._parameters.items()}
    out._buffers = {k: new.get(id(v), v) for k, v in module._buffers.items()}
    out._modules = {k: None if m is None else _copy_with(m, new, done)
                    for k, m in module._modules.items()}
    return out


_PLAIN = (torch.Tensor, int, float, bool, str, type(None))
_PLAIN_EXACT = frozenset((*_PLAIN, torch.nn.Parameter))  # (by exact type: one pass in C)


def module_types(args: tuple, kwargs: dict) -> set[type]:
    """The module classes among the inputs (none without a walk for plain inputs)."""
    if _PLAIN_EXACT.issuperset(map(type, args)) and (
            not kwargs or _PLAIN_EXACT.issuperset(map(type, kwargs.values()))) or all(
            isinstance(a, _PLAIN) for a in args) and all(
            isinstance(v, _PLAIN) for v in kwargs.values()):
        return set()
    # (a module is a leaf here even while another thread's export has its class registered)
    return {type(x) for x in pytree.tree_leaves((args, kwargs), is_leaf=_is_module)
            if isinstance(x, torch.nn.Module)}


def _is_module(x: Any) -> bool:
    return isinstance(x, torch.nn.Module)


def spec_module_types(spec: Any) -> set[type]:
    """The module classes a TreeSpec holds as nodes."""
    out: set[type] = set()
    todo = [spec]
    while todo:
        s = todo.pop()
        if isinstance(s.type, type) and issubclass(s.type, torch.nn.Module):
            out.add(s.type)
        todo.extend(s.children())
    return out


# Classes this module registered, with the number of exports/calls/conversions (on any
# thread) inside `module_nodes` for each: the registration is shared, so a class stays a
# node until the last of them leaves (two threads exporting with modules of one class).
_REGISTERED: dict[type, int] = {}
_LOCK = threading.Lock()


def module_nodes(types: set[type]) -> contextlib.AbstractContextManager:
    """Inside: each module class of `types` flattens to its parameters and buffers."""
    return _registered(types) if types else _NOTHING


_NOTHING = contextlib.nullcontext()  # (reentrant: one serves every export)


@contextlib.contextmanager
def _registered(types: set[type]) -> Iterator[None]:
    held = []
    try:
        with _LOCK:  # (inside the try: a class torch refuses releases the ones before it)
            for t in types:
                if t in _REGISTERED:
                    _REGISTERED[t] += 1
                elif t not in pytree.SUPPORTED_NODES:
                    # Python's registry only (torch's C++ one has no way back), under a name
                    # of the class's own: torch's default name is shared by every class
                    # registered without one, and taking it away again would take theirs
                    pytree._private_register_pytree_node(
                        t, _flatten, _unflatten, flatten_with_keys_fn=_flatten_with_keys,
                        serialized_type_name=f"safetrace.module_input.{t.__module__}."
                                             f"{t.__qualname__}.{id(t):x}")
                    _REGISTERED[t] = 1
                else:
                    continue
                held.append(t)
        yield
    finally:
        with _LOCK:
            for t in held:
                _REGISTERED[t] -= 1
                if not _REGISTERED[t]:
                    del _REGISTERED[t]
                    # (a torch.export program's module registers the class before its call
                    # and takes it away after: exporting that module, ours is gone already)
                    if t in pytree.SUPPORTED_NODES:
                        pytree._deregister_pytree_node(t)
