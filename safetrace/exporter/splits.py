"""Size splits: one program for a declared Dim whose range the code branches on.

When the traced program works for only part of a named Dim's declared range (``if
x.shape[1] == 1:``, transformers' ``q_length == 1``), export does not narrow the range: it
traces each side of the decision again with a hint there (seq = 1, then 2 <= seq <= 64),
each side a complete export, sound for its own range by the usual machinery.  Then

(a) sides whose graphs are the same (every op, argument and tensor size equal once the
    point side's size is substituted, the same input contract) are one graph: the guard
    is dropped and the graph's range widened;
(b) the other sides become one program whose top is ``torch.cond`` on the Dim's range,
    with each side's graph as a branch, and one input contract: the union of the sides'
    (their residual conditions apply on their own range only).

Sides that need different input contracts in other ways, or a split that fails, leave
the original refusal in place (nothing is ever narrowed silently).  At most
``max_splits`` splits per export (``TooManySplits`` past it).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import math
import operator
from typing import Any, Callable

import torch

from safetrace.errors import DeclaredSpaceViolation, OpShapeError, too_many_splits
from safetrace.errors.violations import sides_unjoined
from safetrace.exporter.auto_small import relations
from safetrace.exporter.branches import (
    OutputsDiffer, Side, Unsplittable, branch_graph, cond_outputs, constant_names, env_of,
    extra_placeholders, input_nodes, output_vals, placeholders, point_subst, unified_constants,
)
from safetrace.exporter.compare import (contract_key, note, residual_conditions,
                                        same_program, signature_key)
from safetrace.exporter.contract import Condition, Contract, TensorInput
from safetrace.exporter.eager_raises import ASSUMED_MIN
from safetrace.exporter.hoist import Prefix, common_prefix, is_size_node
from safetrace.exporter.program import ExportedProgram, InputSpec, OutputSpec
from safetrace.exporter.relation_splits import split_refused, split_relation, unjoinable
from safetrace.exporter.sides import CHECKED
from safetrace.exporter.size_tests import same_either_way, widen_unbacked
from safetrace.exporter.small_splits import KEPT, explore_small, split_small_sizes
from safetrace.exporter.split_regions import (hull_of, range_text, region_of, region_pred,
                                              region_text, side_ranges, symbol_of, tiles)
from safetrace.exporter.split_report import header, headed, nested, where_of
from safetrace.symbolic import make_bool, make_int
from safetrace.symbolic.canon import and_, eq, ge, le, not_, or_
from safetrace.symbolic.expr import TRUE, sym
from safetrace.trace.hops.subgraph import Subgraph, add_submodule
from safetrace.trace.mutation import base_placeholder, written_placeholders
from safetrace.trace.opinfo import RESHAPES_SELF

MAX_SPLITS = 4
# tracing a point side again with other Dims at small sizes (_others_small): a side
# refused there is a region eager raises at, not a failed split
_REHINTED: contextvars.ContextVar[bool] = contextvars.ContextVar("rehinted", default=False)
aten = torch.ops.aten


def export_with_splits(run: Callable[[dict], ExportedProgram],
                       max_splits: int = MAX_SPLITS,
                       start: DeclaredSpaceViolation | None = None) -> ExportedProgram:
    """``run(overrides)`` exports with ``{Dim name: (hint, lo, hi)}`` in place of the
    declared ranges; a refusal that only narrows named Dims is split instead.  The program
    so split holds that refusal as ``split_start``; given as `start` (``auto_seen``: an
    export in the same state, whose first trace is refused the same way), the sides are
    traced at once, without that first trace (each side is sound for its own range, and
    the sides cover the declared one whatever found them)."""
    original = start if start is not None else _unsplit(run, max_splits)
    if isinstance(original, ExportedProgram):
        return original
    sides: list[Side] = []
    try:
        _explore(run, getattr(original, "st_related", {}), original.st_narrowed[0], sides,
                 [0, max_splits, original, False])
        name, lo, hi = original.st_narrowed[0][:3]
        ep = headed(combine(sides), header("size", range_text(name, lo, hi),
                                           where_of(original.problems[0].cause)))
        ep.split_start = original.with_traceback(None)
        return ep
    except Exception as why:  # noqa: BLE001 - a split never makes an error worse
        if getattr(why, "kind", "") == "too-many-splits" and not getattr(
                original, "st_pinned", False):  # (a pin's refusal names its static fix)
            raise
        if isinstance(why, OutputsDiffer):  # (no split holds both: the refusal says so)
            raise sides_unjoined(original, why.detail) from why
        if getattr(original, "st_relation", None):  # a condition holding on many ranges
            try:  # (`s % 20 < 10`): split on it as on a relation, two sides in all
                return split_refused(run, original, max_splits)
            except Exception:  # noqa: BLE001
                pass
        raise original from why


def _unsplit(run: Callable[[dict], ExportedProgram], max_splits: int
             ) -> ExportedProgram | DeclaredSpaceViolation:
    """The program ``run({})`` gives (split at 0 and 1 or on a relation where it keeps
    such a check), the program for a refusal of relations, or the refusal to split by
    ranges (raised where it is none to split)."""
    try:
        ep = same_either_way(run, {}, run({}), max_splits)
        ep = split_small_sizes(run, ep, max_splits, _explore, combine)
        return split_relation(run, ep, max_splits)
    except DeclaredSpaceViolation as exc:
        if getattr(exc, "st_relation", None) and not exc.st_narrowed:
            try:  # (relations between Dims, no range: relation_splits.py)
                return split_refused(run, exc, max_splits)
            except Exception as why:  # noqa: BLE001 - a split never makes an error worse
                return _checked(run, exc, why, max_splits)
        if getattr(exc, "st_checked", None) and not exc.st_narrowed:
            return _checked(run, exc, None, max_splits)
        if not getattr(exc, "st_narrowed", None) or max_splits <= 0 or \
                _count_beyond(exc, max_splits):
            raise
        return exc


def _checked(run: Callable, exc: DeclaredSpaceViolation, why: Exception | None,
             max_splits: int) -> ExportedProgram:
    """Where no split keeps both answers of a branch's relations between named Dims
    (``st_checked``): the example's answer, the relations run-time checks of the program
    naming the branch's line, as torch.export's program keeps them (sound, narrower), its
    sizes below 2 that eager computes split apart where the checks refuse them
    (``min(a, P) == 1 or ...`` at c == 1: small_splits.py, each side with those checks);
    `exc` where there are none or the trace refuses otherwise."""
    if not getattr(exc, "st_checked", None):
        raise exc from why
    checked = {CHECKED: exc.st_checked}
    try:
        ep = run(checked)
    except DeclaredSpaceViolation:
        raise exc from why
    ep = split_small_sizes(lambda side, flipped=frozenset(): run({**checked, **side}, flipped),
                           ep, max_splits, _explore, combine)
    if isinstance(why, OutputsDiffer) and getattr(exc, "st_relation", None):
        return unjoinable(ep, exc.st_relation[0], why.detail)  # (its refusal says why)
    return ep


def _count_beyond(exc: DeclaredSpaceViolation, max_splits: int) -> bool:
    """A Dim pinned by a count (a list or loop as long as it) whose declared range has more
    sizes than the splits allow: each size is a side of its own, the last side (``b >= k``)
    pins again, so exploring only costs traces before ``TooManySplits``."""
    _, _, _, dlo, dhi, _, _ = exc.st_narrowed[0]
    return any(p.count for p in exc.problems) and dhi - dlo > max_splits


def _explore(run: Callable, overrides: dict, narrowing: tuple, sides: list[Side],
             budget: list) -> None:
    name, lo, hi, dlo, dhi, hint, soft = narrowing
    budget[3] = budget[3] or soft
    if (lo, hi) == (dlo, dhi) or lo < dlo or hi > dhi:
        raise Unsplittable(f"{name}: no progress splitting [{dlo}, {dhi}]")
    parts = [(lo, hi, hint)]
    if lo > dlo:
        parts.append((dlo, lo - 1, _hint(dlo, lo - 1, lo - 1)))
    if hi < dhi:
        parts.append((int(hi) + 1, dhi, _hint(int(hi) + 1, dhi, int(hi) + 1)))
    budget[0] += len(parts) - 1
    if budget[0] > budget[1]:
        if budget[3] or budget[2] is None:  # a condition holding on many intervals (`s %
            # 3 != 0`), or a split that refused nothing (small_splits.py's): refused
            raise Unsplittable("a condition that no few ranges express")
        found = [region_text(s.region) for s in sides]
        found += [region_text(dict(region_of(overrides),
                                    **{name: (a, b)})) for a, b, _ in parts]
        problem = budget[2].problems[0].text().split("\n")[0]
        raise too_many_splits(budget[1], found, problem)
    for plo, phi, phint in sorted(parts):
        side = dict(overrides)
        side[name] = (phint, plo, phi)
        kept, used = len(sides), budget[0]
        try:
            _trace_side(run, side, name, sides, budget)
        except Exception as why:  # noqa: BLE001 - the program split, where its checks stay
            whole = KEPT.get()
            if whole is None or getattr(why, "kind", "") == "too-many-splits":
                raise
            del sides[kept:]
            budget[0] = used
            sides.append(Side(region_of(side), whole))


def _trace_side(run: Callable, side: dict, name: str, sides: list[Side],
                budget: list) -> None:
    """Trace one side of a split of Dim `name` into `sides` (split again where its own
    trace narrows a Dim)."""
    _, plo, phi = side[name]
    try:
        ep, side = _run_side(run, side, name)
    except OpShapeError as exc:
        if _REHINTED.get():  # (another Dim's sizes where eager raises at these: the
            # region is refused, a refusal no wider than the one it replaces)
            sides.append(Side(region_of(side), None, _eager_raises(
                region_text(region_of(side)), None, exc)))
            return
        if plo != phi or plo >= ASSUMED_MIN or len(budget) > 4:
            raise  # (small_splits.py's split: its next condition may keep that size)
        if not _others_small(run, side, name, exc, sides, budget):
            sides.append(Side(region_of(side), None, _eager_raises(name, plo, exc)))
        return
    except DeclaredSpaceViolation as exc:
        more = getattr(exc, "st_narrowed", None)
        if not more:
            raise
        kept, used, inside = len(sides), budget[0], budget[3]
        try:
            _explore(run, side, more[0], sides, budget)
        except Exception as why:  # noqa: BLE001 - a relation split of the side, or that
            # (only the first side refused for such a condition: inside it, the
            # failure goes up to it, and above it, to the export's own relation split)
            joined = _relation_side(run, side, exc, budget[1]) \
                if more[0][6] and not inside else None
            if joined is None or getattr(why, "kind", "") == "too-many-splits":
                raise
            del sides[kept:]
            budget[0], budget[3] = used, inside
            sides.append(Side(region_of(side), joined))
        return
    ep = same_either_way(run, side, ep, budget[1])
    ep = split_relation(lambda more, flipped=frozenset(), side=side: run(
        {**side, **more}, flipped), ep, budget[1])
    if len(budget) > 4 and getattr(ep, "small_sides", ()):  # (small_splits.py's: nested)
        try:
            explore_small(run, ep, side, _explore, sides, budget, combine)
            return
        except Exception as why:  # noqa: BLE001 - the side with its run-time checks
            if getattr(why, "kind", "") == "too-many-splits":
                raise
    sides.append(Side(region_of(side), ep))


def _others_small(run: Callable, side: dict, name: str, exc: OpShapeError,
                  sides: list[Side], budget: list) -> bool:
    """A point side below 2 where eager raises at the other named Dims' hints (``x``'s
    ``Dim(max=1)`` at 0 against ``y``'s example 3 in ``x + y``; ``x.split(x.shape[0], 1)``
    at 0 with 3 columns) traced again with those Dims at 0, then at 1, over their declared
    ranges, split where that trace narrows them; the regions where eager still raises are
    refused (``_REHINTED``).  Whether that traced; `sides` as it was where not."""
    others = {n: r for n, r in getattr(exc, "st_dims", {}).items()
              if n not in side and n != name}
    for v in (0, 1):
        retry = {**side, **{n: (v, lo, hi) for n, (lo, hi) in others.items()
                            if lo <= v <= hi and hi > lo}}
        if len(retry) == len(side):
            continue
        kept, used = len(sides), budget[0]
        token = _REHINTED.set(True)
        try:
            _trace_side(run, retry, name, sides, budget)
            if any(s.ep is not None for s in sides[kept:]):
                return True
        except Exception as why:  # noqa: BLE001 - the point refused, as before
            if getattr(why, "kind", "") == "too-many-splits":
                raise
        finally:
            _REHINTED.reset(token)
        del sides[kept:]
        budget[0] = used
    return False


def _relation_side(run: Callable, side: dict, exc: DeclaredSpaceViolation,
                   max_splits: int) -> ExportedProgram | None:
    """The side's program where its trace was refused for a condition that holds on many
    ranges of its Dim (bamba's `pad_size > 0`, `L % 8 != 0`, on the side L >= 2 of a split
    at L == 1) and no range expresses: both answers traced, joined by a torch.cond on the
    relation (``relation_splits.split_refused``, as the top of an export tries where its
    ranges are not enough); None where that fails."""
    if not getattr(exc, "st_relation", None):
        return None
    try:
        return split_refused(lambda more, flipped=frozenset(): run({**side, **more}, flipped),
                             exc, max_splits)
    except Exception as why:  # noqa: BLE001 - a split never makes an error worse
        if str(getattr(why, "cause", "")).startswith("internal error:"):
            raise
        return None


def _run_side(run: Callable, side: dict, name: str) -> tuple:
    """``run(side)`` and the side it ran.  Where eager raises at a range side's hint (an
    op's shape check: ``ones(min(n, 2*m + 1)) + x`` at m = 2 with the example's n = 7, on
    the side m >= 1 of a split at m == 0), that side is traced again at its range's upper
    end, then its middle: a trace of the same range, sound for it as any side is."""
    hint, lo, hi = side[name]
    try:
        return run(side), side
    except OpShapeError as exc:
        others = [v for v in (hi, (lo + hi) // 2) if v not in (hint, math.inf)] \
            if lo < hi and hi != math.inf else []
        v = getattr(exc, "st_examples", {}).get(name)  # (the example's size, where eager
        if v is not None and lo <= v <= hi and v not in (hint, *others):  # computed: the
            others.append(v)  # side from 2 of `x.flatten()[:c] + x.flatten()[:a]` at a = 2)
        if not others:
            raise
    for i, v in enumerate(others):
        retry = dict(side, **{name: (int(v), lo, hi)})
        try:
            return run(retry), retry
        except OpShapeError:
            if i + 1 == len(others):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _eager_raises(name: str, v: int | None, exc: OpShapeError) -> str:
    """The origin of the refusal of a point side below 2 whose trace an op's shape check
    refused (``view(-1, t)`` of no elements at t == 0): eager raises there at the sizes
    traced, and the program refuses that size (its other sides' ranges leave it out)."""
    at = str(exc.where.source or "").strip() if getattr(exc, "where", None) else ""
    if v is None:  # (a region: _others_small's)
        return f" (eager raises at {name}{': ' + at if at else ''})"
    return f" (eager raises at {name} == {v}{': ' + at if at else ''})"


def _hint(lo: int, hi: float, near: int) -> int:
    """A hint in [lo, hi] next to the split point, avoiding 0 and 1 (special to code)."""
    if near <= 1 and lo <= 2 <= hi:
        return 2
    return near


# -- combining ---------------------------------------------------------------------------------
def combine(sides: list[Side]) -> ExportedProgram:
    """One program for all sides: equal graphs merged, the rest dispatched by torch.cond."""
    notes: list[str] = []  # (each side's own splits: under its line, _dispatch)
    raising = [s for s in sides if s.ep is None]  # (_explore's: sizes eager raises at)
    sides[:] = [s for s in sides if s.ep is not None]
    if not sides:
        raise Unsplittable("eager raises on every side")
    clamped = _clamp(sides) + [s.refused for s in raising]
    merged = True
    while merged and len(sides) > 1:
        merged = False
        for i in range(len(sides)):
            for j in range(len(sides)):
                if i != j and _try_merge(sides, i, j, notes):
                    merged = True
                    break
            if merged:
                break
    if len(sides) == 1:
        ep = sides[0].ep
        note(ep.graph, notes)
        return ep
    return _dispatch(sides, notes, clamped)


def _clamp(sides: list[Side]) -> list[str]:
    """Each side's region as its own program admits it.  A side's trace may narrow the split
    Dim (``if n < 2: raise`` under a side including 0 and 1: its program refuses the sizes
    where eager raises): the combined program must refuse them too, so the side stands for
    the sizes it admits, not for those it was asked to trace.  Returns the narrowings' origins."""
    origins: list[str] = []
    for s in sides:
        for d, (lo, hi) in list(s.region.items()):
            name = symbol_of(s.ep, d)
            spec = s.ep.contract.symbol(name) if name is not None else None
            if spec is None:
                continue
            new = (max(lo, spec.lo), min(hi, math.inf if spec.hi is None else spec.hi))
            if new != (lo, hi):
                s.region = dict(s.region, **{d: new})
                origins.append(spec.origin or f" ({range_text(d, *new)})")
    return origins


def _try_merge(sides: list[Side], i: int, j: int, notes: list[str]) -> bool:
    g, h = sides[i], sides[j]
    differ = [n for n in g.region if g.region[n] != h.region.get(n)]
    if len(differ) != 1 or set(g.region) != set(h.region):
        return False
    dim = differ[0]
    (glo, ghi), (hlo, hhi) = g.region[dim], h.region[dim]
    if not (ghi + 1 == hlo or hhi + 1 == glo):
        return False  # not adjacent
    s = symbol_of(g.ep, dim)
    if s is None or glo == ghi:
        return False  # g must be symbolic in the Dim
    subst = {s: hlo} if hlo == hhi else {}
    if hlo != hhi and symbol_of(h.ep, dim) != s:
        return False
    # data-dependent symbols: their ranges follow from the checks in the graphs (compared
    # here) and the sides' sizes; the merged program's are the hull of the two
    unbacked = {x.name for e in (g.ep, h.ep) for x in e.contract.symbols if not x.backed}
    try:
        if not same_program(g.ep, h.ep, subst, {s} | unbacked):
            return False
    except ZeroDivisionError:  # (g's sizes divide by 0 at h's value, `n // (n - 2)` at
        return False  # n == 2, where h traced the code's `except` side: not h's program)
    lo, hi = min(glo, hlo), max(ghi, hhi)
    symbols = tuple(dataclasses.replace(x, lo=lo, hi=None if hi == math.inf else int(hi),
                                        origin="") if x.name == s else x
                    for x in g.ep.contract.symbols)
    g.ep.contract = dataclasses.replace(g.ep.contract, symbols=symbols)
    widen_unbacked(g.ep, [g.ep, h.ep])
    notes.append(f"  {range_text(dim, hlo, hhi)} traces the same graph as "
                 f"{range_text(dim, glo, ghi)}: guard dropped")
    g.region = dict(g.region, **{dim: (lo, hi)})
    del sides[j]
    return True


# -- dispatching -------------------------------------------------------------------------------
def _dispatch(sides: list[Side], notes: list[str], clamped: list[str]) -> ExportedProgram:
    dims = sorted({n for s in sides for n in s.region})
    ref = next((s for s in sides if all(symbol_of(s.ep, d) for d in dims)), None)
    if ref is None:
        if len({str(s.ep.out_spec) for s in sides}) > 1:  # (a list as long as the batch)
            raise Unsplittable(f"each of {', '.join(region_text(s.region) for s in sides)} "
                                f"returns another output structure, which no one graph "
                                f"returns")
        raise Unsplittable("no side keeps the split Dims symbolic")
    syms = {d: symbol_of(ref.ep, d) for d in dims}
    key = signature_key(ref.ep)[:1] + signature_key(ref.ep)[2:]
    # data-dependent symbols: each branch checks its own (in its graph); their ranges are
    # the hull of the sides' (below)
    skip = set(syms.values()) | {x.name for s in sides for x in s.ep.contract.symbols
                                 if not x.backed}
    for s in sides:
        sk = signature_key(s.ep)
        if sk[:1] + sk[2:] != key:
            raise Unsplittable("the sides' signatures differ")
        subst = point_subst(s, syms)
        mine, theirs = contract_key(ref.ep.contract, subst, skip), \
            contract_key(s.ep.contract, {}, skip)
        if mine[0] != theirs[0] or [x[::3] for x in mine[1]] != [x[::3] for x in theirs[1]]:
            # (a range of another size may differ: `b >= 1` where `b*t != 0` at t == 1,
            # checked on that side's region alone, side_ranges)
            raise Unsplittable(f"the input contract differs for {region_text(s.region)}")
    for s in sides:  # ep.module() finds in-place writes of parameters in the top graph only
        params = {x.name for x in s.ep.graph_signature.input_specs if x.kind == "parameter"}
        if written_placeholders(s.ep.graph) & params:
            raise Unsplittable("a side writes a parameter in place")
        if _reshapes_an_input(s.ep.graph):  # (a point side reads its inputs narrowed,
            # x[:0]: `x.t_()` there would transpose that view, not the caller's tensor)
            raise Unsplittable("a side reshapes an input in place")
    contract = _union_contract(sides, ref, syms, clamped)
    consts, const_names = unified_constants(sides)
    inputs = [dataclasses.replace(spec) for spec in ref.ep.graph_signature.input_specs
              if spec.kind != "constant"]
    inputs += [InputSpec("constant", name, name, None, True) for name in consts]
    mutated = list(dict.fromkeys(o.target for s in sides
                                 for o in s.ep.graph_signature.output_specs
                                 if o.kind == "buffer_mutation"))
    n_user = sum(1 for o in ref.ep.graph_signature.output_specs if o.kind == "user_output")
    outputs = [OutputSpec("buffer_mutation", t) for t in mutated]
    outputs += [OutputSpec("user_output", None) for _ in range(n_user)]
    names = [input_nodes(s, const_names[k]) for k, s in enumerate(sides)]
    prefix = common_prefix([s.ep.graph for s in sides], sides.index(ref),
                           [point_subst(s, syms) for s in sides], names,
                           {x.name for x in ref.ep.contract.symbols if x.backed})
    branches = [branch_graph(s, ref, inputs, const_names[k], mutated, prefix, k)
                for k, s in enumerate(sides)]
    graph = _dispatch_graph(sides, branches, ref, inputs, syms, mutated, prefix,
                            names[sides.index(ref)])
    if prefix:
        ops = sum(1 for n in prefix.nodes if not is_size_node(n))
        notes.append(f"  {ops} ops every side runs before they differ: computed once, "
                     f"before the torch.cond")
    for s in sides:
        notes.append(f"  {region_text(s.region)}: its own graph (a torch.cond branch)")
        notes += nested(s.ep)
    note(graph, notes)
    ep = ExportedProgram(graph, inputs, outputs, ref.ep.in_spec, ref.ep.out_spec,
                         state=dict(ref.ep._state), constants=consts, contract=contract)
    for attr in ("dim_names", "exported_training", "module_tree", "retrace"):
        setattr(ep, attr, getattr(ref.ep, attr))
    constant_names(ep, sides, const_names)
    ep.auto_relations = None  # (found when first read: auto_small.relations)
    ep.auto_dims = any(getattr(s.ep, "auto_dims", False) for s in sides)
    ep.auto_relations_of = functools.partial(_joined_relations, ep, ref.ep, sides)
    widen_unbacked(ep, [s.ep for s in sides])
    return ep


def _joined_relations(ep: ExportedProgram, ref: ExportedProgram, sides: list) -> list:
    """The sides' Dim.AUTO / DYNAMIC relations (a size related to a split Dim:
    auto_small.py's), and the places of `ref` on `ep` where there are any."""
    found = list(dict.fromkeys(r for s in sides for r in relations(s.ep)))
    if found:
        ep.auto_places = getattr(ref, "auto_places", None)
    return found


def _union_contract(sides: list[Side], ref: Side, syms: dict, clamped: list[str]) -> Contract:
    c = ref.ep.contract
    hull = hull_of(sides, syms)
    by_sym = {syms[d]: r for d, r in hull.items()}
    ranges, checks = side_ranges(sides, syms, hull, set(by_sym))
    symbols = tuple(dataclasses.replace(x, lo=by_sym[x.name][0],
                                        hi=None if by_sym[x.name][1] == math.inf
                                        else int(by_sym[x.name][1]),
                                        origin="".join(dict.fromkeys(clamped)))
                    if x.name in by_sym else ranges.get(x.name, x) for x in c.symbols)
    ref_conds = residual_conditions(c, {})
    same = all(residual_conditions(s.ep.contract, {}) == residual_conditions(c, point_subst(s, syms))
               for s in sides)
    if same and ref_conds is not None:
        conditions = c.conditions
    else:  # each side's conditions hold on its own range
        conditions = tuple(
            Condition(or_(not_(region_pred(s.region, syms, hull)), cond.cond), cond.origin)
            for s in sides for cond in s.ep.contract.conditions)
    conditions += checks
    if clamped and not tiles(sides, hull):  # sizes inside the hull no side admits
        covered = or_(*(region_pred(s.region, syms, hull) for s in sides))
        if covered is not TRUE:
            conditions += (Condition(covered, "; ".join(dict.fromkeys(clamped))),)
    return dataclasses.replace(c, symbols=symbols, conditions=conditions)


def _size_node(g: torch.fx.Graph, ref: Side, phs: list, inputs: list, name: str,
               env: Any) -> torch.fx.Node:
    """Nodes reading symbol `name` from the input dim the contract binds it to."""
    user = {spec.leaf: ph for spec, ph in zip(inputs, phs) if spec.kind == "user_input"}
    for i, inp in enumerate(ref.ep.contract.inputs):
        if not isinstance(inp, TensorInput):
            continue
        for d, dim in enumerate(inp.dims):
            if dim.kind in ("bind", "derived") and dim.symbol == name:
                node = g.call_function(aten.sym_size.int, (user[i], d))
                node.meta.update(val=make_int(dim.size, env), stack_trace="")
                if dim.kind == "derived":
                    node = g.call_function(operator.sub, (node, dim.offset))
                    node = g.call_function(operator.floordiv, (node, dim.coef))
                    node.meta.update(val=make_int(sym(name), env), stack_trace="")
                return node
    raise Unsplittable(f"no input dim binds {name}")


def _dispatch_graph(sides: list[Side], branches: list, ref: Side, inputs: list,
                    syms: dict, mutated: list[str], prefix: Prefix,
                    ref_inputs: dict | None = None) -> torch.fx.Graph:
    """torch.cond on the first side's range: its graph, else the rest dispatched.  The
    top graph (`ref_inputs`: the reference's placeholders by input name) computes the
    prefix first; every cond passes its values on."""
    if len(sides) == 1:
        return branches[0]
    env = env_of(ref.ep.graph)
    g = torch.fx.Graph()
    consts = {spec.name for spec in inputs if spec.kind == "constant"}
    # (a lifted constant's name is the unified one, which may be another constant of
    # the reference's: constants take the metadata of a branch that reads them)
    metas = {n.name: dict(n.meta) for n in ref.ep.graph.nodes
             if n.op == "placeholder" and n.name not in consts}
    for b in branches:
        for n in b.nodes:
            if n.op == "placeholder" and "val" not in metas.get(n.name, ()):
                metas[n.name] = dict(n.meta)
    phs = placeholders(g, inputs, metas)
    if ref_inputs is not None:
        env_map = {ref_inputs[spec.name]: ph for spec, ph in zip(inputs, phs)
                   if spec.name in ref_inputs}
        for n in prefix.nodes:
            env_map[n] = g.node_copy(n, env_map.__getitem__)
        extra = [env_map[e] for e in prefix.extras]
    else:
        extra = extra_placeholders(g, prefix)
    region = sides[0].region
    hull = hull_of(sides, region)
    pred, expr = None, TRUE
    for d, (lo, hi) in sorted(region.items()):
        tests = [(eq, lo, operator.eq)] if lo == hi else \
            [(ge, lo, operator.ge)] * (lo > hull[d][0]) + [(le, hi, operator.le)] * (hi < hull[d][1])
        if not tests:
            continue  # the rest of the sides lie in this one's range of d
        size = _size_node(g, ref, phs, inputs, syms[d], env)
        for op, bound, fn in tests:
            c = g.call_function(fn, (size, int(bound)))
            cond = op(sym(syms[d]), int(bound))
            c.meta.update(val=make_bool(cond, env), stack_trace="")
            expr = and_(expr, cond)
            if pred is not None:
                c = g.call_function(operator.and_, (pred, c))
                c.meta.update(val=make_bool(expr, env), stack_trace="")
            pred = c
    if pred is None:
        raise Unsplittable("sides with overlapping ranges")
    rest = _dispatch_graph(sides[1:], branches[1:], ref, inputs, syms, mutated, prefix)
    t_attr = g.get_attr(add_submodule(g, "true_graph", Subgraph(branches[0])))
    f_attr = g.get_attr(add_submodule(g, "false_graph", Subgraph(rest)))
    t_attr.meta["stack_trace"] = f_attr.meta["stack_trace"] = ""
    node = g.call_function(torch.ops.higher_order.cond, (pred, t_attr, f_attr,
                                                                    tuple(phs + extra)))
    node.meta["stack_trace"] = ""
    cond_outputs(g, node, inputs, phs, mutated, output_vals(sides, ref, syms, env))
    return g


def _reshapes_an_input(graph: torch.fx.Graph) -> bool:
    """Whether `graph` changes the shape of an input (or a view of one) in place
    (``x.t_()``, ``x.unsqueeze_(0)``: trace/opinfo.py ``RESHAPES_SELF``)."""
    for n in graph.nodes:
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and \
                n.target._opname in RESHAPES_SELF and n.args:
            base = base_placeholder(n.args[0])
            if base is not None and base.meta.get("kind") == "user_input":
                return True
    return False

