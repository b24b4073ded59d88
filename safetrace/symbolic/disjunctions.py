"""``or`` facts narrowed by later facts: a side that a new fact rules out is dropped, and
the side left is assumed as a fact of its own (seen by the range and linear reasoning that
cannot look inside an ``or``)."""

from __future__ import annotations

from typing import Callable, Sequence

from safetrace.symbolic.canon import not_, or_
from safetrace.symbolic.decide import Facts, decide
from safetrace.symbolic.expr import Expr
from safetrace.symbolic.records import Contradiction

_MAX_DISJUNCTIONS = 16  # ``or`` facts ``narrow_disjunctions`` looks into (beyond: none)
_MAX_LOOKS = 64  # times it looks, in one env's life


def narrow_disjunctions(env: Facts, cond: Expr, assume: Callable[[Expr], None]) -> None:
    """``assume`` the sides of each ``a or b`` fact that the new fact ``cond`` leaves, in
    place of the fact: with ``s1 >= 1`` (``s1 != 0`` of a range from 0), ``s0*s1 >= 1 or
    s1 <= 0`` is its first side, which bounds products of the two (stored as one
    condition, its sides are seen by no range or linear fact).  Only facts that share a
    symbol with ``cond``, then with a side assumed (what one leaves may rule out a side of
    another), and none where the env holds more than a few: each look decides every side
    again, and none past a number of looks: a file's contract of thousands of conditions
    took minutes, and the cost of a decision grows with the facts."""
    ors = [c for c in env.known if _sides(c)]
    if not ors or len(ors) > _MAX_DISJUNCTIONS or env.cache.disjunction_looks >= _MAX_LOOKS:
        return
    env.cache.disjunction_looks += 1
    names = set(cond.free_symbols)
    for _ in range(len(ors)):
        left = []
        for c in [c for c in env.known if _sides(c) and c.free_symbols & names]:
            sides = _sides(c)
            rest = [a for a in sides if decide(env, a) is not False]
            if len(rest) < len(sides):
                left.append((c, rest))
        if not left:
            return
        for c, rest in left:
            if not rest:
                raise Contradiction(f"contradiction: no side of `{c}` holds")
            env.known.discard(c)  # type: ignore[attr-defined]
            names |= set().union(*(a.free_symbols for a in rest))
            assume(or_(*rest))


def _sides(c: Expr) -> list[Expr]:
    """The sides of an ``or`` fact, ``not (a and b)`` as ``not a or not b`` (a cond's false
    branch of ``(s3 <= 5) and (s6 <= 3)``); else none."""
    if c.op == "or":
        return list(c.args)
    if c.op == "not" and c.args[0].op == "and":
        return [not_(a) for a in c.args[0].args]
    return []


def collapsed(env: Facts, pairs: Sequence[tuple[Expr, Expr]],
              assume: Callable[[Expr], None]) -> None:
    """Each ``or`` fact (``not (a and b)`` too) that new replacements leave one side of,
    ``(before, after)`` in ``pairs``, assumed as a fact of its own, and the ``or`` facts it
    narrows narrowed: ``s0 != 1 or s1 != 1`` once ``s0 == 1`` is ``s1 != 1``, which makes
    ``s1 >= 2`` of a range from 1, and then ``s1 <= 1 or s3 >= 2`` is ``s3 >= 2`` (stored
    as the one condition the replacement left, no range or linear fact saw it)."""
    for before, after in pairs:
        if before.op in ("or", "not") and after.op not in ("or", "not"):
            assume(after)
            narrow_disjunctions(env, after, assume)
