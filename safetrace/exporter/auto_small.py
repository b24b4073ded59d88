"""Sizes 0 and 1 of a ``Dim.AUTO`` dim that a condition of the program refuses.

A condition on one ``Dim.AUTO`` size is kept as a run-time check of the program (the AUTO
dim's space narrowed, as torch.export narrows it): ``if x.shape[0] != 1:`` traced at batch
2 gives a program that refuses batch 1, as does ``mask.squeeze()`` (another rank at 1).
Where such a check fails only at 0 or 1 of the dim's range, the program is exported again
with that dim as a named Dim of the range the first program admits: the split machinery
(``splits.py``, ``small_splits.py``) traces each side of the decision and joins them (one
graph where both sides agree, else ``torch.cond`` on the size), each side sound for its
range by the usual machinery, and eager's requirements there stay input checks
(``eager_raises``).  Where that export is refused (a catalogue ``ExportError``), the first
program stands, with its check (nothing is ever admitted that was not traced), and the
refusal's first line is kept on it (``ep.auto_split_refusals``, shown by ``st.explain``);
any other exception, or an internal error of safetrace's own code, is raised: a bug, never
hidden behind the narrower program.  ``Dim.DYNAMIC`` dims are split the same way (the dim
stays dynamic: each side is a branch of one program, nothing is specialized).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from typing import Any, Callable

from safetrace.dims import Dim
from safetrace.errors import ExportError
from safetrace.exporter.contract import Contract
from safetrace.exporter.dim_conditions import holding_range
from safetrace.exporter.declared_ranges import declared_range
from safetrace.exporter.eager_raises import ASSUMED_MIN, refuting, requirements_only
from safetrace.exporter.program import ExportedProgram
from safetrace.symbolic.canon import rebuild
from safetrace.symbolic.expr import sym

_SMALL = (0, 1)  # the sizes a condition may refuse for the dim to be split there
_LARGER = range(2, 65)  # sizes where the program split must admit what the first one did
_ABOVE = range(2, 18)  # sizes where a condition failing at 0 or 1 must fail only below some
_HINTS = ("auto", "dynamic")  # the hints whose dims are split here (DimDecl.kind)
_INTERNAL = "internal error:"  # (errors.internal_error / internal_exception: a bug)
_POINTS = 256  # sizes breaking a relation looked at for one eager computes at


def auto_places(dyn: Any, contract: Contract) -> dict[str, tuple[list[str], int, int]]:
    """{symbol: (the input dims it is, the least size below the program's range where eager
    computes, its example size)} of the export's Dim.AUTO / Dim.DYNAMIC dims whose size the
    trace left a symbol (``dyn``: its ``DynamicDims``; AUTO dims made equal share one).  A
    range narrowed by a branch
    (``if x.shape[0] > 1:``) goes down to the declared lower end; one narrowed where eager
    raises (``x[0]``, ``view(b, -1)`` at 0) stays (``eager_raises.requirements_only``)."""
    out: dict[str, tuple] = {}
    floor: dict[str, float] = {}
    for d in dyn.decls:
        if d.kind in _HINTS and d.expr.op == "sym" and not d.scalar:
            e = dyn.env.simplify(d.expr)
            if e.op == "sym":
                out.setdefault(e.name, ([], 0))[0].append(d.where)
                floor[e.name] = max(floor.get(e.name, 0), d.lo)
    for s, (wheres, _) in out.items():
        spec = contract.symbol(s)
        least = 0 if spec is None or spec.lo is None else spec.lo
        while floor[s] < least <= ASSUMED_MIN and not requirements_only(
                dyn.env, {s: least - 1}, True):
            least -= 1
        top = min(d.hi for d in dyn.decls if d.expr.op == "sym" and
                  dyn.env.simplify(d.expr) == sym(s))
        out[s] = (wheres, int(least), int(dyn.env.hints[s]),
                  _branch_top(dyn.env, contract, s, int(dyn.env.hints[s]), top))
    return out


def _branch_top(env: Any, contract: Contract, s: str, example: int, top: float
                ) -> float | None:
    """`top` (the upper end declared for `s`) where the first size above `example` that
    the program refuses (above its range, or failing a condition on `s` alone) is one where
    eager computes: the end of a branch's range (dinov2's position table taken as it is at
    32 px, ``(s//8)*(s//8) == 16``, up to 39 px), not an op's requirement (a table's
    length); else None.  The Dim.AUTO dim is then exported again as a Dim up to `top`, the
    branch's other sides traced by the split machinery."""
    spec = contract.symbol(s)
    if spec is None or not spec.backed:
        return None
    hi = math.inf if spec.hi is None else spec.hi
    own = [c.cond for c in contract.conditions if c.cond.free_symbols == {s}]
    if hi >= top and not own:
        return None
    first = next((v for v in range(example + 1, max(4 * example, example + len(_LARGER)))
                  if v > hi or not all(_holds(c, s, v) for c in own)), None)
    if first is None or first > top or requirements_only(env, {s: first}, True):
        return None
    return top


