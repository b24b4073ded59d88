"""The hooks registered on the exported model itself (``model.register_forward_hook``,
``register_forward_pre_hook``, with or without kwargs).  Export traces ``model.forward``,
which runs no hook of the model's own (its submodules' run: they are called); eager
``model(x)`` and torch.export (which calls the module) run them, so the program computes
what they return.  Run here around forward as ``nn.Module._call_impl`` runs them: each
pre-hook may replace the arguments, each hook the output."""

from __future__ import annotations

from typing import Any, Callable

import torch


def with_root_hooks(model: Any, fn: Callable) -> Callable:
    """`fn` (what the export calls for the model's forward) with `model`'s own forward
    pre-hooks and hooks run around it; `fn` itself where the model has none."""
    if not isinstance(model, torch.nn.Module) or \
            not (model._forward_hooks or model._forward_pre_hooks):
        return fn

    def call(*args: Any, **kwargs: Any) -> Any:
        for key, hook in list(model._forward_pre_hooks.items()):
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
        out = fn(*args, **kwargs)
        for key, hook in list(model._forward_hooks.items()):
            got = hook(model, args, kwargs, out) if key in model._forward_hooks_with_kwargs \
                else hook(model, args, out)
            if got is not None:
                out = got
        return out

    return call
