"""What a size split's side (``exporter/splits.py``) changes in DynamicDims' reading of the
spec: a named Dim's range and hint come from the side (``overrides``: Dim name -> (hint,
lo, hi)), and a named Dim pinned to one size is a narrowing to that point.  Also: a named
Dim unified with Dim.AUTO dims only (``auto_alias``), which is no narrowing either.

Two keys of ``overrides`` are no Dim names.  ``ASSUMED``: conditions that hold wherever
the side's program runs (a relation split's answer, ``relation_splits.py``): no narrowing
of the Dims they relate, nor a range they imply.  ``RELATED``: the sizes the first trace
gave Dim.AUTO / DYNAMIC dims in terms of other sizes, whose hints then follow the side's
(the example's size would break the relation there).  ``CHECKED``: relations between
named Dims that a branch decided, kept as run-time checks of the program where no split
keeps both answers (torch.export's program checks them too, ``splits.py``)."""

from __future__ import annotations

import contextlib
import itertools
import math
from typing import Any

from safetrace.dims import DerivedDim, Dim
from safetrace.symbolic import Env
from safetrace.symbolic.canon import subs
from safetrace.symbolic.expr import sym
from safetrace.symbolic.scope import assuming

ASSUMED = "(assumed)"  # a side's key for the conditions its program runs under (no Dim name)
RELATED = "(related)"  # and for {"z.shape[1]": its size as an expression of other sizes}
CHECKED = "(checked)"  # and for relations between named Dims kept as run-time checks
SPECIAL = (ASSUMED, RELATED, CHECKED)


def with_assumed(overrides: dict, cond: Any) -> dict:
    """`overrides` with `cond` assumed too (a relation split's side inside another's)."""
    return {**overrides, ASSUMED: (*overrides.get(ASSUMED, ()), cond)}


def assumed_hold(env: Any, assumed: tuple, point: dict) -> bool:
    """Whether a side's assumptions hold at `point` (symbol -> size; every other size
    as in the example): sizes that break a condition there but no assumption are sizes
    where the side runs."""
    binding = {n: info.hint for n, info in env.symbols.items() if info.backed}
    binding.update(point)
    try:
        return all(c.evaluate(binding) for c in assumed)
    except (ArithmeticError, KeyError, ValueError, TypeError):
        return False


def assumed_imply(assumed: tuple, cond: Any, ranges: dict) -> bool:
    """Whether a side's assumptions imply `cond`, proved from them and the sizes' declared
    `ranges` alone (symbol -> (lo, hi); any other a size), not the trace's own guards (of
    which `cond` may be one): ``min(n, 3) == 1`` where ``min(n, 3) != 3``, ``!= 2`` and
    each factor of ``n`` is at least 1 (the count of a loop, on the side of each other
    count); or where they never all hold.  The side's program runs only where they hold,
    so `cond` refuses no size it runs at."""
    if not assumed:
        return False
    env = Env()
    env.shares_state_names = False
    names = set(cond.free_symbols).union(*(c.free_symbols for c in assumed))
    for name in sorted(names):
        lo, hi = ranges.get(name, (0, None))
        env.new_backed(int(lo), int(lo), None if hi is None or hi == math.inf else int(hi),
                       name=name)
    with contextlib.ExitStack() as stack:
        for c in assumed:
            if not stack.enter_context(assuming(env, c)):
                return True  # (they never all hold: the side never runs)
        if env.decide(cond) is True:
            return True
    return _every_point(assumed, cond, names, ranges)


_BOX = 4096  # points of bounded ranges looked at one by one where the prover cannot decide


