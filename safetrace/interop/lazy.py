"""torch's modules that the conversion's per-node and per-input code reads, imported on
first use and held for the process.

Only ``interop/`` may import ``torch.export`` and the symbolic-shape machinery, and only
inside functions (``tests/test_architecture.py``); an import statement inside a function
runs on every call (``from torch.export.graph_signature import A, B, C``: ~2-3 µs), so a
conversion paid it once per placeholder and once per node.  Here each module is imported
once; ``graph_signature().InputSpec`` is one cached call and an attribute read.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def graph_signature() -> Any:
    """``torch.export.graph_signature`` (InputSpec, OutputSpec, the argument kinds)."""
    import torch.export.graph_signature as module

    return module


@functools.cache
def symbolic_shapes() -> Any:
    """``torch.fx.experimental.symbolic_shapes`` (ShapeEnv, unbacked bindings)."""
    import torch.fx.experimental.symbolic_shapes as module

    return module
