"""A split on a relation between input sizes that the program's code branches on.

A Python decision on a relation of sizes (``if x.numel() % 2 == 0:``, ``if x.numel() * 0.7
>= 3.5:``, ``if v.size(-3) >= len(v):``) is a guard; where it is no range of one Dim, the
program keeps it as a run-time check (a residual condition of its contract), which refuses
the inputs that take the other branch, which eager computes.  Here the other answer is
traced too, at sizes where the relation fails (the declared ranges kept: a hint only), and
the two traces become one program: ``torch.cond`` on the relation, computed from the input
sizes, runs each side's whole graph (as ``data_splits.py`` does for a size read from data).

Sound because each side is a complete export, sound where its own conditions hold, the
branch taken is the side whose answer the relation gives, and each side's other
conditions stay checked on its own side (``not relation or cond``, ``relation or cond``).
Sides with other signatures, input contracts or outputs of another rank keep the check;
so does a relation that divides by a size (its value where the divisor is 0 is no
Python's).  One relation per export.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
from typing import Any, Callable

import torch

from safetrace.errors import DeclaredSpaceViolation
from safetrace.errors.mismatch import UNJOINABLE
from safetrace.exporter.branches import (
    OutputsDiffer, Side, Unsplittable, both_sides, cond_outputs, constant_names, env_of,
    output_vals, placeholders,
)
from safetrace.exporter.compare import contract_key, narrower_ranges, note, signature_key
from safetrace.exporter.contract import Condition, Contract, TensorInput
from safetrace.exporter.declared_ranges import declared_range
from safetrace.exporter.eager_raises import ASSUMED_MIN, refuting, requirements_only
from safetrace.exporter.program import ExportedProgram
from safetrace.exporter.size_tests import same_either_way
from safetrace.exporter.sides import ASSUMED, RELATED, assumed_hold, with_assumed
from safetrace.exporter.split_report import header, two_sides, where_of
from safetrace.meta.symtypes import torch_env
from safetrace.symbolic import Env, make_bool, make_float, make_int
from safetrace.symbolic.floats import is_float
from safetrace.symbolic.canon import and_, eq, ge, le, not_, or_
from safetrace.symbolic.expr import TRUE, sym
from safetrace.symbolic.semantics import PY_FNS, Algebra, lower
from safetrace.trace.asserts import assert_sym
from safetrace.trace.hops.subgraph import Subgraph, add_submodule
from safetrace.trace.mutation import written_placeholders

_POINTS = 256  # sizes breaking the relation looked at for one eager computes at
_BOX = 1 << 16  # points of a side's Dims counted for the one where its assumptions hold
_SMALL = 32  # and, on a side that assumes a relation, each named size's smallest values
_OPS = frozenset(("add", "mul", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
                  "min", "max", "floordiv", "mod",
                  # float arithmetic of sizes (``x.numel() * 0.7 >= 3.5``), as Python's
                  "fconst", "float", "fneg", "fadd", "fsub", "fmul", "fmin", "fmax", "fdiv",
                  "flt", "fle", "fgt", "fge", "feq", "fne"))


def relation_sides(env: Env, contract: Contract, dyn: Any) -> list[tuple]:
    """[(the condition, {Dim name: (hint, lo, hi)})]: the first residual condition on
    backed sizes, named Dims among them, that some sizes in the declared ranges break
    where a branch of the code (no requirement) fails, with those sizes as hints, then
    the other candidates after it with None (each side of the first looks for their
    sizes itself); [] when none.  (A condition the side assumes, ``DynamicDims.assumed``,
    is none.)"""
    out: list[tuple] = []
    deferred = {p.key[0] for p in dyn.deferred}  # (small_splits.py's run-time checks)
    for c in contract.conditions:
        syms = c.cond.free_symbols
        named = sorted(s for s in syms if s in dyn.dim_names)
        if not named or c.cond in dyn.assumed or str(c.cond) in deferred or \
                declared_range(c.origin) or any(
                contract.symbol(s) is None or not contract.symbol(s).backed
                for s in syms) or not plain_relation(c.cond, positive_sizes(contract, syms)):
            continue
        side = relation_point(env, contract, c, named, dyn) if not out else None
        if side is not None or out:
            out.append((c.cond, side, c.origin))
    for cond, side, origin in dyn.branched:  # (a Dim a branch made a product of others:
        out.append((cond, None if out else side, origin))  # dim_relations.branch_relation)
    return out


def relation_point(env: Env, contract: Contract, c: Any, named: list[str],
                   dyn: Any) -> dict | None:
    """The overrides of a side where residual condition `c` fails: {Dim name: (hint, lo,
    hi)} at sizes in the declared ranges that break it where no requirement fails and the
    side's assumptions hold (the most sizes of at least 2 preferred, then 0: 1 is special
    to code), with ``DynamicDims.relations``; None when there are none."""
    point, best = None, -1
    points = itertools.islice(refuting(env, contract, c, named, 0), _POINTS)
    if dyn.assumed:  # (a side inside another: sizes breaking `c` where the side's
        points = itertools.chain(points, _small(contract, c, named))  # `h*w == 16` holds)
    for p in points:
        # (a size of 1 broadcasts, and code treats it apart: 0 before 1)
        # (then sizes apart: at h == w a branch on `h == w` would make them one symbol)
        score = 2 * sum(2 if p[s] >= 2 else 1 if p[s] == 0 else 0 for s in named) + \
            (len({p[s] for s in named}) == len(named))
        if score > best and assumed_hold(env, dyn.assumed, p) and \
                not requirements_only(env, p, True):
            point, best = p, score
            if score == 4 * len(named) + 1:
                break
    if point is None:
        return None
    out = {}
    for s in named:
        dim = dyn.roots[dyn.dim_names[s]][0]  # (the Dim, or a split side's range)
        out[dyn.dim_names[s]] = (point[s], dim.min, dim.max)
    return {**out, **dyn.relations(), ASSUMED: dyn.assumed}


def _small(contract: Contract, c: Any, named: list[str]) -> Any:
    """Each combination of the named sizes' smallest ``_SMALL`` values that breaks `c`
    (every other size as in the example is not needed: `c` has named sizes only here)."""
    if set(c.cond.free_symbols) != set(named):
        return
    ranges = []
    for s in named:
        lo = contract.symbol(s).lo or 0
        hi = contract.symbol(s).hi
        ranges.append(range(lo, lo + _SMALL if hi is None else min(hi + 1, lo + _SMALL)))
    for combo in itertools.islice(itertools.product(*ranges), _POINTS * 4):
        p = dict(zip(named, combo))
        try:
            if not c.cond.evaluate(p):
                yield p
        except (ArithmeticError, ValueError, TypeError):
            continue


def plain_relation(e: Any, positive: frozenset = frozenset()) -> bool:
    """Size arithmetic and comparisons only, dividing by constants (not 0), by a max with
    a positive constant (``y[::max(x.shape[3] // 2, 1)]``'s length: never 0) or by sizes
    whose checked ranges leave out 0 (`positive`: ``len(x.split(a, 2))`` with ``a >= 2``)
    only."""
    if e.op in ("const", "sym", "fconst"):
        return True
    if e.op not in _OPS:
        return False
    if e.op in ("floordiv", "mod", "fdiv") and not (
            e.args[1].op in ("const", "fconst") and e.args[1].value or
            _positive(e.args[1], positive)):
        return False
    return all(plain_relation(a, positive) for a in e.args)


def positive_sizes(contract: Contract, names: Any) -> frozenset:
    """The sizes among `names` whose range in `contract` (checked) leaves out 0."""
    return frozenset(s for s in names if contract.symbol(s) is not None and
                     (contract.symbol(s).lo or 0) >= 1)


def _positive(d: Any, positive: frozenset) -> bool:
    """`d` is at least 1 wherever the checks hold (a product of such, or a max with one)."""
    if d.op in ("const", "fconst"):
        return d.value >= 1 if d.op == "const" else bool(d.value)
    if d.op == "sym":
        return d.name in positive
    if d.op == "max":
        return any(_positive(a, positive) for a in d.args)
    return d.op == "mul" and all(_positive(a, positive) for a in d.args)


def split_relation(run: Callable[[dict], ExportedProgram], ep: ExportedProgram,
                   max_splits: int) -> ExportedProgram:
    """`ep`, or one program running it where its first relation holds and the relation's
    other answer, traced, where not (each side split again on its own relations, up to
    `max_splits` splits in all); `ep` where any step fails (its check stays)."""
    first = getattr(ep, "relation_sides", ())
    if not first or max_splits <= 0:
        return ep
    try:
        return _split(run, {}, ep, first[0], [max_splits])
    except OutputsDiffer as why:  # (its check says why no split keeps the other answer)
        return unjoinable(ep, first[0][0], why.detail)
    except Exception:  # noqa: BLE001 - the program as it was: its check refuses those sizes
        return ep


def unjoinable(ep: ExportedProgram, cond: Any, detail: str) -> ExportedProgram:
    """`ep`, its check of `cond` naming the output that the relation's other answer,
    traced, returns with another dtype or rank (no torch.cond returns both: the check
    stays, and its refusal says so rather than suggesting a torch.cond)."""
    note = f" (the other answer, traced too: {detail}; {UNJOINABLE})"
    ep.contract = dataclasses.replace(ep.contract, conditions=tuple(
        dataclasses.replace(c, origin=c.origin + note)
        if c.cond == cond and note not in c.origin else c for c in ep.contract.conditions))
    return ep


def split_refused(run: Callable[[dict], ExportedProgram], exc: Exception,
                  max_splits: int) -> ExportedProgram:
    """The program for a spec whose export `exc` refused for relations between its Dims
    (``st_relation``: a condition and the overrides of a side breaking it): each answer
    traced under the assumption that it holds, joined by a torch.cond on the relation.
    Raises where a side cannot be traced or joined (the caller keeps `exc`)."""
    if max_splits <= 0:
        raise exc
    return _split(run, {}, None, exc.st_relation, [max_splits])


def _split(run: Callable, overrides: dict, ep: ExportedProgram | None, relation: tuple,
           budget: list[int]) -> ExportedProgram:
    """`ep` (the trace at `overrides`, None where it was refused) split on `relation`."""
    cond, point, origin = relation
    budget[0] -= 1
    if budget[0] < 0:
        raise Unsplittable("more relation splits than max_splits")
    if ep is None or len(ep.relation_sides) > 1:  # (its other relations: split inside)
        # (the AUTO dims the refused trace related to the Dims, as the other side has them:
        # each side's symbols then the same, a mask's batch no symbol of its own)
        mine = {RELATED: point[RELATED]} if ep is None and RELATED in point else {}
        ep = _solve(run, with_assumed({**overrides, **mine}, cond), budget)
    side = with_assumed({**overrides, **point}, not_(cond))
    try:
        try:
            other = _solve(run, side, budget)
        except DeclaredSpaceViolation as exc:
            other = _cut_side(run, side, exc, cond, budget)
        if _replaced(other, ep):  # (the side where `c == a*b` has no symbol of its own
            return _join(other, ep, not_(cond), origin)  # for c: the other one's graph)
        return _join(ep, other, cond, origin)
    except DeclaredSpaceViolation:
        pins = _one_point(side, ep.dim_names)
        if pins is None:
            raise
    # the side's assumptions hold at one size of its Dims alone (`h*w == 16` and `h == w`:
    # h == w == 4): traced there, each Dim one size, which the join checks where it runs
    other = run({**side, **{ep.dim_names[s]: (v, v, v) for s, v in pins.items()}})
    return _join(ep, other, cond, origin, pins)


def _cut_side(run: Callable, side: dict, exc: DeclaredSpaceViolation, cond: Any,
              budget: list[int]) -> ExportedProgram:
    """The side where `cond` fails, traced again from above the sizes below 2 of one Dim
    that its trace refused (`exc`: pegasus_x's `L % 4 != 0` side at L == 0, where
    `b*L != 0` fails), where `cond` alone, on that Dim's size, holds at each of them: the
    other side runs there, so the joined program admits every size it did.  Raises `exc`
    where that is not so."""
    narrowed = getattr(exc, "st_narrowed", None) or []
    if len(narrowed) != 1 or len(cond.free_symbols) != 1:
        raise exc
    name, lo, _, dlo, dhi, _, _ = narrowed[0]
    entry = side.get(name)
    if entry is None or not dlo < lo <= ASSUMED_MIN or entry[1] != dlo:
        raise exc
    other = _solve(run, {**side, name: (max(entry[0], lo), lo, dhi)}, budget)
    s = next(iter(cond.free_symbols))
    if other.dim_names.get(s) != name or not all(
            _holds_at(cond, {s: v}) for v in range(int(dlo), int(lo))):
        raise exc
    return other


def _holds_at(cond: Any, point: dict) -> bool:
    try:
        return bool(cond.evaluate(point))
    except (ArithmeticError, KeyError, ValueError, TypeError):
        return False


def _replaced(ep: ExportedProgram, other: ExportedProgram) -> dict:
    """{symbol: its size in `other`}: each input size symbol `ep`'s contract binds that
    `other`'s has no symbol for, its dim an expression of other sizes there (a side that
    took ``if a*b == c:``, ``dim_relations.branch_relation``)."""
    mine = {x.name for x in other.contract.symbols}
    out = {}
    for a, b in zip(ep.contract.inputs, other.contract.inputs):
        if not isinstance(a, TensorInput) or not isinstance(b, TensorInput):
            continue
        for da, db in zip(a.dims, b.dims):
            if da.kind == "bind" and da.symbol not in mine and db.kind == "equal":
                out.setdefault(da.symbol, db.size)
    return out


def _one_point(side: dict, dim_names: dict) -> dict | None:
    """{symbol: size}: the side's Dims (in their ranges) that take one size wherever all
    its assumptions hold, counted over every point (at most ``_BOX``): all of them where
    they hold at one point (`h*w == 16` and `h == w`), some where they pin those alone
    (``min(a, b) > 2`` with ``a <= 3``: a == 3, b from 3); None where none is pinned,
    they never hold, or the assumptions read other sizes."""
    assumed = side.get(ASSUMED, ())
    names = sorted(set().union(*(c.free_symbols for c in assumed)))
    spans = []
    for s in names:
        entry = side.get(dim_names.get(s, ""))
        if entry is None or entry[2] == math.inf:
            return None
        spans.append(range(int(entry[1]), int(entry[2]) + 1))
    if not spans or math.prod(len(r) for r in spans) > _BOX:
        return None
    seen: dict[str, set] = {s: set() for s in names}
    for combo in itertools.product(*spans):
        p = dict(zip(names, combo))
        try:
            holds = all(c.evaluate(p) for c in assumed)
        except (ArithmeticError, ValueError, TypeError):
            return None
        if holds:
            for s, v in p.items():
                seen[s].add(v)
    pins = {s: next(iter(vs)) for s, vs in seen.items() if len(vs) == 1}
    return pins or None


def _solve(run: Callable, overrides: dict, budget: list[int]) -> ExportedProgram:
    """The program of one side: its trace, split again on a relation it refuses or keeps
    as a check (where that fails: the trace as it is, or its refusal)."""
    try:
        ep = run(overrides)
    except DeclaredSpaceViolation as exc:
        relation = getattr(exc, "st_relation", None)
        if relation is None or budget[0] <= 0:
            raise
        return _split(run, overrides, None, relation, budget)
    if ep.relation_sides and budget[0] > 0:
        try:
            return _split(run, overrides, ep, ep.relation_sides[0], budget)
        except Exception:  # noqa: BLE001 - this side as it was: its check stays
            pass
    # (its size tests on sizes read from data, as the export's own first trace's: the other
    # answer traced too, within the side, and joined on the data where the program runs;
    # at most as many traces as the splits left: ``max_splits`` bounds these too)
    return same_either_way(run, overrides, ep, budget[0])


def _join(ep: ExportedProgram, other: ExportedProgram, cond: Any, origin: str,
          pins: dict | None = None) -> ExportedProgram:
    """`pins`: {symbol: size} where `other` was traced at one size of those Dims."""
    pins = pins or {}
    sides = [Side({}, ep), Side({}, other)]
    if signature_key(ep) != signature_key(other):
        raise Unsplittable("the sides' signatures differ")
    skip = {x.name for s in sides for x in s.ep.contract.symbols if not x.backed}
    narrowed = narrower_ranges(ep.contract, other.contract)  # (what its assumption implies:
    if narrowed is None:  # dynamic.py's violations; checked where that side runs)
        raise Unsplittable("the other side's input ranges are wider")
    replaced = _replaced(ep, other)  # {c: a*b} where `other` runs only where c == a*b
    skip |= set(narrowed) | set(pins) | set(replaced)
    if contract_key(ep.contract, {**pins, **replaced}, skip) != \
            contract_key(other.contract, {}, skip):
        raise Unsplittable("the input contract differs on the other side")
    for s in sides:
        params = {x.name for x in s.ep.graph_signature.input_specs if x.kind == "parameter"}
        if written_placeholders(s.ep.graph) & params:
            raise Unsplittable("a side writes a parameter in place")
    if any(c.cond == cond for c in other.contract.conditions):
        raise Unsplittable("the other side's trace kept the relation")
    consts, const_names, inputs, outputs, mutated, branches, metas = both_sides(ep, sides)
    env = env_of(ep.graph)
    g = torch.fx.Graph()
    phs = placeholders(g, inputs, metas)
    pred = _predicate(g, ep, phs, inputs, cond, _plain_env(env, ep.contract, cond))
    if pins:
        _assert_pins(branches[1], ep, inputs, pins, env)
    t_attr = g.get_attr(add_submodule(g, "true_graph", Subgraph(branches[0])))
    f_attr = g.get_attr(add_submodule(g, "false_graph", Subgraph(branches[1])))
    t_attr.meta["stack_trace"] = f_attr.meta["stack_trace"] = ""
    node = g.call_function(torch.ops.higher_order.cond, (pred, t_attr, f_attr, tuple(phs)))
    node.meta["stack_trace"] = ""
    # (a size the point side has as a number is a fresh one where the sides differ, as
    # st.load merges them: the branch knows the point, the predicate's answer does not)
    cond_outputs(g, node, inputs, phs, mutated, output_vals(sides, sides[0], {}, env))
    note(g, [header("relation", cond, where_of(origin), ep.dim_names),
             *two_sides(cond, ep, other)])
    out = ExportedProgram(g, inputs, outputs, ep.in_spec, ep.out_spec,
                          state=dict(ep._state), constants=consts,
                          contract=_contract(ep, other, cond, narrowed, pins))
    for attr in ("dim_names", "exported_training", "module_tree", "retrace"):
        setattr(out, attr, getattr(ep, attr))
    constant_names(out, sides, const_names)
    out.size_tests = out.size_checks = ()
    return out


def _assert_pins(branch: torch.fx.Graph, ep: ExportedProgram, inputs: list, pins: dict,
                 env: Any) -> None:
    """The point side's branch asserts its one size first (the contract checks it where
    the branch runs: it never fails): a fact for the branch's later nodes where ``st.load``
    evaluates them (its inputs narrowed to that size: ``y[:, :, :1]``), which the
    predicate's other answer alone does not give."""
    at = and_(*(eq(sym(s), v) for s, v in sorted(pins.items())))
    phs = [n for n in branch.nodes if n.op == "placeholder"]
    first = next(n for n in branch.nodes if n.op != "placeholder")
    with branch.inserting_before(first):  # (each node before `first`: in order)
        check = _predicate(branch, ep, phs, inputs, at, _plain_env(env, ep.contract, at))
        where = " and ".join(f"{ep.dim_names.get(s, s)} == {v}" for s, v in sorted(pins.items()))
        node = branch.call_function(assert_sym, (check, f"the sizes where this branch runs "
                                                       f"({where}: a relation split's side)"))
    node.meta["stack_trace"] = ""


def _contract(ep: ExportedProgram, other: ExportedProgram, cond: Any,
              narrowed: dict, pins: dict) -> Contract:
    """`ep`'s, each side's other conditions checked where that side runs, and the input
    ranges the other side narrowed (`narrowed`: {symbol: (lo, hi)}) or the one size it
    was traced at (`pins`) where it runs."""
    conditions = []
    if pins:
        at = and_(*(eq(sym(s), v) for s, v in sorted(pins.items())))
        conditions.append(Condition(or_(cond, at), f" (the one size the Dims were traced "
                                                   f"at where `{not_(cond)}`)"))
    for name, (lo, hi) in sorted(narrowed.items()):
        within = and_(ge(sym(name), lo or 0), TRUE if hi is None else le(sym(name), hi))
        conditions.append(Condition(or_(cond, within), f" (the sizes {name} was traced for "
                                                       f"where `{not_(cond)}`)"))
    for c, where in [(c, not_(cond)) for c in ep.contract.conditions if c.cond != cond] + \
            [(c, cond) for c in other.contract.conditions if c.cond != not_(cond)]:
        e = or_(where, c.cond)
        if not (e.op == "const" and e.value):
            conditions.append(Condition(e, c.origin, c.kind))
    return dataclasses.replace(ep.contract, conditions=tuple(conditions))


def _plain_env(env: Env, contract: Contract, cond: Any) -> Env:
    """An engine knowing only the declared ranges of `cond`'s sizes: the values of the
    nodes computing it (``s0 % 2``), which a side's engine would simplify by its answer
    (``0`` where it assumed ``s0 % 2 == 0``) and a loaded file's checks recompute."""
    plain = torch_env()
    for name in sorted(cond.free_symbols, key=list(env.symbols).index):
        spec = contract.symbol(name)
        plain.new_backed(env.hints[name], lo=spec.lo, hi=spec.hi, name=name)
    return plain


def _predicate(g: torch.fx.Graph, ep: ExportedProgram, phs: list, inputs: list, cond: Any,
               env: Any) -> torch.fx.Node:
    """Nodes computing `cond` from the input sizes."""
    def leaf(x: Any) -> Any:
        if x.op in ("const", "fconst"):
            return x.value
        return _size_of(g, ep, phs, inputs, x.name, env)

    def call(fn: Any, args: tuple, x: Any) -> Any:
        n = g.call_function(fn, args)
        n.meta["stack_trace"] = ""
        if x is not None:
            n.meta["val"] = make_bool(x, env) if x.is_bool else \
                make_float(x, env) if is_float(x) else make_int(x, env)
        return n

    pred = lower(cond, Algebra(leaf, call, PY_FNS), {})
    if not isinstance(pred, torch.fx.Node):
        raise Unsplittable("the relation is a constant")
    return pred


def _size_of(g: torch.fx.Graph, ep: ExportedProgram, phs: list, inputs: list, name: str,
             env: Any) -> torch.fx.Node:
    """A node reading input size symbol `name` from the dim the contract binds it to."""
    user = {spec.leaf: ph for spec, ph in zip(inputs, phs) if spec.kind == "user_input"}
    for i, inp in enumerate(ep.contract.inputs):
        if not isinstance(inp, TensorInput) or i not in user:
            continue
        for d, dim in enumerate(inp.dims):
            if dim.kind in ("bind", "derived") and dim.symbol == name:
                node = g.call_function(torch.ops.aten.sym_size.int, (user[i], d))
                if dim.kind == "derived":  # (8*h: the size is coef*name + offset)
                    node.meta.update(val=make_int(dim.size, env), stack_trace="")
                    node = g.call_function(operator.sub, (node, dim.offset))
                    node = g.call_function(operator.floordiv, (node, dim.coef))
                node.meta.update(val=make_int(sym(name), env), stack_trace="")
                return node
    raise Unsplittable(f"no input dim binds {name}")