def _every_point(assumed: tuple, cond: Any, names: set, ranges: dict) -> bool:
    """`cond` holds at every point of the sizes' `ranges` (each bounded, at most ``_BOX``
    points in all) where the assumptions hold: ``s0 == s0*s3 + s0*max(s0 - s3, 0)`` where
    ``s3 + max(s0 - s3, 0) == 1``, with s0 <= 4 and 1 <= s3 <= 4 (a proof by cases)."""
    spans = []
    for name in sorted(names):
        lo, hi = ranges.get(name, (0, None))
        if hi is None or hi == math.inf:
            return False
        spans.append(range(int(lo), int(hi) + 1))
    if math.prod(len(r) for r in spans) > _BOX:
        return False
    order = sorted(names)
    for combo in itertools.product(*spans):
        p = dict(zip(order, combo))
        try:
            if all(c.evaluate(p) for c in assumed) and not cond.evaluate(p):
                return False
        except (ArithmeticError, KeyError, ValueError, TypeError):
            return False
    return True


def side_hint(env: Any, size: Any, example: int, lo: float, hi: float) -> int:
    """The hint of a Dim.AUTO / DYNAMIC dim on a side: `size` (its expression in the first
    trace) at the side's hints of the sizes read so far, else the example's size."""
    if size is None:
        return example
    try:
        v = size.evaluate({n: env.hints[n] for n in size.free_symbols})
    except (KeyError, ArithmeticError, ValueError, TypeError):
        return example
    return int(v) if isinstance(v, int) and lo <= v <= hi else example


def only_value(spec: Any, overrides: dict) -> int | None:
    """The one size a named or derived Dim allows (``Dim('d', min=4, max=4)``, or a side
    whose range is one size), else None."""
    root = spec.root if isinstance(spec, DerivedDim) else spec
    if not isinstance(root, Dim):
        return None
    lo, hi = overrides[root.name][1:] if root.name in overrides else (root.min, root.max)
    if lo != hi:
        return None
    return spec.coef * lo + spec.offset if isinstance(spec, DerivedDim) else int(lo)


def point_narrowing(spec: Any, size: int, roots: dict) -> tuple | None:
    """A named (or derived) Dim specialized to `size`: the narrowing of its root to that
    point, as ``DynamicDims.narrowed`` lists them (None when not of that form)."""
    root = spec.root if isinstance(spec, DerivedDim) else spec
    if not isinstance(root, Dim):
        return None
    coef, offset = (spec.coef, spec.offset) if isinstance(spec, DerivedDim) else (1, 0)
    if (size - offset) % coef:
        return None
    value = (size - offset) // coef
    dim = roots[root.name][0]  # the declared range, or the side's
    if dim.min <= value <= dim.max:
        return (root.name, value, value, dim.min, dim.max, value, False)
    return None


def auto_alias(env: Any, decls: list, root: str) -> str | None:
    """The symbol a named Dim's symbol `root` became, where only Dim.AUTO dims declared
    it: torch.export infers that relation (the AUTO dims become the named Dim) instead of
    refusing it; None otherwise."""
    e = env.simplify(sym(root))
    kinds = {d.kind for d in decls if d.expr.op == "sym" and d.expr.name == e.name}
    return e.name if e.op == "sym" and kinds == {"auto"} else None


def assumed_out(env: Any, assumed: tuple, root: str, declared: Any, lo: float,
                hi: float) -> bool:
    """A side's narrowing of the Dim of symbol `root` to [lo, hi] that its assumptions
    imply: at each excluded size of the declared range (a few at most), some assumed
    condition is false whatever the other sizes (``s0 == s0*s1*s2`` with ``s0 >= 2``
    excludes ``s2 == 0``); the side's program never runs there."""
    below = max(int(lo) - int(declared.min), 0)
    above = 0 if hi >= declared.max else declared.max - hi
    if not assumed or not 0 < below + above <= _FEW:
        return False
    excluded = [*range(int(declared.min), int(lo)),
                *(range(int(hi) + 1, int(hi + above) + 1) if above else ())]  # (hi: inf)
    return all(any(env.decide(subs(c, {root: v})) is False for c in assumed) for v in excluded)


_FEW = 16  # excluded sizes looked at
