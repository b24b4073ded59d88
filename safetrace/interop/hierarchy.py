"""The module hierarchy of a traced program: ``nn_module_stack`` on every recorded node,
as torch.export writes it, so that ``torch.export.unflatten(ep.to_torch())`` can rebuild
the submodule tree.

While ``st.export`` traces, global forward (pre-)hooks keep the stack of submodules being
called; the tracer stamps the current stack (one shared dict per stack state, so a node
costs one reference) on each node it records.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch


def _type_name(module: torch.nn.Module) -> str:
    cls = type(module)
    return f"{cls.__module__}.{cls.__qualname__}"


@contextlib.contextmanager
def module_stack(model: Any, tracer: Any) -> Iterator[None]:
    """Maintain ``tracer.nn_stack`` ({key: (fqn, type name)}) during the trace."""
    if not isinstance(model, torch.nn.Module):
        yield
        return
    names: dict[int, str] = {}
    for fqn, mod in model.named_modules(remove_duplicate=False):
        names.setdefault(id(mod), fqn)
    calls: dict[str, int] = {}
    stack: list[tuple[int, dict | None]] = []

    def pre(module: torch.nn.Module, args: Any) -> None:
        fqn = names.get(id(module))
        if not fqn:  # the root, or a module that is not a submodule of the model
            stack.append((id(module), None))
            return
        n = calls.get(fqn, 0)
        calls[fqn] = n + 1
        key = f"L__self___{fqn.replace('.', '_')}" + (f"@{n}" if n else "")
        stack.append((id(module), tracer.nn_stack))
        current = dict(tracer.nn_stack or {})
        current[key] = (fqn if not n else f"{fqn}@{n}", _type_name(module))
        tracer.nn_stack = current

    def post(module: torch.nn.Module, args: Any, output: Any) -> None:
        while stack:
            ident, previous = stack.pop()
            if previous is not None or names.get(ident):
                tracer.nn_stack = previous
            if ident == id(module):
                break

    h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = torch.nn.modules.module.register_module_forward_hook(post, always_call=True)
    try:
        yield
    finally:
        h1.remove()
        h2.remove()
        tracer.nn_stack = None


def submodule_fqns(graph: torch.fx.Graph) -> list[str]:
    """Every submodule path in the graph's ``nn_module_stack``s, parents first."""
    seen: dict[str, None] = {}
    for node in graph.nodes:
        for fqn, _ty in (node.meta.get("nn_module_stack") or {}).values():
            seen.setdefault(fqn.split("@")[0], None)
    return sorted(seen, key=lambda f: (f.count("."), list(seen).index(f)))
