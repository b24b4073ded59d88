"""Size splits at 0 and 1 for a relation between named Dims that the program checks at run
time (``if x.numel() < 4:``, ``if bool(y.numel()):`` with ``x.shape[0]`` declared from 0).

A residual condition between two or more named Dims that fails only where one of them is
below 2 (``x.shape[0]*x.shape[1] != 0``) is kept as a run-time check of the program, as
torch.export keeps it (``eager_raises.relation_assumed_away``).  Where eager computes
something at such a size (the condition picks a branch, it is not a requirement of an op),
that check refuses inputs eager handles.  Here such a size is traced as a side of its own
(``x.shape[0] == 0``, then the rest of the declared range), each side a complete export
sound for its range, and the sides become one program as ``splits.py`` makes them: equal
graphs merged, the rest dispatched by ``torch.cond``.  A split that fails for any reason
leaves the program with its run-time check, as it was (nothing is lost).

``checked_below_two``: where no split keeps such sizes (``x.squeeze()`` of a named Dim is
another rank at 1) and a problem of the refusal breaks only sizes where a named Dim is
below 2, the program is exported again with those problems as its run-time checks, as
``prefer_deferred_runtime_asserts_over_guards`` makes them, and only those: each export
(a split's sides too) matches a small problem to the refusal's by ``Violation.key`` (the
condition in the Env's symbols with their Dim names; for one Dim, the sizes below 2 it
breaks, `s0 != 1` being `s0 >= 2` on a side from 1), and any other problem is split or
refused as before.  Where that fails and every problem was small, the whole program is
exported deferred (as before); else the refusal stands.  torch.export accepts these
programs (its trace assumes a dynamic size is at least 2) and runs 0 and 1 unchecked;
safetrace's refuses them before computing, naming the condition (sound either way).
"""

from __future__ import annotations

import contextvars
import itertools
from typing import Any, Callable

from safetrace.errors import DeclaredSpaceViolation
from safetrace.exporter.branches import Side, Unsplittable
from safetrace.exporter.contract import Contract
from safetrace.exporter.declared_ranges import declared_range
from safetrace.exporter.eager_raises import ASSUMED_MIN, refuting, requirements_only
from safetrace.exporter.program import ExportedProgram
from safetrace.exporter.split_regions import region_of
from safetrace.exporter.split_report import header, headed, where_of
from safetrace.symbolic import Env

_POINTS = 256  # sizes breaking one condition looked at for a small size eager computes at


def small_sides(env: Env, contract: Contract, dyn: Any, skip: frozenset = frozenset()
                ) -> list[tuple]:
    """The split to try, as ``DynamicDims.narrowed`` lists a narrowing (Dim name, the
    point's size twice, the Dim's range traced, the point as hint, False) with the
    overrides its sides start from (``DynamicDims.relations``), for the first
    residual relation between named Dims that some size in their ranges breaks with a
    named Dim below ``ASSUMED_MIN`` where every failing check is not a requirement (eager
    runs there); [] when none.  (`dyn`: the export's ``DynamicDims``; `skip`: conditions,
    as text, and (Dim name, size) points whose split was tried and failed.)"""
    deferred = {p.key[0] for p in dyn.deferred}  # (checked_below_two's run-time checks)
    for c in contract.conditions:
        if declared_range(c.origin) or str(c.cond) in deferred or str(c.cond) in skip:
            continue  # (a declared range: sizes outside it are not the spec's)
        named = sorted(s for s in c.cond.free_symbols if s in dyn.dim_names and
                       contract.symbol(s) is not None and contract.symbol(s).backed)
        if not named or len(c.cond.free_symbols) < 2 or any(
                contract.symbol(s) is None or not contract.symbol(s).backed
                for s in c.cond.free_symbols):
            continue
        for point in itertools.islice(refuting(env, contract, c, named, 0), _POINTS):
            small = [s for s in named if point[s] < ASSUMED_MIN]
            if not small or requirements_only(env, point, True):
                continue
            # (the smallest size first: at (1, 0) of `s0*s1 != 0` the 0 breaks it, and a
            # split at s0 == 1 would only spend one of the splits; a Dim that breaks it
            # alone first: at (3, 1, 1) of `min(s0, P) == min(s2, P)` s2, not s1)
            first = min(small, key=lambda s: (not _alone(env, c, point, s, small), point[s]))
            name = dyn.dim_names[first]
            dim = dyn.roots[name][0]  # (the Dim, or a split side's range)
            v = point[first]
            if dim.min < dim.max and (name, v) not in skip:
                return [((name, v, v, dim.min, dim.max, v, False), dyn.relations(), c)]
    return []


def _alone(env: Env, c: Any, point: dict, s: str, small: list) -> bool:
    """Whether `point` with its other small sizes at their hints (2 or more) still breaks
    the condition `c` where eager runs: `s` below 2 is what breaks it."""
    moved = dict(point)
    for o in small:
        if o != s:
            h = env.hints.get(o, 0)
            if h < ASSUMED_MIN:
                return False
            moved[o] = h
    try:
        return not c.cond.evaluate(moved) and not requirements_only(env, moved, True)
    except (ArithmeticError, KeyError, ValueError, TypeError):
        return False


