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


@functools.cache
def exported_program_module() -> Any:
    """``torch.export.exported_program`` (ModuleCallEntry, ModuleCallSignature)."""
    import torch.export.exported_program as module

    return module


@functools.cache
def fake_tensor() -> Any:
    """``torch._subclasses.fake_tensor`` (FakeTensor, FakeTensorConfig)."""
    import torch._subclasses.fake_tensor as module

    return module


@functools.cache
def python_dispatch() -> Any:
    """``torch._dispatch.python`` (enable_python_dispatcher)."""
    import torch._dispatch.python as module

    return module


@functools.cache
def fx_config() -> Any:
    """``torch.fx.experimental._config`` (backed_size_oblivious)."""
    import torch.fx.experimental._config as module

    return module


@functools.cache
def value_ranges() -> Any:
    """``torch.utils._sympy.value_ranges`` (bound_sympy)."""
    import torch.utils._sympy.value_ranges as module

    return module


@functools.cache
def verifier() -> Any:
    """``torch._export.verifier`` (TrainingIRVerifier)."""
    import torch._export.verifier as module

    return module
