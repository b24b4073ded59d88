"""The forward hooks that run around the exported model's own call: the global ones
(``torch.nn.modules.module.register_module_forward_pre_hook``,
``register_module_forward_hook``, with kwargs or ``always_call``) and the model's own
(``model.register_forward_hook``, ``register_forward_pre_hook``).  Export traces
``model.forward``, which runs none of them (its submodules' run: they are called); eager
``model(x)`` runs them, so the program computes what they return.  Run here around forward
as ``nn.Module._call_impl`` runs them: the global pre-hooks, then the model's, each may
replace the arguments; after forward the global hooks, then the model's, each may replace
the output; where forward raises, the ``always_call`` hooks not yet run, their own errors
turned into warnings, and the error raised again.  The export's own global hooks (the
module stack's, ``trace/modules.py``) are left out: they are not the user's."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Collection

import torch
from torch.nn.modules import module as nn_module


def with_root_hooks(model: Any, fn: Callable, ours: Collection[int] = ()) -> Callable:
    """`fn` (what the export calls for the model's forward) with the forward pre-hooks and
    hooks that eager runs around `model`'s call, read when it is called; `ours`: the ids
    of the export's own global hooks, left out (a live collection: the module stack may
    register them while tracing)."""
    if not isinstance(model, torch.nn.Module):
        return fn

    def call(*args: Any, **kwargs: Any) -> Any:
        pre = _items(nn_module._global_forward_pre_hooks, ours) + \
            list(model._forward_pre_hooks.items())
        hooks = _items(nn_module._global_forward_hooks, ours) + \
            list(model._forward_hooks.items())
        if not (pre or hooks):
            return fn(*args, **kwargs)
        ran: set[int] = set()
        out = None
        try:
            args, kwargs = _run_pre_hooks(model, pre, args, kwargs)
            out = fn(*args, **kwargs)
            hooks = _items(nn_module._global_forward_hooks, ours) + \
                list(model._forward_hooks.items())  # (as eager: read after forward)
            always = nn_module._global_forward_hooks_always_called
            with_kwargs = nn_module._global_forward_hooks_with_kwargs
            for key, hook in hooks:
                if key in always or key in model._forward_hooks_always_called:
                    ran.add(key)
                if key in with_kwargs or key in model._forward_hooks_with_kwargs:
                    got = hook(model, args, kwargs, out)
                else:
                    got = hook(model, args, out)
                if got is not None:
                    out = got
            return out
        except Exception:
            _run_always_called(model, ours, ran, args, kwargs, out)
            raise

    return call


def _items(hooks: dict, ours: Collection[int]) -> list:
    # (a copy first, made in one C call: another thread's export adds and removes its
    # own global hooks meanwhile, and iterating the dict itself then raises)
    return [(key, hook) for key, hook in list(hooks.items()) if key not in ours]


def _run_pre_hooks(model: torch.nn.Module, pre: list, args: tuple,
                   kwargs: dict) -> tuple[tuple, dict]:
    for key, hook in pre:
        if key in model._forward_pre_hooks_with_kwargs:
            got = hook(model, args, kwargs)
            if got is not None:
                if not (isinstance(got, tuple) and len(got) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {got}.")
                args, kwargs = got
        else:
            got = hook(model, args)
            if got is not None:
                args = got if isinstance(got, tuple) else (got,)
    return args, kwargs


def _run_always_called(model: torch.nn.Module, ours: Collection[int], ran: set,
                       args: tuple, kwargs: dict, out: Any) -> None:
    """The ``always_call`` hooks that did not run, as eager runs them where forward (or a
    hook) raised: the global ones without kwargs whatever they were registered with (as
    ``_call_impl`` calls them), each one's error a warning."""
    always = nn_module._global_forward_hooks_always_called
    for key, hook in _items(nn_module._global_forward_hooks, ours):
        if key in always and key not in ran:
            out = _silenced(lambda: hook(model, args, out), "global module", out)
    own = model._forward_hooks_always_called
    for key, hook in list(model._forward_hooks.items()):
        if key in own and key not in ran:
            if key in model._forward_hooks_with_kwargs:
                out = _silenced(lambda: hook(model, args, kwargs, out), "module", out)
            else:
                out = _silenced(lambda: hook(model, args, out), "module", out)


def _silenced(run: Callable[[], Any], kind: str, out: Any) -> Any:
    try:
        got = run()
    except Exception as e:  # (eager's own words)
        warnings.warn(f"{kind} forward hook with ``always_call=True`` raised an exception "
                      f"that was silenced as another error was raised in forward: {e}",
                      stacklevel=3)
        return out
    return out if got is None else got
