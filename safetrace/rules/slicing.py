"""The length of a slice: torch's wrapping of negative bounds and clamping into the dim."""

from __future__ import annotations

from typing import Any

from safetrace.rules.common import (decided_max, decided_min, guarded_min, hint_of, known,
                                    settle, wrap_index)
from safetrace.symbolic import to_expr

Size = Any  # int or safetrace.symbolic.SymInt


def _clamp(i: Size, size: Size) -> Size:
    """A wrapped bound clamped into [0, size], as torch clamps it.  A literal bound within
    the example's size of a Dim.AUTO / DYNAMIC size keeps Python's ``min`` (a guard unless
    the facts decide): ``x[:3] + y`` then needs ``x.shape[0] >= 3`` and specializes ``y``,
    as torch's programming model says.  A literal past the example's end, one whose guard
    would narrow a named Dim's range (``x[1:] + y`` with ``x.shape[0]`` a ``Dim`` from 0:
    eager computes every size, and ``y`` follows ``max(n - 1, 0)``), and any bound
    computed from sizes, are clamped by Min/Max with no guard (``z[:, :x.shape[0]]``
    works for every pair of sizes)."""
    if isinstance(i, int):
        n = hint_of(size)
        guarded = n is not None and i <= n and not _narrows_declared(i, size)
        upper = guarded_min(i, size) if guarded else decided_min(i, size)
    else:
        upper = decided_min(i, size)
    return decided_max(upper, 0)


def _narrows_declared(i: int, size: Size) -> bool:
    """Whether the guard ``i <= size`` would narrow a named Dim's range (Dim.AUTO and
    Dim.DYNAMIC sizes take the guard, as torch's programming model says)."""
    env = getattr(size, "env", None)
    if env is None:
        return False
    e = to_expr(size)
    return any(name in env.named for name in e.free_symbols) and env.bounds(e).lo < i


def _bound(i: Size, size: Size, start: bool = False) -> Size:
    negative = known(i, "lt", 0)
    if negative is None and start and _either_sign_from_data(i):
        # a start read from data (OPT's ``positions[:, past_seen:]`` with a cache length)
        # whose sign nothing decides: counted from the start, as for every size >= 0, and
        # checked at run time (a negative one would count from the end: not traced); an
        # end bound (``x[:k.sum()]``) keeps the exact form, negative values included
        settle(i >= 0, "a slice start read from data is taken as counted from the start: "
                       "a negative one counts from the end, which was not traced")
        negative = False
    if negative:  # -k counts from the end; below -size it clamps to 0 (no guard)
        return decided_max(i + size, 0)
    return _clamp(wrap_index(i, size), size)


def _either_sign_from_data(i: Size) -> bool:
    """`i` is a value read from data (one data-dependent symbol: ``n.item()``, a cache's
    length) whose range holds both signs; arithmetic on such values (``-n // 2``) keeps
    the exact form."""
    env = getattr(i, "env", None)
    if env is None:
        return False
    e = to_expr(i)
    info = env.symbols.get(e.name) if e.op == "sym" else None
    if info is None or info.backed:
        return False
    r = env.bounds(e)
    return r.lo < 0 < r.hi


def slice_length(size: Size, start: Size | None, end: Size | None, step: Size = 1) -> Size:
    """Length of ``x[start:end:step]`` along a dim of `size` (torch's wrapping and clamping)."""
    # torch wraps a negative bound once, then clamps both into [0, size]; a start read
    # from data is taken as counted from the start (checked) only where the end is not
    # read from data too (``x[u0:u1]``: the length relates to no size, the exact form
    # costs nothing and keeps negative starts, as torch.export's program does)
    either = end is not None and _either_sign_from_data(end)
    start = 0 if start is None else _bound(start, size, start=not either)
    if end is None or (isinstance(end, int) and end >= 2**62):
        end = size
    else:
        end = _bound(end, size)
    span = decided_max(end - start, 0)
    if isinstance(step, int) and step == 1:
        return span
    return (span + step - 1) // step
