"""A fact on one atom of no symbol's own that leaves it one value.

``Env`` narrows a symbol's range with a fact on it (``s0 >= 2``); a fact on an atom such
as ``max(min(s0, 1) - s1, 0) >= 1`` is kept as a linear fact only, which the prover tries
against a question term by term.  Where the atom's own range (``[0, 1]`` here) and the
fact leave it one value, it is that value: ``Env`` rewrites the atom to it, so a size
written of it (``(max(...) + 1)//2``, a strided slice's length in the branch a cond on
that length takes) is that number too.
"""

from __future__ import annotations

import math
from typing import Any

import safetrace.symbolic.decide as D
from safetrace.symbolic.expr import Expr, terms

_ATOMS = frozenset({"min", "max", "floordiv", "mod"})


def pinned(env: D.Facts, f: Expr) -> tuple[Expr, int] | None:
    """``(a, v)`` where the fact ``f >= 0`` is ``k*a + c >= 0`` for one atom ``a`` (a
    min/max, a floor division or a modulo of ints) whose range with the fact holds the
    one value ``v``; else None (a fact that holds of no value of ``a`` is not one: the
    caller's decision reports the contradiction)."""
    atom, k, c = None, 0, 0
    for mono, coeff in terms(f):
        if not mono:
            c = coeff
        elif len(mono) == 1 and atom is None:
            atom, k = mono[0], coeff
        else:
            return None
    if atom is None or atom.op not in _ATOMS or not k:
        return None
    r = D.bounds_of(env, atom)
    if k > 0:  # atom >= ceil(-c / k)
        lo = -(c // k)
        if r.hi != math.inf and lo == r.hi:
            return atom, int(r.hi)
    else:  # atom <= floor(c / -k)
        hi = c // -k
        if r.lo != -math.inf and hi == r.lo:
            return atom, int(r.lo)
    return None


__all__ = ["pinned"]


def positive_factors(env: Any, f: Expr) -> list[Expr]:
    """The symbols the fact ``f >= 0``, ``k*s0*s1 - c >= 0`` (``k, c > 0``) of symbols never
    negative, shows to be >= 1 (a product of integers >= 0 is 0 where one of them is);
    else none.  Only the loader's scratch env asks (``positive_factors``): a trace keeps
    such a relation whole (relation_splits.py splits on it, not on the ranges it implies)."""
    mono = [(m, k) for m, k in terms(f) if m]
    if len(mono) != 1 or mono[0][1] <= 0 or sum(k for m, k in terms(f) if not m) >= 0:
        return []
    syms = mono[0][0]  # (env: an Env, its symbol_range)
    ranges = [env.symbol_range(str(x.name)) if x.op == "sym" else None for x in syms]
    return list(syms) if all(r is not None and r.lo >= 0 for r in ranges) else []

