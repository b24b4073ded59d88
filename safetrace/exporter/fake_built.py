"""A model built under a FakeTensorMode exports under that mode, as torch.export does.

``with FakeTensorMode(): model = Net()`` gives parameters and buffers without data; torch.export
finds their mode and traces under it.  safetrace does the same when every such tensor of
the model (all of its parameters and buffers) shares one mode that is the user's (not
made for an export (its converter's ``export`` flag), and not active now; torch asks for one with a ShapeEnv,
``FakeTensorMode(shape_env=ShapeEnv(tracked_fakes=[]))``, and one without works too): the
state of a model that torch.export is tracing on another thread (its modes, strict and
non-strict, are made with ``export=True``, and it swaps the model's state for theirs), or
a model with some real state, stays refused (``state_traced_elsewhere``).
FakeTensor is known by its class's name: torch._subclasses is never imported here.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch


def built_under(model: Any, walk: Any = None) -> Any:
    """The context to export `model` in: its state's own FakeTensorMode, else nothing.
    (`walk`: the model's ``pytree.module_walk``, when the caller has it.)"""
    if not isinstance(model, torch.nn.Module):
        return contextlib.nullcontext()
    first = _first_state(model, walk)
    if first is None or type(first).__name__ != "FakeTensor":
        return _NOTHING  # (no state, or some real: the answer below, without every tensor)
    state = [*model.parameters(), *model.buffers()]
    modes = {id(m): m for t in state
             if type(t).__name__ == "FakeTensor" and (m := getattr(t, "fake_mode", None))}
    if len(modes) != 1 or any(type(t).__name__ != "FakeTensor" for t in state):
        return contextlib.nullcontext()  # (some state real: swapped by a tracer, refused)
    mode = next(iter(modes.values()))
    active = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
    made_for_export = getattr(getattr(mode, "fake_tensor_converter", None), "export", True)
    if active is not None or made_for_export is not False:
        return contextlib.nullcontext()
    return mode


_NOTHING = contextlib.nullcontext()  # (reentrant, holds nothing: one serves every export)


def _first_state(model: torch.nn.Module, walk: Any = None) -> Any:
    """One parameter or buffer of the model (None when it has none): the first met in a
    walk that stops there (a TorchScript module's tables: ``parameters()``'s first), or
    in `walk`'s modules, in order, when given."""
    if walk is not None:
        for _, mod in walk:
            found = _own_state(mod)
            if found is not None:
                return _any_state(model) if found is _ODD else found
        return None
    todo = [model]
    while todo:
        mod = todo.pop()
        found = _own_state(mod)
        if found is _ODD or (found is None and type(mod._modules) is not dict):
            return _any_state(model)
        if found is not None:
            return found
        todo.extend(m for m in mod._modules.values() if m is not None)
    return None


_ODD = object()  # (a module whose tables are not plain dicts: TorchScript's)


def _own_state(mod: torch.nn.Module) -> Any:
    """A module's first own parameter or buffer (None: it has none; ``_ODD``: its tables
    are not dicts)."""
    params, buffers = mod._parameters, mod._buffers
    if type(params) is not dict or type(buffers) is not dict:
        return _ODD
    for table in (params, buffers):
        for t in table.values():
            if t is not None:
                return t
    return None


def _any_state(model: torch.nn.Module) -> Any:
    return next(iter([*model.parameters(), *model.buffers()]), None)