def auto_relations(env: Any, contract: Contract, places: dict) -> list[tuple]:
    """The symbols of each residual condition between two or more sizes, Dim.AUTO / DYNAMIC
    ones among them (`places`: ``auto_places``), that some sizes break with one of them
    below 2 where eager computes (no requirement fails there): ``if v.shape[0] > 2:`` of
    ``y.flatten(0, -3)`` kept as ``s0*s1 >= 3`` refuses (2, 1); and of each condition on
    one such size that a size eager computes at breaks (``if t % 5 != 0:`` of a block
    padding refuses t = 20).  Each is exported again as a named Dim, whose condition the
    split machinery traces both ways (``relation_splits.py``).  Each as (symbol, its input
    dim, its example size) of every size of the condition."""
    out = []
    for c in contract.conditions:
        syms = sorted(c.cond.free_symbols)
        if not set(syms) & places.keys() or declared_range(c.origin) or \
                any(contract.symbol(s) is None or not contract.symbol(s).backed for s in syms):
            continue  # (a named Dim among them: y0 Dim.DYNAMIC, y1 a Dim; named ones stay)
        least = ASSUMED_MIN if len(syms) > 1 else math.inf
        for point in itertools.islice(refuting(env, contract, c, syms, 0), _POINTS):
            if min(point.values()) < least and not requirements_only(env, point, True):
                out.append(tuple((s, contract.symbol(s).where, int(env.hints[s]))
                                 for s in syms))
                break
    return out


def relations(ep: ExportedProgram) -> list[tuple]:
    """`ep`'s ``auto_relations``, found on first read (``auto_relations_of``: most exports
    never read them, and a warm one remembered by ``auto_seen`` needs none)."""
    found = getattr(ep, "auto_relations", ())
    if found is None:
        find = getattr(ep, "auto_relations_of", None)
        found = ep.auto_relations = find() if find is not None else []
        ep.auto_relations_of = None  # (what it held: the trace's env, a split's sides)
    return found


def auto_budget(named: dict[str, Dim] | None) -> int:
    """The splits the export with `named`'s Dims may make beyond ``max_splits``: 2 for each
    (its sizes 0 and 1 apart, in each side of the others': mra's batch 1 and length 1, six
    sides), which the user's Dims would have had with no Dim.AUTO dim split."""
    return 2 * len({d.name for d in (named or {}).values()})


