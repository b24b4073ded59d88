"""What a ``torch.cond`` branch of a loaded program may assume: it runs only where its
predicate holds (the true branch) or fails (the false branch).  A size split's predicate
is a comparison of sizes (``s1 == 1``); inside the branch the loader's evaluation takes it
as a fact, so the branch's ops are judged at the sizes it runs at (``x[:, :1].squeeze(1)``
in the ``s1 == 1`` branch removes a dim of size 1).
"""

from __future__ import annotations

import functools

import math
import operator
from typing import Any, Callable

import torch

from safetrace.meta import TensorMeta
from safetrace.serialize.codec import new_symbolic
from safetrace.serialize.scratch import simple
from safetrace.serialize.renaming import renaming
from safetrace.symbolic import Expr, and_, eq, ge, gt, le, lt, ne, not_, or_, to_expr
from safetrace.symbolic.canon import rebuild, substitute
from safetrace.symbolic.scope import assuming, scoped
from safetrace.symbolic.branches import either_form, one_form
from safetrace.symbolic.cases import by_cases
from safetrace.symbolic.expr import dag_nodes, sym
from safetrace.symbolic.semantics import holds_at

_COMPARISONS = {operator.eq: eq, operator.ne: ne, operator.lt: lt, operator.le: le,
                operator.gt: gt, operator.ge: ge}
_CONNECTIVES = {operator.and_: and_, operator.or_: or_}
# the one-symbol facts ``tighten`` looks at in a branch, and the values it tries from each
# end of a symbol's range (a few hundred evaluations of a small expression: microseconds)
_TIGHT_FACTS = 16
_TIGHT_STEPS = 64


def branch_conditions(pred: Any, meta: dict, int_cls: type) -> tuple:
    """(what the true branch may assume, what the false branch may) for the cond predicate
    node ``pred``; (None, None) unless it is a comparison of sizes ``meta`` knows, or an
    ``and``/``or`` of such (a size split on two sizes: ``s2 != 1 and s1 == 0``)."""
    target = getattr(pred, "target", None) \
        if isinstance(pred, torch.fx.Node) and pred.op == "call_function" else None
    if target in _CONNECTIVES and len(pred.args) == 2 and not pred.kwargs:
        parts = [branch_conditions(a, meta, int_cls)[0] for a in pred.args]
        if any(p is None for p in parts):
            return None, None
        c = _CONNECTIVES[target](*parts)
        return c, not_(c)
    build = _COMPARISONS.get(target)
    if build is None or len(pred.args) != 2 or pred.kwargs:
        return None, None
    operands = []
    for a in pred.args:
        v = meta.get(a) if isinstance(a, torch.fx.Node) else a
        if isinstance(v, int_cls):
            operands.append(v.expr)
        elif type(v) is int:
            operands.append(v)
        else:
            return None, None
    c: Expr = build(*operands)
    return c, not_(c)



def tighten(env: Any) -> list:
    """The range of each symbol that a one-symbol fact of the branch (its predicate, the
    contract's conditions it narrows: ``(3*s1) % 4 <= 0``) holds at only inside, made
    tight: the least and the greatest value where the fact holds, tried from each end of
    the symbol's range (``s1`` in ``[3, 64]`` with ``s1 % 4 == 0`` is ``s1 >= 4``; then
    ``(s0*(s1//4))//(s1//4)`` is ``s0``).  Sound: every fact of the env holds wherever
    the branch runs (the contract's are checked before the call, the predicate picks the
    branch), and the values left out fail a fact that names no other symbol.  Returns
    the symbols such a fact leaves one value in every ``m`` of a small range (name, m, c,
    lo, hi: the symbol is ``m*t + c`` for some ``t`` in ``[lo, hi]``), for ``steps``."""
    unfold(env)
    facts: dict = {}  # (the facts assumed, newest first, and what they left: ``known``)
    for f in [*(g.cond for g in reversed(getattr(env, "facts", ()))),
              *getattr(env, "known", ())]:
        if len(f.free_symbols) == 1:
            facts.setdefault(f, None)
    out = []
    for fact in list(facts)[:_TIGHT_FACTS]:
        try:
            out += _tighten(env, fact)
        except Exception:  # noqa: BLE001 - a fact that cannot be evaluated: left as it is
            continue
    return out


