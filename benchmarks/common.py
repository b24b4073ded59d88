"""Helpers shared by the benchmark scripts: the same spec for torch.export. (The probe sweeps
that lived here are the conformance tables of tests/conformance/.)"""

from __future__ import annotations

from safetrace.dims import DerivedDim, Dim


def torch_spec(spec, cache=None):
    """safetrace's dynamic_shapes spec with its Dims replaced by torch.export.Dims."""
    from torch.export import Dim as TDim

    cache = {} if cache is None else cache
    if isinstance(spec, Dim):
        if id(spec) not in cache:
            kw = {}
            if spec.min is not None and spec.min > 0:
                kw["min"] = spec.min
            if spec.max is not None and spec.max != float("inf") and spec.max < 2**62:
                kw["max"] = spec.max
            cache[id(spec)] = TDim(spec.name, **kw)
        return cache[id(spec)]
    if isinstance(spec, DerivedDim):
        return torch_spec(spec.root, cache) * spec.coef + spec.offset
    if isinstance(spec, dict):
        return {k: torch_spec(v, cache) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(torch_spec(v, cache) for v in spec)
    if spec is Dim.AUTO:
        return TDim.AUTO
    if spec is Dim.DYNAMIC:
        return TDim.DYNAMIC
    return spec
