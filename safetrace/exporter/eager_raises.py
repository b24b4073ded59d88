"""Named-Dim sizes where eager itself raises, that torch.export assumes away.

torch.export traces a dynamic size as if it were at least 2: an op's requirement that fails
only at 0 or 1 (``x.max()`` of an empty ``x``, ``x[0]``, a convolution whose padded input
is shorter than its kernel, ``torch._check(n > 1)``, ``assert n > 1``) is never a guard
there, and its program raises in the op at run time.  safetrace exports such programs too,
with the requirement as one of the program's input checks (refused before any op runs,
naming the line).  A condition that picks a branch stays a refusal (eager computes
something else at those sizes), and so does a requirement that fails at a size of 2 or more
(torch.export refuses it too).
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Iterator

from safetrace.exporter.contract import Contract
from safetrace.symbolic import Env
from safetrace.symbolic.canon import substitute

ASSUMED_MIN = 2  # torch.export's lower bound for a dynamic size while it traces


def requirements_only(env: Env, point: dict[str, int], sized: bool = False) -> bool:
    """At ``point`` (symbol -> size; every other size as in the example), some recorded
    condition fails and each one that fails is a requirement of the code (eager raises
    there): an op's check, ``torch._check``, an ``assert``; with `sized`, also a guard
    that is a requirement where its sizes are large enough (``Guard.required_from``) and
    they are at ``point``."""
    binding = {n: info.hint for n, info in env.symbols.items() if info.backed}
    binding.update(point)
    checks = {id(f) for f in env.facts}
    failed = []
    for g in env.guards + env.facts + _required(env):
        cond = substitute(g.cond, env.subst.get)
        try:
            holds = cond.evaluate(binding)
        except (ArithmeticError, KeyError, ValueError, TypeError):
            continue
        if not holds:
            failed.append((g, cond))
    return bool(failed) and all(
        g.precondition or id(g) in checks or (sized and _required_at(env, g, cond, binding))
        for g, cond in failed)


def _required_at(env: Env, g: Any, cond: Any, binding: dict) -> bool:
    """Whether eager raises at `binding` where the guard `g` (failing there) was made by
    broadcasting two sizes: exactly where they differ and neither is 1 (``Guard.sizes``),
    else where each size is at least ``Guard.required_from``."""
    least = getattr(g, "required_from", 0)
    if least and getattr(g, "sizes", ()):
        try:
            a, b = (substitute(e, env.subst.get).evaluate(binding) for e in g.sizes)
        except (ArithmeticError, KeyError, ValueError, TypeError):
            return False
        return a != b and a != 1 and b != 1
    return bool(least) and all(binding.get(n, 0) >= least for n in cond.free_symbols)


def range_assumed_away(env: Env, root: str, declared: Any, lo: float, hi: float) -> bool:
    """A named Dim narrowed only below ``ASSUMED_MIN`` (upper end kept), where every
    excluded size fails an op's requirement alone."""
    return (hi >= declared.max and lo <= ASSUMED_MIN and
            all(requirements_only(env, {root: v}) for v in range(int(declared.min), int(lo))))


def condition_assumed_away(env: Env, contract: Contract, cond: Any, named: list[str],
                           point: dict[str, int]) -> bool:
    """A residual condition that holds wherever each named Dim is at least
    ``ASSUMED_MIN``, and that ``point`` (a size breaking it) breaks as a requirement."""
    return (refuted(env, contract, cond, named, ASSUMED_MIN) is None and
            requirements_only(env, point))


def relation_required(env: Env, cond: Any, point: dict[str, int]) -> bool:
    """A residual relation between named Dims that only the code's requirements make: every
    guard it comes from is one (eager raises where it fails), and so is every recorded
    condition that ``point`` (sizes breaking it) breaks."""
    checks = {id(f) for f in env.facts}
    sources = [g for g in env.guards + env.facts + _required(env)
               if substitute(g.cond, env.subst.get) == cond.cond]
    return (bool(sources) and all(g.precondition or id(g) in checks for g in sources) and
            requirements_only(env, point))


def _required(env: Env) -> list:
    """An op's requirements checked at run time without being assumed (``Env.require``)."""
    return [g for g in env.requirements if g.precondition]