def split_small_sizes(run: Callable, ep: ExportedProgram, max_splits: int,
                      explore: Callable, combine: Callable) -> ExportedProgram:
    """`ep`, or one program for it with its ``small_sides`` traced apart (`explore` and
    `combine`: ``splits.py``'s, `run` as there); `ep` where any step fails."""
    if not getattr(ep, "small_sides", ()) or max_splits <= 0:
        return ep
    sides: list = []
    try:
        c = explore_small(run, ep, {}, explore, sides, [0, max_splits, None, False, True])
        out = combine(sides)
        return headed(out, header("size", c.cond, where_of(c.origin), out.dim_names))
    except Exception:  # noqa: BLE001 - the program as it was: its check refuses those sizes
        return ep


_TRIES = 3  # small splits tried per program (or side) before its run-time checks stay


# the program whose small split is being traced: where every split tried fails, the first
# is traced again with this program (its run-time checks kept) for each side that fails
# (splits._explore): sound there as it is on its whole range, and the sides traced apart
# admit what its checks refused (`x.flatten()[:c] + x.flatten()[:a]` at c == 1, where the
# side c >= 2 is refused for the equality `c == a` that eager requires there)
KEPT: contextvars.ContextVar[ExportedProgram | None] = contextvars.ContextVar(
    "kept", default=None)


def explore_small(run: Callable, ep: ExportedProgram, base: dict, explore: Callable,
                  sides: list, budget: list, combine: Callable | None = None) -> Any:
    """Trace `ep`'s first ``small_sides`` split into `sides` (from the overrides `base`);
    where that fails (a side eager raises on for some data: ``amax(0)`` in a torch.cond
    branch at a size 0, which another condition's split at 0 does not need), the next
    condition's or point's, up to ``_TRIES``; where all fail, the first again with `ep`
    for the sides that fail (``KEPT``), if some other side traces (with `combine`, a split
    inside a side's: those sides joined into that side's one program, as they alone must
    join).  Gives the condition split on; raises the last failure where none is traced."""
    kept, used = len(sides), budget[0]
    try:
        return _explore_small(run, ep, base, explore, sides, budget)
    except Exception as why:
        if getattr(why, "kind", "") == "too-many-splits" or not ep.small_sides:
            raise
        failure = why
    del sides[kept:]
    budget[0] = used
    narrowing, start, c = ep.small_sides[0]
    token = KEPT.set(ep)
    try:
        explore(run, {**base, **start}, narrowing, sides, budget)
    except Exception as why:  # noqa: BLE001 - the first failure stands
        if getattr(why, "kind", "") == "too-many-splits":
            raise
        raise failure from why
    finally:
        KEPT.reset(token)
    if all(s.ep is ep or s.ep is None for s in sides[kept:]):
        raise failure
    if combine is not None:
        mine = sides[kept:]
        del sides[kept:]
        try:
            sides.append(Side(region_of(base), combine(mine)))
        except Exception as why:  # noqa: BLE001 - the first failure stands
            raise failure from why
    return c


def _explore_small(run: Callable, ep: ExportedProgram, base: dict, explore: Callable,
                   sides: list, budget: list) -> Any:
    found, skip = ep.small_sides, frozenset()
    for _ in range(_TRIES):
        narrowing, start, c = found[0]
        kept, used = len(sides), budget[0]
        try:
            explore(run, {**base, **start}, narrowing, sides, budget)
            return c
        except Exception as why:  # noqa: BLE001 - another split, or the failure
            if getattr(why, "kind", "") == "too-many-splits":
                raise
            del sides[kept:]
            budget[0] = used
            skip = skip | {str(c.cond), narrowing[:2]}
            more = getattr(ep, "small_more", None)
            found = more(skip) if more is not None else []
            if not found:
                raise
    raise Unsplittable("no small split traced")


def checked_below_two(export: Callable[[bool | frozenset], ExportedProgram],
                      deferred: bool) -> ExportedProgram:
    """``export(deferred)``; where that is refused for sizes below 2 of named Dims (a
    ``Violation.small`` among its problems), the export again with those problems as
    run-time checks, every other guard split or refused as before (``export(keys)``:
    the problems' ``Violation.key``); failing that, where every problem was small, with
    all of them run-time checks (``export(True)``); failing that, the refusal."""
    try:
        return export(deferred)
    except DeclaredSpaceViolation as exc:
        problems = getattr(exc, "problems", None) or []
        keys = frozenset(p.key for p in problems if p.small and p.key)
        if deferred or not keys:
            raise
        refusal = exc
    tries = [keys] + ([True] if all(p.small for p in problems) else [])
    for i, how in enumerate(tries):
        try:
            ep = export(how)
        except Exception as why:  # noqa: BLE001 - the next way, or the refusal as it was
            if i + 1 == len(tries):
                raise refusal from why
            continue
        ep.retrace = getattr(ep.retrace, "func", ep.retrace)  # (a re-export: the same way)
        if how is not True:  # (sides joined by splits.py keep no list: what they defer)
            ep.deferred_checks = [p.text() for p in problems if p.small]
        return ep
    raise refusal  # (unreachable: `tries` is never empty)
