"""Control flow on data: torch.cond, while_loop, map and scan as higher-order operators.

``subgraph`` traces a function into a subgraph, ``ops`` emits the operator nodes,
``routing`` connects torch's entry points (and the operators) to them while exporting.
"""

from __future__ import annotations

from safetrace.trace.hops.routing import WATCHED, cond, map, patches, scan, while_loop
from safetrace.trace.hops.subgraph import Subgraph, add_submodule, owner_module, submodules

__all__ = ["patches", "WATCHED", "cond", "map", "scan", "while_loop", "owner_module",
           "submodules", "Subgraph", "add_submodule"]
