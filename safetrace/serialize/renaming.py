"""Two size expressions that are one form written of other symbols (``min(u3, 2)`` and
``min(u5, 2)``): the symbols that make them alike, where those may stand for each other.

A size split's branches each read their own sizes from data (each side's ``x[x > 0]``
count) and write the cond's size of them in one form; the exporter writes that form of
symbols of its own (``min(u0, 2)``), where the loader has one new symbol per branch.  So
``branch_facts.merged`` makes the cond's size that form of new sizes (each the size read
in the branch that ran, in the range of the two), and ``recorded.Recorded`` takes the
file's symbols in the same form as those new sizes.
"""

from __future__ import annotations

from typing import Callable

from safetrace.symbolic.expr import Expr

_MAX_NODES = 64  # (a size expression the loader compares is at most 48 nodes: scratch.py)


def renaming(a: Expr, b: Expr, same: Callable[[Expr, Expr], bool],
             free: Callable[[Expr, Expr], bool]) -> dict | None:
    """``{b's symbol name: a's symbol}`` under which ``b`` is ``a``: each pair of symbols
    at one place either ``same`` (a symbol of ``a`` that ``b``'s stands for already) or
    renamed, where ``free(a_sym, b_sym)`` allows it, one to one; else None.  None too
    where nothing is renamed."""
    out: dict = {}  # b's symbol name -> a's symbol
    back: dict = {}  # a's symbol name -> b's symbol
    todo = [(a, b)]
    seen = 0
    while todo:
        x, y = todo.pop()
        seen += 1
        if seen > _MAX_NODES or x.op != y.op or len(x.args) != len(y.args):
            return None
        if x.op == "sym":
            if out.get(y.name, x) is not x or back.get(x.name, y) is not y:
                return None
            if not same(x, y):
                if not free(x, y):
                    return None
                out[y.name] = x
            back[x.name] = y
        elif x.op in ("const", "fconst", "fsym") or not x.args:
            if x is not y:
                return None
        else:
            todo.extend(zip(x.args, y.args))
    return out or None


__all__ = ["renaming"]