def refuted(env: Env, contract: Contract, cond: Any, named: list[str],
            floor: int = 0) -> dict | None:
    """Sizes within the declared ranges (and at least ``floor`` for the named Dims) that
    violate the residual condition `cond` (the condition really narrows the declared
    space), or None.  The named Dims range over each one's range ends, their neighbours
    and the example size, then pseudo-random points; every other symbol keeps its example
    value.  A condition with a symbol that has no declared range (data-dependent) counts
    as refuted, at the example."""
    return next(refuting(env, contract, cond, named, floor), None)


def relation_assumed_away(env: Env, contract: Contract, cond: Any, named: list[str]) -> bool:
    """A residual relation between named Dims (``y.shape[0] <= x.shape[0]`` of
    ``x[:y.shape[0]] + y``) that every size breaking it breaks either as a requirement
    (eager raises there) or with some named Dim below ``ASSUMED_MIN`` (torch.export's
    broadcasting assumes such a dim is not 1): torch.export keeps it as a run-time check of
    its program, not a constraint violation, and so does safetrace (checked before any op
    runs)."""
    points = list(itertools.islice(refuting(env, contract, cond, named, 0), 256))
    return bool(points) and all(
        any(p[n] < ASSUMED_MIN for n in named) or requirements_only(env, p, True)
        for p in points)


def refuting(env: Env, contract: Contract, cond: Any, named: list[str],
             floor: int) -> Iterator[dict]:
    """The points of `refuted`, each once, in the order tried."""
    names = sorted(cond.cond.free_symbols)
    values: dict[str, list[int]] = {}
    for name in names:
        spec = contract.symbol(name)
        if spec is None or not spec.backed:
            yield {n: env.hints.get(n, 0) for n in names}
            return
        hint = env.hints.get(name, 0)
        if name not in named:
            values[name] = [hint]
            continue
        lo = max(spec.lo if spec.lo is not None else 0, floor)
        hi = spec.hi if spec.hi is not None else max(lo, hint) * 4 + 64
        cands = {lo, lo + 1, lo + 2, hi, hi - 1, hint, hint + 1, max(lo, hint - 1)}
        if len(named) == 1:  # one dim: every value up to a bound
            cands.update(range(lo, min(hi, lo + 256) + 1))
        values[name] = sorted(v for v in cands if lo <= v <= hi)
        if not values[name]:
            return  # (nothing of the range is left above the floor)
    seen = set()
    for point in _points(names, values):
        # (not only where the others hold: two conditions failing together would
        # otherwise hide each other)
        key = tuple(point.values())
        if key in seen:
            continue
        seen.add(key)
        try:
            if not cond.cond.evaluate(point):
                yield point
        except (ArithmeticError, KeyError, ValueError, TypeError):
            continue


def _points(names: list[str], values: dict[str, list[int]]) -> Iterator[dict]:
    """`refuting`'s points in order, made as they are read (most readers stop at the
    first that breaks the condition): each combination of `values` (at most 4096), then
    512 pseudo-random ones (the same every run)."""
    for combo in itertools.islice(itertools.product(*(values[n] for n in names)), 4096):
        yield dict(zip(names, combo))
    rnd = random.Random(0)
    for _ in range(512):
        yield {n: rnd.choice(values[n]) if rnd.random() < 0.3 else
               rnd.randint(values[n][0], values[n][-1]) for n in names}


def fails_in_eager(traced: Env, cond: Any, root: str, lo: int, hi: float) -> bool:
    """Whether the condition `cond` of one named Dim's symbol `root` fails for every size
    in ``[lo, hi]`` and eager raises at each of them: every guard it comes from is an op's
    requirement there (``x + table[:n]`` with a table of 63 rows: the broadcast of `n` with
    63 raises for every ``n >= 64``, both sizes at least its ``required_from``).  Proved
    on the interval (its bounds), not sampled."""
    if cond.free_symbols != {root} or lo > hi:
        return False
    checks = {id(f) for f in traced.facts}
    sources = [g for g in traced.guards + traced.facts + _required(traced)
               if substitute(g.cond, traced.subst.get) == cond]
    if not sources:
        return False
    env = Env()
    env.shares_state_names = False  # (a new env proving one interval: no trace reads it)
    env.new_backed(int(lo), int(lo), None if hi == float("inf") else int(hi), name=root)
    if env.decide(cond) is not False:
        return False
    for g in sources:
        if g.precondition or id(g) in checks:
            continue
        least = getattr(g, "required_from", 0)
        if not least or cond.op != "eq" or any(env.bounds(a).lo < least for a in cond.args):
            return False
    return True
