"""A GraphModule exported again (``st.export(ep.module(), ...)``, a make_fx graph): its
graph is replayed node by node under torch's fx metadata context, as torch.export does,
so that each recorded op keeps the replayed node's ``stack_trace`` (the user's source
line, not the generated code's) and ``nn_module_stack`` (``trace/scope.py`` reads them)."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx.traceback as fx_traceback


def forward_of(model: Any, fn: Callable) -> Callable:
    """What the export calls for `fn`: the graph replayed when `fn` is a GraphModule's own
    forward, else `fn`."""
    if not isinstance(model, torch.fx.GraphModule) or \
            getattr(fn, "__self__", None) is not model or \
            getattr(fn, "__func__", None) is not type(model).forward:
        return fn

    def replay(*args: Any, **kwargs: Any) -> Any:
        with fx_traceback.preserve_node_meta():
            return torch.fx.Interpreter(model).run(*args, *kwargs.values())

    return replay
