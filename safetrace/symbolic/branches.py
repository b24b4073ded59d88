"""The one form of a size that two branches write each their own way.

A ``torch.cond`` on a predicate of sizes returns, for each output size, the true branch's
``p`` where the predicate holds and the false branch's ``q`` elsewhere.  Where one form is
that size wherever the cond runs, the exporter writes it (``trace/hops/ops.py``) and
st.load works it out again from the file (``serialize/branch_facts.py``); any other is a
new size read from data.  The two must write the same form (the loader refuses a file
whose recorded size differs from its own), so both ask this one function.
"""

from __future__ import annotations

from typing import Any, Container

from safetrace.symbolic.canon import eq, not_
from safetrace.symbolic.env import Env
from safetrace.symbolic.expr import Expr, sym, to_expr
from safetrace.symbolic.scope import assuming


def one_form(env: Env, given: Expr | None, p: Any, q: Any,
             known: Container[str]) -> Expr | None:
    """The size both ``p`` (where ``given`` holds) and ``q`` (where it fails) are, else None.

    In this order: one expression; only sizes and a predicate of ``known`` symbols (sizes
    of the inputs: a predicate or a size read from data, ``u0 > 1``, keeps the new size);
    without a predicate, provably one; a form the other is where its branch runs (``1``
    where ``s0 >= 2`` and ``min(s0, 1)`` elsewhere: ``min(s0, 1)``; a branch that never
    runs: the other's); a size of the predicate's that each branch writes as its value
    there (``2`` under ``s0 == 2``, ``3`` elsewhere where ``2 <= s0 <= 3``: ``s0``)."""
    a, b = to_expr(p), to_expr(q)
    same = eq(a, b)
    if same.op == "const" and same.value:
        return a
    names = same.free_symbols | (given.free_symbols if given is not None else frozenset())
    if any(str(s) not in known for s in names):
        return None
    if given is None:
        return a if same.op != "const" and env.decide(same) is True else None
    if same.op != "const" and (either := either_form(env, given, a, b)) is not None:
        return either
    for s in sorted(str(x) for x in given.free_symbols):
        if _holds(env, given, eq(sym(s), a)) and _holds(env, not_(given), eq(sym(s), b)):
            return sym(s)
    return None


def either_form(env: Env, given: Expr, a: Any, b: Any) -> Expr | None:
    """Of ``a`` (the true branch's size) and ``b`` (the false one's), written of the same
    symbols, the one that is both where each branch runs (``u4`` where ``s1 == 0`` and
    ``u4 + min(s1, u4)`` elsewhere: ``u4 + min(s1, u4)``, which is ``u4`` at ``s1 == 0``),
    else None.  Unlike ``one_form`` the symbols need not be the inputs' sizes: st.load asks
    it of sizes a cond's outputs share (``branch_facts.merged``), whose data-read sizes
    are one new size in both branches."""
    x, y = to_expr(a), to_expr(b)
    for c in (y, x):  # (the form written in more branches' terms first: the false one's)
        if _holds(env, given, eq(x, c)) and _holds(env, not_(given), eq(y, c)):
            return c
    return None


def _holds(env: Env, given: Expr, c: Expr) -> bool:
    """Whether ``c`` holds wherever ``given`` does (where it never does too)."""
    with assuming(env, given) as runs:
        return not runs or env.decide(c) is True


__all__ = ["either_form", "one_form"]
