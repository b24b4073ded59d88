"""Helpers shared by the benchmark scripts: timing (median of repeated calls, per-call cost
within a time budget) and the same spec for torch.export. (The probe sweeps that lived in
benchmarks/ are the conformance tables of tests/conformance/.)"""

from __future__ import annotations

import statistics
import time

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


def median_time(fn, repeat: int = 5, clock=time.perf_counter) -> float:
    """Median seconds of ``repeat`` calls of fn() (``clock=time.thread_time``: this
    thread's CPU time, less noisy on a shared machine)."""
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def per_call(fn, budget: float = 0.3, cap: int = 200) -> float:
    """Median seconds per call of fn() after two warm-up calls: at least 5 calls, then as many
    as fit in ``budget`` seconds (at most ``cap``)."""
    fn()
    fn()
    times = []
    t_end = time.perf_counter() + budget
    while len(times) < 5 or (time.perf_counter() < t_end and len(times) < cap):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
