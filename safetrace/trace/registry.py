"""The special handlers: torch callables the tracer answers with its own code.

Most calls need no handler: the tracer resolves them to an ATen overload by name (see
``dispatch.py``).  A handler is for a call that no overload expresses as written: a
metadata query answered from the proxy, a data read, a cast spelled in one of ``Tensor.to``'s
many ways, a factory of Python data, an index.  Each is registered once, keyed by every
torch callable that reaches the tracer for it::

    @handles(torch.nonzero, torch.Tensor.nonzero)
    def nonzero(tr, func, args, kwargs): ...

A handler receives the tracer, the callable as the tracer received it, and the call's
positional and keyword arguments, and returns the call's result (proxies for tensors).
It builds the graph only through the tracer's public interface (``Tracer.emit``,
``Tracer.lift``, ``Tracer.sym_node``, ``Tracer.redispatch``).
"""

from __future__ import annotations

from typing import Any, Callable

Handler = Callable[[Any, Any, tuple, dict], Any]

HANDLERS: dict[Any, Handler] = {}


def handles(*funcs: Any) -> Callable[[Handler], Handler]:
    """Register the decorated handler for each torch callable in `funcs` (once each)."""

    def register(handler: Handler) -> Handler:
        for func in funcs:
            if func in HANDLERS:
                raise ValueError(f"{func} has a handler already: {HANDLERS[func]}")
            HANDLERS[func] = handler
        return handler

    return register
