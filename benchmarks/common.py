"""Helpers shared by the benchmark and probe scripts: the same spec for torch.export, the
spec with every Dim made AUTO, and checks that an export left model and inputs alone."""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

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


def auto_spec(spec):
    """Every Dim (and derived Dim) of a named spec replaced by Dim.AUTO."""
    if isinstance(spec, (Dim, DerivedDim)):
        return Dim.AUTO
    if isinstance(spec, dict):
        return {k: auto_spec(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(auto_spec(v) for v in spec)
    return spec


def snap_model(m):
    """A copy of the model's state and training flags, to compare after an export."""
    sd = {k: v.detach().clone() for k, v in m.state_dict(keep_vars=True).items()}
    flags = {n: mod.training for n, mod in m.named_modules()}
    return sd, flags


def model_changed(m, snap):
    """What changed since `snap` (None when nothing)."""
    sd, flags = snap
    now = m.state_dict(keep_vars=True)
    if set(now) != set(sd):
        return f"state_dict keys changed: {set(now) ^ set(sd)}"
    for k, v in sd.items():
        w = now[k]
        if w.shape != v.shape or w.dtype != v.dtype or not torch.equal(w.detach(), v):
            return f"state {k} changed"
    for n, mod in m.named_modules():
        if flags.get(n) != mod.training:
            return f"training flag of {n or 'model'} changed"
    return None


def inputs_changed(before, after):
    """'an input tensor changed' when any tensor leaf differs, else None."""
    for x, y in zip(pytree.tree_leaves(before), pytree.tree_leaves(after)):
        if isinstance(x, torch.Tensor) and (x.shape != y.shape or x.dtype != y.dtype
                                            or not torch.equal(x, y)):
            return "an input tensor changed"
    return None
