"""A condition decided case by case on the min/max terms in it.

``max(a, b)`` is ``a`` where ``a >= b`` and ``b`` elsewhere (``min``: ``a`` where
``a <= b``): a condition true (or false) in both cases, each decided with its case as a
fact and the term replaced by its value there, is so everywhere.  Interval bounds and
linear facts cannot tell that two forms of one size are equal where they differ in how a
min/max sits in them: ``(u + max(u - 1, 0) + 1)//2 - max(u - 1, 0)`` and
``(max(u - max(u - 1, 0), 0) + 1)//2`` (a strided slice's length, simplified under other
facts in two branches) are both ``min(u, 1)``; the split on ``u - 1 >= 0`` makes each
side a number.

Where that leaves a condition open, it is split first on the residue of a symbol ``s``
under a floor division (or modulo) by a small constant ``m`` (once on each path):
``s == m*t + r`` for a new symbol ``t``, each ``r`` of ``0 .. m-1`` a case (every integer
is one of them), in which the division of ``s`` is linear in ``t``: ``s - s//2`` and
``(s + 1)//2`` (a slice ``x[-1:-n//2:3]``'s bounds) are ``t + r`` both;
``((s + 1)//2)*b + (s//2)*b`` is ``s*b``.
"""

from __future__ import annotations

from safetrace.symbolic.canon import eq, ge, le, minmax, not_, rebuild
from safetrace.symbolic.env import Env
from safetrace.symbolic.expr import Expr, add, const, dag_nodes, scale, terms
from safetrace.symbolic.scope import assuming

DEPTH = 3  # min/max terms split on, one inside the other (2**DEPTH decisions at most)
MODULUS = 6  # residues split on, of a division by at most this (one split in each case)


def by_cases(env: Env, cond: Expr, depth: int = DEPTH) -> bool | None:
    """True/False where ``cond`` is so in every case of its min/max terms (``depth`` of
    them split on, innermost first), else None.  An env that sets ``case_decisions`` (the
    loader's) spends at most that many of the prover's decisions (``env.cache.decisions``)
    in all its calls, and gets None past them: a budget of work that is the same on every
    machine (a question of a 48-node condition takes 1 to 300 decisions, a millisecond
    or less each)."""
    left = getattr(env, "case_decisions", None)
    start = env.cache.decisions
    until = None if left is None else start + left
    try:  # (min/max terms only first, as cheap as before; then residues first)
        answer = _split(env, cond, depth, until, False)
        return answer if answer is not None else _split(env, cond, depth, until)
    except ZeroDivisionError:  # (a case in which cond divides by zero, as `s//(s % 2)`
        return None  # does where s is even: no answer holds in every case)
    finally:
        if left is not None:
            env.case_decisions = left - (env.cache.decisions - start)  # type: ignore[attr-defined]


def _split(env: Env, cond: Expr, depth: int, until: int | None,
           residues: bool = True) -> bool | None:
    if _spent(env, until):
        return None
    answer = env.decide(cond)
    if answer is not None or depth <= 0:
        return answer
    plain = env.simplify(cond)
    divided = _divided(plain) if residues else None
    if divided is not None:  # (first: a residue makes its divisions linear, and the
        return _residues(env, cond, divided, depth, until)  # min/max of them fewer)
    term = _innermost(plain)
    if term is None:
        return None
    first = term.args[0]
    rest = term.args[1] if len(term.args) == 2 else minmax(term.op, list(term.args[1:]))
    picks_first = ge(first, rest) if term.op == "max" else le(first, rest)
    answers: set[bool | None] = set()
    for case, value in ((picks_first, first), (not_(picks_first), rest)):
        if _spent(env, until):
            return None
        with assuming(env, case) as possible:
            if not possible:
                continue  # (a case no size reaches)
            answers.add(_split(env, _replaced(env.simplify(cond), term, value, {}),
                               depth - 1, until, residues))
        if None in answers or len(answers) > 1:
            return None
    return answers.pop() if len(answers) == 1 else None


def _residues(env: Env, cond: Expr, divided: tuple[Expr, int], depth: int,
              until: int | None) -> bool | None:
    """``cond`` decided in each residue of ``divided``'s symbol modulo its divisor (module
    docstring), its min/max terms split on in each, else None."""
    s, m = divided
    t = env.new_unbacked()  # (the quotient: any integer; s's range bounds it in each case)
    answers: set[bool | None] = set()
    for r in range(m):
        if _spent(env, until):
            return None
        with assuming(env, eq(s, add(scale(t, m), const(r)))) as possible:
            if not possible:
                continue  # (a residue no size has)
            answers.add(_split(env, env.simplify(cond), depth, until, False))
        if None in answers or len(answers) > 1:
            return None
    return answers.pop() if len(answers) == 1 else None


def _divided(cond: Expr) -> tuple[Expr, int] | None:
    """(a symbol, m) where ``cond`` divides a sum holding that symbol (as a term of its
    own) by a constant m in ``2 .. MODULUS``, else None."""
    for x in dag_nodes(cond):
        if x.op in ("floordiv", "mod") and x.args[1].op == "const" and \
                2 <= int(x.args[1].value) <= MODULUS:  # type: ignore[arg-type]
            for mono, _ in terms(x.args[0]):
                if len(mono) == 1 and mono[0].op == "sym":
                    return mono[0], int(x.args[1].value)  # type: ignore[arg-type]
    return None


def _spent(env: Env, until: int | None) -> bool:
    return until is not None and env.cache.decisions >= until


def _innermost(cond: Expr) -> Expr | None:
    """A min/max term of ``cond`` with none inside it (splitting on it first settles the
    terms around it in each case), else None."""
    for x in dag_nodes(cond):
        if x.op in ("min", "max") and not any(
                y.op in ("min", "max") for a in x.args for y in dag_nodes(a)):
            return x
    return None


def _replaced(e: Expr, old: Expr, new: Expr, memo: dict[Expr, Expr]) -> Expr:
    """``e`` with the subexpression ``old`` replaced by ``new`` (re-canonicalized)."""
    if e == old:
        return new
    if e.op in ("sym", "const", "fconst"):
        return e
    r = memo.get(e)
    if r is None:
        args = tuple([_replaced(a, old, new, memo) for a in e.args])
        r = memo[e] = e if all(x is y for x, y in zip(args, e.args)) else \
            rebuild(e.op, args)
    return r


__all__ = ["by_cases"]
