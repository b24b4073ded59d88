"""One generic check for every shape rule: the rule's answer equals torch's.

Sample tables live in ``tests/rules/samples_*.py``; each module defines
``SAMPLES`` (calls torch accepts) and optionally ``ERROR_SAMPLES`` (calls torch
rejects).  An entry is ``Sample(op, args, kwargs, device="meta")``; tensor arguments
are written ``T(*shape, dtype=..., high=...)`` (``high`` bounds random integer data,
for index tensors when the sample must run on CPU).  The reference is the meta kernel,
or the CPU kernel with ``device="cpu"`` where meta has none or disagrees with CPU.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import torch

from safetrace.meta import TensorMeta


@dataclasses.dataclass(frozen=True)
class T:
    """A tensor argument of a sample: its shape, dtype and (for CPU runs) data range."""

    shape: tuple
    dtype: torch.dtype = torch.float32
    high: int | None = None

    def __init__(self, *shape: int, dtype: torch.dtype = torch.float32,
                 high: int | None = None) -> None:
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "high", high)


@dataclasses.dataclass
class Sample:
    op: Any
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    device: str = "meta"
    data_dependent: bool = False  # sizes depend on data: check ranges, not values

    def __repr__(self) -> str:
        return f"{self.op}({self.args}, {self.kwargs})"


def materialize(value: Any, device: str, gen: torch.Generator) -> Any:
    """Turn T specs into real tensors on `device` (random data on CPU)."""
    if isinstance(value, T):
        if device == "meta":
            return torch.empty(value.shape, dtype=value.dtype, device="meta")
        if value.dtype is torch.bool:
            return torch.rand(value.shape, generator=gen) > 0.5
        if not value.dtype.is_floating_point and not value.dtype.is_complex:
            high = value.high if value.high is not None else 5
            return torch.randint(0, max(high, 1), value.shape, generator=gen, dtype=value.dtype)
        return torch.randn(value.shape, generator=gen).to(value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(materialize(v, device, gen) for v in value)
    return value


def to_meta(value: Any) -> Any:
    """Turn T specs into TensorMetas (what a rule receives)."""
    if isinstance(value, T):
        return TensorMeta(value.shape, value.dtype, torch.device("cpu"))
    if isinstance(value, (list, tuple)):
        return type(value)(to_meta(v) for v in value)
    return value


def describe(value: Any) -> Any:
    """(shape, dtype) of tensors, recursively; plain values unchanged."""
    if isinstance(value, (torch.Tensor, TensorMeta)):
        return (tuple(int(s) for s in value.shape), value.dtype)
    if isinstance(value, (list, tuple)):
        return tuple(describe(v) for v in value)
    return value


def reference(sample: Sample) -> Any:
    gen = torch.Generator().manual_seed(0)
    args = materialize(sample.args, sample.device, gen)
    kwargs = {k: materialize(v, sample.device, gen) for k, v in sample.kwargs.items()}
    return sample.op(*args, **kwargs)


def run_rule(sample: Sample) -> Any:
    from safetrace.meta.symtypes import torch_env
    from safetrace.rules import get_rule
    from safetrace.rules.common import ACTIVE

    fn = get_rule(sample.op)
    assert fn is not None, f"no rule registered for {sample.op}"
    args = to_meta(sample.args)
    kwargs = {k: to_meta(v) for k, v in sample.kwargs.items()}
    saved, ACTIVE.env = ACTIVE.env, torch_env()
    try:
        return fn(*args, **kwargs)
    finally:
        ACTIVE.env = saved


def within(got: Any, real: Any) -> bool:
    """A rule's answer with data-dependent sizes admits torch's concrete answer."""
    if isinstance(real, torch.Tensor):
        if not isinstance(got, TensorMeta) or got.dtype != real.dtype or \
                len(got.shape) != real.dim():
            return False
        return all(_admits(g, int(r)) for g, r in zip(got.shape, real.shape))
    if isinstance(real, (list, tuple)):
        return len(got) == len(real) and all(within(g, r) for g, r in zip(got, real))
    return _admits(got, real)


def _admits(g: Any, r: Any) -> bool:
    if isinstance(g, (int, float, bool)):
        return g == r
    expr = getattr(g, "expr", None)
    if expr is not None and expr.op == "eq":  # a bool item: u == 1
        return True
    b = g.env.bounds(g.expr)
    return b.lo <= int(r) <= b.hi


# -- symbolic check: the rule on symbolic sizes, evaluated at other sizes -----------------

def symbolic_run(sample: Sample):
    """Run the rule with every tensor dim a symbol (hint = the sample's size).

    Returns (env, output, dims) where dims maps each symbol to (arg path, dim).
    """
    from safetrace.meta.symtypes import torch_env
    from safetrace.rules import get_rule
    from safetrace.rules.common import ACTIVE
    from safetrace.symbolic import make_int

    env = torch_env()
    dims: dict[str, tuple] = {}

    def symbolize(value: Any, path: tuple) -> Any:
        if isinstance(value, T):
            shape = []
            for d, n in enumerate(value.shape):
                s = env.new_backed(n, lo=0)
                dims[s.name] = (path, d)
                shape.append(make_int(s, env))
            return TensorMeta(tuple(shape), value.dtype, torch.device("cpu"))
        if isinstance(value, (list, tuple)):
            return type(value)(symbolize(v, path + (i,)) for i, v in enumerate(value))
        return value

    args = symbolize(sample.args, ("args",))
    kwargs = {k: symbolize(v, ("kw", k)) for k, v in sample.kwargs.items()}
    saved, ACTIVE.env = ACTIVE.env, env
    try:
        out = get_rule(sample.op)(*args, **kwargs)
    finally:
        ACTIVE.env = saved
    return env, out, dims


def resized(sample: Sample, sizes: dict) -> Sample:
    """The sample with tensor dims replaced: sizes maps (path, dim) -> new size."""

    def walk(value: Any, path: tuple) -> Any:
        if isinstance(value, T):
            shape = [sizes.get((path, d), n) for d, n in enumerate(value.shape)]
            return T(*shape, dtype=value.dtype, high=value.high)
        if isinstance(value, (list, tuple)):
            return type(value)(walk(v, path + (i,)) for i, v in enumerate(value))
        return value

    return Sample(sample.op, walk(sample.args, ("args",)),
                  {k: walk(v, ("kw", k)) for k, v in sample.kwargs.items()}, sample.device)


def evaluate(out: Any, binding: dict) -> Any:
    """(shape, dtype) of a rule's symbolic output under a binding of its symbols."""
    if isinstance(out, TensorMeta):
        return (tuple(s if isinstance(s, int) else int(s.expr.evaluate(binding))
                      for s in out.shape), out.dtype)
    if isinstance(out, (list, tuple)):
        return tuple(evaluate(o, binding) for o in out)
    if hasattr(out, "expr"):
        return out.expr.evaluate(binding)
    return out


# -- zero-size variants: every sample with a dim emptied --------------------------------

def _tensor_specs(value: Any, path: tuple) -> list:
    if isinstance(value, T):
        return [(path, value)]
    if isinstance(value, (list, tuple)):
        return [x for i, v in enumerate(value) for x in _tensor_specs(v, path + (i,))]
    return []


def _map_specs(value: Any, fn: Any, path: tuple) -> Any:
    if isinstance(value, T):
        return fn(path, value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_specs(v, fn, path + (i,)) for i, v in enumerate(value))
    return value


def zero_size_variants(sample: Sample) -> list[Sample]:
    """The sample with one dim of one tensor set to 0, for each such dim; and with every
    dim of that size, across all tensors, set to 0 (so that sizes the op requires to match,
    like a matmul's inner dims, empty together)."""
    roots = [(("args",), sample.args)] + [(("kw", k), v) for k, v in sample.kwargs.items()]
    spots = [(path, d, n) for root, value in roots for path, t in _tensor_specs(value, root)
             for d, n in enumerate(t.shape) if n > 0]
    out: list[Sample] = []
    seen: set = set()
    for path, d, n in spots:
        for together in (False, True):
            def empty(p: tuple, t: T, path: tuple = path, d: int = d, n: int = n,
                      together: bool = together) -> T:
                if together:
                    shape = [0 if x == n else x for x in t.shape]
                else:
                    shape = [0 if (p == path and i == d) else x for i, x in enumerate(t.shape)]
                return T(*shape, dtype=t.dtype, high=t.high)

            args = _map_specs(sample.args, empty, ("args",))
            kwargs = {k: _map_specs(v, empty, ("kw", k)) for k, v in sample.kwargs.items()}
            key = repr((args, kwargs))
            if key not in seen:
                seen.add(key)
                out.append(Sample(sample.op, args, kwargs, sample.device,
                                  sample.data_dependent))
    return out


# Samples per op in the default run (`make test`): at most this many of each op's samples,
# spread evenly over its list (the first and the last always in), so every op is still
# covered; SAFETRACE_RULE_SAMPLES=all (`make test-full`) runs every sample.
RULE_SAMPLES = os.environ.get("SAFETRACE_RULE_SAMPLES", "2")


def sampled(samples: list, per_op: str = RULE_SAMPLES) -> list:
    """A deterministic subset of ``samples``: ``per_op`` of each op's, evenly spread."""
    if per_op == "all":
        return list(samples)
    k = int(per_op)
    by_op: dict = {}
    for s in samples:
        by_op.setdefault(s.op, []).append(s)
    keep = set()
    for group in by_op.values():
        n = len(group)
        picks = range(n) if n <= k else {round(i * (n - 1) / (k - 1)) for i in range(k)} \
            if k > 1 else {0}
        keep.update(id(group[i]) for i in picks)
    return [s for s in samples if id(s) in keep]