def unfold(env: Any) -> None:
    """Each fact of the branch over a min or max (its predicate: ``min(s0*s0*s1, s2 + 1) ==
    1``, the false side of a relation split on ``x.flatten()[:len(y) + 1].shape[0] == 1``)
    assumed again with every min/max that the env decides made its one argument
    (``s2 + 1 == 1`` where the facts give ``s2 + 1 <= s0*s0*s1``).  The engine takes the
    first as a fact about that min alone: it answered ``min(...) == 1`` but not ``s2 + 1 ==
    1``, and a slice it evaluated as ``[s2 + 1]`` was not squeezed by ``squeeze(0)``
    (which eager does where the branch runs): ``st.load`` refused our own file for
    branches of other ranks (session 35, fuzz seed 3471).  Sound: the min/max equals the
    argument kept wherever the facts hold, and so the fact with it."""
    for f in [g.cond for g in reversed(getattr(env, "facts", ()))][:_TIGHT_FACTS]:
        if not simple(f) or not any(x.op in ("min", "max") for x in dag_nodes(f)):
            continue
        try:
            g = _pruned(env, f, {})
            if g is not f:
                env.add_fact(g)
        except ValueError:
            return  # (the branch never runs: nothing more assumed)
        except Exception:  # noqa: BLE001 - a fact the engine cannot take: left as it is
            continue


def _pruned(env: Any, e: Expr, memo: dict) -> Expr:
    """``e`` with each min/max whose one argument the env decides is the least (the
    greatest) made that argument."""
    r = memo.get(e)
    if r is not None:
        return r
    r = e
    if e.op not in ("const", "fconst", "sym", "fsym"):
        args = tuple(_pruned(env, a, memo) for a in e.args)
        if any(x is not y for x, y in zip(args, e.args)):
            r = rebuild(e.op, args)
        if r.op in ("min", "max"):
            best = le if r.op == "min" else ge
            one = next((a for a in r.args if all(
                b is a or env.decide(best(a, b)) is True for b in r.args)), None)
            if one is not None:
                r = one
    memo[e] = r
    return r