def split_auto_small(ep: ExportedProgram, export_named: Callable[[dict], ExportedProgram],
                     seen: Any = None, admits: Callable[[ExportedProgram], bool] | None = None
                     ) -> ExportedProgram:
    """`ep`, or the export again (``export_named({input dim: Dim})``) with each Dim.AUTO dim
    whose range or run-time condition leaves out a size below 2 eager computes at traced as
    a named Dim; where that export fails or still leaves out the Dim's lowest size (``x[0]``
    at 0 under ``if x.shape[0] > 1:``: a side eager raises on), again from one size up,
    while that is below `ep`'s range.  That program where it refuses fewer of those sizes
    than `ep` (each Dim at 0 or 1, the other dims as in the example) and, given `admits`,
    accepts the export's own example (``admits(program)``); else `ep`.
    (`seen`: an ``auto_seen.Seen``: where an earlier export in the same state returned
    its first program, `ep` again with that export's refusals; where it returned the
    export with some Dims, that export alone, with nothing else looked at.)"""
    ep.__dict__.pop("split_start", None)  # (kept only as auto_seen's answer, below)
    if not getattr(ep, "auto_dims", False):
        seen = None  # (no Dim.AUTO / DYNAMIC size left symbolic: no re-export to remember;
        # keying and snapshotting the model cost a static mlp export ~50% more)
    known = seen.get(ep) if seen is not None else None
    if known is not None and known[0] == "named":
        try:
            out = export_named(known[1], known[2])
            out.__dict__.pop("split_start", None)
            return _exported(ep, known[1], out)
        except ExportError as why:  # (not as it was found: looked at again, below)
            if str(getattr(why, "cause", "")).startswith(_INTERNAL):
                raise
            known = None
    if known is not None:
        if known[1]:
            ep.auto_split_refusals = list(known[1])
        return ep
    named, tops = _named(ep)
    refusals: list[str] = []
    examples = {w: e for rel in relations(ep) for _, w, e in rel}
    examples.update((w, p[2]) for p in (getattr(ep, "auto_places", None) or {}).values()
                    for w in p[0])  # (and a named Dim's of a relation with them)
    best = ep
    raised = any(p[3] is not None for p in (getattr(ep, "auto_places", None) or {}).values())
    narrow = _named(ep, False) if raised else (named, tops)
    # (a Dim raised above a branch's end first; where that is refused or no wider, the
    # Dims as the program's range ends)
    for named, tops in [(named, tops)] + ([narrow] if narrow[0] != named else []):
        if not named:
            continue
        out, dims = _climb(ep, named, tops, export_named, refusals)
        # (the refusal its split started from, if any: a warm export splits at once)
        start = out.__dict__.pop("split_start", None) if out is not None else None
        if out is not None and _fewer(out, ep, named, examples) and (
                admits is None or admits(out)):
            best = out
            if seen is not None:
                seen.put(ep, ("named", dims, start))
            break
    if best is ep and refusals:
        ep.auto_split_refusals = refusals
    if best is ep and seen is not None:
        seen.put(ep, ("first", tuple(refusals)))
    return best


def _climb(ep: ExportedProgram, named: dict[str, Dim], tops: dict[str, int],
           export_named: Callable[[dict], ExportedProgram], refusals: list[str]
           ) -> tuple[ExportedProgram | None, dict[str, Dim] | None]:
    """The export with `named`'s Dims, again from one size up for each Dim whose lowest size
    is still left out (while below its lower end in `ep`: `tops`); the last program
    exported and its Dims, None where none is (each refusal's line added to
    `refusals`)."""
    best = dims = None
    for _ in range(ASSUMED_MIN + 1):
        try:
            out = export_named(named)
        except ExportError as why:  # the program as it was: its check refuses those sizes
            if str(getattr(why, "cause", "")).startswith(_INTERNAL):
                raise  # (a bug of safetrace's own code: reported, not hidden)
            refusals.append(_refusal(named, why))
            out = None
        if out is not None:
            best, dims = _exported(ep, named, out), named
            short = {x.where for x in out.contract.symbols if x.where in named and x.backed
                     and (x.lo or 0) > named[x.where].min}
        else:
            short = set(named)
        up = {d.name: Dim(d.name, min=d.min + 1, max=d.max) for w, d in named.items()
              if w in short and d.min + 1 < tops[d.name]}
        if not up:
            break
        named = {w: up.get(d.name, d) for w, d in named.items()}
    return best, dims


def _exported(ep: ExportedProgram, named: dict[str, Dim], out: ExportedProgram
              ) -> ExportedProgram:
    """`out`, the export with `named`'s Dims, as the program of `ep`'s export: its split
    Dims keep no name (an AUTO dim has none), its bounds the lines behind them in `ep`."""
    labels = {d.name for d in named.values()}
    out.dim_names = {s: n for s, n in getattr(out, "dim_names", {}).items()
                     if n not in labels}
    _keep_origins(out, ep, named)
    return out


