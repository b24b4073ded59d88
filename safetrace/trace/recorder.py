"""The recorder's face: what handlers, plans and higher-order ops use of the tracer.

``trace.tracer.Tracer`` implements it; the modules it imports (handlers, dispatch,
arguments, hops, ...) name it through this Protocol, so a call into the tracer is typed
without an import cycle.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import torch

from safetrace.errors import DataDependentError
from safetrace.trace.scope import Scope


class Recorder(Protocol):
    """Records torch calls into the graph of its current scope (see tracer.Tracer)."""

    scope: Scope                 # the graph being recorded now (top of `scopes`)
    scopes: list[Scope]          # the program's scope, then one per open branch or body
    env: Any                     # the symbolic environment (symbolic.Env) or None
    device: torch.device
    state: dict[int, torch.fx.Node]           # id(parameter or buffer) -> placeholder
    constants: dict[str, torch.Tensor]
    const_nodes: dict[int, torch.fx.Node]     # id(constant) -> its placeholder
    const_name: Callable[[Any], str]          # a constant's placeholder name
    real_feed: Callable[[], dict] | None      # placeholder -> example value (draft.py)
    keepalive: list
    fn_calls: dict[Any, int]    # torch function -> calls so far (node.meta["torch_fn"])
    mutated: dict[torch.fx.Node, torch.fx.Node]  # state placeholder -> last write
    sym_sources: dict[str, Any]  # symbol -> its node, or (node, dim, coef, offset)
    nn_stack: dict | None
    nn_layer: tuple | None  # the innermost module call: nn_stack's last entry
    tracing_through: set
    recording: bool
    unsourced_settled: list      # size-oblivious asserts waiting for their sizes
    pending_checks: list
    specialized_by_op: list
    layout_queried: str | None
    strides_queried: bool
    vmapped: bool               # a torch.vmap output was recorded (vmapping.py)
    replayed_checks: list
    on_data_read: Callable | None
    written_storages: set[int]
    folded: set[int]             # ids of constants the code made (literals, folds)
    value_reads: dict[int, str]  # constant's memory -> where Python read its value
    grad_regions: list
    symbols: dict                # the environment's symbols (name -> info)
    n_emits: int                 # ops recorded so far (memo.py)
    plain_emit: tuple | None     # the last op recorded on the plain path (memo.py)
    data_versions: Any           # writes per storage (versions.Versions)
    state_tensors: dict[str, torch.Tensor]  # state name -> tensor (versions.py)
    state_memory: dict | None    # memory -> names of the state tensors in it (mutation.py)
    value_numbers: dict[torch.fx.Node, tuple]  # masks numbered by value (numbering.py)
    masks_by_value: dict[tuple, tuple]

    def emit(self, op: Any, args: tuple, kwargs: dict, out: Any = None,
             n_syms: int | None = None) -> Any: ...

    def redispatch(self, func: Any, args: tuple, kwargs: dict | None = None, *,
                   handlers: bool = True) -> Any: ...

    def lift(self, t: torch.Tensor) -> torch.fx.Node: ...

    def sym_node(self, v: Any) -> Any: ...

    def symbol_node(self, name: str) -> torch.fx.Node: ...

    def unwrap(self, v: Any) -> tuple[Any, Any]: ...

    def note_literal(self, t: torch.Tensor) -> None: ...

    def constant_value(self, t: torch.Tensor) -> int | None: ...

    def data_read(self, what: str, fix: str | None = None) -> DataDependentError: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> Any: ...