def _tighten(env: Any, fact: Expr) -> list:
    """``tighten`` of one fact (one symbol's)."""
    name = str(next(iter(fact.free_symbols)))
    rng = env.symbol_range(name)
    if rng is None or not all(isinstance(x, int) and not isinstance(x, bool)
                              for x in (rng.lo, rng.hi)):
        return []
    out = []
    if rng.hi - rng.lo < _TIGHT_STEPS * 2:  # (a small range: every value tried)
        held = [v for v in range(rng.lo, rng.hi + 1) if holds_at(fact, name, v)]
        gaps = {b - a for a, b in zip(held, held[1:])}
        if len(gaps) == 1 and min(gaps) > 1:
            m = gaps.pop()
            out.append((name, m, held[0] % m, held[0] // m, held[-1] // m))
        ends = [(held[0], rng.lo, ge), (held[-1], rng.hi, le)] if held else []
    else:
        ends = []
        for end, step, bound in ((rng.lo, 1, ge), (rng.hi, -1, le)):
            first = next((end + step * i for i in range(_TIGHT_STEPS)
                          if holds_at(fact, name, end + step * i)), None)
            ends += [] if first is None else [(first, end, bound)]
    for value, end, bound in ends:
        if value != end:
            try:
                env.add_fact(bound(sym(name), value))
            except ValueError:
                pass  # (the branch never runs: nothing more assumed)
    return out


def steps(env: Any, cond: Expr, found: list) -> bool | None:
    """``cond`` decided with each symbol of it that ``found`` (``tighten``'s) leaves one
    value in every ``m`` written as ``m*t + c`` (``s1`` as ``4*t``: ``(s0*s1*s2)//16`` is
    ``s0*t1*t2``, a form the engine compares where it cannot with ``s1 % 4 == 0``), for
    this question only: the new symbols stay out of every value and check."""
    names = {str(x) for x in cond.free_symbols}
    used = [f for f in found if f[0] in names]
    if not used:
        return None
    with scoped(env):
        try:
            for name, m, c, lo, hi in used:
                t = next(f"k{i}" for i in range(len(env.symbols), 1 << 30)
                         if f"k{i}" not in env.symbols)
                env.new_unbacked(lo, hi, name=t)
                env.add_fact(eq(sym(name), sym(t) * m + c))
            return env.decide(cond)
        except Exception:  # noqa: BLE001 - a question the engine cannot take
            return None


def _undefined_is_none(fn: Any) -> Any:
    """A question whose assumed fact makes a divisor 0 (``(-1)//s`` where ``s == 0``: the
    engine raises ZeroDivisionError) has no one form: None, a new size (fuzz seed 28001)."""
    @functools.wraps(fn)
    def wrapped(*args: Any) -> Any:
        try:
            return fn(*args)
        except ArithmeticError:
            return None
    return wrapped


def merged(env: Any, outs: list, given: tuple, known: set, forms: Any = None) -> Any:
    """torch.cond's value from its branches' (``outs``, evaluated under ``given``), where
    they return as many tensors of one dtype and rank (else None): a size that is one
    wherever the cond runs is that size (a size split's branches may write it in two forms,
    ``1`` under ``s1 == 1`` and ``s1`` in the other: the cond's is ``s1``); any other (``s0``
    in one branch, ``3*s0`` in the other, or a size read from data) is a new size, read
    from data as the exporter writes it, in the range of the two (one new size for each pair
of branch sizes: outputs of one size in each branch are of one size).  Returns (the value, the
    new sizes' symbol names).  ``forms``: the file's recorded sizes of each output, where
    they are sizes of the inputs (else None): one that each branch's size is where it runs
    is the cond's (the loader's branch may simplify its size under its fact, into a form
    the other branch's size is not: ``x[n-2:n+1:3]``'s length under ``n != 0``)."""
    a, b = outs
    if not isinstance(a, (list, tuple)) or not isinstance(b, (list, tuple)) or \
            len(a) != len(b):
        return None
    value, fresh = [], set()
    made: dict = {}  # (one branch's size, the other's) -> the new size made for them
    pairs = []
    for x, y in zip(a, b):
        if not isinstance(x, TensorMeta) or not isinstance(y, TensorMeta) or \
                len(x.shape) != len(y.shape) or x.dtype != y.dtype:
            return None
        pairs.append([(p, q, _one_form(env, p, q, given[0], known))
                      for p, q in zip(x.shape, y.shape)])
    # (a new size for each pair of sizes read from data, ``u3`` in one branch and ``u5``
    # in the other: where each of the two is in that pair only, a size written of it
    # in both branches alike, ``u3 + 1`` and ``u5 + 1``, is the new size plus one)
    names: tuple = ({}, {})  # a branch's symbol -> the new sizes it makes
    for dims in pairs:
        for p, q, one in dims:
            if one is not None:
                continue
            pe, qe = to_expr(p), to_expr(q)
            if _bare(p, known) and _bare(q, known):
                keys = [(pe, qe)]
            else:  # (the symbols two forms differ by alone, ``min(u3, 2)`` and
                # ``min(u5, 2)``: each branch's ``x[x > 0][:2]``, renaming.py)
                alike = renaming(pe, qe, lambda x, y: x is y, lambda x, y:
                                 x.name not in known and y.name not in known)
                keys = [(x, sym(y)) for y, x in (alike or {}).items()]
            for key in keys:
                if key not in made:
                    made[key] = _new_size(env, *key)
                    fresh.add(made[key].expr.name)
                for side, v in zip(names, key):
                    side.setdefault(v.name, set()).add(made[key].expr)
    one_of = [{k: next(iter(v)) for k, v in side.items() if len(v) == 1} for side in names]
    for i, ((x, _), dims) in enumerate(zip(zip(a, b), pairs)):
        shape = []
        for j, (p, q, one) in enumerate(dims):
            if one is None:
                one = _renamed(env, p, q, one_of, given[0])
            if one is None and given[0] is not None:
                one = _recorded(env, given, p, q, _form(forms, i, j))
            if one is None:  # (a pair met before is that size again, as the exporter
                # writes it: two outputs that are one size in each branch are one there)
                key = (to_expr(p), to_expr(q))
                one = made.get(key)
                if one is None:
                    one = made[key] = _new_size(env, p, q)
                    fresh.add(one.expr.name)
            shape.append(one)
        value.append(TensorMeta(tuple(shape), x.dtype, x.device))
    return type(a)(value), fresh


def _form(forms: Any, i: int, j: int) -> Any:
    if forms is None or i >= len(forms) or forms[i] is None or j >= len(forms[i]):
        return None
    return forms[i][j]


@_undefined_is_none
def _recorded(env: Any, given: tuple, p: Any, q: Any, form: Any) -> Any:
    """The file's size ``form`` (of the inputs' sizes) where each branch's size is that
    where the branch runs (``p`` where ``given[0]`` holds, ``q`` where ``given[1]``), else
    None."""
    if form is None:
        return None
    for fact, v in zip(given, (p, q)):
        with assuming(env, fact) as runs:
            if runs and env.decide(eq(to_expr(v), form)) is not True:
                return None
    return new_symbolic(form, env)


def _bare(v: Any, known: set) -> bool:
    e = to_expr(v)
    return e.op == "sym" and e.name not in known


@_undefined_is_none
def _renamed(env: Any, p: Any, q: Any, one_of: list, given: Any) -> Any:
    """The size ``p`` and ``q`` write alike of new sizes (``one_of``: each branch's symbol
    -> the one new size it makes), else None; under a size predicate (``given``) also
    where each is that form where its branch runs (``u3`` under ``s1 == 0`` and
    ``u5 + min(s1, u5)`` elsewhere, the branch having simplified ``min(s1, u3)``); and
    where the two are one size everywhere, written two ways (compared case by case on
    their min/max terms within the load's budget: ``symbolic.cases``), the false
    branch's form."""
    ep = substitute(to_expr(p), lambda s: one_of[0].get(s.name))
    eq_ = substitute(to_expr(q), lambda s: one_of[1].get(s.name))
    if ep == to_expr(p) and eq_ == to_expr(q):
        return None  # (nothing renamed: not the same by it)
    same = eq(ep, eq_)
    if same.op == "const" and same.value:
        return new_symbolic(ep, env)
    one = None if given is None else either_form(env, given, ep, eq_)
    if one is None and simple(same):
        if by_cases(env, same) is True:
            one = eq_  # (one size everywhere in two forms: the false branch's, as
            # either_form prefers and the exporter writes it; fuzz seed 2112)
    return None if one is None else new_symbolic(one, env)


@_undefined_is_none
def _one_form(env: Any, p: Any, q: Any, given: Any, known: set) -> Any:
    """The size both branches' ``p`` and ``q`` are wherever the cond runs, else None: by
    the exporter's own rule (``symbolic.branches.one_form``), so that both write it."""
    one = one_form(env, given, p, q, known)
    return None if one is None else new_symbolic(one, env)


def _new_size(env: Any, p: Any, q: Any) -> Any:
    lo, hi = [], []
    for v in (p, q):
        try:
            r = env.bounds(to_expr(v))
            lo.append(r.lo)
            hi.append(r.hi)
        except Exception:  # noqa: BLE001 - no bounds known
            lo.append(0)
            hi.append(math.inf)
    low, high = max(0, min(lo)), max(hi)
    s = env.new_unbacked(int(low) if low != -math.inf else 0,
                         None if high == math.inf else int(high))
    return new_symbolic(s, env)


def pinned(env: Any, run: Callable[[], tuple]) -> tuple:
    """``run()``, a subgraph's evaluation (``memory._run``'s result) inside its scope, with
    each output size read from data inside it that the subgraph's own checks make one
    number (``torch._check(nz.shape[0] == 1)`` in a branch) as that number: outside the
    scope the checks are no facts, and the exporter writes the cond's size so
    (``trace/hops/ops.py: _fresh``).  Sound: the number is the size wherever the
    subgraph runs to its end.  A size of the inputs keeps its form (a branch's fact on
    it is the branch's: ``merged`` reads both)."""
    before = set(env.symbols)
    out, cands, work = run()
    if not isinstance(out, (list, tuple)):
        return out, cands, work
    inner = set(env.symbols) - before
    return type(out)(_pinned(env, v, inner) for v in out), cands, work


def _pinned(env: Any, v: Any, inner: set) -> Any:
    if not isinstance(v, TensorMeta) or all(type(s) is int for s in v.shape):
        return v
    shape = []
    for s in v.shape:
        e = None if type(s) is int else to_expr(s)
        if e is not None and e.free_symbols and e.free_symbols <= inner:
            c = env.simplify(e)
            s = int(c.value) if c.op == "const" else s
        shape.append(s)
    return TensorMeta(tuple(shape), v.dtype, v.device)