def _left_out(ep: ExportedProgram, named: dict[str, Dim], examples: dict[str, int],
              larger: bool = False) -> int:
    """How many sizes below 2 (or, with `larger`, of ``_larger``) of `named`'s Dims `ep`
    refuses, each Dim's input dims at that size and every other Dim.AUTO / DYNAMIC dim as
    in the example (`examples`: input dim -> size): outside a symbol's range, or failing
    a run-time condition there."""
    n = 0
    for name in dict.fromkeys(d.name for d in named.values()):
        lowest = min(d.min for d in named.values() if d.name == name)
        sizes = _larger(named, examples, name) if larger else _SMALL
        n += sum(_refuses(ep, named, examples, name, v) for v in sizes if v >= lowest)
    return n


def _larger(named: dict[str, Dim], examples: dict[str, int], name: str) -> list[int]:
    """The sizes of Dim `name` from 2 at which two programs are compared: each from 2 to
    64 (or the 63 from its lower end, sew's audio from 100 samples), then up to four
    times its example, every sixteenth of the example (sew's `t < 2*((t + 20)//40)`
    refuses 420..439, 500..519, ... past its example 400)."""
    lowest = max(min(d.min for d in named.values() if d.name == name), 2)
    example = max([examples.get(w, 0) for w, d in named.items() if d.name == name] + [0])
    step = max(example // 16, 1)
    return sorted(set(_LARGER) | set(range(lowest, lowest + len(_LARGER) - 1)) |
                  set(range(max(example, lowest), 4 * example + 1, step)))


def _fewer(out: ExportedProgram, ep: ExportedProgram, named: dict[str, Dim],
           examples: dict[str, int]) -> bool:
    """Whether `out` refuses fewer sizes below 2 of `named`'s Dims than `ep` (or as many,
    and fewer of ``_larger``: a block padding's `t % 5 != 0`), and none of those that
    `ep` admits."""
    small = _left_out(out, named, examples), _left_out(ep, named, examples)
    if small[0] > small[1] or _refuses_more(out, ep, named, examples):
        return False
    return small[0] < small[1] or _left_out(out, named, examples, True) < _left_out(
        ep, named, examples, True)


def _refuses_more(out: ExportedProgram, ep: ExportedProgram, named: dict[str, Dim],
                  examples: dict[str, int]) -> bool:
    """Whether `out` refuses a size of ``_larger`` of a Dim of `named` that `ep` admits
    (the other dims as in `_left_out`): bamba's length Dim stopped at 15 where the
    conditions `s % 8 != 0` around the example stop holding, and its program refused
    length 20."""
    return any(_refuses(out, named, examples, name, v) and
               not _refuses(ep, named, examples, name, v)
               for name in dict.fromkeys(d.name for d in named.values())
               for v in _larger(named, examples, name))


def _refuses(ep: ExportedProgram, named: dict[str, Dim], examples: dict[str, int],
             name: str, v: int) -> bool:
    point = {x.name: v if x.where in named and named[x.where].name == name
             else examples.get(x.where) for x in ep.contract.symbols if x.backed}
    point = {k: p for k, p in point.items() if p is not None}
    return any(not ((x.lo or 0) <= point[x.name] <= (math.inf if x.hi is None else x.hi))
               for x in ep.contract.symbols if x.name in point) or any(
        c.cond.free_symbols <= point.keys() and not _at(c.cond, point)
        for c in ep.contract.conditions)


def _at(cond: Any, point: dict) -> bool:
    """Whether `cond` holds at `point`; one not decidable there is taken to hold."""
    try:
        return bool(cond.evaluate(point))
    except Exception:  # noqa: BLE001 - not decidable there: taken to hold
        return True


def _refusal(named: dict[str, Dim], why: ExportError) -> str:
    """``x.shape[0] from 0: not split (DeclaredSpaceViolation: ...)``: a refused split's
    line for ``st.explain`` (its dims, the lowest size tried, the error's first line)."""
    dims = sorted({f"{w} from {d.min}" for w, d in named.items()})
    first = (str(why).splitlines() or [""])[0]
    return f"{', '.join(dims)}: not split ({type(why).__name__}: {first})"


def _keep_origins(out: ExportedProgram, ep: ExportedProgram, named: dict) -> None:
    """The line behind each split dim's bounds in `ep` (``1 <= s0 (from ...)``), on the
    same bounds of `out`, where they are the range its Dim was given.  A bound `out` has
    from its Dim (``as declared: Dim('x_shape_1', min=100)``) names no Dim the user
    declared: it is that line too where the bounds are `ep`'s (sew's `q_length > 1`),
    else none."""
    before = {x.where: x for x in ep.contract.symbols if x.where in named and x.origin}
    hidden = {repr(d) for d in named.values()}

    def origin(x: Any) -> str:
        mine = x.origin if not _declared(x.origin, hidden) else ""
        if x.where in before and not mine and x.backed and \
                (x.lo, x.hi) == (before[x.where].lo, before[x.where].hi):
            return before[x.where].origin
        return mine

    symbols = tuple(dataclasses.replace(x, origin=origin(x)) if x.where in named else x
                    for x in out.contract.symbols)
    out.contract = dataclasses.replace(out.contract, symbols=symbols)


def _declared(origin: str, hidden: set[str]) -> bool:
    """Whether `origin` is ``as declared:`` one of the Dims (their reprs) of `hidden`."""
    return bool(origin) and any(f"(as declared: {d})" in origin for d in hidden)


def _named(ep: ExportedProgram, raise_top: bool = True
           ) -> tuple[dict[str, Dim], dict[str, int]]:
    """{input dim: Dim} for each Dim.AUTO / DYNAMIC dim (and those equal to it) whose range in `ep`
    leaves out a size below 2 where eager computes, or that a condition of `ep`'s contract
    on its size alone refuses at 0 or 1 of its range, or (with `raise_top`) whose sizes
    above stop where a branch's range ends (``_branch_top``: the Dim goes up to the
    declared end); and {Dim name: the lower end of its range in `ep`}."""
    rels = relations(ep)  # (first: a split program's sets its places with them)
    places = getattr(ep, "auto_places", None) or {}
    contract = ep.contract
    named_dims = getattr(ep, "dim_names", {})  # (a named Dim's sizes: splits.py's)
    taken = set(named_dims.values())
    out: dict[str, Dim] = {}
    tops: dict[str, int] = {}
    free: dict[str, tuple] = {}  # symbol -> (its input dims, lowest size, lo, hi, example)
    picked: list[str] = []
    for s, (wheres, least, example, top) in places.items():
        top = top if raise_top else None
        spec = contract.symbol(s)
        if s in named_dims or spec is None or not spec.backed:
            continue  # (an AUTO dim made equal to a named Dim: splits.py's)
        lo = 0 if spec.lo is None else spec.lo
        hi = math.inf if spec.hi is None else spec.hi
        conds = [c.cond for c in contract.conditions if c.cond.free_symbols == {s}]
        small = [c for c in conds if any(lo <= v <= hi and not _holds(c, s, v)
                                         for v in _SMALL)]
        held = holding_range([c for c in conds if c not in small and
                              not _holds_again(c, s, example)], s, example, lo, hi, {})
        if top is not None:  # (the sizes above a branch's end: its other side)
            hi = top
        elif held is not None and held[1] < hi:  # (`s <= 70` checked: the Dim's range,
            hi = held[1]  # as sizes above are no side of it: eager raises there)
        free[s] = (wheres, min(least, lo), lo, hi, example)
        if least >= lo and not small and top is None or \
                not all(_from_some_size(c, s, lo, hi) for c in small):
            continue  # (`s % 2 == 0` fails at 3 too: a named Dim would be refused)
        picked.append(s)
    groups = [([w for s in g for w in free[s][0]], max(free[s][1] for s in g),
               min(free[s][3] for s in g), max(free[s][2] for s in g))
              for g in _tied(picked, free, contract)]
    groups += _through_equal(contract, free, {s for g in groups for s in g[0]})
    taken_wheres = {w for g in groups for w in g[0]}
    for rel in rels:
        mine = [s for s, _, _ in rel if s in free]
        if any(set(free[s][0]) & taken_wheres for s in mine):
            continue  # (a size of it split above already: gpt2's `(s2*s3)//s0 >= 2`)
        for s in mine:  # (each its own Dim: the relation split of named Dims)
            groups.append((free[s][0], free[s][1], free[s][3], free[s][2]))
            taken_wheres.update(free[s][0])
    for wheres, least, hi, top in groups:
        name = _name(wheres[0], taken)
        taken.add(name)
        dim = Dim(name, min=int(least), max=None if hi == math.inf else int(hi))
        out.update((where, dim) for where in wheres)  # (the same Dim: equal sizes)
        tops[name] = int(top)
    return out, tops


_T = "auto_t"  # (the symbol an input dim's expression stands as, _through_equal)


def _through_equal(contract: Contract, free: dict[str, tuple], taken: set[str]) -> list[tuple]:
    """The groups (input dims, least size, upper end, lower end in the program) for each
    Dim.AUTO / DYNAMIC input dim the program made an expression of others (gpt2's ids'
    length, ``(s2*s3)//s0`` of its mask's sizes after ``attention_mask.view(batch, -1)``)
    that a condition on that expression alone refuses at 0 or 1 and at no larger size
    from some size on (``(s2*s3)//s0 >= 2``: transformers' ``q_length > 1``): that dim
    and the Dim.AUTO sizes of the expression with the example's size of the dim (the
    mask's length), as one Dim.  (The program then takes them equal: an input where they
    differ that eager reshapes, a (3, 4) mask for (2, 6) ids, is refused: narrower.)"""
    out = []
    examples = {s: v[4] for s, v in free.items()}
    for inp in contract.inputs:
        for d, dim in enumerate(getattr(inp, "dims", ())):
            where = inp.where(d)
            if dim.kind != "equal" or dim.declared not in ("Dim.AUTO", "Dim.DYNAMIC") or \
                    where in taken or not dim.size.free_symbols <= examples.keys():
                continue
            conds = [c for c in (_through(x.cond, dim.size) for x in contract.conditions)
                     if c is not None]
            small = [c for c in conds if any(not _holds(c, _T, v) for v in _SMALL)]
            if not small or not all(_from_some_size(c, _T, 0, math.inf) for c in small):
                continue
            example = _at_example(dim.size, examples)
            tied = [s for s in sorted(dim.size.free_symbols) if examples[s] == example and
                    not set(free[s][0]) & taken]
            if example is None or not tied:
                continue  # (no dim of the expression to be that Dim: the relation refused)
            top = next((v for v in range(max(free[s][2] for s in tied), example + 1)
                        if all(_holds(c, _T, v) for c in conds)), example)
            wheres = [where] + [w for s in tied for w in free[s][0]]
            taken.update(wheres)
            out.append((wheres, max(free[s][1] for s in tied),
                        min(free[s][3] for s in tied), top))
    return out


def _through(cond: Any, e: Any) -> Any:
    """`cond` with each occurrence of expression `e` made the symbol ``_T``, where that
    leaves no other symbol (``(s2*s3)//s0 >= 2`` -> ``auto_t >= 2``); else None."""
    def walk(x: Any) -> Any:
        if x is e:
            return sym(_T)
        if x.op in ("sym", "const", "fconst") or not x.args:
            return x
        new = tuple(walk(a) for a in x.args)
        return x if all(a is b for a, b in zip(new, x.args)) else rebuild(x.op, new)

    out = walk(cond)
    return out if out.free_symbols == {_T} else None


def _at_example(e: Any, examples: dict[str, int]) -> int | None:
    try:
        return int(e.evaluate(examples))
    except Exception:  # noqa: BLE001 - not defined at the example (a division by 0)
        return None


def _tied(picked: list[str], free: dict[str, tuple], contract: Contract) -> list[list[str]]:
    """The groups of symbols traced as one Dim: each of `picked`, with the Dim.AUTO / DYNAMIC
    sizes (`free`) of the example's value that an equation of the program puts on its other
    side (``s0*s1 == s2*s3``, mra's ids and mask: batch with batch, length with length;
    ``s1 == min(s1, s3)``, doge's mask at least as long as the ids), so that a side at
    batch 1 has both at 1 (apart, the equation breaks there: eager raises).
    The program then takes them equal (narrower than the relation: refused otherwise)."""
    parent = {s: s for s in free}

    def root(s: str) -> str:
        while parent[s] != s:
            s = parent[s]
        return s

    for c in contract.conditions:
        if c.cond.op != "eq" or len(c.cond.args) != 2:
            continue
        left, right = (a.free_symbols for a in c.cond.args)
        for a in left:  # (doge's `s1 == min(s1, s3)`: a mask at least as long, the lengths)
            for b in right - {a}:
                if a in free and b in free and free[a][4] == free[b][4] and \
                        (a in picked or b in picked):
                    parent[root(a)] = root(b)
    groups: dict[str, list[str]] = {}
    for s in free:
        groups.setdefault(root(s), []).append(s)
    return [g for g in groups.values() if any(s in picked for s in g)]


def _holds_again(cond: Any, s: str, example: int) -> bool:
    """Whether `cond` on `s` alone, failing at some size above `example`, holds again at a
    larger one (``s % 8 != 0``: no upper end of the Dim's range, a condition to split)."""
    above = [_holds(cond, s, v) for v in range(example + 1, example + 2 * len(_LARGER))]
    return False in above and True in above[above.index(False):]


def _from_some_size(cond: Any, s: str, lo: float, hi: float) -> bool:
    """Whether `cond` on `s` alone fails only below some size (``s != 1``, ``s >= 4``: a
    side each below), looked at from 2 to 17 in [lo, hi]; not ``s % 2 == 0``."""
    held = [_holds(cond, s, v) for v in _ABOVE if lo <= v <= hi]
    return not held or held[-1] and held == sorted(held)


def _holds(cond: Any, s: str, v: int) -> bool:
    return _at(cond, {s: v})  # (not decidable at that size alone: held, not split)


def labels(dyn: Any) -> dict[str, str]:
    """{symbol: the name a split shows it by}: a named Dim's, else the name a Dim.AUTO /
    DYNAMIC dim split here gets (``x.shape[0]`` -> ``x_shape_0``), for ``st.explain``'s
    guards."""
    if dyn is None:
        return {}
    out = dict(getattr(dyn, "dim_names", {}))
    for d in getattr(dyn, "decls", ()):
        if d.kind in _HINTS and d.expr.op == "sym":
            out.setdefault(d.expr.name, _name(d.where, set()))
    return out


def _name(where: str, taken: set) -> str:
    """A Dim name for an input dim (``x.shape[0]`` -> ``x_shape_0``), none of `taken`."""
    base = re.sub(r"\W+", "_", where).strip("_") or "auto"
    base = base if base.isidentifier() else f"d_{base}"
    name = base
    while name in taken:
        name += "_"
    return name


def wanted(ep: ExportedProgram) -> bool:
    """Whether ``split_auto_small`` would export `ep`'s model again (``st.explain`` then
    reports the program st.export returns)."""
    return bool(_named(ep)[0])


def dropped_guards(first: ExportedProgram, final: ExportedProgram, conds: list) -> list[bool]:
    """For each condition of `first`'s trace (``conds``: its guards), whether `final` (the
    program ``split_auto_small`` made of it) no longer relies on it: its one symbol is a dim
    split here, and it fails at a size below 2 that `final` admits (a side of its own)."""
    named, _ = _named(first)
    by_where = {x.where: x for x in final.contract.symbols if x.where and x.backed}
    small: dict[str, list[int]] = {}  # first's symbol -> the sizes below 2 final admits
    for x in first.contract.symbols:
        there = by_where.get(x.where) if x.where in named else None
        if there is None:
            continue
        own = [c.cond for c in final.contract.conditions if c.cond.free_symbols == {there.name}]
        small[x.name] = [v for v in _SMALL if (there.lo or 0) <= v and all(
            _holds(c, there.name, v) for c in own)]
    out = []
    for cond in conds:
        free = getattr(cond, "free_symbols", set())
        s = next(iter(free)) if len(free) == 1 else None
        out.append(s in small and any(not _holds(cond, s, v) for v in small[s]))
    return out
