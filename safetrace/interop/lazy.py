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


_PLAIN = (bool, int, float, str, type(None))
try:  # torch's marker of a config value not set (torch.utils imports the module already)
    from torch.utils._config_module import _UNSET_SENTINEL as _UNSET
except ImportError:  # (another torch release: config_value reads through getattr)
    _UNSET = None


def config_value(config: Any, name: str) -> Any:
    """``getattr(config, name)`` of a torch config module, without its cost (~17k
    instructions a read: the module's own lookup fails first, formatting an
    AttributeError, then ``ConfigModule.__getattr__`` runs its steps in Python; a
    conversion reads 6, ~4% of a small one).  The entry's value is read in
    ``__getattr__``'s order: the environment's forced value, this context's override
    (``patch``, a set), the environment's default, the default.  ``getattr`` serves an
    entry of any other kind (hidden, deprecated, an alias, a JustKnob, a mutable
    default) and a module without entries."""
    try:
        entry = config._config[name]
    except (AttributeError, KeyError, TypeError):
        return getattr(config, name)
    try:  # (an entry of another torch release, without these fields: getattr's way)
        if entry.hide or entry.deprecated or entry.alias is not None or \
                entry.justknob is not None or type(entry.default) not in _PLAIN:
            return getattr(config, name)
        unset = _UNSET
        if unset is None:  # (a torch release without the marker: getattr's way)
            return getattr(config, name)
        if entry.env_value_force is not unset:
            return entry.env_value_force
        value = entry.user_override.get()
        if value is not unset:
            return value
        return entry.env_value_default if entry.env_value_default is not unset else \
            entry.default
    except AttributeError:
        return getattr(config, name)
